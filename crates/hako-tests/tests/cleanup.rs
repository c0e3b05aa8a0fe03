//! A publisher that leaves while samples are still queued (issue #2,
//! scenario 13: the domain root is empty after all processes exit).
//!
//! A publisher process that exits while a subscriber has samples queued but
//! has not mapped the publisher's segment yet *retires* its port entry
//! instead of removing it, so the subscriber can still collect the samples
//! (crates/hako/src/port/segment.rs). These tests check that
//!
//! * the queued samples do arrive after the publisher process is gone, and
//!   the domain is clean afterwards;
//! * the retired entry and its segment file disappear when the subscriber
//!   leaves without reading;
//! * a retired entry does not keep a new publisher out of a service with
//!   `max_publishers = 1`.
//!
//! In each test the subscriber does not call `receive` between the
//! publisher's arrival and its exit, which makes the retirement certain.

use hako_tests::exit;
use hako_tests::harness::{refs, with, Domain};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

/// Starts a subscriber that reads nothing until `go` exists, then a
/// publisher that sends `count` and exits without lingering; returns the
/// subscriber after the publisher process has exited. With `expect` "0" the
/// subscriber never calls `receive`.
fn publisher_leaves_first(
    d: &Domain,
    svc: &[&str],
    expect: &str,
    count: &str,
) -> hako_tests::harness::Proc {
    let ready = d.arg("sub-ready");
    let go = d.arg("go");
    let mut s = with(
        &[
            "subscribe",
            "--ready-file",
            &ready,
            "--wait-file",
            &go,
            "--expect",
            expect,
        ],
        svc,
    );
    // With --expect 0 the subscriber must not call receive at all.
    if expect != "0" {
        s.push("--check-empty".into());
    }
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    d.wait_file("sub-ready", &mut procs);
    let p = with(
        &["publish", "--count", count, "--wait-subscribers", "1"],
        svc,
    );
    let publ = d.spawn("pub", &refs(&p)).wait();
    publ.assert_code(exit::OK);
    assert_eq!(
        publ.result().num("delivered"),
        count.parse::<u64>().unwrap()
    );
    procs.pop().unwrap()
}

#[test]
fn queued_samples_survive_their_publisher() {
    let d = Domain::new("survive", HELPER);
    let svc = ["--service", "it/survive", "--buffer", "4"];
    let sub = publisher_leaves_first(&d, &svc, "3", "3");
    // The publisher process is gone; its samples are still queued.
    d.touch("go");
    let out = d.wait_all(vec![sub]);
    assert_eq!(out[0].result().get("seqs"), "0:0-2");
    d.finish();
}

/// Bug: crates/hako/src/port/segment.rs reaps retired publisher entries only from
/// `SubState::update` (crates/hako/src/port/receiver/state.rs, the `reap_retired`
/// call at the end of `update`). When the subscriber that still needed the
/// segment leaves without calling `receive` again, nobody reaps: the entry
/// stays in the publisher table, `Drop for ServiceInner`
/// (crates/hako/src/domain/service/inner.rs, `in_use`) then sees a port left and keeps
/// the service, and `svc_<hash>/{static.toml,dynamic,pub_<id>}` stay in the
/// domain root forever after every process exited.
#[test]
fn retired_publisher_is_reaped_when_its_subscriber_leaves_unread() {
    let d = Domain::new("retired-leak", HELPER);
    let svc = ["--service", "it/retired", "--buffer", "4"];
    // The subscriber leaves without reading the queued message.
    let sub = publisher_leaves_first(&d, &svc, "0", "1");
    d.touch("go");
    d.wait_all(vec![sub]);
    d.finish();
}

/// Bug: a retired entry keeps its slot in the publisher table, and
/// `ServiceInner::register` (crates/hako/src/domain/service/inner.rs) only takes slots
/// whose port id is 0, so with `max_publishers = 1` a new publisher gets
/// `TooManyPublishers` ("already has 1 publishers") although no publisher
/// is alive, until some subscriber happens to call `receive`. Seen in
/// practice by `stress::churn_with_sends` with several processes.
#[test]

fn retired_publisher_does_not_block_a_new_publisher() {
    let d = Domain::new("retired-slot", HELPER);
    let svc = [
        "--service",
        "it/retired",
        "--buffer",
        "4",
        "--max-publishers",
        "1",
    ];
    let sub = publisher_leaves_first(&d, &svc, "1", "1");
    let p = with(&["publish", "--id", "1", "--count", "0"], &svc);
    let second = d.spawn("pub2", &refs(&p)).wait();
    second.assert_code(exit::OK);
    d.touch("go");
    let out = d.wait_all(vec![sub]);
    assert_eq!(out[0].result().get("seqs"), "0:0-0");
    d.finish();
}
