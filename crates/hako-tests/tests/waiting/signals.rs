//! Termination requests: SIGTERM and SIGINT end `node.wait` and waitset
//! loops, blocking receives and waits, and a send blocked by backpressure;
//! a node without signal handling leaves SIGINT alone.

use hako_tests::exit;
use hako_tests::harness::Domain;
use rustix::process::Signal;

use super::HELPER;

fn stop_with_signal(name: &str, kind: &str, sig: Signal) {
    let d = Domain::new(name, HELPER);
    let ready = d.arg("ready");
    let mut procs = vec![d.spawn(
        "loop",
        &[
            "sigwait",
            "--loop",
            kind,
            "--cycle-ms",
            "20",
            "--ready-file",
            &ready,
        ],
    )];
    // The helper has installed its handlers (before, the signal would kill it).
    d.wait_file("ready", &mut procs);
    procs[0].signal(sig);
    let out = procs.pop().unwrap().wait();
    out.assert_code(exit::OK);
    assert!(
        out.stdout.contains("stopping: termination requested"),
        "{}",
        out.describe("did not say it stopped")
    );
    assert_eq!(out.result().get("loop"), kind);
    d.finish();
}

#[test]
fn sigterm_ends_a_node_wait_loop() {
    stop_with_signal("sigterm-node", "node", Signal::TERM);
}

#[test]
fn sigint_ends_a_node_wait_loop() {
    stop_with_signal("sigint-node", "node", Signal::INT);
}

#[test]
fn sigterm_ends_a_waitset_loop() {
    stop_with_signal("sigterm-ws", "waitset", Signal::TERM);
}

#[test]
fn sigint_ends_a_waitset_loop() {
    stop_with_signal("sigint-ws", "waitset", Signal::INT);
}

#[test]
fn sigint_ends_a_blocking_receive() {
    stop_with_signal("sigint-sub", "subscriber", Signal::INT);
}

#[test]
fn sigterm_ends_a_blocking_receive() {
    stop_with_signal("sigterm-sub", "subscriber", Signal::TERM);
}

#[test]
fn sigint_ends_a_listeners_blocking_wait() {
    stop_with_signal("sigint-listen", "listener", Signal::INT);
}

/// A send blocked by backpressure on a subscriber that does not read: the
/// signal ends the wait, the sample is not delivered (counted as dropped),
/// and the program's next wait reports the termination request.
#[test]
fn sigint_ends_a_send_blocked_by_backpressure() {
    let d = Domain::new("sigint-send", HELPER);
    let ready = d.arg("ready");
    let mut procs = vec![d.spawn(
        "publisher",
        &["sigwait", "--loop", "publisher", "--ready-file", &ready],
    )];
    d.wait_file("ready", &mut procs);
    procs[0].signal(Signal::INT);
    let out = procs.pop().unwrap().wait();
    out.assert_code(exit::OK);
    let r = out.result();
    assert_eq!((r.num("first"), r.num("second")), (1, 0), "{}", out.stdout);
    d.finish();
}

/// A node built with `signal_handling(false)` installs nothing: SIGINT
/// keeps its default effect and ends the process in its blocking wait.
#[test]
fn a_node_without_signal_handling_leaves_sigint_alone() {
    let d = Domain::new("sigint-off", HELPER);
    let ready = d.arg("ready");
    let mut procs = vec![d.spawn(
        "loop",
        &[
            "sigwait",
            "--loop",
            "subscriber",
            "--no-signal-handling",
            "--ready-file",
            &ready,
        ],
    )];
    d.wait_file("ready", &mut procs);
    procs[0].signal(Signal::INT);
    let out = procs.pop().unwrap().wait();
    assert_eq!(
        out.code,
        None,
        "{}",
        out.describe("should have died of SIGINT")
    );
    assert!(
        out.status.contains("SIGINT") || out.status.contains("signal: 2"),
        "{}",
        out.status
    );
    // It died as a crash does: its files are reclaimed.
    let cfg = d.node().config().clone();
    hako::reclaim_dead_nodes(&cfg, false).unwrap();
    d.finish();
}

/// A blocking receive that spins (it never sleeps, so it never got to
/// install the handlers before) still ends on SIGTERM with a termination
/// request, instead of the process being killed by the signal: the
/// handlers come as a wait finds nothing. (A server SIGTERMed between two
/// requests, still spinning, used to die of the signal.)
#[test]
fn sigterm_ends_a_spinning_blocking_receive() {
    let d = Domain::new("sigterm-spin", HELPER);
    let ready = d.arg("ready");
    let mut procs = vec![d.spawn(
        "recv",
        &[
            "recv",
            "--strategy",
            "busy-spin",
            "--expect",
            "1",
            "--ready-file",
            &ready,
        ],
    )];
    d.wait_file("ready", &mut procs);
    // Inside its (spinning) wait by now.
    std::thread::sleep(std::time::Duration::from_millis(300));
    procs[0].signal(Signal::TERM);
    let out = procs.pop().unwrap().wait();
    out.assert_code(exit::FAILURE);
    assert!(
        out.error_line().contains("termination requested"),
        "{}",
        out.describe("was not ended by a termination request")
    );
    d.finish();
}
