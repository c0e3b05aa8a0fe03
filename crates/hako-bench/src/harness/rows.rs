//! What a row runs and what it gives: a ping-pong row's [`RowResult`], a
//! one-way or request/response row's [`OneWay`] and [`OneWayResult`].

use super::stats::Stats;
use crate::sys::cpu::CpuTime;
use crate::transport::{Pattern, PayloadMode};

/// The result of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    /// [`Transport::name`](crate::transport::Transport::name).
    pub transport: &'static str,
    /// Message size in bytes.
    pub size: usize,
    /// How much of each message was written and read.
    pub payload: PayloadMode,
    /// Round-trip times.
    pub stats: Stats,
    /// Every timed round trip in nanoseconds, in order.
    pub samples: Vec<u64>,
    /// CPU time the leader used for the timed round trips.
    pub leader_cpu: CpuTime,
    /// CPU time the follower used for the timed round trips.
    pub follower_cpu: CpuTime,
}

/// A one-way or request/response row to run: see [`Session::run_one_way`](crate::harness::Session::run_one_way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneWay {
    /// [`Pattern::Throughput`], [`Pattern::FanOut`] or
    /// [`Pattern::RequestResponse`].
    pub pattern: Pattern,
    /// How much of each message is written and read.
    pub payload: PayloadMode,
    /// Message size in bytes.
    pub size: usize,
    /// Receivers (1 for throughput).
    pub followers: u32,
    /// Untimed messages first.
    pub warmup: u64,
    /// Timed messages.
    pub messages: u64,
    /// Requests in flight (request/response; 1 otherwise).
    pub depth: u32,
}

/// The result of one one-way row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneWayResult {
    /// [`Transport::name`](crate::transport::Transport::name).
    pub transport: &'static str,
    /// What ran.
    pub spec: OneWay,
    /// From the leader's first timed send to the moment the last receiver
    /// had checked the last message, in nanoseconds.
    pub elapsed_ns: u64,
    /// CPU time the leader used for the timed messages.
    pub leader_cpu: CpuTime,
    /// CPU time the followers used for the timed messages, added up.
    pub follower_cpu: CpuTime,
}

impl OneWayResult {
    /// Messages per second, each delivered to every receiver.
    pub fn messages_per_s(&self) -> f64 {
        self.spec.messages as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }

    /// Payload bytes per second delivered, counting each receiver's copy.
    pub fn bytes_per_s(&self) -> f64 {
        self.messages_per_s() * self.spec.size as f64 * f64::from(self.spec.followers)
    }
}
