//! Every transport does a few round trips correctly between two processes,
//! and sends a few messages one way (throughput) and to several followers
//! (fan-out), in both payload modes: the followers are the `hako-bench`
//! binary, the leader this test, talking through the same harness as the
//! benchmark, and keeps requests in flight through the request/response
//! transports. With the `peers` feature this covers iceoryx2 and shmipc too. Sequence tags at both ends of
//! every message make a lost, reordered or truncated message fail the row.
//! The transports of the `bridge` feature, which start Zenoh sessions and
//! `hako-bridge` processes, have a test of their own (tests/bridge.rs).
//! Asserts behaviour only, never speed; a watchdog turns a hang into a
//! failure.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hako_bench::harness::{OneWay, Session, SessionConfig};
use hako_bench::registry::{Kind, Transports, BRIDGE_NAMES, GO_NAMES};
use hako_bench::sys::cpu;
use hako_bench::sys::rundir::RunDir;
use hako_bench::transport::{Pattern, PayloadMode};
use hako_bench::transports::kernel::msgsize_max;

/// Aborts the test process if the test that made it is still running after
/// 120 s (the followers die with it: PDEATHSIG); disarmed on drop, so a
/// finished test's watchdog never fires during a later one.
struct Watchdog(Arc<AtomicBool>);

fn watchdog(what: &'static str) -> Watchdog {
    let done = Arc::new(AtomicBool::new(false));
    let seen = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(100));
            // Relaxed: a flag with no data behind it.
            if seen.load(Ordering::Relaxed) {
                return;
            }
        }
        eprintln!("watchdog: {what} hung for 120 s");
        std::process::abort();
    });
    Watchdog(done)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Relaxed: as above.
        self.0.store(true, Ordering::Relaxed);
    }
}

fn session(dir: &RunDir, leader_cpu: Option<usize>, follower_cpu: Option<usize>) -> Session {
    Session::start(&SessionConfig {
        root: dir.path().to_owned(),
        leader_cpu,
        follower_cpu,
        program: Some(PathBuf::from(env!("CARGO_BIN_EXE_hako-bench"))),
        dump_dir: None,
        followers: 3,
    })
    .unwrap()
}

