//! Events across processes (issue #3, scenarios 1, 2, 6 and 7).
//!
//! * ping-pong: one process notifies a second, which answers on another event
//!   service; one million round trips with `blocking_wait` on both sides, no
//!   hang, and every wait returns exactly one notification (one is in flight
//!   at a time, so nothing may coalesce or get lost). `HAKO_IT_ROUND_TRIPS`
//!   overrides the count;
//! * many notifiers → one listener: four processes each notify their own id
//!   (0, 63, 64 and 4095, so that ids in three summary groups take part)
//!   20 000 times; notifications to one id may coalesce into one count, so
//!   the listener sums them, and each id's sum must be exactly 20 000;
//! * a listener blocked in `blocking_wait` whose only notifier process is
//!   killed (SIGKILL) or leaves returns `ListenerError::NotifiersGone`
//!   instead of waiting forever; so does a listener whose notifier was
//!   killed between two waits;
//! * bad input: an id above `event_id_max` (`NotifyError::EventIdOutOfRange`),
//!   a default id above it (`EventPortCreateError::EventIdOutOfRange`), more
//!   listeners or notifiers than the service admits
//!   (`EventPortCreateError::TooMany`), `event_id_max` above 4095, and an
//!   event service opened as publish/subscribe or the other way round
//!   (`ServiceError::IncompatiblePattern`).
//!
//! Helpers print what they got on a `RESULT` line, or the error's `Display`
//! on an `ERROR` line with an exit code per error (`hako_tests::exit`).
//! Each test has its own domain root, which must be empty once all processes
//! exited (except after a SIGKILL: nothing reclaims a dead node yet, see
//! `crash.rs`).

use std::time::Duration;

use hako_tests::exit;
use hako_tests::harness::{Domain, Proc};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn assert_contains(line: &str, parts: &[&str]) {
    for p in parts {
        assert!(line.contains(p), "{line:?} should contain {p:?}");
    }
}

#[test]
fn a_million_round_trips_between_two_processes() {
    let count: u64 = std::env::var("HAKO_IT_ROUND_TRIPS")
        .ok()
        .map(|v| v.parse().expect("HAKO_IT_ROUND_TRIPS must be a number"))
        .unwrap_or(1_000_000);
    let count = count.to_string();
    let d = Domain::new("ev-pingpong", HELPER);
    // Hang detection only: a debug build needs about 15 s on the 2-vCPU VM.
    let bound = Duration::from_secs(900);
    let responder = d.spawn_bounded(
        "responder",
        &[
            "ping",
            "--transport",
            "event",
            "--role",
            "responder",
            "--count",
            &count,
        ],
        bound,
    );
    let initiator = d.spawn_bounded(
        "initiator",
        &[
            "ping",
            "--transport",
            "event",
            "--role",
            "initiator",
            "--count",
            &count,
        ],
        bound,
    );
    let out = d.wait_all(vec![initiator, responder]);
    let r = out[0].result();
    assert_eq!(r.get("count"), count);
    assert_eq!(out[1].result().get("count"), count);
    // For the record (not asserted): the time the round trips took.
    eprintln!(
        "{count} event round trips: {} ms ({} ns each)",
        r.num("elapsed_ms"),
        r.num("round_trip_ns")
    );
    d.finish();
}

