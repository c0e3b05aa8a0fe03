//! The comparison suite behind `hako bench`: every pattern, payload mode,
//! size and transport asked for, in one session of follower processes.
//!
//! Order of a run:
//!
//! 0. the memory footprint ([`crate::suite::footprint`]), in the leader: bytes
//!    mapped per publisher and per subscriber by the subscribers a service
//!    allows (some tens of milliseconds);
//! 1. the memory figures at each size ([`crate::suite::memory`]), in the leader
//!    (one CPU, and two threads on the leader's and the followers' CPUs),
//!    just before and after each full-mode ping-pong row (or first of all
//!    when no ping-pong is measured, unless only the bridge rows are);
//! 2. **ping-pong**, per payload mode and size: all transports together in
//!    blocks between floor probes ([`blocks::measure_row`]), so their ratios
//!    to the floor and to each other come from the same stretches of time;
//! 3. **throughput** and **fan-out**, per payload mode and size: a floor
//!    probe, a calibration of each transport (growing runs), then
//!    [`StreamPlan::blocks`] rounds, each running every transport once, of
//!    as many messages as fit [`StreamPlan::budget`] (within
//!    [`StreamPlan::min_messages`]..=[`StreamPlan::max_messages`]); a row
//!    reports its median run, and ratios between transports are taken run
//!    by run, within a round ([`paired_rate_ratio`](crate::harness::rounds::paired_rate_ratio)).
//!
//! 4. **request/response**, per payload mode and size: the round trip of
//!    one request at a time, all of [`SuiteConfig::reqres`] together in
//!    blocks between floor probes as in ping-pong; then per payload mode,
//!    size of [`SuiteConfig::in_flight_sizes`] and depth of
//!    [`SuiteConfig::depths`], requests per second with that many in flight,
//!    in rounds as one-way rows are.
//! 5. **async**, as request/response, through [`SuiteConfig::asynch`] (the
//!    async transports of [`crate::transports::runtimes`] and their blocking counterparts),
//!    at [`SuiteConfig::async_sizes`], then with each of
//!    [`SuiteConfig::async_depths`] in flight at
//!    [`SuiteConfig::async_in_flight_sizes`].
//! 6. **bridge**, round trips only, as request/response's, through
//!    [`SuiteConfig::bridge`] (plain Zenoh, and hako through two
//!    `hako-bridge` processes) at [`SuiteConfig::bridge_sizes`], in blocks
//!    of [`SuiteConfig::bridge_plan`]; in a build without the `bridge`
//!    feature the group is a note ([`SuiteResult::bridge_note`]).
//!
//! Transports that cannot carry a size (POSIX message queues above
//! `msgsize_max`) or a pattern (the floors are ping-pong only) are listed
//! as skipped with the reason. With both processes on one CPU the
//! busy-polling transports are left out and the futex floor is the probe:
//! on one CPU each hand-over of two spinning processes waits for the
//! scheduler to preempt one of them.

use std::path::PathBuf;

pub mod footprint;
pub mod memory;

use crate::error::Result;
pub use crate::harness::blocks::PingPongRow;
use crate::harness::blocks::{self, Plan};
pub use crate::harness::progress::Progress;
pub(crate) use crate::harness::progress::Steps;
use crate::harness::rounds::{cell_of, measure_one_way};
pub use crate::harness::rounds::{OneWayRow, StreamPlan};
use crate::harness::{RunRow, Session, SessionConfig};
use crate::registry::{Kind, Transports};
use crate::sys::cpu;
use crate::transport::{Pattern, PayloadMode, Waiting};
use footprint::FootprintReport;

