//! What the roles share: the service options, nodes and services, signal
//! files, polling, the check of received `TestMsg`s, and the ports and
//! counts of the waiting roles.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use hako::{
    EventId, EventService, Listener, Node, NodeBuilder, OverflowPolicy, Payload, PubSubService,
    Sample, ServiceName, Subscriber, WaitStrategy,
};
use hako_tests::{exit, Checked, TestMsg};

use crate::errors::{die, die_event_port, die_receive, die_service, die_verify};

// ---------------------------------------------------------------- services

#[derive(Args, Debug, Clone)]
pub struct SvcArgs {
    /// Service name.
    #[arg(long, default_value = "it/service")]
    service: String,
    /// How to get the service.
    #[arg(long, value_enum, default_value_t = Mode::OpenOrCreate)]
    mode: Mode,
    #[arg(long)]
    max_publishers: Option<u32>,
    #[arg(long)]
    max_subscribers: Option<u32>,
    #[arg(long)]
    max_nodes: Option<u32>,
    /// subscriber_max_buffer_size.
    #[arg(long)]
    buffer: Option<u32>,
    /// subscriber_max_borrowed_samples.
    #[arg(long)]
    borrowed: Option<u32>,
    /// history_size.
    #[arg(long)]
    history: Option<u32>,
    #[arg(long, value_enum)]
    overflow: Option<Overflow>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Create,
    Open,
    OpenOrCreate,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    DropOldest,
    Backpressure,
}

pub fn node() -> Node {
    let name = format!("it-{}", std::process::id());
    match NodeBuilder::new().name(&name) {
        Ok(b) => b
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e)),
        Err(e) => die(exit::NAME, "NameError", e),
    }
}

pub fn service<T: Payload + ?Sized>(node: &Node, a: &SvcArgs) -> PubSubService<T> {
    let name = ServiceName::new(&a.service).unwrap_or_else(|e| die(exit::NAME, "NameError", e));
    let mut b = node.service_builder(&name).publish_subscribe::<T>();
    if let Some(v) = a.max_publishers {
        b = b.max_publishers(v);
    }
    if let Some(v) = a.max_subscribers {
        b = b.max_subscribers(v);
    }
    if let Some(v) = a.max_nodes {
        b = b.max_nodes(v);
    }
    if let Some(v) = a.buffer {
        b = b.subscriber_max_buffer_size(v);
    }
    if let Some(v) = a.borrowed {
        b = b.subscriber_max_borrowed_samples(v);
    }
    if let Some(v) = a.history {
        b = b.history_size(v);
    }
    if let Some(o) = a.overflow {
        b = b.overflow_policy(match o {
            Overflow::DropOldest => OverflowPolicy::DropOldest,
            Overflow::Backpressure => OverflowPolicy::Backpressure,
        });
    }
    let r = match a.mode {
        Mode::Create => b.create(),
        Mode::Open => b.open(),
        Mode::OpenOrCreate => b.open_or_create(),
    };
    r.unwrap_or_else(|e| die_service(e))
}

// ---------------------------------------------------------------- signal files and polling

/// Creates a signal file.
pub fn touch(path: &Option<PathBuf>) {
    if let Some(p) = path {
        std::fs::write(p, b"")
            .unwrap_or_else(|e| die(exit::FAILURE, "signal", format!("{}: {e}", p.display())));
    }
}

/// Waits for a signal file (the test's watchdog bounds the wait).
pub fn wait_for(path: &Option<PathBuf>) {
    if let Some(p) = path {
        wait_path(p);
    }
}