#[test]
fn many_notifiers_to_one_listener() {
    const PER_NOTIFIER: u64 = 20_000;
    const IDS: [u64; 4] = [0, 63, 64, 4095];
    let d = Domain::new("ev-many", HELPER);
    let svc = ["--service", "it/many", "--event-id-max", "4095"];
    let ready = d.arg("listening");
    let done = d.arg("done");
    let total = (PER_NOTIFIER * IDS.len() as u64).to_string();
    let mut args = vec![
        "listen",
        "--expect-total",
        &total,
        "--ready-file",
        &ready,
        "--done-file",
        &done,
        "--check-empty",
    ];
    args.extend(svc);
    let mut procs = vec![d.spawn("listener", &args)];
    // Notifications sent before the listener exists reach nobody.
    d.wait_file("listening", &mut procs);
    let per = PER_NOTIFIER.to_string();
    let ids: Vec<String> = IDS.iter().map(u64::to_string).collect();
    for id in &ids {
        let mut args = vec![
            "notify",
            "--id",
            id,
            "--count",
            &per,
            // Stay until the listener has everything: it must not see
            // every notifier gone while some have not started yet.
            "--release-file",
            &done,
        ];
        args.extend(svc);
        procs.push(d.spawn(&format!("notifier-{id}"), &args));
    }
    let out = d.wait_all(procs);

    let l = out[0].result();
    let expected: Vec<String> = IDS
        .iter()
        .map(|id| format!("{id}:{PER_NOTIFIER}"))
        .collect();
    assert_eq!(l.get("counts"), expected.join("/"));
    assert_eq!(l.get("total"), total);
    let waits = l.num("waits");
    assert!(waits >= 1 && waits <= l.num("total"), "{}", out[0].stdout);
    for n in &out[1..] {
        let r = n.result();
        // Each notification reached the one listener.
        assert_eq!(r.num("delivered"), PER_NOTIFIER, "{}", n.stdout);
        assert_eq!(r.num("zero"), 0);
    }
    eprintln!("{} notifications arrived in {waits} waits", l.num("total"));
    d.finish();
}

/// Starts a listener expecting two notifications and a notifier that sends
/// one and then stays until the file `release` exists. Returns (listener,
/// notifier) once the listener got the first notification and sleeps in its
/// next `blocking_wait` (parked on the futex: the wait has started and has
/// seen the notifier alive).
fn listener_blocked_on_one_notifier(d: &Domain) -> (Proc, Proc) {
    let svc = ["--service", "it/gone"];
    let ready = d.arg("listening");
    let got = d.arg("got-first");
    let release = d.arg("release");
    let mut l = vec!["listen", "--expect-total", "2", "--strategy", "park"];
    l.extend(["--ready-file", &ready, "--progress-file", &got]);
    l.extend(svc);
    let mut procs = vec![d.spawn("listener", &l)];
    d.wait_file("listening", &mut procs);
    let mut n = vec!["notify", "--count", "1", "--release-file", &release];
    n.extend(svc);
    procs.push(d.spawn("notifier", &n));
    d.wait_file("got-first", &mut procs);
    d.wait_until("the listener parks in blocking_wait", &mut procs, |p| {
        p[0].parked_in_futex()
    });
    let notifier = procs.pop().unwrap();
    (procs.pop().unwrap(), notifier)
}

#[test]
fn listener_of_a_killed_notifier_gets_notifiers_gone() {
    let d = Domain::new("ev-killed", HELPER);
    let (listener, notifier) = listener_blocked_on_one_notifier(&d);
    let killed = notifier.kill();
    assert_eq!(killed.code, None, "{}", killed.describe("was not killed"));
    // The listener notices within about 100 ms (its next liveness check
    // through the dead node's flock); the watchdog only catches a hang.
    let out = listener.wait();
    out.assert_code(exit::NOTIFIERS_GONE);
    assert_contains(out.error_line(), &["NotifiersGone", "it/gone", "notifier"]);
    // The killed node's files stay behind (see crash.rs); Domain's drop
    // removes the root.
}

#[test]
fn listener_of_a_departed_notifier_gets_notifiers_gone() {
    let d = Domain::new("ev-departed", HELPER);
    let (listener, notifier) = listener_blocked_on_one_notifier(&d);
    // The notifier drops its port and exits normally.
    d.touch("release");
    let n = notifier.wait();
    n.assert_code(exit::OK);
    assert_eq!(n.result().num("delivered"), 1);
    let out = listener.wait();
    out.assert_code(exit::NOTIFIERS_GONE);
    assert_contains(out.error_line(), &["NotifiersGone", "it/gone"]);
    d.finish();
}