/// Everything a suite run needs.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// The run's domain root.
    pub root: PathBuf,
    /// Transports, in the order of the tables.
    pub transports: Vec<Kind>,
    /// Message sizes in bytes.
    pub sizes: Vec<usize>,
    /// Patterns to run.
    pub patterns: Vec<Pattern>,
    /// Payload modes to run.
    pub payloads: Vec<PayloadMode>,
    /// Receivers of a fan-out row.
    pub fanout: u32,
    /// Ping-pong blocks and probes.
    pub plan: Plan,
    /// One-way runs.
    pub stream: StreamPlan,
    /// CPU of the leader, if pinned.
    pub leader_cpu: Option<usize>,
    /// CPU of the followers, if pinned.
    pub follower_cpu: Option<usize>,
    /// The transports' settings.
    pub all: Transports,
    /// Transports of the request/response rows, in table order.
    pub reqres: Vec<Kind>,
    /// Requests in flight of the request/response rate rows.
    pub depths: Vec<u32>,
    /// Message sizes of the request/response rate rows.
    pub in_flight_sizes: Vec<usize>,
    /// Transports of the async rows, in table order.
    pub asynch: Vec<Kind>,
    /// Message sizes of the async round trips.
    pub async_sizes: Vec<usize>,
    /// Requests in flight of the async rate rows.
    pub async_depths: Vec<u32>,
    /// Message sizes of the async rate rows.
    pub async_in_flight_sizes: Vec<usize>,
    /// Subscriber counts of the memory footprint (none: not measured).
    pub footprint: Vec<u32>,
    /// Transports of the bridge rows, in table order.
    pub bridge: Vec<Kind>,
    /// Message sizes of the bridge rows.
    pub bridge_sizes: Vec<usize>,
    /// Blocks of the bridge rows: longer than ping-pong's, whose round
    /// trips are a thousand times shorter.
    pub bridge_plan: Plan,
    /// Where each block's raw round-trip times are written, if anywhere
    /// (`<row>_<transport>_<size>.txt`).
    pub dump_dir: Option<PathBuf>,
}

/// Why the bridge rows are not measured by a build without the `bridge`
/// feature.
pub const BRIDGE_LEFT_OUT: &str = "this hako-bench was built without the `bridge` feature (no \
     Zenoh): build it with `--features bridge` (./scripts/bench does)";

/// The memory figure at one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryFigure {
    /// Bytes.
    pub size: usize,
    /// Nanoseconds to write the payload once and read it once, on one CPU.
    pub write_read_ns: f64,
    /// Nanoseconds to write it once on the leader's CPU and read it once on
    /// the followers' (what a full-mode message costs at least).
    pub across_ns: f64,
}

impl MemoryFigure {
    /// The lower of each figure of `self` and `other` (same size).
    pub fn faster(&self, other: &Self) -> Self {
        Self {
            size: self.size,
            write_read_ns: self.write_read_ns.min(other.write_read_ns),
            across_ns: self.across_ns.min(other.across_ns),
        }
    }
}

/// The memory figures of `size`, in this process, on the CPUs of `cfg`.
fn memory_figure(cfg: &SuiteConfig, size: usize) -> Result<MemoryFigure> {
    let reps = memory::reps_for(size, 10_000_000);
    Ok(MemoryFigure {
        size,
        write_read_ns: memory::write_read_ns(size, reps)?,
        across_ns: memory::write_read_across_ns(size, reps, cfg.leader_cpu, cfg.follower_cpu)?,
    })
}

