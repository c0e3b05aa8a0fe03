//! The publish/subscribe roles: `publish`, `subscribe` (busy-polling
//! `receive`, optionally holding samples) and `recv` (`blocking_receive`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use hako::{BackpressureStrategy, Publisher, ReceiveError};
use hako_tests::{exit, Checked, SmallMsg, TestMsg};

use crate::errors::{die, die_loan, die_receive, die_verify};
use crate::plumbing::{
    node, poll_until, receive_one, service, touch, wait_for, Backoff, Strategy, SvcArgs, Verifier,
};

#[derive(Args, Debug)]
pub struct PublishArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Send 48-byte `SmallMsg`s (which travel in the queue slot) instead
    /// of `TestMsg`s.
    #[arg(long)]
    pub small: bool,
    /// Logical publisher id written into every message.
    #[arg(long, default_value_t = 0)]
    id: u64,
    /// Messages to send.
    #[arg(long)]
    count: u64,
    /// Backpressure strategy: block, discard or retry:<n>.
    #[arg(long, default_value = "block", value_parser = parse_strategy)]
    strategy: BackpressureStrategy,
    /// max_loaned_samples of the publisher.
    #[arg(long)]
    max_loans: Option<u32>,
    /// Create this file once the publisher exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Before sending, wait until this many subscribers are connected.
    #[arg(long, default_value_t = 0)]
    wait_subscribers: usize,
    /// Before sending, wait for this file.
    #[arg(long)]
    wait_file: Option<PathBuf>,
    /// After sending this many messages, wait for --pause-file.
    #[arg(long, requires = "pause_file")]
    pause_at: Option<u64>,
    #[arg(long)]
    pause_file: Option<PathBuf>,
    /// Create this file when pausing at --pause-at.
    #[arg(long)]
    paused_file: Option<PathBuf>,
    /// Create this file once everything is sent.
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// After sending, call update_connections() until this many subscribers
    /// are connected (late joiners get the history then).
    #[arg(long, default_value_t = 0)]
    wait_subscribers_after: usize,
    /// Before exiting, wait until no subscriber is connected any more (so
    /// that queued samples stay reachable until they are read).
    #[arg(long)]
    linger: bool,
    /// Before exiting, wait for this file.
    #[arg(long)]
    release_file: Option<PathBuf>,
    /// Print every send's return value (deliveries=1,1,0,...).
    #[arg(long)]
    print_deliveries: bool,
    /// Sleep this many microseconds after each send (pacing, so that a
    /// reader sees the messages spread over time).
    #[arg(long, default_value_t = 0)]
    pace_us: u64,
}

#[derive(Args, Debug)]
pub struct SubscribeArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Receive `SmallMsg`s instead of `TestMsg`s.
    #[arg(long)]
    pub small: bool,
    /// Messages to receive (in total, from all publishers) before finishing.
    #[arg(long)]
    expect: u64,
    /// Create this file once the subscriber exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Receive and keep this many samples first, then try one more receive
    /// (reported as after_hold=...), then create --held-file.
    #[arg(long, default_value_t = 0)]
    hold: usize,
    #[arg(long)]
    held_file: Option<PathBuf>,
    /// Before reading (after the hold phase), wait for this file. Held
    /// samples are released after it appears.
    #[arg(long)]
    wait_file: Option<PathBuf>,
    /// Sleep this many microseconds after each message (a slow reader).
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
    /// After --expect messages, require that receive() returns nothing more.
    #[arg(long)]
    check_empty: bool,
}

#[derive(Args, Debug)]
pub struct RecvArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = Strategy::SpinThenPark)]
    strategy: Strategy,
    /// Messages to receive.
    #[arg(long)]
    expect: u64,
    /// Create this file once the subscriber exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// After the n-th message (from 1), create the file `<prefix><n>`.
    #[arg(long)]
    got_prefix: Option<String>,
    /// After the first message, wait for this file before receiving again.
    #[arg(long)]
    pause_file: Option<PathBuf>,
    /// Build the subscriber with `end_when_publishers_gone(true)`.
    #[arg(long)]
    end_when_publishers_gone: bool,
}

fn parse_strategy(s: &str) -> Result<BackpressureStrategy, String> {
    match s {
        "block" => Ok(BackpressureStrategy::Block),
        "discard" => Ok(BackpressureStrategy::Discard),
        _ => match s.strip_prefix("retry:").map(str::parse::<u32>) {
            Some(Ok(n)) => Ok(BackpressureStrategy::Retry(n)),
            _ => Err(format!("{s:?}: expected block, discard or retry:<n>")),
        },
    }
}

// ---------------------------------------------------------------- publish

pub fn publish(a: PublishArgs) {
    if a.small {
        publish_as::<SmallMsg>(a)
    } else {
        publish_as::<TestMsg>(a)
    }
}

