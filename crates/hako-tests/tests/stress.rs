//! Volume and concurrency across processes (issue #2, scenarios 7, 11 and 13).
//!
//! * one million 64-byte messages from one publisher process to one
//!   subscriber process under backpressure: every sequence number arrives
//!   once, in order, with an intact checksum;
//! * concurrent `open_or_create`: eight processes released together by a
//!   start barrier each open-or-create the same service and create a
//!   publisher or a subscriber; all succeed, all see the same static
//!   description, and every publisher sees every subscriber and vice versa.
//!   Several rounds, each ending with an empty domain root (the last process
//!   out removes the service);
//! * churn: processes that repeatedly open-or-create the service, create a
//!   port, (send or receive,) and drop everything, so that creation races
//!   with the removal of the service by the last process out.
//!
//! The watchdog bounds here are generous multiples of what a debug build
//! needs; they detect hangs and say nothing about speed.

use std::time::{Duration, Instant};

use hako_tests::harness::{refs, with, Domain};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

#[test]
fn one_million_messages_without_loss_or_corruption() {
    const COUNT: u64 = 1_000_000;
    let d = Domain::new("million", HELPER);
    let svc = [
        "--service",
        "it/million",
        "--overflow",
        "backpressure",
        "--buffer",
        "16",
    ];
    let count = COUNT.to_string();
    let s = with(&["subscribe", "--expect", &count, "--check-empty"], &svc);
    let p = with(
        &[
            "publish",
            "--count",
            &count,
            "--strategy",
            "block",
            "--wait-subscribers",
            "1",
            "--linger",
        ],
        &svc,
    );
    let bound = Duration::from_secs(900);
    let start = Instant::now();
    let sub = d.spawn_bounded("sub", &refs(&s), bound);
    let publ = d.spawn_bounded("pub", &refs(&p), bound);
    let out = d.wait_all(vec![sub, publ]);
    // Informational only (run with --nocapture); never asserted.
    eprintln!("1,000,000 messages across processes: {:?}", start.elapsed());

    let sub = out[0].result();
    assert_eq!(sub.num("received"), COUNT);
    assert_eq!(sub.get("seqs"), format!("0:0-{}", COUNT - 1));
    let publ = out[1].result();
    assert_eq!(publ.num("delivered"), COUNT);
    assert_eq!(publ.num("zero"), 0);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
}

#[test]
fn concurrent_open_or_create() {
    const ROUNDS: usize = 5;
    const PUBS: usize = 4;
    const SUBS: usize = 4;
    let d = Domain::new("concurrent-create", HELPER);
    let svc = [
        "--service",
        "it/contended",
        "--mode",
        "open-or-create",
        "--max-publishers",
        "4",
        "--max-subscribers",
        "4",
        "--buffer",
        "3",
        "--history",
        "1",
    ];
    for round in 0..ROUNDS {
        let f = |what: &str| format!("{what}-{round}");
        let (start, check, release) =
            (d.arg(&f("start")), d.arg(&f("check")), d.arg(&f("release")));
        let mut procs = Vec::new();
        for i in 0..PUBS + SUBS {
            let (port, peers) = if i < PUBS {
                ("publisher", SUBS)
            } else {
                ("subscriber", PUBS)
            };
            let arrived = d.arg(&f(&format!("arrived{i}")));
            let ready = d.arg(&f(&format!("ready{i}")));
            let done = d.arg(&f(&format!("done{i}")));
            let peers = peers.to_string();
            let a = with(
                &[
                    "hold",
                    "--port",
                    port,
                    "--peers",
                    &peers,
                    "--arrived-file",
                    &arrived,
                    "--start-file",
                    &start,
                    "--ready-file",
                    &ready,
                    "--check-file",
                    &check,
                    "--done-file",
                    &done,
                    "--release-file",
                    &release,
                ],
                &svc,
            );
            procs.push(d.spawn(&f(&format!("p{i}")), &refs(&a)));
        }
        // Wait until every process waits at the start barrier, then release
        // them together.
        for i in 0..PUBS + SUBS {
            d.wait_file(&f(&format!("arrived{i}")), &mut procs);
        }
        d.touch(&f("start"));
        for i in 0..PUBS + SUBS {
            d.wait_file(&f(&format!("ready{i}")), &mut procs);
        }
        d.touch(&f("check"));
        for i in 0..PUBS + SUBS {
            d.wait_file(&f(&format!("done{i}")), &mut procs);
        }
        d.touch(&f("release"));
        let out = d.wait_all(procs);

        let desc = out[0].line("DESC ").to_owned();
        assert!(desc.contains("type=hako_tests::TestMsg"), "{desc}");
        assert!(desc.contains("max_publishers: 4"), "{desc}");
        assert!(desc.contains("history_size: 1"), "{desc}");
        for o in &out {
            assert_eq!(
                o.line("DESC "),
                desc,
                "round {round}: {} disagrees",
                o.label
            );
        }
        for (i, o) in out.iter().enumerate() {
            let peers = if i < PUBS { SUBS } else { PUBS };
            assert_eq!(
                o.result().num("peers"),
                peers as u64,
                "round {round}: {}",
                o.label
            );
        }
        d.assert_root_empty();
    }
    d.finish();
}

/// `PROCS` processes, half publishers, half subscribers, each running
/// `iterations` rounds of node + open_or_create + port (+ one message) + drop.
fn churn(test: &str, send: bool) {
    const PROCS: usize = 6;
    let d = Domain::new(test, HELPER);
    // Room for every live port: 3 publisher and 3 subscriber processes.
    let svc = [
        "--service",
        "it/churn",
        "--max-publishers",
        "4",
        "--max-subscribers",
        "4",
        "--buffer",
        "4",
    ];
    let start = d.arg("start");
    let mut procs = Vec::new();
    for i in 0..PROCS {
        let port = if i % 2 == 0 {
            "publisher"
        } else {
            "subscriber"
        };
        let mut base = vec![
            "churn",
            "--port",
            port,
            "--iterations",
            "200",
            "--start-file",
            &start,
        ];
        if send {
            base.push("--send");
        }
        let a = with(&base, &svc);
        procs.push(d.spawn(&format!("churn{i}"), &refs(&a)));
    }
    d.touch("start");
    let out = d.wait_all(procs);
    for o in &out {
        assert_eq!(o.result().num("iterations"), 200, "{}", o.label);
    }
    d.finish();
}

#[test]
fn churn_of_open_or_create_and_removal() {
    churn("churn", false);
}

/// As above, but every publisher sends one message before it leaves, so it
/// often leaves while the message is queued for a subscriber that has not
/// mapped its segment: the entry is *retired*. Retired entries must neither
/// keep new publishers out nor stay behind once nobody needs them.
#[test]
fn churn_with_sends() {
    churn("churn-send", true);
}