/// Everything a suite run measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SuiteResult {
    /// Cost of one clock read in nanoseconds (one per timed round trip, taken
    /// while its message travels).
    pub clock_ns: f64,
    /// The floor probes' transport (`floor`, or `futex` on one CPU).
    pub probe: &'static str,
    /// Transports left out because they busy-poll and both processes share
    /// one CPU.
    pub left_out: Vec<&'static str>,
    /// The memory figure per size.
    pub memory: Vec<MemoryFigure>,
    /// Bytes mapped per publisher and per subscriber ([`footprint`]).
    pub footprint: FootprintReport,
    /// Ping-pong rows.
    pub ping_pong: Vec<PingPongRow>,
    /// Throughput and fan-out rows.
    pub one_way: Vec<OneWayRow>,
    /// Request/response round trips, one request at a time.
    pub request_response: Vec<PingPongRow>,
    /// Request/response rates, with [`SuiteConfig::depths`] in flight.
    pub in_flight: Vec<OneWayRow>,
    /// Async request/response round trips, one request at a time.
    pub async_round_trip: Vec<PingPongRow>,
    /// Async request/response rates, with [`SuiteConfig::async_depths`]
    /// in flight.
    pub async_in_flight: Vec<OneWayRow>,
    /// Round trips through two bridges and through plain Zenoh.
    pub bridge: Vec<PingPongRow>,
    /// Why the bridge rows asked for were not measured, if they were not.
    pub bridge_note: Option<String>,
}

impl SuiteConfig {
    /// Both processes on one CPU.
    pub fn same_cpu(&self) -> bool {
        self.leader_cpu.is_some() && self.leader_cpu == self.follower_cpu
    }

    /// The transports of `kinds` that run, and those left out on one CPU.
    fn split(&self, kinds: &[Kind]) -> (Vec<Kind>, Vec<&'static str>) {
        if !self.same_cpu() {
            return (kinds.to_vec(), Vec::new());
        }
        let (busy, rest): (Vec<Kind>, Vec<Kind>) = kinds
            .iter()
            .partition(|&&k| self.all.get(k).row_waiting() == Waiting::BusyPoll);
        (rest, busy.into_iter().map(Kind::name).collect())
    }

    /// Steps of the run (ping-pong and round-trip groups, one-way and
    /// request/response rate rows).
    pub fn steps(&self) -> u64 {
        let (kinds, _) = self.split(&self.transports);
        let n = |p: Pattern| u64::from(self.patterns.contains(&p));
        let groups = (self.sizes.len() * self.payloads.len()) as u64;
        let (reqres, _) = self.split(&self.reqres);
        let rates = (self.in_flight_sizes.len() * self.depths.len() * self.payloads.len()) as u64;
        let (asynch, _) = self.split(&self.asynch);
        let async_groups = (self.async_sizes.len() * self.payloads.len()) as u64;
        let async_rates = (self.async_in_flight_sizes.len()
            * self.async_depths.len()
            * self.payloads.len()) as u64;
        let (bridge, _) = self.split(&self.bridge);
        let bridge_groups = (self.bridge_sizes.len() * self.payloads.len()) as u64;
        groups
            * (n(Pattern::PingPong)
                + kinds.len() as u64 * (n(Pattern::Throughput) + n(Pattern::FanOut)))
            + n(Pattern::RequestResponse) * (groups + rates * reqres.len() as u64)
            + n(Pattern::Async) * (async_groups + async_rates * asynch.len() as u64)
            + n(Pattern::Bridge) * u64::from(!bridge.is_empty()) * bridge_groups
    }
}