#[test]
fn notify_with_an_id_above_event_id_max() {
    let d = Domain::new("ev-bad-id", HELPER);
    let ready = d.arg("held");
    let release = d.arg("release");
    // Process A creates the service with event_id_max 8 and listens.
    let holder = d.spawn(
        "holder",
        &[
            "event-port",
            "--service",
            "it/bad-id",
            "--mode",
            "create",
            "--event-id-max",
            "8",
            "--port",
            "listener",
            "--ready-file",
            &ready,
            "--release-file",
            &release,
        ],
    );
    let mut procs = vec![holder];
    d.wait_file("held", &mut procs);
    let notify = |label: &str, extra: &[&str]| {
        let mut a = vec!["notify", "--service", "it/bad-id", "--mode", "open"];
        a.extend(extra);
        d.spawn(label, &a).wait()
    };

    // The largest id is fine.
    let o = notify("max", &["--id", "8"]);
    o.assert_code(exit::OK);
    assert_eq!(o.result().num("delivered"), 1);

    // One above it is refused by notify_with_id.
    let o = notify("above", &["--id", "9"]);
    o.assert_code(exit::EVENT_ID_OUT_OF_RANGE);
    assert_contains(
        o.error_line(),
        &[
            "NotifyError::EventIdOutOfRange",
            "event id 9",
            "event_id_max 8",
        ],
    );

    // And as the notifier's default id, by the builder.
    let o = notify("default-above", &["--default-id", "9"]);
    o.assert_code(exit::DEFAULT_EVENT_ID_OUT_OF_RANGE);
    assert_contains(
        o.error_line(),
        &[
            "EventPortCreateError::EventIdOutOfRange",
            "event id 9",
            "event_id_max 8",
        ],
    );
    let o = d
        .spawn(
            "port-default-above",
            &[
                "event-port",
                "--service",
                "it/bad-id",
                "--mode",
                "open",
                "--port",
                "notifier",
                "--default-id",
                "9",
            ],
        )
        .wait();
    o.assert_code(exit::DEFAULT_EVENT_ID_OUT_OF_RANGE);

    // notify() with a default id at the limit works.
    let o = notify("default-max", &["--default-id", "8"]);
    o.assert_code(exit::OK);
    assert_eq!(o.result().num("delivered"), 1);

    // Asking for more ids than the service has is a QoS mismatch, and more
    // than 4095 is invalid.
    let o = notify("open-more", &["--event-id-max", "9"]);
    o.assert_code(exit::INCOMPATIBLE_QOS);
    assert_contains(o.error_line(), &["field=event_id_max", "at least 9", "8"]);
    let o = d
        .spawn(
            "too-large",
            &[
                "event-port",
                "--service",
                "it/huge",
                "--mode",
                "create",
                "--event-id-max",
                "4096",
            ],
        )
        .wait();
    o.assert_code(exit::OTHER_SERVICE);
    assert_contains(
        o.error_line(),
        &["InvalidSetting", "event_id_max", "4096", "at most 4095"],
    );

    d.touch("release");
    d.wait_all(procs);
    d.finish();
}

#[test]
fn more_ports_than_the_service_admits() {
    let d = Domain::new("ev-too-many", HELPER);
    let release = d.arg("release");
    let mut procs = Vec::new();
    // Process A holds the only listener, process B the only notifier.
    for (label, port) in [("listener", "listener"), ("notifier", "notifier")] {
        let ready = d.arg(&format!("{label}-ready"));
        procs.push(d.spawn(
            label,
            &[
                "event-port",
                "--service",
                "it/one-each",
                "--max-listeners",
                "1",
                "--max-notifiers",
                "1",
                "--port",
                port,
                "--ready-file",
                &ready,
                "--release-file",
                &release,
            ],
        ));
        d.wait_file(&format!("{label}-ready"), &mut procs);
    }
    for (port, kind) in [("listener", "max_listeners"), ("notifier", "max_notifiers")] {
        let o = d
            .spawn(
                &format!("second-{port}"),
                &["event-port", "--service", "it/one-each", "--port", port],
            )
            .wait();
        o.assert_code(exit::TOO_MANY_PORTS);
        assert_contains(
            o.error_line(),
            &["TooMany", "it/one-each", "admits no more", kind],
        );
    }
    // Once the first listener is gone, another fits.
    d.touch("release");
    d.wait_all(procs);
    let o = d
        .spawn(
            "later-listener",
            &[
                "event-port",
                "--service",
                "it/one-each",
                "--port",
                "listener",
            ],
        )
        .wait();
    o.assert_code(exit::OK);
    d.finish();
}

