//! `--low-latency` (and its settings-file key): the bridge polls its local
//! ports, and every pattern crosses as without it.

mod common;
use std::time::{Duration, Instant};

use common::*;
use hako::EventId;

/// How many of `samples` looks, 5 ms apart, find a thread of process
/// `pid` whose name starts with `prefix` running (state R).
fn seen_running(pid: u32, prefix: &str, samples: u32) -> u32 {
    let mut running = 0;
    for _ in 0..samples {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        for t in tasks.filter_map(Result::ok) {
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            // pid (comm) state ...
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = &stat[open + 1..close];
            let state = stat[close + 1..].split_whitespace().next();
            if comm.starts_with(prefix) && state == Some("R") {
                running += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    running
}

#[test]
fn every_pattern_crosses_with_low_latency_and_its_threads_poll() {
    let settings = std::env::temp_dir().join(format!("hako-ll-{}.toml", std::process::id()));
    std::fs::write(&settings, "low_latency = true\n").unwrap();
    let flag = settings.to_str().unwrap();
    // A's bridge from the settings file, B's from the flag.
    let (a, b, bridges) = joined_with("ll", &["--settings", flag], &["--low-latency"]);
    // Publish/subscribe, A to B.
    let ps: hako::ServiceName = "t/ll".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&ps)
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(512)
        .open_or_create()
        .unwrap();
    let publisher = sa.publisher_builder().create().unwrap();
    b.wait_for_service("t/ll");
    let sb = b
        .node
        .service_builder(&ps)
        .publish_subscribe::<u64>()
        .open()
        .unwrap();
    exactly_once(&stream(
        &publisher,
        &sb.subscriber_builder().create().unwrap(),
        100,
    ));
    // The outgoing thread of A's bridge polls while nothing comes.
    let polls = seen_running(bridges[0].child.id(), "out t/ll", 100);
    assert!(polls > 0, "the outgoing thread never ran while idle");
    // Events, B to A.
    let ev: hako::ServiceName = "t/ll-ev".try_into().unwrap();
    let eb = b
        .node
        .service_builder(&ev)
        .event()
        .open_or_create()
        .unwrap();
    let notifier = eb.notifier_builder().create().unwrap();
    a.wait_for_service("t/ll-ev");
    let ea = a.node.service_builder(&ev).event().open().unwrap();
    let listener = ea.listener_builder().create().unwrap();
    let start = Instant::now();
    'crossed: loop {
        assert!(start.elapsed() < WATCHDOG, "watchdog: no event crossed");
        notifier.notify_with_id(EventId(1)).unwrap();
        for (id, _) in listener.timed_wait(Duration::from_millis(20)).unwrap() {
            if id == EventId(1) {
                break 'crossed;
            }
        }
    }
    // Request/response: a server in A, a client in B.
    let rr: hako::ServiceName = "t/ll-rr".try_into().unwrap();
    let ra = a
        .node
        .service_builder(&rr)
        .request_response::<u64, u64>()
        .open_or_create()
        .unwrap();
    let server = ra.server_builder().create().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(r) = server.receive_timeout(Duration::from_millis(20)).unwrap() {
                    let x = *r;
                    r.send_last_copy(x * 2).unwrap();
                }
            }
        });
        b.wait_for_server("t/ll-rr");
        let rb = b
            .node
            .service_builder(&rr)
            .request_response::<u64, u64>()
            .open()
            .unwrap();
        let client = rb.client_builder().create().unwrap();
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < WATCHDOG, "watchdog: no request crossed");
            if let Ok(p) = client.send_copy(21) {
                if let Ok(Some(r)) = p.receive_timeout(Duration::from_secs(5)) {
                    assert_eq!(*r, 42);
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for x in 0..100u64 {
            let p = client.send_copy(x).unwrap();
            assert_eq!(p.blocking_receive().unwrap().map(|r| *r), Some(2 * x));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let _ = std::fs::remove_file(&settings);
}

#[test]
fn a_bad_settings_file_stops_the_bridge_and_says_where() {
    let settings = std::env::temp_dir().join(format!("hako-bad-{}.toml", std::process::id()));
    std::fs::write(&settings, "services = [\"a/**\"]\nlow_latnecy = true\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hako-bridge"))
        .arg("--settings")
        .arg(&settings)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&settings);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("low_latnecy") && err.contains("line 2"),
        "{err}"
    );
}