pub fn wait_path(p: &Path) {
    while !p.exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Polls `cond` until it holds, backing off from spinning to sleeping.
pub fn poll_until(mut cond: impl FnMut() -> bool) {
    let mut backoff = Backoff::default();
    while !cond() {
        backoff.wait();
    }
}

/// Spin, then yield, then sleep briefly: polling that stays cheap when the
/// peer is slow (two cores are shared by all processes of a test).
#[derive(Default)]
pub struct Backoff(u32);

impl Backoff {
    pub fn wait(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 32 {
            std::hint::spin_loop();
        } else if self.0 < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    pub fn reset(&mut self) {
        self.0 = 0;
    }
}

// ---------------------------------------------------------------- received messages

/// Checks each received message and records, per publisher, the sequence
/// numbers seen as ranges.
#[derive(Default)]
pub struct Verifier {
    pub total: u64,
    pub per_publisher: BTreeMap<u64, Vec<(u64, u64)>>,
}

impl Verifier {
    pub fn check<M: Checked>(&mut self, s: &Sample<M>) {
        // Copy out of shared memory first, then look at the copy.
        let m: M = **s;
        if !m.is_intact() {
            die_verify(format!(
                "corrupted payload (message #{}): {m:?}, checksum should be {:#x}",
                self.total,
                m.compute_checksum()
            ));
        }
        let (publisher, seq) = (m.publisher(), m.seq());
        let ranges = self.per_publisher.entry(publisher).or_default();
        match ranges.last_mut() {
            Some((_, last)) if seq <= *last => die_verify(format!(
                "publisher {publisher} sent seq {seq} after seq {last} (message #{})",
                self.total
            )),
            Some((_, last)) if seq == *last + 1 => *last = seq,
            _ => ranges.push((seq, seq)),
        }
        self.total += 1;
    }

    /// `0:0-9,20-29/1:0-4`: per publisher, the ranges of sequence numbers.
    pub fn seqs(&self) -> String {
        let per: Vec<String> = self
            .per_publisher
            .iter()
            .map(|(p, ranges)| {
                let r: Vec<String> = ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                format!("{p}:{}", r.join(","))
            })
            .collect();
        if per.is_empty() {
            "none".into()
        } else {
            per.join("/")
        }
    }
}

pub fn receive_one<M: Checked>(sub: &Subscriber<M>) -> Option<Sample<M>> {
    sub.receive().unwrap_or_else(|e| die_receive(e))
}

// ---------------------------------------------------------------- waiting

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    BusySpin,
    SpinThenPark,
    Park,
}

impl From<Strategy> for WaitStrategy {
    fn from(s: Strategy) -> Self {
        match s {
            Strategy::BusySpin => WaitStrategy::BusySpin,
            Strategy::SpinThenPark => WaitStrategy::SpinThenPark,
            Strategy::Park => WaitStrategy::Park,
        }
    }
}

pub fn service_name(s: &str) -> ServiceName {
    ServiceName::new(s).unwrap_or_else(|e| die(exit::NAME, "NameError", e))
}

/// An event service with default settings, opened or created.
pub fn event_named(node: &Node, name: &str) -> EventService {
    node.service_builder(&service_name(name))
        .event()
        .open_or_create()
        .unwrap_or_else(|e| die_service(e))
}

/// A `TestMsg` service with default settings, opened or created.
pub fn pubsub_named(node: &Node, name: &str) -> PubSubService<TestMsg> {
    node.service_builder(&service_name(name))
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap_or_else(|e| die_service(e))
}

pub fn listener(svc: &EventService, strategy: Strategy) -> Listener {
    svc.listener_builder()
        .wait_strategy(strategy.into())
        .create()
        .unwrap_or_else(|e| die_event_port(e))
}

pub fn subscriber(svc: &PubSubService<TestMsg>, strategy: Strategy) -> Subscriber<TestMsg> {
    svc.subscriber_builder()
        .wait_strategy(strategy.into())
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e))
}

/// `0:10/3:2`: notifications per id.
pub fn id_counts(counts: &BTreeMap<u64, u64>) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    let v: Vec<String> = counts.iter().map(|(id, n)| format!("{id}:{n}")).collect();
    v.join("/")
}

/// Adds what a wait returned to `counts`; returns the sum. Every id must be
/// in range and every count positive.
pub fn account(events: &[(EventId, u64)], counts: &mut BTreeMap<u64, u64>) -> u64 {
    let mut sum = 0;
    for &(id, n) in events {
        if n == 0 {
            die_verify(format!("a wait reported id {} with count 0", id.value()));
        }
        *counts.entry(id.value()).or_default() += n;
        sum += n;
    }
    sum
}