/// Runs the suite; `progress` hears of every step.
pub fn run(cfg: &SuiteConfig, progress: &mut dyn FnMut(Progress)) -> Result<SuiteResult> {
    let (kinds, left_out) = cfg.split(&cfg.transports);
    let (reqres_kinds, reqres_left_out) = cfg.split(&cfg.reqres);
    let (async_kinds, async_left_out) = cfg.split(&cfg.asynch);
    let (bridge_kinds, bridge_left_out) = cfg.split(&cfg.bridge);
    // Only the groups that run say what they left out.
    let runs = |p: Pattern| cfg.patterns.contains(&p);
    let mut left_out: Vec<&'static str> =
        if runs(Pattern::PingPong) || runs(Pattern::Throughput) || runs(Pattern::FanOut) {
            left_out
        } else {
            Vec::new()
        };
    let others = [
        (Pattern::RequestResponse, reqres_left_out),
        (Pattern::Async, async_left_out),
        (Pattern::Bridge, bridge_left_out),
    ];
    for name in others
        .into_iter()
        .filter(|(p, _)| runs(*p))
        .flat_map(|(_, names)| names)
    {
        if !left_out.contains(&name) {
            left_out.push(name);
        }
    }
    let reqres = cfg.patterns.contains(&Pattern::RequestResponse) && !reqres_kinds.is_empty();
    let asynch = cfg.patterns.contains(&Pattern::Async) && !async_kinds.is_empty();
    let bridge = cfg.patterns.contains(&Pattern::Bridge) && !bridge_kinds.is_empty();
    if kinds.is_empty() && !reqres && !asynch && !bridge {
        return Err(
            "nothing to measure: every transport given busy-polls, and both processes \
                    are on one CPU"
                .into(),
        );
    }
    let probe_kind = if cfg.same_cpu() {
        Kind::Futex
    } else {
        Kind::Floor
    };
    let probe = cfg.all.get(probe_kind);
    let followers = if cfg.patterns.contains(&Pattern::FanOut) {
        cfg.fanout.max(1)
    } else {
        1
    };
    let mut session = Session::start(&SessionConfig {
        root: cfg.root.clone(),
        leader_cpu: cfg.leader_cpu,
        follower_cpu: cfg.follower_cpu,
        program: None,
        dump_dir: cfg.dump_dir.clone(),
        followers,
    })?;
    let mut result = SuiteResult {
        clock_ns: crate::sys::clock::clock_cost_ns(),
        probe: probe.row_name(),
        left_out,
        bridge_note: (cfg.patterns.contains(&Pattern::Bridge) && Kind::BRIDGE.is_empty())
            .then(|| BRIDGE_LEFT_OUT.to_owned()),
        ..SuiteResult::default()
    };
    let mut steps = Steps::new(cfg.steps(), progress);
    if !cfg.footprint.is_empty() {
        steps.show("memory footprint".into());
        result.footprint = footprint::measure(&cfg.root, &cfg.footprint);
    }

    let ping_pong = cfg.patterns.contains(&Pattern::PingPong);
    // The bridge rows alone have no use for it.
    let not_only_bridge = cfg.patterns.iter().any(|&p| p != Pattern::Bridge);
    if cfg.payloads.contains(&PayloadMode::Full) && !ping_pong && not_only_bridge {
        for &size in &cfg.sizes {
            result.memory.push(memory_figure(cfg, size)?);
        }
    }

    let rows: Vec<&dyn RunRow> = kinds.iter().map(|&k| cfg.all.get(k)).collect();
    if ping_pong {
        for &payload in &cfg.payloads {
            for &size in &cfg.sizes {
                steps.show(format!(
                    "ping-pong {} {}",
                    payload.name(),
                    crate::units::format_size(size)
                ));
                // This VM's memory bandwidth drifts over seconds: a full-mode
                // row is quoted against memory figures taken just before and
                // just after it, the faster of the two.
                let full = payload == PayloadMode::Full;
                let before = full.then(|| memory_figure(cfg, size)).transpose()?;
                let row =
                    blocks::measure_row(&mut session, probe, &rows, size, payload, &cfg.plan)?;
                if let Some(before) = before {
                    result
                        .memory
                        .push(before.faster(&memory_figure(cfg, size)?));
                }
                result.ping_pong.push(PingPongRow { payload, row });
                steps.finish(1);
            }
        }
    }
    for pattern in [Pattern::Throughput, Pattern::FanOut] {
        if !cfg.patterns.contains(&pattern) {
            continue;
        }
        let followers = if pattern == Pattern::FanOut {
            followers
        } else {
            1
        };
        for &payload in &cfg.payloads {
            for &size in &cfg.sizes {
                let mut cell = cell_of(&rows, (pattern, payload, size), followers, 1);
                measure_one_way(
                    (&cfg.plan, &cfg.stream),
                    &mut session,
                    probe,
                    &rows,
                    &mut cell,
                    &mut steps,
                )?;
                result.one_way.extend(cell);
            }
        }
    }
    if reqres {
        let rows: Vec<&dyn RunRow> = reqres_kinds.iter().map(|&k| cfg.all.get(k)).collect();
        let group = ReqResGroup {
            what: "request/response",
            sizes: &cfg.sizes,
            rate_sizes: &cfg.in_flight_sizes,
            depths: &cfg.depths,
            plan: &cfg.plan,
        };
        (result.request_response, result.in_flight) =
            measure_reqres(cfg, &mut session, probe, &rows, &group, &mut steps)?;
    }
    if asynch {
        let rows: Vec<&dyn RunRow> = async_kinds.iter().map(|&k| cfg.all.get(k)).collect();
        let group = ReqResGroup {
            what: "async",
            sizes: &cfg.async_sizes,
            rate_sizes: &cfg.async_in_flight_sizes,
            depths: &cfg.async_depths,
            plan: &cfg.plan,
        };
        (result.async_round_trip, result.async_in_flight) =
            measure_reqres(cfg, &mut session, probe, &rows, &group, &mut steps)?;
    }
    if bridge {
        let rows: Vec<&dyn RunRow> = bridge_kinds.iter().map(|&k| cfg.all.get(k)).collect();
        let group = ReqResGroup {
            what: "bridge",
            sizes: &cfg.bridge_sizes,
            rate_sizes: &[],
            depths: &[],
            plan: &cfg.bridge_plan,
        };
        (result.bridge, _) = measure_reqres(cfg, &mut session, probe, &rows, &group, &mut steps)?;
    }
    steps.done();
    session.finish()?;
    Ok(result)
}

