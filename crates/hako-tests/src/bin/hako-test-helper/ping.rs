//! `ping`: one side of a ping-pong over two event services or two
//! publish/subscribe services; the initiator reports the round-trip time,
//! both sides how often they slept.

use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use hako::{EventId, PubSubService, Publisher, Sample};
use hako_tests::{exit, TestMsg};

use crate::errors::{die, die_event_port, die_listener, die_notify, die_receive, die_verify};
use crate::plumbing::{
    event_named, listener, node, poll_until, pubsub_named, subscriber, Strategy,
};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Event,
    Pubsub,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PingRole {
    /// Sends the pings and times the round trips.
    Initiator,
    /// Answers each ping.
    Responder,
}

#[derive(Args, Debug)]
pub struct PingArgs {
    #[arg(long, value_enum)]
    pub transport: Transport,
    #[arg(long, value_enum)]
    role: PingRole,
    /// Round trips.
    #[arg(long)]
    count: u64,
    #[arg(long, value_enum, default_value_t = Strategy::SpinThenPark)]
    strategy: Strategy,
    /// Prefix of the two services: `<prefix>/there` carries pings,
    /// `<prefix>/back` the answers.
    #[arg(long, default_value = "it/ping")]
    service: String,
    /// Pin this process to this CPU first.
    #[arg(long)]
    cpu: Option<usize>,
}

impl PingArgs {
    fn pin(&self) {
        if let Some(cpu) = self.cpu {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            rustix::thread::sched_setaffinity(None, &set)
                .unwrap_or_else(|e| die(exit::FAILURE, "sched_setaffinity", e));
        }
    }
}

/// How often this process went to sleep so far (its voluntary context
/// switches, from /proc/self/status).
fn sleeps() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| die(exit::FAILURE, "/proc/self/status", e));
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            die(
                exit::FAILURE,
                "/proc/self/status",
                "no voluntary_ctxt_switches",
            )
        })
}

// ---------------------------------------------------------------- ping

/// Checks that a wait of the ping-pong returned exactly one notification of
/// id 0: one is outstanding at a time, so nothing may coalesce or get lost.
fn expect_one(events: &[(EventId, u64)], round: u64) {
    if events != [(EventId(0), 1)] {
        die_verify(format!(
            "round {round}: expected exactly [(EventId(0), 1)], got {events:?}"
        ));
    }
}

pub fn ping_event(a: PingArgs) {
    a.pin();
    let node = node();
    let there = event_named(&node, &format!("{}/there", a.service));
    let back = event_named(&node, &format!("{}/back", a.service));
    match a.role {
        PingRole::Initiator => {
            // The listener for the answers exists before the first ping.
            let answers = listener(&back, a.strategy);
            let pings = there
                .notifier_builder()
                .create()
                .unwrap_or_else(|e| die_event_port(e));
            // The first ping goes out once the responder listens (a
            // notification nobody listens to reaches no one: returns 0).
            poll_until(|| pings.notify().unwrap_or_else(|e| die_notify(e)) == 1);
            let (start, slept) = (Instant::now(), sleeps());
            for round in 0..a.count {
                if round > 0 {
                    let n = pings.notify().unwrap_or_else(|e| die_notify(e));
                    if n != 1 {
                        die_verify(format!("round {round}: ping reached {n} listeners"));
                    }
                }
                let ev = answers.blocking_wait().unwrap_or_else(|e| die_listener(e));
                expect_one(&ev, round);
            }
            report_ping("event", a.strategy, a.count, start.elapsed(), slept);
        }
        PingRole::Responder => {
            // The answering notifier exists before the listener, so the
            // initiator's first ping (which waits for the listener) finds
            // it there.
            let answers = back
                .notifier_builder()
                .create()
                .unwrap_or_else(|e| die_event_port(e));
            let pings = listener(&there, a.strategy);
            for round in 0..a.count {
                let ev = pings.blocking_wait().unwrap_or_else(|e| die_listener(e));
                expect_one(&ev, round);
                let n = answers.notify().unwrap_or_else(|e| die_notify(e));
                if n != 1 {
                    die_verify(format!("round {round}: answer reached {n} listeners"));
                }
            }
            println!("RESULT role=ping side=responder count={}", a.count);
        }
    }
}

pub fn ping_pubsub(a: PingArgs) {
    a.pin();
    let node = node();
    let there = pubsub_named(&node, &format!("{}/there", a.service));
    let back = pubsub_named(&node, &format!("{}/back", a.service));
    let check = |s: &Sample<TestMsg>, from: u64, round: u64| {
        let m: TestMsg = **s;
        if !m.is_intact() || m.publisher != from || m.seq != round {
            die_verify(format!(
                "round {round}: expected seq {round} from {from}, got {m:?}"
            ));
        }
    };
    let send = |p: &Publisher<TestMsg>, from: u64, round: u64| {
        let n = p
            .send_copy(TestMsg::new(from, round))
            .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
        if n != 1 {
            die_verify(format!("round {round}: message reached {n} subscribers"));
        }
    };
    let publisher = |svc: &PubSubService<TestMsg>| {
        svc.publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e))
    };
    match a.role {
        PingRole::Initiator => {
            let answers = subscriber(&back, a.strategy);
            let pings = publisher(&there);
            poll_until(|| pings.subscriber_count() >= 1);
            let (start, slept) = (Instant::now(), sleeps());
            for round in 0..a.count {
                send(&pings, 0, round);
                let s = answers
                    .blocking_receive()
                    .unwrap_or_else(|e| die_receive(e));
                check(&s, 1, round);
            }
            report_ping("pubsub", a.strategy, a.count, start.elapsed(), slept);
        }
        PingRole::Responder => {
            let answers = publisher(&back);
            let pings = subscriber(&there, a.strategy);
            // The first ping comes when the initiator is ready: not counted.
            let mut slept = sleeps();
            if a.count > 0 {
                let s = pings.blocking_receive().unwrap_or_else(|e| die_receive(e));
                check(&s, 0, 0);
                drop(s);
                slept = sleeps();
                send(&answers, 1, 0);
            }
            for round in 1..a.count {
                let s = pings.blocking_receive().unwrap_or_else(|e| die_receive(e));
                check(&s, 0, round);
                drop(s);
                send(&answers, 1, round);
            }
            println!(
                "RESULT role=ping side=responder count={} sleeps={}",
                a.count,
                sleeps() - slept
            );
        }
    }
}

/// `slept`: [`sleeps`] when the timed loop began.
fn report_ping(transport: &str, strategy: Strategy, count: u64, elapsed: Duration, slept: u64) {
    println!(
        "RESULT role=ping side=initiator transport={transport} strategy={strategy:?} \
         count={count} elapsed_ms={} round_trip_ns={} sleeps={}",
        elapsed.as_millis(),
        elapsed.as_nanos() / u128::from(count.max(1)),
        sleeps() - slept
    );
}
