//! A subscriber asleep in `blocking_receive`: woken by sends from other
//! processes, and ended with `ReceiveError::PublishersGone` when its
//! publishers are killed or leave (or waiting on when one comes back).

use hako_tests::exit;
use hako_tests::harness::{Domain, Outcome, Proc};

use super::HELPER;

fn assert_contains(line: &str, parts: &[&str]) {
    for p in parts {
        assert!(line.contains(p), "{line:?} should contain {p:?}");
    }
}

// ---------------------------------------------------------------- blocked subscriber

#[test]
fn parked_subscriber_wakes_on_a_send_from_another_process() {
    let d = Domain::new("park-wake", HELPER);
    let svc = ["--service", "it/park", "--max-publishers", "3"];
    let ready = d.arg("recv-ready");
    let got = d.arg("got-");
    let mut r = vec![
        "recv",
        "--strategy",
        "park",
        "--expect",
        "3",
        "--ready-file",
        &ready,
        "--got-prefix",
        &got,
    ];
    r.extend(svc);
    let mut procs = vec![d.spawn("recv", &r)];
    d.wait_file("recv-ready", &mut procs);
    for round in 0..3u64 {
        // The receiver sleeps on its futex in blocking_receive ...
        d.wait_until("the receiver parks", &mut procs, |p| p[0].parked_in_futex());
        // ... and a new publisher process sends one message.
        let id = round.to_string();
        let mut p = vec![
            "publish",
            "--id",
            &id,
            "--count",
            "1",
            "--wait-subscribers",
            "1",
            "--linger",
        ];
        p.extend(svc);
        procs.push(d.spawn(&format!("pub-{round}"), &p));
        d.wait_file(&format!("got-{}", round + 1), &mut procs);
    }
    let out = d.wait_all(procs);
    let r = out[0].result();
    assert_eq!(r.num("received"), 3);
    assert_eq!(r.get("seqs"), "0:0-0/1:0-0/2:0-0");
    for p in &out[1..] {
        assert_eq!(p.result().num("delivered"), 1);
    }
    d.finish();
}

// ---------------------------------------------------------------- publishers gone

/// Starts a receiver expecting two messages and a publisher that sends one
/// and then stays until the file `release` exists. Returns (receiver,
/// publisher) once the receiver got the first message and sleeps in its next
/// `blocking_receive` (parked on the futex: the wait has started and has
/// seen the publisher alive). `end`: the receiver's subscriber is built
/// with `end_when_publishers_gone(true)`.
fn receiver_blocked_on_one_publisher(d: &Domain, end: bool) -> (Proc, Proc) {
    let svc = ["--service", "it/gone"];
    let ready = d.arg("recv-ready");
    let got = d.arg("got-");
    let release = d.arg("release");
    let mut r = vec!["recv", "--strategy", "park", "--expect", "2"];
    if end {
        r.push("--end-when-publishers-gone");
    }
    r.extend(["--ready-file", &ready, "--got-prefix", &got]);
    r.extend(svc);
    let mut procs = vec![d.spawn("recv", &r)];
    d.wait_file("recv-ready", &mut procs);
    let mut p = vec![
        "publish",
        "--count",
        "1",
        "--wait-subscribers",
        "1",
        "--release-file",
        &release,
    ];
    p.extend(svc);
    procs.push(d.spawn("publisher", &p));
    d.wait_file("got-1", &mut procs);
    d.wait_until("the receiver parks in blocking_receive", &mut procs, |p| {
        p[0].parked_in_futex()
    });
    let publisher = procs.pop().unwrap();
    (procs.pop().unwrap(), publisher)
}

#[test]
fn subscriber_of_a_killed_publisher_gets_publishers_gone() {
    let d = Domain::new("pub-killed", HELPER);
    let (recv, publisher) = receiver_blocked_on_one_publisher(&d, true);
    let killed = publisher.kill();
    assert_eq!(killed.code, None, "{}", killed.describe("was not killed"));
    // Noticed within about 100 ms; the watchdog only catches a hang.
    let out = recv.wait();
    out.assert_code(exit::PUBLISHERS_GONE);
    assert_contains(
        out.error_line(),
        &["PublishersGone", "it/gone", "publisher"],
    );
    // The killed node's files stay behind (see crash.rs); Domain's drop
    // removes the root.
}

