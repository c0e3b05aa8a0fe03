//! `hako bench` (the program `hako-bench`, which the `hako` tool runs for
//! its `bench` subcommand): the IPC comparison suite.
//!
//! Runs [`crate::suite`] with the arguments of [`BenchArgs`], shows a
//! progress bar on stderr while it runs (only on a terminal), then prints
//! the tables and a summary ([`output`]) and writes the files asked for:
//! `--json`, `--markdown`, `--plot` ([`plot`]).
//!
//! The run's files live in a private domain root, `<shm dir>/hako-bench-<pid>`,
//! removed at the end, on Ctrl-C (SIGINT) and on SIGTERM; the followers die
//! with the leader (`PR_SET_PDEATHSIG`). Leftovers of runs that were killed
//! outright (SIGKILL) are removed by the next run.

pub mod asynch;
pub mod bridge;
pub mod footprint;
pub mod json;
pub mod output;
pub mod plot;
pub mod reqres;
pub mod summary;
pub mod table;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::harness::blocks::Plan;
use crate::registry::{Kind, Transports};
use crate::report::{format_size, parse_size};
use crate::suite::{self, StreamPlan, SuiteConfig};
use crate::sys::rundir::{self, RunDir};
use crate::transport::{Pattern, PayloadMode};
use crate::transports::hako::pubsub::HakoPubSub;
use crate::Result;

/// Largest message size the suite accepts.
pub const MAX_SIZE: usize = 256 << 20;

/// Prefix of the shared-memory files iceoryx2 keeps in [`POSIX_SHM_DIR`].
const PEER_SHM_PREFIX: &str = "hkb";

/// Where `shm_open` puts its files, whatever `--shm-dir` says.
const POSIX_SHM_DIR: &str = "/dev/shm";

/// Where the processes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pinning {
    /// Leader and followers on two different CPUs.
    Cross,
    /// Leader and followers on the leader's CPU (busy-polling transports
    /// are left out).
    Same,
    /// Not pinned: the scheduler decides.
    None,
}

impl Pinning {
    /// `cross-cpu`, `same-cpu`, `unpinned`.
    pub fn label(self) -> &'static str {
        match self {
            Pinning::Cross => "cross-cpu",
            Pinning::Same => "same-cpu",
            Pinning::None => "unpinned",
        }
    }
}

