//! A waitset on a listener, a subscriber, a silent subscriber with a
//! deadline and an interval, fed by other processes; and the waits with a
//! zero timeout, idle and busy.

use hako_tests::harness::Domain;

use super::HELPER;

// ---------------------------------------------------------------- waitset

#[test]
fn waitset_with_sources_in_other_processes() {
    const INTERVAL_MS: u64 = 50;
    let d = Domain::new("ws-sources", HELPER);
    let data = [
        "--service",
        "it/ws/data",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
    ];
    let ready = d.arg("silent-ready");
    let done = d.arg("done");
    // A publisher that never sends: its subscriber stays silent.
    let mut procs = vec![d.spawn(
        "silent",
        &[
            "hold",
            "--service",
            "it/ws/silent",
            "--port",
            "publisher",
            "--ready-file",
            &ready,
            "--release-file",
            &done,
        ],
    )];
    d.wait_file("silent-ready", &mut procs);

    let ws_ready = d.arg("ws-ready");
    let interval = INTERVAL_MS.to_string();
    let mut w = vec![
        "waitset",
        "--events",
        "it/ws/events",
        "--silent",
        "it/ws/silent",
        "--expect-events",
        "40",
        "--expect-samples",
        "40",
        "--interval-ms",
        &interval,
        "--deadline-ms",
        "150",
        "--min-span-ms",
        "500",
        "--ready-file",
        &ws_ready,
        "--done-file",
        &done,
    ];
    w.extend(data);
    procs.push(d.spawn("waitset", &w));
    d.wait_file("ws-ready", &mut procs);

    // The feeders, paced so that their data spreads over a few hundred ms.
    procs.push(d.spawn(
        "notifier",
        &[
            "notify",
            "--service",
            "it/ws/events",
            "--id",
            "3",
            "--count",
            "40",
            "--pace-us",
            "5000",
            "--release-file",
            &done,
        ],
    ));
    let mut p = vec![
        "publish",
        "--id",
        "7",
        "--count",
        "40",
        "--pace-us",
        "5000",
        "--wait-subscribers",
        "1",
        "--linger",
    ];
    p.extend(data);
    procs.push(d.spawn("publisher", &p));
    let out = d.wait_all(procs);

    let w = out[1].result();
    assert_eq!(w.num("events"), 40, "{}", out[1].stdout);
    assert_eq!(w.get("counts"), "3:40");
    assert_eq!(w.num("samples"), 40);
    assert_eq!(w.get("seqs"), "7:0-39");
    // The silent subscriber never became ready, and its deadline fired.
    assert_eq!(w.num("silent_ready"), 0);
    assert!(w.num("deadline_missed") >= 1, "{}", out[1].stdout);
    // The interval fired, and not more often than its period allows.
    let (ticks, span) = (w.num("ticks"), w.num("span_ms"));
    assert!(ticks >= 1, "{}", out[1].stdout);
    assert!(ticks <= span / INTERVAL_MS + 2, "{}", out[1].stdout);
    assert_eq!(out[2].result().num("delivered"), 40);
    assert_eq!(out[3].result().num("delivered"), 40);
    d.finish();
}

// ---------------------------------------------------------------- zero timeouts

#[test]
fn zero_timeouts_return_at_once() {
    let d = Domain::new("zero", HELPER);
    let data = ["--service", "it/zero/data"];
    let ready = d.arg("zero-ready");
    let go = d.arg("go");
    let mut z = vec![
        "zero-timeouts",
        "--events",
        "it/zero/events",
        "--ready-file",
        &ready,
        "--wait-file",
        &go,
    ];
    z.extend(data);
    let mut procs = vec![d.spawn("zero", &z)];
    // Round 1 (nothing pending) is over once this file exists.
    d.wait_file("zero-ready", &mut procs);
    let notified = d.arg("notified");
    let sent = d.arg("sent");
    procs.push(d.spawn(
        "notifier",
        &[
            "notify",
            "--service",
            "it/zero/events",
            "--id",
            "5",
            "--done-file",
            &notified,
        ],
    ));
    let mut p = vec![
        "publish",
        "--id",
        "2",
        "--count",
        "1",
        "--wait-subscribers",
        "1",
        "--done-file",
        &sent,
        "--linger",
    ];
    p.extend(data);
    procs.push(d.spawn("publisher", &p));
    d.wait_file("notified", &mut procs);
    d.wait_file("sent", &mut procs);
    d.touch("go");
    let out = d.wait_all(procs);

    let z = out[0].result();
    // Nothing pending: empty at once (the time is printed, not asserted).
    assert_eq!(z.num("idle_listener"), 0, "{}", out[0].stdout);
    assert_eq!(z.num("idle_subscriber"), 0);
    assert_eq!(z.get("idle_waitset"), "TimedOut");
    // Pending: a zero timeout still takes what is there.
    assert_eq!(z.get("busy_waitset"), "Processed(2)", "{}", out[0].stdout);
    assert_eq!(z.num("busy_fired"), 2);
    assert_eq!(z.get("busy_listener"), "5:1");
    assert_eq!(z.get("busy_seq"), "0");
    eprintln!("three zero-timeout waits took {} µs", z.num("idle_us"));
    d.finish();
}