fn run_dir(tag: &str) -> RunDir {
    let base = std::env::temp_dir().join(format!("hako-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    RunDir::create(&base, "run").unwrap()
}

/// Runs `body` in a session of its own (followers on the second CPU this
/// process may use, or on the first with `one_cpu` or when there is one),
/// then ends the session and removes its files.
fn in_session(tag: &str, one_cpu: bool, body: impl FnOnce(&mut Session)) {
    let dir = run_dir(tag);
    let base = dir.path().parent().unwrap().to_owned();
    let cpus = cpu::allowed_cpus().unwrap();
    let l = cpus[0];
    let f = if one_cpu {
        l
    } else {
        *cpus.get(1).unwrap_or(&l)
    };
    {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        *active += 1;
    }
    let mut s = session(&dir, Some(l), Some(f));
    body(&mut s);
    s.finish().unwrap();
    drop(dir);
    std::fs::remove_dir_all(base).unwrap();
    // The peer libraries' files in /dev/shm are named after this process:
    // removed once no session of it runs (the tests run in parallel).
    let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    *active -= 1;
    if *active == 0 {
        hako_bench::sys::rundir::remove_own_shm(std::path::Path::new("/dev/shm"), "hkb");
    }
}

/// Every transport of this build but those of the bridge rows (see the
/// module's documentation) and the Go ones (whose sides are a Go program,
/// tested by ./scripts/go).
fn all_but_bridge() -> Vec<Kind> {
    Kind::ALL
        .iter()
        .copied()
        .filter(|k| !BRIDGE_NAMES.contains(&k.name()) && !GO_NAMES.contains(&k.name()))
        .collect()
}

/// Sessions running now in this process.
static ACTIVE: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// Runs `kinds` at each size in both payload modes: 3 untimed and 25 timed
/// round trips each.
fn round_trips(session: &mut Session, kinds: &[Kind], sizes: &[usize]) {
    let all = Transports::default();
    for &kind in kinds {
        let t = all.get(kind);
        for &size in sizes {
            if t.row_skip_reason(size, Pattern::PingPong).is_some() {
                continue;
            }
            for payload in PayloadMode::ALL {
                let r = t
                    .run_row(session, size, payload, 3, 25)
                    .unwrap_or_else(|e| panic!("{} at {size} B, {payload:?}: {e}", kind.name()));
                assert_eq!(r.transport, kind.name());
                assert_eq!(r.size, size);
                assert_eq!(r.samples.len(), 25);
                assert_eq!(r.stats.count, 25);
            }
        }
    }
}

/// Sends 40 messages one way (after 5 untimed) through `kinds` at each
/// size, to one follower and to three, in both payload modes.
fn one_way(session: &mut Session, kinds: &[Kind], sizes: &[usize]) {
    let all = Transports::default();
    for &kind in kinds {
        let t = all.get(kind);
        for &size in sizes {
            for (pattern, followers) in [(Pattern::Throughput, 1), (Pattern::FanOut, 3)] {
                if t.row_skip_reason(size, pattern).is_some() {
                    continue;
                }
                for payload in PayloadMode::ALL {
                    let spec = OneWay {
                        pattern,
                        payload,
                        size,
                        followers,
                        warmup: 5,
                        messages: 40,
                        depth: 1,
                    };
                    let r = t.run_one_way(session, spec).unwrap_or_else(|e| {
                        panic!("{} {pattern:?} at {size} B, {payload:?}: {e}", kind.name())
                    });
                    assert_eq!(r.transport, kind.name());
                    assert!(r.elapsed_ns > 0);
                    assert!(r.messages_per_s() > 0.0);
                }
            }
        }
    }
}

#[test]
fn every_transport_round_trips_across_cpus() {
    let _watchdog = watchdog("every_transport_round_trips_across_cpus");
    // Two CPUs if there are two; otherwise both on one (still correct). In
    // a thread with a large stack: iceoryx2's blackboard hands a value out
    // by value, 1 MiB on the stack, copied several times over in an
    // unoptimised build (16 MiB overflowed), far more than a test thread's
    // 2 MiB.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            in_session("cross", false, |s| {
                round_trips(s, &all_but_bridge(), &[1, 64, 4096, 1 << 20]);
            });
        })
        .expect("a thread")
        .join()
        .expect("the round trips");
}

#[test]
fn every_transport_streams_and_fans_out() {
    let _watchdog = watchdog("every_transport_streams_and_fans_out");
    // A large stack, as for the round trips (iceoryx2's blackboard).
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            in_session("oneway", false, |s| {
                one_way(s, &all_but_bridge(), &[1, 4096, 1 << 20]);
            });
        })
        .expect("a thread")
        .join()
        .expect("the one-way rows");
    // The floors measure ping-pong only, and say so.
    let all = Transports::default();
    let why = all
        .get(Kind::Floor)
        .row_skip_reason(64, Pattern::Throughput)
        .unwrap();
    assert!(why.contains("ping-pong only"), "{why}");
}

/// shmipc falls back to its unix socket when its shared memory is full, and
/// a message sent that way can overtake those queued in shared memory. With
/// the sender running ahead, that reordered messages within a few hundred
/// until the adapter waited for shared memory instead: stream enough 1 MiB
/// messages to fill it many times over (it holds 32 MiB at this size), to one
/// follower and to three. The adapter fails a row whose stream fell back,
/// and the tags at both ends of every message catch a reordering.
#[cfg(feature = "peers")]
#[test]
fn shmipc_streams_in_order_when_its_shared_memory_fills() {
    let _watchdog = watchdog("shmipc_streams_in_order_when_its_shared_memory_fills");
    let all = Transports::default();
    let shmipc = all.get(Kind::Shmipc);
    in_session("shmipc", false, |s| {
        for (pattern, followers) in [(Pattern::Throughput, 1), (Pattern::FanOut, 3)] {
            assert!(shmipc.row_skip_reason(1 << 20, pattern).is_none());
            let spec = OneWay {
                pattern,
                payload: PayloadMode::Touch,
                size: 1 << 20,
                followers,
                warmup: 10,
                messages: 500,
                depth: 1,
            };
            let r = shmipc
                .run_one_way(s, spec)
                .unwrap_or_else(|e| panic!("shmipc {pattern:?}: {e}"));
            assert!(r.messages_per_s() > 0.0);
        }
    });
}