/// Arguments of `hako bench`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Without --transports, every transport of the build runs and sizes a \
transport cannot carry are skipped with the reason; a transport named in --transports that \
cannot carry a size given is an error. See the README for what each column means."
)]
pub struct BenchArgs {
    /// Transports, in table order: hako, hako-spin-park, hako-park,
    /// hako-spin, iceoryx2, shmipc, floor, futex, pipe, fifo, unix, tcp, mq,
    /// reference (and the request/response, async and bridge ones)
    /// [default: all but hako-park, hako-spin and those of the
    /// request/response, async and bridge rows].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub transports: Option<Vec<Kind>>,
    /// Message sizes (e.g. 64,1K,4KiB,1M) [default: 64,1K,4K,64K,1M,4M;
    /// --quick: 64,4K,64K,1M].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Option<Vec<usize>>,
    /// Patterns: pingpong (round-trip latency), throughput (one way),
    /// fanout (one sender, --fanout receivers), reqres (request/response:
    /// round trips, and requests per second with --in-flight requests in
    /// flight), async (request/response under tokio, with --async-in-flight
    /// requests in flight, against tokio's sockets and hako's blocking
    /// calls), bridge (a round trip through two hako-bridge processes over
    /// Zenoh against plain Zenoh; needs a build with the `bridge` feature
    /// and the hako-bridge program).
    #[arg(long, value_delimiter = ',', value_parser = Pattern::parse,
          default_value = "pingpong,throughput,fanout,reqres,async,bridge")]
    pub patterns: Vec<Pattern>,
    /// Transports of the request/response rows, in table order [default:
    /// hako-reqres, hako (pub/sub ping-pong, the reference),
    /// iceoryx2-reqres, shmipc, unix, tcp].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub reqres_transports: Option<Vec<Kind>>,
    /// Requests in flight of the request/response rate rows.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub in_flight: Vec<u32>,
    /// Message sizes of the request/response rate rows [default: 64,1K;
    /// --quick: 64].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub in_flight_sizes: Option<Vec<usize>>,
    /// Transports of the async rows, in table order [default: hako-async,
    /// hako-async-busy, hako-async-park, tokio-unix, tokio-tcp, the same
    /// on a multi-threaded runtime (-mt), hako-reqres,
    /// hako-reqres-spin-park, hako-reqres-park, shmipc].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub async_transports: Option<Vec<Kind>>,
    /// Message sizes of the async round trips [default: 64,4K,64K,1M;
    /// --quick: 64,64K].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub async_sizes: Option<Vec<usize>>,
    /// Requests in flight of the async rate rows.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub async_in_flight: Vec<u32>,
    /// Message sizes of the async rate rows.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64")]
    pub async_in_flight_sizes: Vec<usize>,
    /// Transports of the bridge rows, in table order [default: zenoh,
    /// hako-bridge].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub bridge_transports: Option<Vec<Kind>>,
    /// Message sizes of the bridge rows.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1M")]
    pub bridge_sizes: Vec<usize>,
    /// Counts of allowed subscribers of the memory-footprint table: for a
    /// u64 service allowing that many subscribers (and one publisher), the
    /// bytes one publisher and one subscriber map, hako's and iceoryx2's.
    #[arg(long, value_delimiter = ',', default_value = "1,64,4096",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub footprint: Vec<u32>,
    /// Leave out the memory-footprint table.
    #[arg(long)]
    pub no_footprint: bool,
    /// Payload modes: touch (first and last byte written and checked), full
    /// (every byte written, every byte read into a checksum).
    #[arg(long, value_delimiter = ',', value_parser = PayloadMode::parse,
          default_value = "touch,full")]
    pub payload: Vec<PayloadMode>,
    /// Receivers of a fan-out row (follower processes).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub fanout: u32,
    /// Most timed round trips per ping-pong row and transport, over all
    /// blocks [default: 20000; --quick: 2000].
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Untimed round trips per ping-pong row and transport, over all blocks
    /// [default: iterations / 10].
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Blocks per row: ping-pong blocks between floor probes [default: 4;
    /// --quick: 2; bridge rows: 4], and one-way rounds, each running every
    /// transport once (at most 3).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// Time per block and transport that the round trips or messages are
    /// fitted to, in ms [default: 12; --quick: 3; bridge rows: 50 times
    /// it].
    #[arg(long)]
    pub block_ms: Option<u64>,
    /// Fewest messages per one-way run at sizes up to 1 MiB (fewer above,
    /// at most 1 GiB per run) [default: 1000; --quick: 100].
    #[arg(long)]
    pub min_messages: Option<u64>,
    /// A short run (under 20 s here): fewer sizes, fewer and shorter blocks.
    #[arg(long)]
    pub quick: bool,
    /// Where the processes run.
    #[arg(long, value_enum, default_value_t = Pinning::Cross)]
    pub pinning: Pinning,
    /// CPU of the leader [default: the first CPU this process may use].
    #[arg(long)]
    pub leader_cpu: Option<usize>,
    /// CPU of the followers [default: the second CPU this process may use].
    #[arg(long)]
    pub follower_cpu: Option<usize>,
    /// tmpfs directory for the run's files (`<dir>/hako-bench-<pid>`).
    #[arg(long, default_value = "/dev/shm")]
    pub shm_dir: PathBuf,
    /// Also write every figure, and the machine, to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write the tables and the summary to this Markdown file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Also draw latency against payload size (log–log, one line per
    /// transport, a panel per payload mode) into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress bar (it is off anyway when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// What the run was, for the reports.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// Pinning mode.
    pub pinning: Pinning,
    /// The leader's CPU, if pinned.
    pub leader_cpu: Option<usize>,
    /// The followers' CPU, if pinned.
    pub follower_cpu: Option<usize>,
    /// The suite's settings.
    pub plan: Plan,
    /// The bridge rows' blocks.
    pub bridge_plan: Plan,
    /// One-way settings.
    pub stream: StreamPlan,
    /// Fan-out receivers.
    pub fanout: u32,
    /// Wall time of the run.
    pub wall: Duration,
    /// The machine ([`json::machine`]).
    pub machine: serde_json::Value,
}

