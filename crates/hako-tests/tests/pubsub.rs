//! Cross-process delivery (issue #2, scenarios 1–4 and 13).
//!
//! * publisher first / subscriber first: both start orders deliver everything;
//! * one publisher to eight subscriber processes: each gets every message;
//! * four publisher processes to one subscriber: per-publisher sequence
//!   numbers complete and in order;
//! * history: a subscriber that joins after the publisher sent 10 messages
//!   receives exactly the last `history_size` of them (and no more than its
//!   buffer holds).
//!
//! Every message carries a checksum that the subscriber verifies; the
//! subscriber reports the sequence numbers it received as ranges per
//! publisher (`seqs=<publisher>:<from>-<to>,...`), which the tests compare
//! exactly, so a loss, a duplicate or a reordering fails. Publishers report
//! how many deliveries `send` returned and, after every subscriber left, how
//! many pool chunks are free (a leak check). Each test runs in its own domain
//! root, which must be empty once all processes exited.

use hako_tests::exit;
use hako_tests::harness::{refs, with, Domain};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

#[test]
fn publisher_first() {
    let d = Domain::new("pub-first", HELPER);
    let svc = [
        "--service",
        "it/order",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
    ];
    let ready = d.arg("pub-ready");
    let p = with(
        &[
            "publish",
            "--count",
            "1000",
            "--wait-subscribers",
            "1",
            "--linger",
            "--ready-file",
            &ready,
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("pub", &refs(&p))];
    // The publisher exists (and waits) before the subscriber is started.
    d.wait_file("pub-ready", &mut procs);
    let s = with(&["subscribe", "--expect", "1000", "--check-empty"], &svc);
    procs.push(d.spawn("sub", &refs(&s)));
    let out = d.wait_all(procs);

    let publ = out[0].result();
    assert_eq!(publ.num("delivered"), 1000);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    let sub = out[1].result();
    assert_eq!(sub.get("seqs"), "0:0-999");
    d.finish();
}

#[test]
fn subscriber_first() {
    let d = Domain::new("sub-first", HELPER);
    // Drop-oldest with a queue that holds everything: nothing may be lost.
    let svc = [
        "--service",
        "it/order",
        "--overflow",
        "drop-oldest",
        "--buffer",
        "256",
    ];
    let ready = d.arg("sub-ready");
    let s = with(
        &["subscribe", "--expect", "200", "--ready-file", &ready],
        &svc,
    );
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    // The subscriber exists before the publisher is started.
    d.wait_file("sub-ready", &mut procs);
    let p = with(
        &[
            "publish",
            "--count",
            "200",
            "--wait-subscribers",
            "1",
            "--linger",
        ],
        &svc,
    );
    procs.push(d.spawn("pub", &refs(&p)));
    let out = d.wait_all(procs);

    assert_eq!(out[0].result().get("seqs"), "0:0-199");
    let publ = out[1].result();
    assert_eq!(publ.num("delivered"), 200);
    assert_eq!(publ.num("zero"), 0);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
}

#[test]
fn one_publisher_eight_subscribers() {
    const SUBS: usize = 8;
    const COUNT: u64 = 3000;
    let d = Domain::new("one-to-eight", HELPER);
    let svc = [
        "--service",
        "it/fan-out",
        "--overflow",
        "backpressure",
        "--buffer",
        "8",
        "--max-subscribers",
        "8",
    ];
    let count = COUNT.to_string();
    let mut procs = Vec::new();
    for i in 0..SUBS {
        let s = with(&["subscribe", "--expect", &count, "--check-empty"], &svc);
        procs.push(d.spawn(&format!("sub{i}"), &refs(&s)));
    }
    let n = SUBS.to_string();
    let p = with(
        &[
            "publish",
            "--count",
            &count,
            "--wait-subscribers",
            &n,
            "--linger",
        ],
        &svc,
    );
    procs.push(d.spawn("pub", &refs(&p)));
    let out = d.wait_all(procs);

    let expected = format!("0:0-{}", COUNT - 1);
    for o in &out[..SUBS] {
        let r = o.result();
        assert_eq!(r.get("seqs"), expected, "{}", o.label);
    }
    let publ = out[SUBS].result();
    assert_eq!(publ.num("delivered"), COUNT * SUBS as u64);
    assert_eq!(publ.num("zero"), 0);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
}

#[test]
fn four_publishers_one_subscriber() {
    const PUBS: u64 = 4;
    const COUNT: u64 = 3000;
    let d = Domain::new("four-to-one", HELPER);
    let svc = [
        "--service",
        "it/fan-in",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
        "--max-publishers",
        "4",
    ];
    let total = (PUBS * COUNT).to_string();
    let count = COUNT.to_string();
    let s = with(&["subscribe", "--expect", &total, "--check-empty"], &svc);
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    for id in 0..PUBS {
        let id = id.to_string();
        let p = with(
            &[
                "publish",
                "--id",
                &id,
                "--count",
                &count,
                "--wait-subscribers",
                "1",
                "--linger",
            ],
            &svc,
        );
        procs.push(d.spawn(&format!("pub{id}"), &refs(&p)));
    }
    let out = d.wait_all(procs);

    let sub = out[0].result();
    assert_eq!(sub.num("publishers"), PUBS);
    let expected: Vec<String> = (0..PUBS).map(|p| format!("{p}:0-{}", COUNT - 1)).collect();
    assert_eq!(sub.get("seqs"), expected.join("/"));
    for o in &out[1..] {
        let r = o.result();
        assert_eq!(r.num("delivered"), COUNT, "{}", o.label);
        assert_eq!(r.num("free"), r.num("pool"), "{}: chunks leaked", o.label);
    }
    d.finish();
}

/// Publisher sends 10 with history 4, then a subscriber joins: it gets 6..9.
fn history_case(test: &str, buffer: &str, expected: &str, expect_count: &str) {
    let d = Domain::new(test, HELPER);
    let svc = [
        "--service",
        "it/history",
        "--history",
        "4",
        "--buffer",
        buffer,
    ];
    let done = d.arg("pub-done");
    let p = with(
        &[
            "publish",
            "--count",
            "10",
            "--done-file",
            &done,
            "--wait-subscribers-after",
            "1",
            "--linger",
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("pub", &refs(&p))];
    // Everything is sent before the subscriber exists.
    d.wait_file("pub-done", &mut procs);
    let s = with(
        &["subscribe", "--expect", expect_count, "--check-empty"],
        &svc,
    );
    procs.push(d.spawn("sub", &refs(&s)));
    let out = d.wait_all(procs);

    let publ = out[0].result();
    assert_eq!(
        publ.num("delivered"),
        0,
        "nobody was connected while sending"
    );
    // The history keeps its 4 chunks; everything else must be free again.
    assert_eq!(publ.num("free") + 4, publ.num("pool"), "chunks leaked");
    assert_eq!(out[1].result().get("seqs"), expected);
    d.finish();
}

#[test]
fn history_reaches_late_joiner() {
    history_case("history", "8", "0:6-9", "4");
}

#[test]
fn a_history_as_long_as_the_queue_arrives_whole() {
    history_case("history-full", "4", "0:6-9", "4");
}

/// A history longer than a subscriber's queue could not all be given to a
/// late subscriber: the service is refused when it is made, with the fix.
/// (It used to be made, and a late subscriber got the newest two of four.)
#[test]
fn a_history_longer_than_the_queue_is_refused() {
    let d = Domain::new("history-long", HELPER);
    let o = d
        .spawn(
            "pub",
            &[
                "publish",
                "--count",
                "1",
                "--service",
                "it/history",
                "--history",
                "4",
                "--buffer",
                "2",
            ],
        )
        .wait();
    o.assert_code(exit::OTHER_SERVICE);
    assert!(
        o.error_line()
            .contains("raise subscriber_max_buffer_size to at least 4"),
        "{}",
        o.error_line()
    );
    d.finish();
}
