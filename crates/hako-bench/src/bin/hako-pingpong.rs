//! `hako-pingpong`: cross-process round trips through hako publish/subscribe,
//! each size quoted against a shared-memory floor measured next to it.
//!
//! ```text
//! cargo run --release -p hako-bench --bin hako-pingpong -- --quick
//! cargo run --release -p hako-bench --bin hako-pingpong -- --sizes 64,4K,4M --reference
//! ```
//!
//! Each row is measured in blocks between short floor probes; see
//! [`hako_bench::blocks`] for why and how the ratio is formed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use hako_bench::blocks::{self, Plan};
use hako_bench::floor::Floor;
use hako_bench::hako_pubsub::HakoPubSub;
use hako_bench::harness::{self, RunRow, Session, SessionConfig, FOLLOWER_ARG};
use hako_bench::reference::Reference;
use hako_bench::report::{self, format_size, parse_size};
use hako_bench::rundir::{self, RunDir};
use hako_bench::Result;

/// Cross-process ping-pong: hako publish/subscribe against a one-cache-line floor.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// Message sizes (e.g. 64,1K,4KiB,1M).
    #[arg(long, value_delimiter = ',', value_parser = parse_size,
          default_value = "64,1K,4K,64K,1M,4M")]
    sizes: Vec<usize>,
    /// Timed round trips per row and transport, split over the blocks
    /// [default: 100000; --quick: 10000].
    #[arg(long)]
    iterations: Option<u64>,
    /// Untimed round trips per row and transport, split over the blocks
    /// [default: iterations / 10].
    #[arg(long)]
    warmup: Option<u64>,
    /// Blocks per row, each between two floor probes [default: 10; --quick: 5].
    #[arg(long)]
    blocks: Option<u32>,
    /// Timed round trips of each floor probe [default: 2000; --quick: 1000].
    #[arg(long)]
    probe_iterations: Option<u64>,
    /// Fewer iterations, for a smoke test.
    #[arg(long)]
    quick: bool,
    /// CPU of the leader (this process).
    #[arg(long, default_value_t = 0)]
    leader_cpu: usize,
    /// CPU of the follower.
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
    let args: Vec<String> = std::env::args().collect();
    let result = if args.get(1).map(String::as_str) == Some(FOLLOWER_ARG) {
        harness::follower_main(&args[2..], &[&Floor, &HakoPubSub::default(), &Reference])
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

fn run(cli: Cli) -> Result<()> {
    let iterations = cli
        .iterations
        .unwrap_or(if cli.quick { 10_000 } else { 100_000 });
    let warmup = cli.warmup.unwrap_or(iterations / 10);
    let blocks = cli.blocks.unwrap_or(if cli.quick { 5 } else { 10 }).max(1);
    let probe = cli
        .probe_iterations
        .unwrap_or(if cli.quick { 1_000 } else { 2_000 });
    let plan = Plan {
        blocks,
        iterations: (iterations / u64::from(blocks)).max(1),
        warmup: warmup / u64::from(blocks),
        probe,
        probe_warmup: probe / 5,
    };
    let hako = HakoPubSub {
        buffer: cli.buffer,
        borrowed: cli.borrowed,
        max_loans: cli.loans,
    };
    let mut transports: Vec<&dyn RunRow> = vec![&hako];
    if cli.reference {
        transports.push(&Reference);
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
    let (leader_cpu, follower_cpu) = if cli.no_pin {
        (None, None)
    } else {
        (Some(cli.leader_cpu), Some(cli.follower_cpu))
    };
    let mut session = Session::start(&SessionConfig {
        root: run_dir.path().to_owned(),
        leader_cpu,
        follower_cpu,
        program: None,
        dump_dir: cli.dump.clone(),
    })?;

    let clock = harness::clock_cost_ns();
    let pin = match (leader_cpu, follower_cpu) {
        (Some(l), Some(f)) => format!("leader on CPU {l}, follower on CPU {f}"),
        _ => format!(
            "not pinned (leader started on CPU {}, follower on CPU {})",
            rustix::thread::sched_getcpu(),
            session
                .follower_cpu()
                .map_or_else(|| "?".to_owned(), |c| c.to_string())
        ),
    };
    println!("hako-pingpong: round trips between two processes, busy-polling; {pin}");
    println!(
        "per row and transport: {blocks} blocks of {} timed round trips (after {} warm-up), \
         each between floor probes of {probe}; hako: buffer {}, borrowed {}, loans {}",
        plan.iterations, plan.warmup, hako.buffer, hako.borrowed, hako.max_loans
    );
    println!("clock read: {clock:.1} ns (one per timed round trip, in every number below)");
    let local = hako_bench::hako_pubsub::single_thread_ns(run_dir.path(), 64, iterations)?;
    println!(
        "hako in one thread (loan, send, receive, drop a 64 B sample; no other CPU): \
         {local:.1} ns per message"
    );
    let floor = session.run(&Floor, 8, warmup, iterations)?.stats;
    println!(
        "floor (one cache line, {iterations} round trips in one go): median {:.3} µs, p99 {:.3} µs",
        us(floor.median),
        us(floor.p99)
    );
    println!();

    let mut rows = Vec::new();
    for &size in &cli.sizes {
        let row = blocks::measure_row(&mut session, &Floor, &transports, size, &plan)?;
        let parts: Vec<String> = row
            .transports
            .iter()
            .map(|m| format!("{} {:.3} µs ({:.2}x)", m.name, us(m.stats.median), m.ratio))
            .collect();
        eprintln!(
            "  {:>8}: floor {:.3} µs, {}; {}/{} blocks stable",
            format_size(size),
            us(row.floor.median),
            parts.join(", "),
            row.stable,
            row.blocks
        );
        rows.push(row);
    }
    session.finish()?;

    println!(
        "round-trip times in µs over the stable blocks; ratio = median over those blocks of \
         (block median / floor median next to it)"
    );
    print!("{}", report::table(&rows));
    if rows.iter().any(|r| r.stable == 0) {
        println!("! no block of this row had agreeing floor probes; all blocks counted");
    }
    let worst = rows
        .iter()
        .filter_map(|r| r.transports.first())
        .map(|m| m.ratio)
        .fold(0.0, f64::max);
    println!(
        "goal (issue #2): hako median at most 2x the floor at every size: {} (worst {worst:.2}x)",
        if worst <= 2.0 { "met" } else { "NOT met" }
    );
    if let Some(path) = &cli.json {
        std::fs::write(path, report::json(clock, Some(local), &floor, &rows))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    drop(run_dir);
    Ok(())
}
