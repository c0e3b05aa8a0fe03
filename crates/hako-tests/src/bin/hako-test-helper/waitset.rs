//! The waitset roles: `waitset` (a listener, a subscriber, a silent
//! subscriber with a deadline and an interval, fed by other processes) and
//! `zero-timeouts` (every wait with a zero timeout, idle and busy).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use hako::{WaitEvent, WaitOutcome, WaitSet};
use hako_tests::{exit, TestMsg};

use crate::errors::{die, die_listener, die_receive, die_verify, die_waitset};
use crate::plumbing::{
    account, event_named, id_counts, listener, node, pubsub_named, receive_one, service,
    subscriber, touch, wait_for, Strategy, SvcArgs, Verifier,
};

#[derive(Args, Debug)]
pub struct WaitsetArgs {
    /// The publish/subscribe service a publisher process feeds (--service).
    #[command(flatten)]
    svc: SvcArgs,
    /// The event service a notifier process feeds.
    #[arg(long)]
    events: String,
    /// A publish/subscribe service nobody sends on, watched by a deadline.
    #[arg(long)]
    silent: String,
    /// Notifications to wait for (summed).
    #[arg(long)]
    expect_events: u64,
    /// Samples to wait for.
    #[arg(long)]
    expect_samples: u64,
    /// Period of the interval.
    #[arg(long)]
    interval_ms: u64,
    /// Deadline on the silent subscriber.
    #[arg(long)]
    deadline_ms: u64,
    /// Keep waiting at least this long (from before the timers were
    /// attached), even once all data arrived.
    #[arg(long)]
    min_span_ms: u64,
    /// Create this file once every port is attached.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Create this file at the end.
    #[arg(long)]
    done_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ZeroArgs {
    /// The event service.
    #[arg(long)]
    events: String,
    /// The publish/subscribe service (--service).
    #[command(flatten)]
    svc: SvcArgs,
    /// Create this file after the first round (nothing pending).
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Wait for this file (another process notified and sent), then do the
    /// second round.
    #[arg(long)]
    wait_file: Option<PathBuf>,
}

// ---------------------------------------------------------------- waitset

pub fn waitset(a: WaitsetArgs) {
    let node = node();
    let events = event_named(&node, &a.events);
    let data = service::<TestMsg>(&node, &a.svc);
    let silent = pubsub_named(&node, &a.silent);
    let listener = listener(&events, Strategy::SpinThenPark);
    let sub = subscriber(&data, Strategy::SpinThenPark);
    let quiet = subscriber(&silent, Strategy::SpinThenPark);

    let start = Instant::now();
    let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
    let at_listener = ws
        .attach_listener(&listener)
        .unwrap_or_else(|e| die_waitset(e));
    let at_sub = ws
        .attach_subscriber(&sub)
        .unwrap_or_else(|e| die_waitset(e));
    let at_quiet = ws
        .attach_subscriber(&quiet)
        .unwrap_or_else(|e| die_waitset(e));
    let at_deadline = ws
        .attach_deadline(at_quiet, Duration::from_millis(a.deadline_ms))
        .unwrap_or_else(|e| die_waitset(e));
    let at_tick = ws.attach_interval(Duration::from_millis(a.interval_ms));
    touch(&a.ready_file);

    let mut counts = BTreeMap::new();
    let mut v = Verifier::default();
    let (mut notified, mut ticks, mut missed, mut quiet_ready, mut calls) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let min_span = Duration::from_millis(a.min_span_ms);
    loop {
        let outcome = ws
            .wait_and_process(|e| match e {
                WaitEvent::Ready(id) if id == at_listener => {
                    notified += account(&listener.try_wait(), &mut counts);
                }
                WaitEvent::Ready(id) if id == at_sub => {
                    while let Some(s) = receive_one(&sub) {
                        v.check(&s);
                    }
                }
                WaitEvent::Ready(id) if id == at_quiet => {
                    quiet_ready += 1;
                    while receive_one(&quiet).is_some() {}
                }
                WaitEvent::Tick(id) if id == at_tick => ticks += 1,
                WaitEvent::DeadlineMissed(id) if id == at_deadline => missed += 1,
                other => die_verify(format!("unexpected waitset event {other:?}")),
            })
            .unwrap_or_else(|e| die_waitset(e));
        calls += 1;
        match outcome {
            WaitOutcome::Processed(n) if n > 0 => {}
            other => die(
                exit::UNEXPECTED_WAKE,
                "UnexpectedOutcome",
                format!("wait_and_process returned {other:?}"),
            ),
        }
        if notified >= a.expect_events && v.total >= a.expect_samples && start.elapsed() >= min_span
        {
            break;
        }
    }
    let span = start.elapsed();
    touch(&a.done_file);
    println!(
        "RESULT role=waitset events={notified} counts={} samples={} seqs={} ticks={ticks} \
         deadline_missed={missed} silent_ready={quiet_ready} calls={calls} span_ms={}",
        id_counts(&counts),
        v.total,
        v.seqs(),
        span.as_millis()
    );
}

// ---------------------------------------------------------------- zero-timeouts

pub fn zero_timeouts(a: ZeroArgs) {
    let node = node();
    let events = event_named(&node, &a.events);
    let data = service::<TestMsg>(&node, &a.svc);
    let listener = listener(&events, Strategy::SpinThenPark);
    let sub = subscriber(&data, Strategy::SpinThenPark);
    let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
    ws.attach_listener(&listener)
        .unwrap_or_else(|e| die_waitset(e));
    ws.attach_subscriber(&sub)
        .unwrap_or_else(|e| die_waitset(e));

    // Round 1: nothing is pending; every wait returns at once, empty.
    let t = Instant::now();
    let ev = listener
        .timed_wait(Duration::ZERO)
        .unwrap_or_else(|e| die_listener(e));
    let got = sub
        .receive_timeout(Duration::ZERO)
        .unwrap_or_else(|e| die_receive(e));
    let out = ws
        .wait_and_process_timeout(|_| {}, Duration::ZERO)
        .unwrap_or_else(|e| die_waitset(e));
    let idle_us = t.elapsed().as_micros();
    let idle = format!(
        "idle_listener={} idle_subscriber={} idle_waitset={out:?}",
        ev.len(),
        u8::from(got.is_some())
    );
    touch(&a.ready_file);

    // Round 2: another process notified and sent; zero timeouts take it.
    wait_for(&a.wait_file);
    let mut fired = 0;
    let out2 = ws
        .wait_and_process_timeout(|_| fired += 1, Duration::ZERO)
        .unwrap_or_else(|e| die_waitset(e));
    let ev = listener
        .timed_wait(Duration::ZERO)
        .unwrap_or_else(|e| die_listener(e));
    let mut counts = BTreeMap::new();
    account(&ev, &mut counts);
    let got = sub
        .receive_timeout(Duration::ZERO)
        .unwrap_or_else(|e| die_receive(e));
    let seq = got.map_or("none".to_owned(), |s| s.seq.to_string());
    println!(
        "RESULT role=zero-timeouts {idle} idle_us={idle_us} busy_waitset={out2:?} \
         busy_fired={fired} busy_listener={} busy_seq={seq}",
        id_counts(&counts)
    );
}