/// Sends 200 requests (after 7 untimed) through every transport that keeps
/// requests in flight, 1, 16 and 64 at a time, at each size and in both
/// payload modes: every answer reaches its request, in order.
#[test]
fn request_response_transports_keep_requests_in_flight() {
    let _watchdog = watchdog("request_response_transports_keep_requests_in_flight");
    let all = Transports::default();
    let mut ran = Vec::new();
    in_session("reqres", false, |s| {
        for kind in all_but_bridge() {
            let t = all.get(kind);
            for size in [1, 64, 1024, 64 << 10] {
                for depth in [1, 16, 64] {
                    let pattern = Pattern::RequestResponse;
                    if t.row_skip_reason(size, pattern).is_some()
                        || t.row_in_flight_skip(size, depth).is_some()
                    {
                        continue;
                    }
                    for payload in PayloadMode::ALL {
                        let spec = OneWay {
                            pattern,
                            payload,
                            size,
                            followers: 1,
                            warmup: 7,
                            messages: 200,
                            depth,
                        };
                        let r = t.run_one_way(s, spec).unwrap_or_else(|e| {
                            panic!(
                                "{} at {size} B, {depth} in flight, {payload:?}: {e}",
                                kind.name()
                            )
                        });
                        assert!(r.elapsed_ns > 0 && r.messages_per_s() > 0.0);
                    }
                    if !ran.contains(&kind.name()) {
                        ran.push(kind.name());
                    }
                }
            }
        }
    });
    for &k in Kind::REQRES {
        assert!(ran.contains(&k.name()), "{} never ran", k.name());
    }
    // Those that answer one message at a time say so; sockets refuse what
    // their buffers cannot hold.
    let why = all.get(Kind::Floor).row_in_flight_skip(64, 16).unwrap();
    assert!(why.contains("one request at a time"), "{why}");
    let why = all.get(Kind::Unix).row_in_flight_skip(4096, 64).unwrap();
    assert!(why.contains("socket buffers"), "{why}");
    assert!(all.get(Kind::Unix).row_in_flight_skip(1024, 64).is_none());
    let why = all
        .get(Kind::HakoReqRes)
        .row_skip_reason(64, Pattern::Throughput)
        .unwrap();
    assert!(why.contains("request/response"), "{why}");
}

#[test]
fn blocking_transports_round_trip_on_one_cpu() {
    let _watchdog = watchdog("blocking_transports_round_trip_on_one_cpu");
    let blocking = [
        Kind::HakoPark,
        Kind::HakoSpinPark,
        Kind::Futex,
        Kind::Pipe,
        Kind::Fifo,
        Kind::Unix,
        Kind::Tcp,
        Kind::Mq,
    ];
    in_session("same", true, |s| {
        round_trips(s, &blocking, &[64, 64 * 1024]);
        one_way(s, &blocking, &[64 * 1024]);
    });
}

#[test]
fn mq_skips_sizes_above_the_kernel_limit() {
    let all = Transports::default();
    let mq = all.get(Kind::Mq);
    match msgsize_max() {
        Some(max) => {
            assert!(mq.row_skip_reason(max, Pattern::PingPong).is_none());
            let why = mq.row_skip_reason(max + 1, Pattern::PingPong).unwrap();
            assert!(why.contains("msgsize_max"), "{why}");
        }
        None => assert!(mq.row_skip_reason(1 << 20, Pattern::PingPong).is_none()),
    }
    // iceoryx2's blackboard holds values of types fixed at compile time, up
    // to 1 MiB here (see its module).
    for k in all_but_bridge()
        .into_iter()
        .filter(|&k| k != Kind::Mq && k.name() != "iceoryx2-board")
    {
        assert!(
            all.get(k)
                .row_skip_reason(4 << 20, Pattern::PingPong)
                .is_none(),
            "{}",
            k.name()
        );
    }
}
