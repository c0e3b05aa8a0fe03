//! `sigwait`: waiting loops that only SIGTERM/SIGINT end (`node.wait`, a
//! waitset, a subscriber's or listener's blocking wait, a send blocked by
//! backpressure).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use hako::{
    BackpressureStrategy, ListenerError, NodeBuilder, NodeWaitError, OverflowPolicy, WaitEvent,
    WaitOutcome, WaitSet,
};
use hako_tests::exit;

use crate::errors::{die, die_verify, die_waitset};
use crate::plumbing::{event_named, listener, node, pubsub_named, subscriber, touch, Strategy};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum LoopKind {
    /// `while node.wait(cycle).is_ok() { .. }`
    Node,
    /// `wait_and_process` on a waitset with an interval and a listener,
    /// until `WaitOutcome::TerminationRequest`.
    Waitset,
    /// `blocking_receive` of a subscriber with no publisher, until
    /// `ReceiveError::TerminationRequest`.
    Subscriber,
    /// `blocking_wait` of a listener with no notifier, until
    /// `ListenerError::TerminationRequest`.
    Listener,
    /// A send blocked by backpressure (`Block`) on a subscriber that does
    /// not read, until SIGINT/SIGTERM ends it (the sample counts as
    /// dropped).
    Publisher,
}

#[derive(Args, Debug)]
pub struct SigwaitArgs {
    #[arg(long = "loop", value_enum)]
    kind: LoopKind,
    /// The node.wait cycle, or the waitset's interval.
    #[arg(long, default_value_t = 20)]
    cycle_ms: u64,
    /// Create this file once the signal handlers are installed.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Build the node with `signal_handling(false)` (subscriber and
    /// listener loops): then a signal keeps its default effect.
    #[arg(long)]
    no_signal_handling: bool,
}

// ---------------------------------------------------------------- sigwait

pub fn sigwait(a: SigwaitArgs) {
    let node = node();
    let cycle = Duration::from_millis(a.cycle_ms);
    match a.kind {
        LoopKind::Node => {
            // The first wait installs the SIGINT/SIGTERM handlers; only then
            // may the test send a signal (before, it would kill us).
            if let Err(e) = node.wait(Duration::ZERO) {
                die(exit::UNEXPECTED_WAKE, "NodeWaitError", e);
            }
            touch(&a.ready_file);
            let mut cycles = 0u64;
            while node.wait(cycle).is_ok() {
                cycles += 1;
            }
            match node.wait(Duration::ZERO) {
                Err(NodeWaitError::TerminationRequest) => {}
                other => die(
                    exit::UNEXPECTED_WAKE,
                    "NodeWaitError",
                    format!("the loop ended, but a further wait returned {other:?}"),
                ),
            }
            println!("stopping: termination requested");
            println!("RESULT role=sigwait loop=node cycles={cycles}");
        }
        LoopKind::Waitset => {
            let events = event_named(&node, "it/sigwait");
            let listener = listener(&events, Strategy::SpinThenPark);
            // WaitSet::new installs the handlers.
            let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
            let at_listener = ws
                .attach_listener(&listener)
                .unwrap_or_else(|e| die_waitset(e));
            let tick = ws.attach_interval(cycle);
            touch(&a.ready_file);
            let mut ticks = 0u64;
            loop {
                let outcome = ws
                    .wait_and_process(|e| match e {
                        WaitEvent::Tick(id) if id == tick => ticks += 1,
                        WaitEvent::Ready(id) if id == at_listener => {
                            listener.try_wait();
                        }
                        other => die_verify(format!("unexpected waitset event {other:?}")),
                    })
                    .unwrap_or_else(|e| die_waitset(e));
                match outcome {
                    WaitOutcome::TerminationRequest => break,
                    WaitOutcome::Processed(_) => {}
                    WaitOutcome::TimedOut => die(
                        exit::UNEXPECTED_WAKE,
                        "UnexpectedOutcome",
                        "wait_and_process without timeout returned TimedOut",
                    ),
                }
            }
            println!("stopping: termination requested");
            println!("RESULT role=sigwait loop=waitset ticks={ticks}");
        }
        LoopKind::Subscriber | LoopKind::Listener => port_sigwait(a),
        LoopKind::Publisher => blocked_send_sigwait(a),
    }
}

/// A subscriber's or listener's blocking wait ended by SIGINT/SIGTERM.
fn port_sigwait(a: SigwaitArgs) {
    let node = NodeBuilder::new()
        .signal_handling(!a.no_signal_handling)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e));
    let short = Duration::from_millis(a.cycle_ms);
    // A first wait that sleeps installs the handlers (when the node handles
    // signals); only then may the test send one.
    let (kind, error) = if a.kind == LoopKind::Subscriber {
        let sub = subscriber(
            &pubsub_named(&node, "it/sigwait-sub"),
            Strategy::SpinThenPark,
        );
        if sub.receive_timeout(short).is_err() {
            die_verify("the first, timed wait failed".to_owned());
        }
        touch(&a.ready_file);
        let e = match sub.blocking_receive() {
            Ok(_) => die_verify("a sample came from nowhere".to_owned()),
            Err(e) => e,
        };
        if e != hako::ReceiveError::TerminationRequest {
            die_verify(format!("blocking_receive ended with {e:?}"));
        }
        // Later waits end at once while nothing is there.
        match sub.receive_timeout(Duration::from_secs(60)) {
            Err(hako::ReceiveError::TerminationRequest) => {}
            other => die_verify(format!("a further wait returned {other:?}")),
        }
        ("subscriber", e.to_string())
    } else {
        let l = listener(
            &event_named(&node, "it/sigwait-listen"),
            Strategy::SpinThenPark,
        );
        if l.timed_wait(short).is_err() {
            die_verify("the first, timed wait failed".to_owned());
        }
        touch(&a.ready_file);
        match l.blocking_wait() {
            Err(e @ ListenerError::TerminationRequest) => ("listener", e.to_string()),
            other => die_verify(format!("blocking_wait ended with {other:?}")),
        }
    };
    println!("stopping: {error}");
    println!("RESULT role=sigwait loop={kind}");
}

/// A send blocked by backpressure, ended by SIGINT/SIGTERM.
fn blocked_send_sigwait(a: SigwaitArgs) {
    let node = node();
    let svc = node
        .service_builder(&"it/sigwait-send".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(1)
        .open_or_create()
        .unwrap_or_else(|e| die(exit::FAILURE, "ServiceError", e));
    // A subscriber that never reads.
    let _stuck = svc
        .subscriber_builder()
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    let publisher = svc
        .publisher_builder()
        .backpressure(BackpressureStrategy::Block)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    // A wait that sleeps installs the handlers; only then may the test
    // send a signal.
    if let Err(e) = node.wait(Duration::from_millis(1)) {
        die(exit::UNEXPECTED_WAKE, "NodeWaitError", e);
    }
    let first = publisher
        .send_copy(1)
        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
    touch(&a.ready_file);
    // The queue is full: this one waits, until the signal.
    let second = publisher
        .send_copy(2)
        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
    match node.wait(Duration::ZERO) {
        Err(NodeWaitError::TerminationRequest) => {}
        other => die_verify(format!("the send returned, but node.wait gave {other:?}")),
    }
    println!("stopping: termination requested");
    println!("RESULT role=sigwait loop=publisher first={first} second={second}");
}