/// A group of request/response rows: its name in the progress bar, the
/// sizes of its round trips, the sizes and depths of its rates, and the
/// blocks of its round trips.
struct ReqResGroup<'a> {
    what: &'static str,
    sizes: &'a [usize],
    rate_sizes: &'a [usize],
    depths: &'a [u32],
    plan: &'a Plan,
}

/// A group's request/response rows: round trips of one request at a time
/// at every size, then rates with each depth in flight at the rate sizes.
fn measure_reqres(
    cfg: &SuiteConfig,
    session: &mut Session,
    probe: &dyn RunRow,
    rows: &[&dyn RunRow],
    group: &ReqResGroup<'_>,
    steps: &mut Steps<'_>,
) -> Result<(Vec<PingPongRow>, Vec<OneWayRow>)> {
    let (mut round_trips, mut rates) = (Vec::new(), Vec::new());
    for &payload in &cfg.payloads {
        for &size in group.sizes {
            steps.show(format!(
                "{} {} {}",
                group.what,
                payload.name(),
                crate::units::format_size(size)
            ));
            let row = blocks::measure_row(session, probe, rows, size, payload, group.plan)?;
            round_trips.push(PingPongRow { payload, row });
            steps.finish(1);
        }
    }
    for &payload in &cfg.payloads {
        for &size in group.rate_sizes {
            for &depth in group.depths {
                let pattern = Pattern::RequestResponse;
                let mut cell = cell_of(rows, (pattern, payload, size), 1, depth);
                measure_one_way(
                    (&cfg.plan, &cfg.stream),
                    session,
                    probe,
                    rows,
                    &mut cell,
                    steps,
                )?;
                rates.extend(cell);
            }
        }
    }
    Ok((round_trips, rates))
}

/// The CPUs to pin to by default: the first two this process may use (the
/// same one twice on a one-CPU machine).
pub fn default_cpus() -> Result<(usize, usize)> {
    let cpus = cpu::allowed_cpus()?;
    let first = *cpus.first().ok_or("no CPU is allowed")?;
    Ok((first, *cpus.get(1).unwrap_or(&first)))
}
