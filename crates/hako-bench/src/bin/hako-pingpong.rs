//! `hako-pingpong`: cross-process round trips through hako publish/subscribe
//! (busy-polling and blocking), a futex floor and the kernel's pipes, unix
//! sockets and message queues, each size quoted against floors measured next
//! to it.
//!
//! ```text
//! cargo run --release -p hako-bench --bin hako-pingpong -- --quick
//! cargo run --release -p hako-bench --bin hako-pingpong -- --pinning both
//! cargo run --release -p hako-bench --bin hako-pingpong -- --transports hako,hako-park,futex --sizes 64,4M
//! cargo run --release -p hako-bench --bin hako-pingpong -- --same-cpu --transports hako-park,futex,pipe
//! ```
//!
//! Each row is measured in blocks between short floor probes; see
//! [`hako_bench::harness::blocks`] for why and how the ratios are formed.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use hako_bench::harness::blocks::{self, Plan};
use hako_bench::harness::follower;
use hako_bench::harness::{RunRow, Session, SessionConfig};
use hako_bench::registry::{Kind, Transports};
use hako_bench::report::{self, format_size, parse_size, RunReport};
use hako_bench::sys::rundir::{self, RunDir};
use hako_bench::transport::{PayloadMode, Waiting};
use hako_bench::transports::hako::pubsub::HakoPubSub;
use hako_bench::Result;

/// Where the two processes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Pinning {
    /// Leader and follower on different CPUs.
    Cross,
    /// Both on the leader's CPU.
    Same,
    /// Cross, then same, in one invocation.
    Both,
}

/// Cross-process ping-pong: hako against floors and kernel mechanisms.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// Transports to measure, in this order; any of floor, floor2, hako,
    /// hako-spin, hako-spin-park, hako-park, hako-reqres (-spin-park,
    /// -park), hako-async (-busy, -park; -mt), tokio-unix, tokio-tcp (-mt),
    /// reference, futex, pipe, fifo, unix, tcp, mq (and iceoryx2, shmipc
    /// with the `peers` feature).
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse,
          default_value = Kind::DEFAULT_LIST)]
    transports: Vec<Kind>,
    /// Message sizes (e.g. 64,1K,4KiB,1M).
    #[arg(long, value_delimiter = ',', value_parser = parse_size,
          default_value = "64,1K,4K,64K,1M,4M")]
    sizes: Vec<usize>,
    /// Most timed round trips per row and transport, split over the blocks
    /// [default: 100000; --quick: 10000]; slow transports do fewer (see
    /// --block-ms).
    #[arg(long)]
    iterations: Option<u64>,
    /// Untimed round trips per row and transport, split over the blocks
    /// [default: iterations / 10].
    #[arg(long)]
    warmup: Option<u64>,
    /// Time per block and transport: a slow transport does as many round
    /// trips as fit [default: 300; --quick: 25].
    #[arg(long)]
    block_ms: Option<u64>,
    /// Fewest timed round trips per block and transport [default: 20].
    #[arg(long)]
    min_iterations: Option<u64>,
    /// Blocks per row, each between two floor probes [default: 10; --quick: 5].
    #[arg(long)]
    blocks: Option<u32>,
    /// Timed round trips of each floor probe [default: 2000; --quick: 500].
    #[arg(long)]
    probe_iterations: Option<u64>,
    /// Fewer iterations, for a smoke test.
    #[arg(long)]
    quick: bool,
    /// Leader and follower on different CPUs (cross), on one (same), or
    /// both modes one after the other.
    #[arg(long, value_enum, default_value_t = Pinning::Cross)]
    pinning: Pinning,
    /// Both processes on the leader's CPU (the same as --pinning same).
    #[arg(long)]
    same_cpu: bool,
    /// CPU of the leader (this process).
    #[arg(long, default_value_t = 0)]
    leader_cpu: usize,
    /// CPU of the follower (cross-CPU mode).
    #[arg(long, default_value_t = 1)]
    follower_cpu: usize,
    /// Do not pin either process.
    #[arg(long)]
    no_pin: bool,
    /// tmpfs directory for the run's domain root (`<dir>/hako-bench-<pid>`).
    #[arg(long, default_value = "/dev/shm")]
    shm_dir: PathBuf,
    /// Samples a subscriber queues (`subscriber_max_buffer_size`).
    #[arg(long, default_value_t = 2)]
    buffer: u32,
    /// Samples a subscriber may hold (`subscriber_max_borrowed_samples`).
    #[arg(long, default_value_t = 1)]
    borrowed: u32,
    /// Samples the leader's publisher may loan at once.
    #[arg(long, default_value_t = 1)]
    loans: u32,
    /// Also measure the reference transport (hako's data path, hand-written
    /// with no library overhead) at each size.
    #[arg(long)]
    reference: bool,
    /// Write each block's raw round-trip times (ns, in order) to files in
    /// this existing directory.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// Also write the results to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let result = if let Some(args) = follower::follower_args() {
        let all = Transports::default();
        args.and_then(|a| follower::follower_main(&a, &all.for_follower()))
    } else {
        run(Cli::parse())
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hako-pingpong: {e}");
            ExitCode::FAILURE
        }
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// What the floor probes are, by their transport's name.
fn floor_name(probe: &str) -> &'static str {
    match probe {
        "futex" => "futex floor",
        _ => "cache-line floor",
    }
}

