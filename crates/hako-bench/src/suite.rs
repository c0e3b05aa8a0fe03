//! The comparison suite behind `hako bench`: every pattern, payload mode,
//! size and transport asked for, in one session of follower processes.
//!
//! Order of a run:
//!
//! 1. the memory figures at each size ([`crate::memory`]), in the leader
//!    (one CPU, and two threads on the leader's and the followers' CPUs),
//!    just before and after each full-mode ping-pong row (or first of all
//!    when no ping-pong is measured);
//! 2. **ping-pong**, per payload mode and size: all transports together in
//!    blocks between floor probes ([`blocks::measure_row`]), so their ratios
//!    to the floor and to each other come from the same stretches of time;
//! 3. **throughput** and **fan-out**, per payload mode and size: a floor
//!    probe, a calibration of each transport (growing runs), then
//!    [`StreamPlan::blocks`] rounds, each running every transport once, of
//!    as many messages as fit [`StreamPlan::budget`] (within
//!    [`StreamPlan::min_messages`]..=[`StreamPlan::max_messages`]); a row
//!    reports its median run, and ratios between transports are taken run
//!    by run, within a round ([`paired_rate_ratio`]).
//!
//! Transports that cannot carry a size (POSIX message queues above
//! `msgsize_max`) or a pattern (the floors are ping-pong only) are listed
//! as skipped with the reason. With both processes on one CPU the
//! busy-polling transports are left out and the futex floor is the probe
//! (see `hako-pingpong`).

use std::path::PathBuf;
use std::time::Duration;

use crate::blocks::{self, Plan, Row};
use crate::cpu;
use crate::harness::{OneWay, OneWayResult, RunRow, Session, SessionConfig, Stats};
use crate::memory;
use crate::select::{Kind, Transports};
use crate::transport::{Pattern, PayloadMode, Waiting};
use crate::Result;

/// How one-way rows are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPlan {
    /// Runs per row (the median is reported).
    pub blocks: u32,
    /// Time one run should take; the message count is fitted to it.
    pub budget: Duration,
    /// Fewest messages per run at sizes up to 1 MiB (fewer above, so that a
    /// run moves at most about 1 GiB per receiver).
    pub min_messages: u64,
    /// Most messages per run.
    pub max_messages: u64,
    /// Longest a run may take: a slow transport does fewer messages than
    /// [`Self::min_messages`] rather than take more time (at least 3).
    pub cap: Duration,
}

impl StreamPlan {
    /// Messages per run for a transport that takes about `per_message_ns`
    /// per message at `size` bytes.
    pub fn messages_for(&self, size: usize, per_message_ns: u64) -> u64 {
        let fit = |d: Duration| {
            u64::try_from(d.as_nanos() / u128::from(per_message_ns.max(1))).unwrap_or(u64::MAX)
        };
        let max = self.max_messages.max(1);
        let min = (self.min_messages * (1 << 20) / size.max(1) as u64)
            .clamp(3, self.min_messages.max(3))
            .min(fit(self.cap).max(3))
            .min(max);
        fit(self.budget).clamp(min, max)
    }
}

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
}

/// One ping-pong row: all transports at one size and payload mode.
#[derive(Debug, Clone, PartialEq)]
pub struct PingPongRow {
    /// How much of each message was touched.
    pub payload: PayloadMode,
    /// The transports, the probes and the skipped ones.
    pub row: Row,
}

/// One one-way row: a transport at one size, payload mode and pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct OneWayRow {
    /// Throughput or fan-out.
    pub pattern: Pattern,
    /// How much of each message was touched.
    pub payload: PayloadMode,
    /// Message size in bytes.
    pub size: usize,
    /// Receivers.
    pub followers: u32,
    /// The transport's name.
    pub transport: &'static str,
    /// Why the row was not measured, if it was not.
    pub skipped: Option<String>,
    /// The floor probe taken before the row's cell, all transports at this
    /// pattern, payload mode and size (round trips).
    pub probe: Option<Stats>,
    /// Every run, in order.
    pub runs: Vec<OneWayResult>,
}

impl OneWayRow {
    /// The run with the median rate, if any ran.
    pub fn median_run(&self) -> Option<&OneWayResult> {
        let mut runs: Vec<&OneWayResult> = self.runs.iter().collect();
        runs.sort_by(|a, b| a.messages_per_s().total_cmp(&b.messages_per_s()));
        runs.get(runs.len() / 2).copied()
    }
}

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
    /// Ping-pong rows.
    pub ping_pong: Vec<PingPongRow>,
    /// Throughput and fan-out rows.
    pub one_way: Vec<OneWayRow>,
}

