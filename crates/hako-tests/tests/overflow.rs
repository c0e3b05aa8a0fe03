//! Overflow semantics across processes (issue #2, scenarios 5, 6 and 13).
//!
//! * drop-oldest: a subscriber that does not read while the publisher sends
//!   N > buffer messages then gets exactly the newest `buffer`, in order, and
//!   every `send` reported a delivery;
//! * backpressure + `Block`: a slow subscriber loses nothing;
//! * backpressure + `Discard` (and `Retry(n)`): once the subscriber's queue
//!   is full, `send` returns 0 deliveries, and the subscriber later gets the
//!   oldest `buffer` messages (nothing was overwritten).
//!
//! The "subscriber does not read" phases are made deterministic with a
//! signal file: the subscriber starts reading only after the publisher
//! created `pub-done`, so the publisher's return values do not depend on
//! scheduling. Each test runs in its own domain root, which must be empty
//! once all processes exited.

use hako_tests::harness::{refs, with, Domain};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

#[test]
fn drop_oldest_keeps_the_newest() {
    let d = Domain::new("drop-oldest", HELPER);
    let svc = [
        "--service",
        "it/drop",
        "--overflow",
        "drop-oldest",
        "--buffer",
        "4",
    ];
    let done = d.arg("pub-done");
    let s = with(
        &[
            "subscribe",
            "--wait-file",
            &done,
            "--expect",
            "4",
            "--check-empty",
        ],
        &svc,
    );
    let p = with(
        &[
            "publish",
            "--count",
            "50",
            "--wait-subscribers",
            "1",
            "--done-file",
            &done,
            "--linger",
            "--print-deliveries",
        ],
        &svc,
    );
    let sub = d.spawn("sub", &refs(&s));
    let publ = d.spawn("pub", &refs(&p));
    let out = d.wait_all(vec![sub, publ]);

    assert_eq!(out[0].result().get("seqs"), "0:46-49");
    let publ = out[1].result();
    // Drop-oldest always makes room: every send reached the subscriber.
    assert_eq!(publ.get("deliveries"), vec!["1"; 50].join(","));
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
}

#[test]
fn backpressure_block_loses_nothing_to_a_slow_subscriber() {
    let d = Domain::new("bp-block", HELPER);
    let svc = [
        "--service",
        "it/block",
        "--overflow",
        "backpressure",
        "--buffer",
        "2",
    ];
    // 100 µs per message: the publisher is much faster and must wait.
    let s = with(
        &[
            "subscribe",
            "--expect",
            "2000",
            "--delay-us",
            "100",
            "--check-empty",
        ],
        &svc,
    );
    let p = with(
        &[
            "publish",
            "--count",
            "2000",
            "--strategy",
            "block",
            "--wait-subscribers",
            "1",
            "--linger",
        ],
        &svc,
    );
    let sub = d.spawn("sub", &refs(&s));
    let publ = d.spawn("pub", &refs(&p));
    let out = d.wait_all(vec![sub, publ]);

    assert_eq!(out[0].result().get("seqs"), "0:0-1999");
    let publ = out[1].result();
    assert_eq!(publ.num("delivered"), 2000);
    assert_eq!(publ.num("zero"), 0);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
}

/// Backpressure with a strategy that gives up: the subscriber does not read
/// until all 10 are sent, its queue holds 4, so sends 5..10 return 0.
fn backpressure_gives_up(test: &str, strategy: &str) {
    let d = Domain::new(test, HELPER);
    let svc = [
        "--service",
        "it/give-up",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
    ];
    let done = d.arg("pub-done");
    let s = with(
        &[
            "subscribe",
            "--wait-file",
            &done,
            "--expect",
            "4",
            "--check-empty",
        ],
        &svc,
    );
    let p = with(
        &[
            "publish",
            "--count",
            "10",
            "--strategy",
            strategy,
            "--wait-subscribers",
            "1",
            "--done-file",
            &done,
            "--linger",
            "--print-deliveries",
        ],
        &svc,
    );
    let sub = d.spawn("sub", &refs(&s));
    let publ = d.spawn("pub", &refs(&p));
    let out = d.wait_all(vec![sub, publ]);

    let publ = out[1].result();
    assert_eq!(publ.get("deliveries"), "1,1,1,1,0,0,0,0,0,0");
    assert_eq!(publ.num("delivered"), 4);
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    // Nothing queued was replaced: the subscriber gets the first four.
    assert_eq!(out[0].result().get("seqs"), "0:0-3");
    d.finish();
}

#[test]
fn backpressure_discard_returns_zero_when_full() {
    backpressure_gives_up("bp-discard", "discard");
}

#[test]
fn backpressure_retry_returns_zero_when_still_full() {
    backpressure_gives_up("bp-retry", "retry:5");
}