#[test]
fn subscriber_of_a_departed_publisher_gets_publishers_gone() {
    let d = Domain::new("pub-departed", HELPER);
    let (recv, publisher) = receiver_blocked_on_one_publisher(&d, true);
    d.touch("release");
    let p = publisher.wait();
    p.assert_code(exit::OK);
    assert_eq!(p.result().num("delivered"), 1);
    let out = recv.wait();
    out.assert_code(exit::PUBLISHERS_GONE);
    assert_contains(out.error_line(), &["PublishersGone", "it/gone"]);
    d.finish();
}

/// Starts a second publisher of `it/gone` that sends one message, once the
/// first is gone and the receiver's wait has had time to notice (several of
/// its 100 ms liveness checks): a receiver that gave up would have exited
/// by then.
fn restart_publisher(d: &Domain, recv: Proc) -> Outcome {
    std::thread::sleep(std::time::Duration::from_millis(500));
    let p = d.spawn(
        "publisher-2",
        &[
            "publish",
            "--id",
            "1",
            "--count",
            "1",
            "--wait-subscribers",
            "1",
            "--service",
            "it/gone",
        ],
    );
    let out = d.wait_all(vec![recv, p]);
    out.into_iter().next().unwrap()
}

#[test]
fn subscriber_waits_on_across_a_killed_and_restarted_publisher() {
    let d = Domain::new("pub-restart-killed", HELPER);
    let (recv, publisher) = receiver_blocked_on_one_publisher(&d, false);
    let killed = publisher.kill();
    assert_eq!(killed.code, None, "{}", killed.describe("was not killed"));
    let out = restart_publisher(&d, recv);
    out.assert_code(exit::OK);
    let r = out.result();
    assert_eq!(r.num("received"), 2, "{}", out.stdout);
    assert_eq!(r.num("publishers"), 2, "{}", out.stdout);
    // Both publishers were connected; the killed one was reclaimed by the
    // wait (or by the new publisher's arrival) and counted as departed.
    assert_eq!(r.num("connected"), 2, "{}", out.stdout);
    assert!(r.num("departed") >= 1, "{}", out.stdout);
}

#[test]
fn subscriber_waits_on_across_a_departed_and_restarted_publisher() {
    let d = Domain::new("pub-restart-departed", HELPER);
    let (recv, publisher) = receiver_blocked_on_one_publisher(&d, false);
    d.touch("release");
    publisher.wait().assert_code(exit::OK);
    let out = restart_publisher(&d, recv);
    out.assert_code(exit::OK);
    let r = out.result();
    assert_eq!(r.num("received"), 2, "{}", out.stdout);
    assert_eq!(r.num("connected"), 2, "{}", out.stdout);
    assert!(r.num("departed") >= 1, "{}", out.stdout);
    d.finish();
}

/// A publisher that dies between two receives, before the subscriber's
/// second `blocking_receive` starts: its port is still in the service's
/// table, so the wait counts it as seen, finds its node dead at the first
/// liveness check and returns `PublishersGone`, instead of waiting for a new
/// publisher forever.
#[test]
fn subscriber_of_a_publisher_killed_between_two_receives_gets_publishers_gone() {
    let d = Domain::new("pub-killed-between", HELPER);
    let svc = ["--service", "it/gone"];
    let ready = d.arg("recv-ready");
    let got = d.arg("got-");
    let pause = d.arg("pause");
    let never = d.arg("never");
    let mut r = vec!["recv", "--expect", "2", "--pause-file", &pause];
    r.push("--end-when-publishers-gone");
    r.extend(["--ready-file", &ready, "--got-prefix", &got]);
    r.extend(svc);
    let mut procs = vec![d.spawn("recv", &r)];
    d.wait_file("recv-ready", &mut procs);
    let mut p = vec![
        "publish",
        "--count",
        "1",
        "--wait-subscribers",
        "1",
        "--release-file",
        &never,
    ];
    p.extend(svc);
    procs.push(d.spawn("publisher", &p));
    d.wait_file("got-1", &mut procs);
    // Killed while the receiver is between two receives.
    procs.pop().unwrap().kill();
    d.touch("pause");
    let out = procs.pop().unwrap().wait();
    out.assert_code(exit::PUBLISHERS_GONE);
    assert_contains(out.error_line(), &["PublishersGone", "it/gone"]);
}