/// Whether a floor probe of `median_ns` shows the VM's low or high level.
/// This VM's cross-CPU floor flips between about 0.1 and 0.4 µs as the host
/// moves the vCPUs; 0.25 µs lies between.
pub fn floor_level(median_ns: u64) -> &'static str {
    if median_ns < 250 {
        "low"
    } else {
        "high"
    }
}

/// A step of the run, for a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Steps done.
    pub done: u64,
    /// Steps in all.
    pub total: u64,
    /// What runs now.
    pub what: String,
}

/// The run's progress: steps finished out of all, and what runs now.
/// Reports go to a callback (the `hako bench` progress bar); the count
/// only grows and never passes the total.
struct Steps<'a> {
    done: u64,
    total: u64,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Steps<'a> {
    fn new(total: u64, progress: &'a mut dyn FnMut(Progress)) -> Self {
        Self {
            done: 0,
            total,
            progress,
        }
    }

    /// Reports that `what` runs now.
    fn show(&mut self, what: String) {
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            what,
        });
    }

    /// Counts `n` more steps as finished.
    fn finish(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
    }

    /// Reports the end of the run.
    fn done(&mut self) {
        self.done = self.total;
        self.show("done".into());
    }
}

impl SuiteConfig {
    /// Both processes on one CPU.
    pub fn same_cpu(&self) -> bool {
        self.leader_cpu.is_some() && self.leader_cpu == self.follower_cpu
    }

    /// The transports that run, and those left out on one CPU.
    fn split(&self) -> (Vec<Kind>, Vec<&'static str>) {
        if !self.same_cpu() {
            return (self.transports.clone(), Vec::new());
        }
        let (busy, rest): (Vec<Kind>, Vec<Kind>) = self
            .transports
            .iter()
            .partition(|&&k| self.all.get(k).row_waiting() == Waiting::BusyPoll);
        (rest, busy.into_iter().map(Kind::name).collect())
    }

    /// Steps of the run (ping-pong groups and one-way rows).
    pub fn steps(&self) -> u64 {
        let (kinds, _) = self.split();
        let n = |p: Pattern| u64::from(self.patterns.contains(&p));
        let groups = (self.sizes.len() * self.payloads.len()) as u64;
        groups
            * (n(Pattern::PingPong)
                + kinds.len() as u64 * (n(Pattern::Throughput) + n(Pattern::FanOut)))
    }
}

/// Runs the suite; `progress` hears of every step.
pub fn run(cfg: &SuiteConfig, progress: &mut dyn FnMut(Progress)) -> Result<SuiteResult> {
    let (kinds, left_out) = cfg.split();
    if kinds.is_empty() {
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
        dump_dir: None,
        followers,
    })?;
    let mut result = SuiteResult {
        clock_ns: crate::harness::clock_cost_ns(),
        probe: probe.row_name(),
        left_out,
        ..SuiteResult::default()
    };
    let mut steps = Steps::new(cfg.steps(), progress);

    let ping_pong = cfg.patterns.contains(&Pattern::PingPong);
    if cfg.payloads.contains(&PayloadMode::Full) && !ping_pong {
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
                    crate::report::format_size(size)
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
                let mut cell: Vec<OneWayRow> = rows
                    .iter()
                    .map(|t| OneWayRow {
                        pattern,
                        payload,
                        size,
                        followers,
                        transport: t.row_name(),
                        skipped: t.row_skip_reason(size, pattern),
                        probe: None,
                        runs: Vec::new(),
                    })
                    .collect();
                measure_one_way(cfg, &mut session, probe, &rows, &mut cell, &mut steps)?;
                result.one_way.extend(cell);
            }
        }
    }
    steps.done();
    session.finish()?;
    Ok(result)
}