fn publish_as<M: Checked>(a: PublishArgs) {
    let node = node();
    let svc = service::<M>(&node, &a.svc);
    let mut b = svc.publisher_builder().backpressure(a.strategy);
    if let Some(n) = a.max_loans {
        b = b.max_loaned_samples(n);
    }
    let publisher: Publisher<M> = b
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    touch(&a.ready_file);
    if a.wait_subscribers > 0 {
        poll_until(|| publisher.subscriber_count() >= a.wait_subscribers);
    }
    wait_for(&a.wait_file);

    let mut deliveries = Vec::new();
    let (mut delivered, mut zero) = (0u64, 0u64);
    for seq in 0..a.count {
        if a.pause_at == Some(seq) {
            touch(&a.paused_file);
            wait_for(&a.pause_file);
        }
        let sample = publisher.loan_uninit().unwrap_or_else(|e| die_loan(e));
        let n = sample.write_payload(M::new(a.id, seq)).send();
        delivered += n as u64;
        if n == 0 {
            zero += 1;
        }
        if a.print_deliveries {
            deliveries.push(n.to_string());
        }
        if a.pace_us > 0 {
            std::thread::sleep(Duration::from_micros(a.pace_us));
        }
    }
    touch(&a.done_file);

    if a.wait_subscribers_after > 0 {
        poll_until(|| {
            publisher.update_connections();
            publisher.subscriber_count() >= a.wait_subscribers_after
        });
    }
    if a.linger {
        poll_until(|| publisher.subscriber_count() == 0);
    }
    wait_for(&a.release_file);
    let mut line = format!(
        "RESULT role=publish id={} sent={} delivered={delivered} zero={zero} free={} pool={}",
        a.id,
        a.count,
        publisher.free_chunks(),
        publisher.pool_size()
    );
    if a.print_deliveries {
        line.push_str(&format!(" deliveries={}", deliveries.join(",")));
    }
    println!("{line}");
}

// ---------------------------------------------------------------- subscribe

pub fn subscribe(a: SubscribeArgs) {
    if a.small {
        subscribe_as::<SmallMsg>(a)
    } else {
        subscribe_as::<TestMsg>(a)
    }
}

fn subscribe_as<M: Checked>(a: SubscribeArgs) {
    let node = node();
    let svc = service::<M>(&node, &a.svc);
    let sub = svc
        .subscriber_builder()
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    touch(&a.ready_file);

    let mut v = Verifier::default();
    let mut held = Vec::new();
    let mut after_hold = String::from("none");
    if a.hold > 0 {
        let mut backoff = Backoff::default();
        while held.len() < a.hold {
            match receive_one(&sub) {
                Some(s) => {
                    v.check(&s);
                    held.push(s);
                    backoff.reset();
                }
                None => backoff.wait(),
            }
        }
        after_hold = match sub.receive() {
            Err(ReceiveError::ExceedsMaxBorrowed(n)) => format!("exceeds_max_borrowed({n})"),
            Err(e) => die_receive(e),
            Ok(Some(s)) => {
                v.check(&s);
                "sample".into()
            }
            Ok(None) => "none".into(),
        };
        touch(&a.held_file);
    }
    wait_for(&a.wait_file);
    drop(held);

    let mut backoff = Backoff::default();
    while v.total < a.expect {
        match receive_one(&sub) {
            Some(s) => {
                v.check(&s);
                drop(s);
                backoff.reset();
                if a.delay_us > 0 {
                    std::thread::sleep(Duration::from_micros(a.delay_us));
                }
            }
            None => backoff.wait(),
        }
    }
    if a.check_empty {
        if let Some(s) = receive_one(&sub) {
            die_verify(format!(
                "expected nothing after {} messages, got {:?}",
                a.expect, *s
            ));
        }
    }
    println!(
        "RESULT role=subscribe received={} publishers={} seqs={} after_hold={after_hold}",
        v.total,
        v.per_publisher.len(),
        v.seqs()
    );
}

// ---------------------------------------------------------------- recv

pub fn recv(a: RecvArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let sub = svc
        .subscriber_builder()
        .wait_strategy(a.strategy.into())
        .end_when_publishers_gone(a.end_when_publishers_gone)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    touch(&a.ready_file);
    let mut v = Verifier::default();
    while v.total < a.expect {
        let s = sub.blocking_receive().unwrap_or_else(|e| die_receive(e));
        v.check(&s);
        drop(s);
        if let Some(prefix) = &a.got_prefix {
            touch(&Some(PathBuf::from(format!("{prefix}{}", v.total))));
        }
        if v.total == 1 {
            wait_for(&a.pause_file);
        }
    }
    let changes = sub.take_publisher_changes();
    println!(
        "RESULT role=recv received={} publishers={} seqs={} connected={} departed={}",
        v.total,
        v.per_publisher.len(),
        v.seqs(),
        changes.connected,
        changes.departed
    );
}
