//! Errors across processes (issue #2, scenarios 8, 9, 10 and 13).
//!
//! * type mismatch: process A creates a service carrying `TestMsg`; process B
//!   opens it with another type name (`IncompatibleType`, field `type_name`)
//!   or with a type of the same name but another size (field `size`);
//! * QoS mismatch: B asks for more history than A created (`IncompatibleQos`,
//!   field `history_size`) or for another overflow policy (field `overflow`);
//! * opening a service nobody created (`DoesNotExist`);
//! * invalid service and node names (`NameError`, the message names the rule);
//! * loans: a third loan with `max_loaned_samples(2)` is `ExceedsMaxLoans`;
//! * a subscriber that hoards samples gets `ExceedsMaxBorrowed`, and the
//!   publisher keeps working (drop-oldest: it reclaims queued samples;
//!   backpressure + discard: `send` returns 0) — no block, no panic, and no
//!   `OutOfMemory`: the pool is sized for the worst case (max_subscribers ×
//!   (buffer + borrowed) + history + loans), so hoarding within the limits
//!   cannot exhaust it.
//!
//! The helper prints the error's `Display` text on an `ERROR` line and exits
//! with a code per error kind (`hako_tests::exit`); the tests check both.
//! Each test runs in its own domain root, which must be empty once all
//! processes exited.

use hako_tests::exit;
use hako_tests::harness::{refs, with, Domain};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn assert_contains(line: &str, parts: &[&str]) {
    for p in parts {
        assert!(line.contains(p), "{line:?} should contain {p:?}");
    }
}

#[test]
fn type_and_qos_mismatch() {
    let d = Domain::new("mismatch", HELPER);
    let ready = d.arg("held");
    let release = d.arg("release");
    // Process A: creates it/typed carrying TestMsg, history 2, drop-oldest.
    let holder = d.spawn(
        "holder",
        &[
            "hold",
            "--service",
            "it/typed",
            "--mode",
            "create",
            "--history",
            "2",
            "--overflow",
            "drop-oldest",
            "--ready-file",
            &ready,
            "--release-file",
            &release,
        ],
    );
    let mut procs = vec![holder];
    d.wait_file("held", &mut procs);

    let open = |label: &str, extra: &[&str]| {
        let a = with(&["open", "--service", "it/typed"], extra);
        d.spawn(label, &refs(&a)).wait()
    };

    // Another type name.
    let o = open("other-type", &["--mode", "open", "--payload", "other"]);
    o.assert_code(exit::INCOMPATIBLE_TYPE);
    assert_contains(
        o.error_line(),
        &[
            "IncompatibleType field=type_name",
            "it/typed",
            "TestMsg",
            "OtherMsg",
        ],
    );

    // open_or_create must not create over an incompatible service either.
    let o = open(
        "other-type-ooc",
        &["--mode", "open-or-create", "--payload", "other"],
    );
    o.assert_code(exit::INCOMPATIBLE_TYPE);
    assert_contains(o.error_line(), &["field=type_name"]);

    // Same name, other size.
    let o = open("impostor", &["--mode", "open", "--payload", "impostor"]);
    o.assert_code(exit::INCOMPATIBLE_TYPE);
    // Both sides' values name the type (the same name, another layout).
    assert_contains(
        o.error_line(),
        &["IncompatibleType field=size", "64 (type ", "72 (type "],
    );

    // More history than the service has.
    let o = open("history", &["--mode", "open", "--history", "8"]);
    o.assert_code(exit::INCOMPATIBLE_QOS);
    assert_contains(
        o.error_line(),
        &[
            "IncompatibleQos field=history_size",
            "history_size is 2 there",
            "at least 8",
        ],
    );

    // Another overflow policy.
    let o = open(
        "overflow",
        &["--mode", "open", "--overflow", "backpressure"],
    );
    o.assert_code(exit::INCOMPATIBLE_QOS);
    assert_contains(
        o.error_line(),
        &[
            "IncompatibleQos field=overflow",
            "Backpressure",
            "DropOldest",
        ],
    );

    // `create` of an existing service.
    let o = open("create-again", &["--mode", "create"]);
    o.assert_code(exit::ALREADY_EXISTS);
    assert_contains(o.error_line(), &["already exists"]);

    // What the service offers is accepted.
    let o = open("compatible", &["--mode", "open", "--history", "2"]);
    o.assert_code(exit::OK);
    assert_eq!(o.result().get("type"), "hako_tests::TestMsg");
    assert_eq!(o.result().num("history"), 2);

    d.touch("release");
    d.wait_all(procs);
    d.finish();
}

#[test]
fn open_of_a_missing_service() {
    let d = Domain::new("missing", HELPER);
    let o = d
        .spawn(
            "open",
            &["open", "--service", "it/nobody", "--mode", "open"],
        )
        .wait();
    o.assert_code(exit::DOES_NOT_EXIST);
    assert_contains(
        o.error_line(),
        &["DoesNotExist", "it/nobody", "does not exist"],
    );
    d.finish();
}

