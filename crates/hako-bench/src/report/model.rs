//! What a report is made of: the machine and the settings of the run, and
//! per pinning mode the suite's results.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::blocks::Plan;
use crate::harness::rounds::StreamPlan;
use crate::suite::SuiteResult;

/// A whole `hako bench` run: its settings and one [`Run`] per pinning mode.
#[derive(Debug, Clone)]
pub struct Report {
    /// The machine and the settings.
    pub meta: Meta,
    /// One per pinning mode, in the order they ran.
    pub runs: Vec<Run>,
}

/// The machine and the settings, the same for every mode of a run.
#[derive(Debug, Clone)]
pub struct Meta {
    /// The machine ([`machine`]).
    pub machine: Value,
    /// The ping-pong and request/response blocks.
    pub plan: Plan,
    /// The bridge rows' blocks.
    pub bridge_plan: Plan,
    /// One-way settings.
    pub stream: StreamPlan,
    /// Fan-out receivers.
    pub fanout: u32,
    /// The settings of hako's publish/subscribe transports
    /// (`buffer 2, borrowed 1, loans 1`).
    pub hako: String,
    /// Wall time of the whole run.
    pub wall: Duration,
}

/// The results of one pinning mode.
#[derive(Debug, Clone)]
pub struct Run {
    /// `cross-cpu`, `same-cpu` or `unpinned`.
    pub pinning: &'static str,
    /// The leader's CPU, if pinned.
    pub leader_cpu: Option<usize>,
    /// The followers' CPU, if pinned.
    pub follower_cpu: Option<usize>,
    /// hako's cost per message in one thread (loan, send, receive, drop a
    /// 64 B sample), when hako's publish/subscribe ran.
    pub single_thread_ns: Option<f64>,
    /// Every figure.
    pub result: SuiteResult,
}

fn first_line_with(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// The machine: CPU model, CPUs online, kernel, the largest POSIX message
/// queue message.
pub fn machine() -> Value {
    json!({
        "cpu_model": first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into()),
        "cpus_online": crate::sys::cpu::online_cpus(),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned()).unwrap_or_default(),
        "msgsize_max": crate::transports::kernel::msgsize_max(),
    })
}