/// Checks the arguments and builds the suite's configuration.
fn configure(args: &BenchArgs, root: &Path) -> Result<(SuiteConfig, Pinning)> {
    let all = Transports::new(HakoPubSub::default());
    let explicit = args.transports.is_some();
    let transports = args
        .transports
        .clone()
        .unwrap_or_else(|| Kind::SUITE.to_vec());
    let mut kinds: Vec<Kind> = Vec::new();
    for k in transports {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let dedup = |v: Vec<usize>| {
        v.into_iter().fold(Vec::new(), |mut out, s| {
            if !out.contains(&s) {
                out.push(s);
            }
            out
        })
    };
    let default_sizes: &[usize] = if args.quick {
        &[64, 4 << 10, 64 << 10, 1 << 20]
    } else {
        &[64, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 4 << 20]
    };
    let sizes = dedup(args.sizes.clone().unwrap_or_else(|| default_sizes.to_vec()));
    let default_in_flight: &[usize] = if args.quick { &[64] } else { &[64, 1 << 10] };
    let in_flight_sizes = dedup(
        args.in_flight_sizes
            .clone()
            .unwrap_or_else(|| default_in_flight.to_vec()),
    );
    let depths = dedup_copy(&args.in_flight);
    let reqres = dedup_copy(args.reqres_transports.as_deref().unwrap_or(Kind::REQRES));
    let asynch = dedup_copy(args.async_transports.as_deref().unwrap_or(Kind::ASYNC));
    let default_async: &[usize] = if args.quick {
        &[64, 64 << 10]
    } else {
        &[64, 4 << 10, 64 << 10, 1 << 20]
    };
    let async_sizes = dedup(
        args.async_sizes
            .clone()
            .unwrap_or_else(|| default_async.to_vec()),
    );
    let async_in_flight_sizes = dedup(args.async_in_flight_sizes.clone());
    let async_depths = dedup_copy(&args.async_in_flight);
    let bridge = dedup_copy(args.bridge_transports.as_deref().unwrap_or(Kind::BRIDGE));
    let bridge_sizes = dedup(args.bridge_sizes.clone());
    if let Some(&big) = sizes
        .iter()
        .chain(&in_flight_sizes)
        .chain(&async_sizes)
        .chain(&async_in_flight_sizes)
        .chain(&bridge_sizes)
        .find(|&&s| s > MAX_SIZE)
    {
        return Err(format!(
            "size {} is above the largest the suite supports ({})",
            format_size(big),
            format_size(MAX_SIZE)
        )
        .into());
    }
    let patterns = args.patterns.clone();
    // A transport the user named must carry every size given (the floors'
    // "ping-pong only" is no error: one-way rows just skip them, as rate
    // rows skip what cannot keep requests in flight).
    let named = kinds
        .iter()
        .filter(|_| explicit)
        .map(|k| (k, &sizes))
        .chain(args.reqres_transports.iter().flatten().map(|k| (k, &sizes)))
        .chain(
            args.async_transports
                .iter()
                .flatten()
                .map(|k| (k, &async_sizes)),
        )
        .chain(
            args.bridge_transports
                .iter()
                .flatten()
                .map(|k| (k, &bridge_sizes)),
        );
    for (&k, sizes) in named {
        for &size in sizes {
            if let Some(why) = all.get(k).row_skip_reason(size, Pattern::PingPong) {
                return Err(format!(
                    "transport {} cannot carry {} messages: {why}",
                    k.name(),
                    format_size(size)
                )
                .into());
            }
        }
    }
    let quick = args.quick;
    let iterations = args
        .iterations
        .unwrap_or(if quick { 2_000 } else { 20_000 });
    let blocks = args.blocks.unwrap_or(if quick { 2 } else { 4 }).max(1);
    let warmup = args.warmup.unwrap_or(iterations / 10);
    let budget = Duration::from_millis(args.block_ms.unwrap_or(if quick { 3 } else { 12 }));
    let probe = if quick { 300 } else { 1_000 };
    let plan = Plan {
        blocks,
        iterations: (iterations / u64::from(blocks)).max(1),
        min_iterations: 10,
        warmup: warmup / u64::from(blocks),
        budget,
        probe,
        probe_warmup: probe / 5,
    };
    // A round trip through Zenoh takes a hundred µs to milliseconds, a
    // thousand times a busy-polled one, and a hako-bridge block spends half
    // a second starting its bridges anyway: blocks of 50 times the time,
    // so that each holds enough round trips for a median, and at least 4
    // of them unless told (two blocks of these rows gave ratios that moved
    // by 0.2x from run to run).
    let bridge_plan = Plan {
        budget: budget * 50,
        blocks: args.blocks.unwrap_or(4).max(1),
        ..plan
    };
    let stream = StreamPlan {
        // One-way runs are long and steadier than single round trips.
        blocks: blocks.min(3),
        budget: budget * 4,
        min_messages: args.min_messages.unwrap_or(if quick { 100 } else { 1_000 }),
        max_messages: if quick { 20_000 } else { 100_000 },
        cap: Duration::from_millis(if quick { 40 } else { 100 }),
    };
    let (first, second) = suite::default_cpus()?;
    let (leader_cpu, follower_cpu) = match args.pinning {
        Pinning::Cross => {
            let l = args.leader_cpu.unwrap_or(first);
            let f = args
                .follower_cpu
                .unwrap_or(if l == second { first } else { second });
            (Some(l), Some(f))
        }
        Pinning::Same => {
            let l = args.leader_cpu.unwrap_or(first);
            (Some(l), Some(l))
        }
        Pinning::None => (None, None),
    };
    Ok((
        SuiteConfig {
            root: root.to_owned(),
            transports: kinds,
            sizes,
            patterns,
            payloads: args.payload.clone(),
            fanout: args.fanout,
            plan,
            stream,
            leader_cpu,
            follower_cpu,
            all,
            reqres,
            depths,
            in_flight_sizes,
            asynch,
            async_sizes,
            async_depths,
            async_in_flight_sizes,
            footprint: if args.no_footprint {
                Vec::new()
            } else {
                dedup_copy(&args.footprint)
            },
            bridge,
            bridge_sizes,
            bridge_plan,
        },
        args.pinning,
    ))
}

/// `items` in order, each once.
fn dedup_copy<T: Copy + PartialEq>(items: &[T]) -> Vec<T> {
    items.iter().fold(Vec::new(), |mut out, &x| {
        if !out.contains(&x) {
            out.push(x);
        }
        out
    })
}

/// Removes the run's files and exits on SIGINT or SIGTERM (the followers die
/// with this process).
fn clean_on_signal(root: PathBuf) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let _ = std::fs::remove_dir_all(&root);
            rundir::remove_own_shm(Path::new(POSIX_SHM_DIR), PEER_SHM_PREFIX);
            eprintln!("\nhako bench: interrupted; removed {}", root.display());
            // SAFETY: `_exit` ends the process at once and touches no memory
            // of ours. Not `std::process::exit`: its exit handlers (of the
            // libraries measured) may wait for locks the interrupted main
            // thread holds, and the process would hang instead of ending.
            unsafe { libc::_exit(128 + sig) };
        }
    });
    Ok(())
}