#[test]
fn invalid_names() {
    let d = Domain::new("names", HELPER);
    let long_service = "s".repeat(256);
    let long_node = "n".repeat(129);
    // (flag, name, words the message must contain)
    let bad: &[(&str, &str, &[&str])] = &[
        ("--service", "", &["empty"]),
        ("--service", "has space", &["' '", "only ASCII letters"]),
        ("--service", "/leading", &["empty segment"]),
        ("--service", "trailing/", &["empty segment"]),
        ("--service", "a//b", &["empty segment"]),
        ("--service", "a/../b", &["\"..\"", "reserved"]),
        ("--service", "a/./b", &["reserved"]),
        ("--service", "ünï", &["only ASCII letters"]),
        ("--service", &long_service, &["256 bytes", "at most 255"]),
        ("--node", "", &["empty"]),
        ("--node", "a/b", &["'/'", "only ASCII letters"]),
        ("--node", &long_node, &["129 bytes", "at most 128"]),
    ];
    for (i, (flag, name, words)) in bad.iter().enumerate() {
        let o = d.spawn(&format!("bad{i}"), &["name", flag, name]).wait();
        o.assert_code(exit::NAME);
        let line = o.error_line();
        assert!(line.starts_with("ERROR NameError: "), "{line}");
        assert_contains(line, words);
    }
    // Valid names at the limits work end to end (node, service, one message).
    let max_service = "s".repeat(255);
    let max_node = "n".repeat(128);
    let good: &[&[&str]] = &[
        &["--service", "My/Funk/ServiceName", "--node", "camera-1"],
        &["--service", "a.b-c_d/1/x.y", "--node", "N.o_d-e"],
        &["--service", &max_service, "--node", &max_node],
    ];
    for (i, args) in good.iter().enumerate() {
        let a = with(&["name"], args);
        let o = d.spawn(&format!("good{i}"), &refs(&a)).wait();
        o.assert_code(exit::OK);
    }
    d.finish();
}

#[test]
fn loans_beyond_max_loaned_samples() {
    let d = Domain::new("loans", HELPER);
    let o = d
        .spawn(
            "two",
            &[
                "loans",
                "--service",
                "it/loans",
                "--max-loans",
                "2",
                "--count",
                "2",
            ],
        )
        .wait();
    o.assert_code(exit::OK);
    assert_eq!(o.result().num("loaned"), 2);

    let o = d
        .spawn(
            "three",
            &[
                "loans",
                "--service",
                "it/loans",
                "--max-loans",
                "2",
                "--count",
                "3",
            ],
        )
        .wait();
    o.assert_code(exit::EXCEEDS_MAX_LOANS);
    assert_contains(
        o.error_line(),
        &[
            "ExceedsMaxLoans",
            "as many samples as it may (2",
            "max_loaned_samples",
        ],
    );
    d.finish();
}

/// A subscriber receives 2 samples and keeps them (its borrow limit), the
/// publisher then sends 100 more while the subscriber does not read.
fn hoarding_subscriber(test: &str, svc: &[&str], strategy: &str) -> (String, String, String) {
    let d = Domain::new(test, HELPER);
    let held = d.arg("held");
    let done = d.arg("pub-done");
    let s = with(
        &[
            "subscribe",
            "--hold",
            "2",
            "--held-file",
            &held,
            "--wait-file",
            &done,
            "--expect",
            "4",
            "--check-empty",
        ],
        svc,
    );
    let p = with(
        &[
            "publish",
            "--count",
            "102",
            "--strategy",
            strategy,
            "--pause-at",
            "2",
            "--pause-file",
            &held,
            "--wait-subscribers",
            "1",
            "--done-file",
            &done,
            "--linger",
            "--print-deliveries",
        ],
        svc,
    );
    let sub = d.spawn("sub", &refs(&s));
    let publ = d.spawn("pub", &refs(&p));
    // A loan failure would exit with OUT_OF_MEMORY / EXCEEDS_MAX_LOANS and
    // fail here; a block would trip the watchdog.
    let out = d.wait_all(vec![sub, publ]);
    let sub = out[0].result();
    let publ = out[1].result();
    assert_eq!(publ.num("free"), publ.num("pool"), "chunks leaked");
    d.finish();
    (
        sub.get("after_hold").to_owned(),
        sub.get("seqs").to_owned(),
        publ.get("deliveries").to_owned(),
    )
}

#[test]
fn hoarding_subscriber_under_drop_oldest() {
    let svc = [
        "--service",
        "it/hoard",
        "--overflow",
        "drop-oldest",
        "--buffer",
        "2",
        "--borrowed",
        "2",
    ];
    let (after_hold, seqs, deliveries) = hoarding_subscriber("hoard-drop", &svc, "block");
    assert_eq!(after_hold, "exceeds_max_borrowed(2)");
    // Held 0 and 1; of the 100 sent while hoarding, the queue kept the newest 2.
    assert_eq!(seqs, "0:0-1,100-101");
    assert_eq!(deliveries, vec!["1"; 102].join(","));
}

#[test]
fn hoarding_subscriber_under_backpressure_discard() {
    let svc = [
        "--service",
        "it/hoard",
        "--overflow",
        "backpressure",
        "--buffer",
        "2",
        "--borrowed",
        "2",
    ];
    let (after_hold, seqs, deliveries) = hoarding_subscriber("hoard-discard", &svc, "discard");
    assert_eq!(after_hold, "exceeds_max_borrowed(2)");
    // Held 0 and 1; 2 and 3 fill the queue; the other 98 are discarded.
    assert_eq!(seqs, "0:0-3");
    let mut expected = vec!["1"; 4];
    expected.extend(vec!["0"; 98]);
    assert_eq!(deliveries, expected.join(","));
}
