//! Every transport does a few round trips correctly between two processes:
//! the follower is the `hako-pingpong` binary, the leader this test, talking
//! through the same harness as the benchmark. Sequence tags at both ends of
//! every message make a lost, reordered or truncated message fail the row.
//! Asserts behaviour only, never speed; a watchdog turns a hang into a
//! failure.

use std::path::PathBuf;
use std::time::Duration;

use hako_bench::cpu;
use hako_bench::harness::{Session, SessionConfig};
use hako_bench::kernel::msgsize_max;
use hako_bench::rundir::RunDir;
use hako_bench::select::{Kind, Transports};

fn watchdog(what: &'static str) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("watchdog: {what} hung for 120 s");
        // Kills the test process; the follower dies with it (PDEATHSIG).
        std::process::abort();
    });
}

fn session(dir: &RunDir, leader_cpu: Option<usize>, follower_cpu: Option<usize>) -> Session {
    Session::start(&SessionConfig {
        root: dir.path().to_owned(),
        leader_cpu,
        follower_cpu,
        program: Some(PathBuf::from(env!("CARGO_BIN_EXE_hako-pingpong"))),
        dump_dir: None,
    })
    .unwrap()
}

fn run_dir(tag: &str) -> RunDir {
    let base = std::env::temp_dir().join(format!("hako-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    RunDir::create(&base, "run").unwrap()
}

/// Runs `kinds` at each size: 3 untimed and 25 timed round trips each.
fn round_trips(session: &mut Session, kinds: &[Kind], sizes: &[usize]) {
    let all = Transports::default();
    for &kind in kinds {
        let t = all.get(kind);
        for &size in sizes {
            if t.row_skip_reason(size).is_some() {
                continue;
            }
            let r = t
                .run_row(session, size, 3, 25)
                .unwrap_or_else(|e| panic!("{} at {size} B: {e}", kind.name()));
            assert_eq!(r.transport, kind.name());
            assert_eq!(r.size, size);
            assert_eq!(r.samples.len(), 25);
            assert_eq!(r.stats.count, 25);
        }
    }
}

#[test]
fn every_transport_round_trips_across_cpus() {
    watchdog("every_transport_round_trips_across_cpus");
    let dir = run_dir("cross");
    let base = dir.path().parent().unwrap().to_owned();
    // Two CPUs if there are two; otherwise both on one (still correct).
    let cpus = cpu::allowed_cpus().unwrap();
    let (l, f) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
    let mut s = session(&dir, Some(l), Some(f));
    round_trips(&mut s, &Kind::ALL, &[1, 64, 4096, 1 << 20]);
    s.finish().unwrap();
    drop(dir);
    std::fs::remove_dir_all(base).unwrap();
}

#[test]
fn blocking_transports_round_trip_on_one_cpu() {
    watchdog("blocking_transports_round_trip_on_one_cpu");
    let dir = run_dir("same");
    let base = dir.path().parent().unwrap().to_owned();
    let c = cpu::allowed_cpus().unwrap()[0];
    let mut s = session(&dir, Some(c), Some(c));
    let blocking = [
        Kind::HakoPark,
        Kind::HakoSpinPark,
        Kind::Futex,
        Kind::Pipe,
        Kind::Unix,
        Kind::Mq,
    ];
    round_trips(&mut s, &blocking, &[64, 64 * 1024]);
    s.finish().unwrap();
    drop(dir);
    std::fs::remove_dir_all(base).unwrap();
}

#[test]
fn mq_skips_sizes_above_the_kernel_limit() {
    let all = Transports::default();
    let mq = all.get(Kind::Mq);
    match msgsize_max() {
        Some(max) => {
            assert!(mq.row_skip_reason(max).is_none());
            let why = mq.row_skip_reason(max + 1).unwrap();
            assert!(why.contains("msgsize_max"), "{why}");
        }
        None => assert!(mq.row_skip_reason(1 << 20).is_none()),
    }
    for k in Kind::ALL.into_iter().filter(|&k| k != Kind::Mq) {
        assert!(
            all.get(k).row_skip_reason(4 << 20).is_none(),
            "{}",
            k.name()
        );
    }
}