/// Runs `hako bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    for dir in rundir::clean_stale(&args.shm_dir, rundir::DEFAULT_PREFIX)
        .map_err(|e| format!("cannot look into {}: {e}", args.shm_dir.display()))?
    {
        eprintln!("removed the leftovers of a dead run: {}", dir.display());
    }
    let _ = rundir::clean_stale_shm(Path::new(POSIX_SHM_DIR), PEER_SHM_PREFIX);
    let run_dir = RunDir::create(&args.shm_dir, rundir::DEFAULT_PREFIX).map_err(|e| {
        format!(
            "cannot create the run directory in {}: {e}",
            args.shm_dir.display()
        )
    })?;
    let (cfg, pinning) = configure(&args, run_dir.path())?;
    // Before any pinning narrows what this process sees.
    let machine = json::machine();
    clean_on_signal(run_dir.path().to_owned())?;

    let bar = if args.no_progress {
        ProgressBar::hidden()
    } else {
        // Draws only when stderr is a terminal.
        ProgressBar::with_draw_target(Some(cfg.steps()), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let result = suite::run(&cfg, &mut |p| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        bar.set_message(p.what);
    });
    bar.finish_and_clear();
    let result = result?;
    let info = RunInfo {
        pinning,
        leader_cpu: cfg.leader_cpu,
        follower_cpu: cfg.follower_cpu,
        plan: cfg.plan,
        bridge_plan: cfg.bridge_plan,
        stream: cfg.stream,
        fanout: cfg.fanout,
        wall: start.elapsed(),
        machine,
    };
    drop(run_dir);
    rundir::remove_own_shm(Path::new(POSIX_SHM_DIR), PEER_SHM_PREFIX);

    print!("{}", output::text(&result, &info));
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&json::json(&result, &info))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, output::markdown(&result, &info))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.plot {
        plot::latency_svg(&result, path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