/// Measures one cell of the one-way tables: every transport of `rows` at
/// one pattern, payload mode and size (`cell`, one row per transport, in
/// the same order; skipped rows stay empty). A floor probe, then each
/// transport's calibration, then [`StreamPlan::blocks`] rounds, each of
/// which runs every transport once. This VM's one-way rates jump between
/// levels from one second to the next, so the runs of different transports
/// are interleaved: the runs with the same index were taken in the same
/// stretch of time, and ratios between transports are taken run by run
/// ([`paired_rate_ratio`]). Rounds alternate their order, so no transport
/// always runs first after another.
fn measure_one_way(
    cfg: &SuiteConfig,
    session: &mut Session,
    probe: &dyn RunRow,
    rows: &[&dyn RunRow],
    cell: &mut [OneWayRow],
    steps: &mut Steps<'_>,
) -> Result<()> {
    let plan = &cfg.plan;
    let context = |row: &OneWayRow, e: crate::BoxError| -> crate::BoxError {
        format!(
            "{} through {}, {} mode, {}: {e}",
            row.pattern.name(),
            row.transport,
            row.payload.name(),
            crate::report::format_size(row.size)
        )
        .into()
    };
    // One step per row of the cell; a measured row's step ends with its
    // last round.
    let label = |row: &OneWayRow, doing: &str| {
        format!(
            "{} {} {}: {doing}",
            row.pattern.name(),
            row.payload.name(),
            crate::report::format_size(row.size),
        )
    };
    let Some(first) = cell.iter().find(|r| r.skipped.is_none()) else {
        // Nothing to measure here: no probe either.
        steps.finish(cell.len() as u64);
        return Ok(());
    };
    steps.show(label(first, "floor probe"));
    let probed = probe
        .run_row(
            session,
            8,
            PayloadMode::Touch,
            plan.probe_warmup,
            plan.probe,
        )
        .map_err(|e| context(first, format!("the floor probe: {e}").into()))?
        .stats;
    let mut specs: Vec<Option<OneWay>> = Vec::with_capacity(rows.len());
    for (t, row) in rows.iter().zip(cell.iter_mut()) {
        if row.skipped.is_some() {
            specs.push(None);
            steps.finish(1);
            continue;
        }
        steps.show(label(row, &format!("calibrating {}", row.transport)));
        row.probe = Some(probed);
        let spec = calibrate(cfg, session, *t, row).map_err(|e| context(row, e))?;
        specs.push(Some(spec));
    }
    let rounds = cfg.stream.blocks.max(1);
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..rows.len()).collect()
        } else {
            (0..rows.len()).rev().collect()
        };
        for i in order {
            if let Some(spec) = specs[i] {
                let doing = format!("round {} of {rounds}, {}", round + 1, cell[i].transport);
                steps.show(label(&cell[i], &doing));
                let run = rows[i]
                    .run_one_way(session, spec)
                    .map_err(|e| context(&cell[i], e))?;
                cell[i].runs.push(run);
                if round + 1 == rounds {
                    steps.finish(1);
                }
            }
        }
    }
    Ok(())
}

/// The run of `t` for `row`: a transport that buffers looks fast while its
/// buffers fill, so the count grows (×8) until a run takes a quarter of the
/// budget or reaches the count its speed calls for.
fn calibrate(
    cfg: &SuiteConfig,
    session: &mut Session,
    t: &dyn RunRow,
    row: &OneWayRow,
) -> Result<OneWay> {
    let mut spec = OneWay {
        pattern: row.pattern,
        payload: row.payload,
        size: row.size,
        followers: row.followers,
        // A transport whose buffers fault in as they are first written
        // says how many messages pass through them once.
        warmup: t.row_one_way_warmup(row.size),
        messages: 4,
    };
    let per_message = loop {
        let r = t.run_one_way(session, spec)?;
        let per = r.elapsed_ns / spec.messages;
        let want = cfg.stream.messages_for(row.size, per);
        if u128::from(r.elapsed_ns) * 4 >= cfg.stream.budget.as_nanos() || spec.messages >= want {
            break per;
        }
        spec.messages = (spec.messages * 8).min(want);
    };
    spec.messages = cfg.stream.messages_for(row.size, per_message);
    spec.warmup = (spec.messages / 10)
        .clamp(1, 100)
        .max(t.row_one_way_warmup(row.size));
    Ok(spec)
}

/// A 1 MiB touch-mode throughput row of `transport` whose runs each moved
/// 1000 messages in `elapsed_us` microseconds (50 µs is 20 M messages/s):
/// for tests of what is computed from rows.
#[doc(hidden)]
pub fn example_row(transport: &'static str, elapsed_us: &[u64]) -> OneWayRow {
    let spec = OneWay {
        pattern: Pattern::Throughput,
        payload: PayloadMode::Touch,
        size: 1 << 20,
        followers: 1,
        warmup: 0,
        messages: 1000,
    };
    OneWayRow {
        pattern: spec.pattern,
        payload: spec.payload,
        size: spec.size,
        followers: 1,
        transport,
        skipped: None,
        probe: None,
        runs: elapsed_us
            .iter()
            .map(|&us| OneWayResult {
                transport,
                spec,
                elapsed_ns: us * 1000,
                leader_cpu: Default::default(),
                follower_cpu: Default::default(),
            })
            .collect(),
    }
}

