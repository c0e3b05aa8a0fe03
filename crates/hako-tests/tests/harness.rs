//! Self-tests of the test harness: hang detection and failure reporting.
//!
//! The other tests rely on the watchdog to turn a hung helper into a test
//! failure (instead of a CI job that never ends), and on `wait_all` to fail
//! as soon as one helper fails. These tests check both with a tiny bound; the
//! bound says nothing about hako's speed.

use std::time::Duration;

use hako_tests::harness::Domain;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

#[test]
#[should_panic(expected = "the watchdog killed it")]
fn watchdog_kills_a_hung_helper() {
    let d = Domain::new("watchdog", HELPER);
    let never = d.arg("never");
    // Waits for a file nobody creates.
    let p = d.spawn_bounded(
        "hang",
        &["hold", "--service", "it/hang", "--release-file", &never],
        Duration::from_secs(1),
    );
    p.wait();
}

#[test]
#[should_panic(expected = "exited with a failure")]
fn wait_all_fails_fast_when_a_helper_fails() {
    let d = Domain::new("fail-fast", HELPER);
    let never = d.arg("never");
    let hang = d.spawn(
        "hang",
        &["hold", "--service", "it/fail", "--release-file", &never],
    );
    // Opening a service that does not exist fails at once.
    let fail = d.spawn(
        "fail",
        &["open", "--service", "it/nothing", "--mode", "open"],
    );
    // Returns by panicking on `fail`, long before `hang`'s watchdog; the
    // hanging helper is killed when its Proc is dropped.
    d.wait_all(vec![hang, fail]);
}