/// One pinning mode to run.
#[derive(Debug, Clone, Copy)]
struct Mode {
    name: &'static str,
    leader_cpu: Option<usize>,
    follower_cpu: Option<usize>,
}

fn modes(cli: &Cli) -> Vec<Mode> {
    if cli.no_pin {
        return vec![Mode {
            name: "unpinned",
            leader_cpu: None,
            follower_cpu: None,
        }];
    }
    let cross = Mode {
        name: "cross-cpu",
        leader_cpu: Some(cli.leader_cpu),
        follower_cpu: Some(cli.follower_cpu),
    };
    let same = Mode {
        name: "same-cpu",
        leader_cpu: Some(cli.leader_cpu),
        follower_cpu: Some(cli.leader_cpu),
    };
    match (cli.same_cpu, cli.pinning) {
        (true, _) | (false, Pinning::Same) => vec![same],
        (false, Pinning::Cross) => vec![cross],
        (false, Pinning::Both) => vec![cross, same],
    }
}

fn run(cli: Cli) -> Result<()> {
    let iterations = cli
        .iterations
        .unwrap_or(if cli.quick { 10_000 } else { 100_000 });
    let warmup = cli.warmup.unwrap_or(iterations / 10);
    let blocks = cli.blocks.unwrap_or(if cli.quick { 5 } else { 10 }).max(1);
    let probe = cli
        .probe_iterations
        .unwrap_or(if cli.quick { 500 } else { 2_000 });
    let plan = Plan {
        blocks,
        iterations: (iterations / u64::from(blocks)).max(1),
        min_iterations: cli.min_iterations.unwrap_or(20),
        warmup: warmup / u64::from(blocks),
        budget: Duration::from_millis(cli.block_ms.unwrap_or(if cli.quick { 25 } else { 300 })),
        probe,
        probe_warmup: probe / 5,
    };
    let all = Transports::new(HakoPubSub {
        buffer: cli.buffer,
        borrowed: cli.borrowed,
        max_loans: cli.loans,
        ..HakoPubSub::default()
    });
    let mut kinds: Vec<Kind> = Vec::new();
    for &k in &cli.transports {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    if cli.reference && !kinds.contains(&Kind::Reference) {
        kinds.push(Kind::Reference);
    }

    for dir in rundir::clean_stale(&cli.shm_dir, rundir::DEFAULT_PREFIX)? {
        eprintln!("removed the leftovers of a dead run: {}", dir.display());
    }
    let run_dir = RunDir::create(&cli.shm_dir, rundir::DEFAULT_PREFIX).map_err(|e| {
        format!(
            "cannot create the run directory in {}: {e}",
            cli.shm_dir.display()
        )
    })?;

    let clock = hako_bench::sys::clock::clock_cost_ns();
    println!(
        "hako-pingpong: round trips between two processes; {} blocks per row, each transport \
         doing as many round trips per block as fit in {} ms ({}..={}), between floor probes \
         of {probe}; hako: buffer {}, borrowed {}, loans {}",
        blocks,
        plan.budget.as_millis(),
        plan.min_iterations.min(plan.iterations),
        plan.iterations,
        cli.buffer,
        cli.borrowed,
        cli.loans
    );
    println!("clock read: {clock:.1} ns (one per round trip, read while the message travels)");
    let local = if kinds.iter().any(|k| k.name().starts_with("hako")) {
        let ns =
            hako_bench::transports::hako::pubsub::single_thread_ns(run_dir.path(), 64, iterations)?;
        println!(
            "hako in one thread (loan, send, receive, drop a 64 B sample; no other CPU): \
             {ns:.1} ns per message"
        );
        Some(ns)
    } else {
        None
    };

    let mut reports = Vec::new();
    for mode in modes(&cli) {
        let root = run_dir.path().join(mode.name);
        std::fs::create_dir(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        reports.push(run_mode(
            &cli, mode, &root, &all, &kinds, &plan, iterations,
        )?);
    }
    if let Some(path) = &cli.json {
        std::fs::write(path, report::json(clock, local, &reports))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    drop(run_dir);
    Ok(())
}

fn run_mode(
    cli: &Cli,
    mode: Mode,
    root: &Path,
    all: &Transports,
    kinds: &[Kind],
    plan: &Plan,
    iterations: u64,
) -> Result<RunReport> {
    let same_cpu = mode.leader_cpu.is_some() && mode.leader_cpu == mode.follower_cpu;
    // Two busy-polling processes on one CPU hand over only when the
    // scheduler preempts the spinning one: leave them out, and probe the
    // futex floor instead of the cache line.
    let (probe, transports): (&dyn RunRow, Vec<&dyn RunRow>) = if same_cpu {
        let (busy, rest): (Vec<Kind>, Vec<Kind>) = kinds
            .iter()
            .partition(|&&k| all.get(k).row_waiting() == Waiting::BusyPoll);
        if !busy.is_empty() {
            println!(
                "\n[{}] left out: {} (busy-polling: on one CPU each hand-over waits for the \
                 scheduler to preempt the spinning side)",
                mode.name,
                busy.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            );
        }
        if rest.is_empty() {
            return Err("nothing to measure on one CPU: every transport given busy-polls".into());
        }
        (
            all.get(Kind::Futex),
            rest.into_iter().map(|k| all.get(k)).collect(),
        )
    } else {
        (
            all.get(Kind::Floor),
            kinds.iter().map(|&k| all.get(k)).collect(),
        )
    };

    let mut session = Session::start(&SessionConfig {
        root: root.to_owned(),
        leader_cpu: mode.leader_cpu,
        follower_cpu: mode.follower_cpu,
        program: None,
        dump_dir: cli.dump.clone(),
        followers: 1,
    })?;
    let pin = match (mode.leader_cpu, mode.follower_cpu) {
        (Some(l), Some(f)) => format!("leader on CPU {l}, follower on CPU {f}"),
        _ => format!(
            "not pinned (leader started on CPU {}, follower on CPU {})",
            rustix::thread::sched_getcpu(),
            session
                .follower_cpu()
                .map_or_else(|| "?".to_owned(), |c| c.to_string())
        ),
    };
    println!("\n=== {}: {pin} ===", mode.name);
    // The blocking probe is slow: measure it in one go with the probe's count.
    let one_go = if same_cpu { plan.probe * 5 } else { iterations };
    let floor = probe
        .run_row(&mut session, 8, PayloadMode::Touch, one_go / 10, one_go)?
        .stats;
    println!(
        "{} ({one_go} round trips in one go): median {:.3} µs, p99 {:.3} µs",
        floor_name(probe.row_name()),
        us(floor.median),
        us(floor.p99)
    );

    let mut rows = Vec::new();
    for &size in &cli.sizes {
        let row = blocks::measure_row(
            &mut session,
            probe,
            &transports,
            size,
            PayloadMode::Touch,
            plan,
        )?;
        let parts: Vec<String> = row
            .transports
            .iter()
            .map(|m| format!("{} {:.3} µs", m.name, us(m.stats.median)))
            .collect();
        eprintln!(
            "  [{}] {:>8}: {} probes {:.3} µs, {}; {}/{} blocks stable",
            mode.name,
            format_size(size),
            row.probe,
            us(row.floor.median),
            parts.join(", "),
            row.stable,
            row.blocks
        );
        rows.push(row);
    }
    session.finish()?;

    println!(
        "round trips in µs over the stable blocks; /probes (the {}) and /futex = median \
         over those blocks of (block interquartile mean / the other's next to it); cpu = CPU \
         µs per round trip of the leader and the follower (their process CPU clocks); sleeps = \
         their voluntary context switches per round trip (getrusage)",
        floor_name(probe.row_name())
    );
    print!("{}", report::table(&rows));
    if rows.iter().any(|r| r.stable == 0) {
        println!("! no block of this row had agreeing floor probes; all blocks counted");
    }
    let comparison = report::comparison(&rows);
    if !comparison.is_empty() {
        println!(
            "\nhako against the futex floor and the kernel (median over blocks of hako's block \
             median / the other's; below 1x hako is faster)"
        );
        print!("{comparison}");
    }
    let goals = report::goals(&rows);
    if !goals.is_empty() {
        println!();
        print!("{goals}");
    }
    Ok(RunReport {
        pinning: mode.name,
        leader_cpu: mode.leader_cpu,
        follower_cpu: mode.follower_cpu,
        floor,
        rows,
    })
}