/// `a`'s rate over `b`'s, taken run by run (runs with the same index ran
/// in the same round of [`measure_one_way`]) and the median of those
/// ratios; `None` if either has no runs.
pub fn paired_rate_ratio(a: &OneWayRow, b: &OneWayRow) -> Option<f64> {
    let mut ratios: Vec<f64> = a
        .runs
        .iter()
        .zip(&b.runs)
        .map(|(x, y)| x.messages_per_s() / y.messages_per_s().max(1e-9))
        .collect();
    if ratios.is_empty() {
        return None;
    }
    Some(crate::blocks::median(&mut ratios))
}

/// The CPUs to pin to by default: the first two this process may use (the
/// same one twice on a one-CPU machine).
pub fn default_cpus() -> Result<(usize, usize)> {
    let cpus = cpu::allowed_cpus()?;
    let first = *cpus.first().ok_or("no CPU is allowed")?;
    Ok((first, *cpus.get(1).unwrap_or(&first)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_counts_fit_the_budget() {
        let plan = StreamPlan {
            blocks: 3,
            budget: Duration::from_millis(100),
            min_messages: 1000,
            max_messages: 100_000,
            cap: Duration::from_secs(1),
        };
        // Fast: capped.
        assert_eq!(plan.messages_for(64, 100), 100_000);
        // 1 MiB at 1 ms each: 100 fit, but at least 1000.
        assert_eq!(plan.messages_for(1 << 20, 1_000_000), 1000);
        // 4 MiB at 1 ms each: at least 250 (1 GiB).
        assert_eq!(plan.messages_for(4 << 20, 1_000_000), 250);
        // Huge: at least 3.
        assert_eq!(plan.messages_for(1 << 30, u64::MAX), 3);
        // 1 MiB at 4 ms each: the cap (1 s) allows 250.
        assert_eq!(plan.messages_for(1 << 20, 4_000_000), 250);
        assert_eq!(floor_level(130), "low");
        assert_eq!(floor_level(420), "high");
    }

    #[test]
    fn progress_counts_finished_steps_and_never_passes_the_total() {
        let mut seen = Vec::new();
        let mut hear = |p: Progress| seen.push((p.done, p.total, p.what));
        let mut steps = Steps::new(3, &mut hear);
        steps.show("a".into());
        steps.finish(1);
        steps.show("b".into());
        steps.show("b, round 2".into());
        steps.finish(5);
        steps.show("c".into());
        steps.done();
        let want = [(0, "a"), (1, "b"), (1, "b, round 2"), (3, "c"), (3, "done")];
        assert_eq!(seen.len(), want.len());
        for ((done, total, what), (d, w)) in seen.iter().zip(want) {
            assert_eq!((*done, *total, what.as_str()), (d, 3, w));
        }
    }

    #[test]
    fn rates_are_compared_run_by_run() {
        // Round 2 ran while the machine was slow for both: the medians
        // (20 M and 5 M/s) would say 4x, the rounds say 4x, 10x and 5x.
        let a = example_row("a", &[50, 100, 40]);
        let b = example_row("b", &[200, 1000, 200]);
        let rate = |r: &OneWayRow| r.median_run().unwrap().messages_per_s();
        assert!((rate(&a) / rate(&b) - 4.0).abs() < 1e-9);
        let r = paired_rate_ratio(&a, &b).unwrap();
        assert!((r - 5.0).abs() < 1e-9, "{r}");
        assert!((paired_rate_ratio(&b, &a).unwrap() - 0.2).abs() < 1e-9);
        // An even count takes the mean of the middle two; runs beyond the
        // other row's count are not paired.
        let c = example_row("c", &[100, 100, 100, 100, 7]);
        let d = example_row("d", &[100, 200, 300, 400]);
        assert!((paired_rate_ratio(&c, &d).unwrap() - 2.5).abs() < 1e-9);
        assert_eq!(paired_rate_ratio(&c, &example_row("e", &[])), None);
    }
}