#[test]
fn event_and_publish_subscribe_services_do_not_mix() {
    let d = Domain::new("ev-pattern", HELPER);
    let release = d.arg("release");
    let ev_ready = d.arg("ev-ready");
    let ps_ready = d.arg("ps-ready");
    let mut procs = vec![
        d.spawn(
            "event-holder",
            &[
                "event-port",
                "--service",
                "it/pattern/ev",
                "--port",
                "listener",
                "--ready-file",
                &ev_ready,
                "--release-file",
                &release,
            ],
        ),
        d.spawn(
            "pubsub-holder",
            &[
                "hold",
                "--service",
                "it/pattern/ps",
                "--port",
                "subscriber",
                "--ready-file",
                &ps_ready,
                "--release-file",
                &release,
            ],
        ),
    ];
    d.wait_file("ev-ready", &mut procs);
    d.wait_file("ps-ready", &mut procs);

    // An event service opened as publish/subscribe, with every mode.
    for mode in ["open", "open-or-create", "create"] {
        let o = d
            .spawn(
                &format!("as-pubsub-{mode}"),
                &["open", "--service", "it/pattern/ev", "--mode", mode],
            )
            .wait();
        if mode == "create" {
            o.assert_code(exit::ALREADY_EXISTS);
            continue;
        }
        o.assert_code(exit::INCOMPATIBLE_PATTERN);
        assert_contains(
            o.error_line(),
            &[
                "IncompatiblePattern",
                "it/pattern/ev",
                "event",
                "publish_subscribe",
            ],
        );
    }
    // A publish/subscribe service opened as an event service.
    for mode in ["open", "open-or-create"] {
        let o = d
            .spawn(
                &format!("as-event-{mode}"),
                &[
                    "event-port",
                    "--service",
                    "it/pattern/ps",
                    "--mode",
                    mode,
                    "--port",
                    "notifier",
                ],
            )
            .wait();
        o.assert_code(exit::INCOMPATIBLE_PATTERN);
        assert_contains(
            o.error_line(),
            &[
                "IncompatiblePattern",
                "it/pattern/ps",
                "publish_subscribe",
                "event",
            ],
        );
    }
    d.touch("release");
    d.wait_all(procs);
    d.finish();
}

/// A notifier that dies between two waits, before the listener's second
/// `blocking_wait` starts: its port is still in the service's table (nothing
/// reclaims a dead node yet), so the wait counts it as seen, finds its node
/// dead at the first liveness check and returns `NotifiersGone`, instead of
/// waiting for a new notifier forever.
#[test]
fn listener_of_a_notifier_killed_between_two_waits_gets_notifiers_gone() {
    let d = Domain::new("ev-killed-between", HELPER);
    let svc = ["--service", "it/gone"];
    let ready = d.arg("listening");
    let got = d.arg("got-first");
    let pause = d.arg("pause");
    let never = d.arg("never");
    let mut l = vec!["listen", "--expect-total", "2"];
    l.extend([
        "--ready-file",
        &ready,
        "--progress-file",
        &got,
        "--pause-file",
        &pause,
    ]);
    l.extend(svc);
    let listener = d.spawn("listener", &l);
    let mut procs = vec![listener];
    d.wait_file("listening", &mut procs);
    let mut n = vec!["notify", "--count", "1", "--release-file", &never];
    n.extend(svc);
    procs.push(d.spawn("notifier", &n));
    d.wait_file("got-first", &mut procs);
    // Killed while the listener is between two waits.
    procs.pop().unwrap().kill();
    d.touch("pause");
    let out = procs.pop().unwrap().wait();
    out.assert_code(exit::NOTIFIERS_GONE);
    assert_contains(out.error_line(), &["NotifiersGone", "it/gone"]);
}
