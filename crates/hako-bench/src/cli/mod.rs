//! `hako bench` (the program `hako-bench`, which the `hako` tool runs for
//! its `bench` subcommand): the IPC comparison suite.
//!
//! Runs [`crate::suite`] with the arguments of [`BenchArgs`] ([`config`]),
//! once per pinning mode, shows a progress bar on stderr while it runs (only
//! on a terminal), then prints the report ([`crate::report`]) and writes the
//! files asked for: `--json`, `--markdown`, `--plot`.
//!
//! The run's files live in a private domain root, `<shm dir>/hako-bench-<pid>`,
//! removed at the end, on Ctrl-C (SIGINT) and on SIGTERM; the followers die
//! with the leader (`PR_SET_PDEATHSIG`). Leftovers of runs that were killed
//! outright (SIGKILL) are removed by the next run.

pub mod args;
pub mod config;

pub use args::{BenchArgs, Pinning, MAX_SIZE};

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::Result;
use crate::report::{self, Meta, Report, Run};
use crate::suite;
use crate::sys::rundir::{self, RunDir};
use crate::transport::Pattern;
use crate::transports::hako::pubsub::single_thread_ns;

/// Prefix of the shared-memory files iceoryx2 keeps in [`POSIX_SHM_DIR`].
const PEER_SHM_PREFIX: &str = "hkb";

/// Where `shm_open` puts its files, whatever `--shm-dir` says.
const POSIX_SHM_DIR: &str = "/dev/shm";

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
    if let Some(dir) = &args.dump {
        if !dir.is_dir() {
            return Err(format!("--dump {}: not a directory", dir.display()).into());
        }
    }
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
    let modes = args.pinning.modes();
    let mut configs = Vec::new();
    for (i, &mode) in modes.iter().enumerate() {
        let root = if modes.len() == 1 {
            run_dir.path().to_owned()
        } else {
            let root = run_dir.path().join(mode.label());
            std::fs::create_dir(&root)
                .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
            root
        };
        let mut cfg = config::configure(&args, &root, mode)?;
        if i > 0 {
            // The footprint does not depend on the pinning.
            cfg.footprint.clear();
        }
        configs.push((mode, cfg));
    }
    // Before any pinning narrows what this process sees.
    let machine = report::machine();
    clean_on_signal(run_dir.path().to_owned())?;

    let bar = if args.no_progress {
        ProgressBar::hidden()
    } else {
        // Draws only when stderr is a terminal.
        let steps = configs.iter().map(|(_, c)| c.steps()).sum();
        ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let mut runs = Vec::new();
    let mut done = 0;
    for (mode, cfg) in &configs {
        // hako's cost with no other CPU involved, when it is measured.
        let single = cfg.patterns.contains(&Pattern::PingPong)
            && cfg.transports.iter().any(|k| k.name().starts_with("hako"));
        let single_thread_ns = if single {
            Some(single_thread_ns(&cfg.root, 64, cfg.plan.iterations * 10)?)
        } else {
            None
        };
        let result = suite::run(cfg, &mut |p| {
            bar.set_position(done + p.done);
            bar.set_message(format!("{} {}", mode.label(), p.what));
        });
        done += cfg.steps();
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                bar.finish_and_clear();
                return Err(e);
            }
        };
        runs.push(Run {
            pinning: mode.label(),
            leader_cpu: cfg.leader_cpu,
            follower_cpu: cfg.follower_cpu,
            single_thread_ns,
            result,
        });
    }
    bar.finish_and_clear();
    let (_, first) = &configs[0];
    let hako = config::hako_settings(&args);
    let report = Report {
        meta: Meta {
            machine,
            plan: first.plan,
            bridge_plan: first.bridge_plan,
            stream: first.stream,
            fanout: first.fanout,
            hako: format!(
                "buffer {}, borrowed {}, loans {}",
                hako.buffer, hako.borrowed, hako.max_loans
            ),
            wall: start.elapsed(),
        },
        runs,
    };
    drop(run_dir);
    rundir::remove_own_shm(Path::new(POSIX_SHM_DIR), PEER_SHM_PREFIX);

    print!("{}", report::text::text(&report));
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report::json::json(&report))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, report::text::markdown(&report))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.plot {
        // The first mode's round trips.
        report::plot::latency_svg(&report.runs[0].result, path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
