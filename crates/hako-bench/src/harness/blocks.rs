//! Ratios to a floor that survive a floor that changes under our feet.
//!
//! On this VM the cost of a cache-line transfer switches between a few
//! levels (about 0.07, 0.14 and 0.43 µs round trip) as the host moves the
//! vCPUs, every few seconds, also in the middle of a row. So a row is measured
//! in *blocks*, each between two short floor probes:
//!
//! ```text
//!  probe₀ | block₁ of each transport | probe₁ | block₂ … | probe_B
//! ```
//!
//! (block *b* starts with transport *b* mod *n* and goes round, so the order
//! does not favour one transport.)
//!
//! Each block and probe is summed up by its *interquartile mean* (the mean
//! of its middle half of round trips, [`Stats::iqm`]): as robust to
//! preempted outliers as the median, but finer than the clock's steps (10 ns
//! here, a fifth of the floor), which the median is bound to.
//!
//! A block is *stable* when the probes on both sides agree within 25 %; its
//! ratio is the transport's block figure over the mean of those two probes'.
//! A row reports the median of its stable blocks' ratios, and medians and
//! p99 over the round trips of those blocks only. When no block is stable,
//! all blocks count and the row is flagged.
//!
//! Transports of one row are also compared with each other, pairwise and
//! block by block: the ratio of two transports is the median over the
//! counted blocks of (block figure of one / block figure of the other), so
//! both numbers of a pair come from the same stretch of time. This is how the
//! blocking transports are quoted against the futex floor and the kernel
//! mechanisms, which the cache-line floor says little about.
//!
//! Transports differ by three orders of magnitude in speed (a busy-polled
//! round trip takes a fraction of a µs, a kernel wake-up across CPUs tens of
//! µs, a 4 MiB copy through a pipe milliseconds), so each gets as many round
//! trips per block as fit in a time budget ([`Plan::budget`]), estimated from
//! a few calibration round trips before the row, within
//! [`Plan::min_iterations`] ..= [`Plan::iterations`].

use std::time::Duration;

use super::rows::RowResult;
use super::session::{RunRow, Session};
use super::stats::Stats;
use crate::error::Result;
use crate::sys::cpu::CpuTime;
use crate::transport::{Pattern, PayloadMode};

/// Round trips of a calibration run (after one untimed).
const CALIBRATION: u64 = 5;

/// How a row is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Blocks per row.
    pub blocks: u32,
    /// Most timed round trips per block and transport.
    pub iterations: u64,
    /// Fewest timed round trips per block and transport, whatever the
    /// budget says.
    pub min_iterations: u64,
    /// Untimed round trips before each block of `iterations` (scaled down
    /// with the round trips of a slower transport, at least 2).
    pub warmup: u64,
    /// Time per block and transport that the round trips are chosen to fill.
    pub budget: Duration,
    /// Timed round trips of each floor probe.
    pub probe: u64,
    /// Untimed round trips before each probe.
    pub probe_warmup: u64,
}

impl Plan {
    /// Warm-up and timed round trips per block for a transport whose round
    /// trip takes about `estimate_ns`.
    pub fn iterations_for(&self, estimate_ns: u64) -> (u64, u64) {
        let max = self.iterations.max(1);
        let min = self.min_iterations.clamp(1, max);
        let fit = u64::try_from(self.budget.as_nanos() / u128::from(estimate_ns.max(1)))
            .unwrap_or(u64::MAX);
        let iterations = fit.clamp(min, max);
        let warmup = (u128::from(self.warmup) * u128::from(iterations) / u128::from(max)) as u64;
        (warmup.max(2), iterations)
    }
}

/// A transport's result in one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// [`crate::transport::Transport::name`].
    pub name: &'static str,
    /// Round trips of the counted blocks.
    pub stats: Stats,
    /// Median over the counted blocks of (block interquartile mean / floor
    /// probes' interquartile mean).
    pub ratio: f64,
    /// Timed round trips per block.
    pub iterations: u64,
    /// CPU time (and sleeps) of the leader over the counted blocks.
    pub leader_cpu: CpuTime,
    /// CPU time (and sleeps) of the follower over the counted blocks.
    pub follower_cpu: CpuTime,
    /// Timed round trips of the counted blocks.
    pub counted: u64,
    /// Median over the counted blocks of (this block's interquartile mean /
    /// that transport's), for every other transport of the row.
    pub vs: Vec<(&'static str, f64)>,
}

impl Measured {
    /// CPU time (user + system) per round trip in nanoseconds: the
    /// leader's, the follower's.
    pub fn cpu_per_round_trip_ns(&self) -> (f64, f64) {
        let n = self.counted.max(1) as f64;
        (
            self.leader_cpu.total_ns() as f64 / n,
            self.follower_cpu.total_ns() as f64 / n,
        )
    }

    /// Voluntary context switches (sleeps) per round trip: the leader's,
    /// the follower's. About 1 for a transport that blocks in every wait, 0
    /// for one that never sleeps.
    pub fn sleeps_per_round_trip(&self) -> (f64, f64) {
        let n = self.counted.max(1) as f64;
        (
            self.leader_cpu.sleeps as f64 / n,
            self.follower_cpu.sleeps as f64 / n,
        )
    }

    /// This transport's block-by-block ratio to `other`, if both ran.
    pub fn vs(&self, other: &str) -> Option<f64> {
        self.vs.iter().find(|(n, _)| *n == other).map(|&(_, r)| r)
    }
}

/// One row: every transport at one message size, against the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Message size in bytes.
    pub size: usize,
    /// The floor probes' transport.
    pub probe: &'static str,
    /// Floor probes next to the counted blocks.
    pub floor: Stats,
    /// One entry per transport that ran, in the order given.
    pub transports: Vec<Measured>,
    /// Transports that cannot carry this size here, with the reason.
    pub skipped: Vec<(&'static str, String)>,
    /// Blocks measured.
    pub blocks: u32,
    /// Blocks whose floor probes agreed (the ones counted, unless 0).
    pub stable: u32,
}

impl Row {
    /// The result of transport `name`, if it ran in this row.
    pub fn get(&self, name: &str) -> Option<&Measured> {
        self.transports.iter().find(|m| m.name == name)
    }
}

/// Whether two floor probes (their interquartile means) agree within 25 %.
pub fn floors_agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.25 * a.min(b)
}

/// The median of `xs` (sorted in place; the mean of the middle two for an
/// even count; NaN if empty).
pub(crate) fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// Measures `transports` at `size` in `plan.blocks` blocks between floor
/// probes of `floor` (whose message size is 8 bytes, whatever `size` is),
/// each message handled as `payload` says. Transports that cannot carry
/// `size` are listed in [`Row::skipped`].
pub fn measure_row(
    session: &mut Session,
    floor: &dyn RunRow,
    transports: &[&dyn RunRow],
    size: usize,
    payload: PayloadMode,
    plan: &Plan,
) -> Result<Row> {
    let blocks = plan.blocks.max(1);
    let mut skipped = Vec::new();
    let mut running: Vec<(&dyn RunRow, u64, u64)> = Vec::new();
    for &t in transports {
        if let Some(why) = t.row_skip_reason(size, Pattern::PingPong) {
            skipped.push((t.row_name(), why));
            continue;
        }
        let calibration = t.run_row(session, size, payload, 1, CALIBRATION)?;
        let (warmup, iterations) = plan.iterations_for(calibration.stats.median);
        running.push((t, warmup, iterations));
    }
    let mut probes = vec![floor.run_row(
        session,
        8,
        PayloadMode::Touch,
        plan.probe_warmup,
        plan.probe,
    )?];
    let mut runs: Vec<Vec<RowResult>> = vec![Vec::new(); running.len()];
    for block in 0..blocks as usize {
        // Each block starts with the next transport, so none always runs
        // first after a probe (whose busy-polling leaves the CPUs, and the
        // hypervisor's view of them, in a state of its own).
        let n = running.len();
        for k in 0..n {
            let i = (block + k) % n;
            let (t, warmup, iterations) = running[i];
            runs[i].push(t.run_row(session, size, payload, warmup, iterations)?);
        }
        probes.push(floor.run_row(
            session,
            8,
            PayloadMode::Touch,
            plan.probe_warmup,
            plan.probe,
        )?);
    }
    let stable_blocks: Vec<usize> = (0..blocks as usize)
        .filter(|&b| floors_agree(probes[b].stats.iqm, probes[b + 1].stats.iqm))
        .collect();
    let stable = stable_blocks.len() as u32;
    let counted: Vec<usize> = if stable_blocks.is_empty() {
        (0..blocks as usize).collect()
    } else {
        stable_blocks
    };
    let floor_of = |b: usize| (probes[b].stats.iqm + probes[b + 1].stats.iqm) / 2.0;
    let mut floor_samples = Vec::new();
    for &b in &counted {
        floor_samples.extend_from_slice(&probes[b].samples);
        floor_samples.extend_from_slice(&probes[b + 1].samples);
    }
    let mut measured = Vec::with_capacity(running.len());
    for (i, (&(t, _, iterations), out)) in running.iter().zip(&runs).enumerate() {
        let mut samples = Vec::new();
        let mut ratios = Vec::new();
        let (mut leader_cpu, mut follower_cpu) = (CpuTime::default(), CpuTime::default());
        for &b in &counted {
            samples.extend_from_slice(&out[b].samples);
            ratios.push(out[b].stats.iqm / floor_of(b).max(1.0));
            leader_cpu = leader_cpu + out[b].leader_cpu;
            follower_cpu = follower_cpu + out[b].follower_cpu;
        }
        let vs = running
            .iter()
            .zip(&runs)
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, (&(other, _, _), other_out))| {
                let mut r: Vec<f64> = counted
                    .iter()
                    .map(|&b| out[b].stats.iqm / other_out[b].stats.iqm.max(1.0))
                    .collect();
                (other.row_name(), median(&mut r))
            })
            .collect();
        measured.push(Measured {
            name: t.row_name(),
            stats: Stats::from_samples(&samples)?,
            ratio: median(&mut ratios),
            iterations,
            leader_cpu,
            follower_cpu,
            counted: samples.len() as u64,
            vs,
        });
    }
    Ok(Row {
        size,
        probe: floor.row_name(),
        floor: Stats::from_samples(&floor_samples)?,
        transports: measured,
        skipped,
        blocks,
        stable,
    })
}

/// One ping-pong row: all transports at one size and payload mode.
#[derive(Debug, Clone, PartialEq)]
pub struct PingPongRow {
    /// How much of each message was touched.
    pub payload: PayloadMode,
    /// The transports, the probes and the skipped ones.
    pub row: Row,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_and_median() {
        assert!(floors_agree(140.0, 130.0));
        assert!(floors_agree(100.0, 125.0));
        assert!(!floors_agree(80.0, 140.0));
        assert!(!floors_agree(430.0, 140.0));
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn iterations_fit_the_budget() {
        let plan = Plan {
            blocks: 5,
            iterations: 10_000,
            min_iterations: 20,
            warmup: 1_000,
            budget: Duration::from_millis(40),
            probe: 1_000,
            probe_warmup: 200,
        };
        // Fast: capped at `iterations`, full warm-up.
        assert_eq!(plan.iterations_for(300), (1_000, 10_000));
        // 100 µs: 400 fit.
        assert_eq!(plan.iterations_for(100_000), (40, 400));
        // 10 ms: at least `min_iterations`, at least 2 warm-up.
        assert_eq!(plan.iterations_for(10_000_000), (2, 20));
        // A zero estimate does not divide by zero.
        assert_eq!(plan.iterations_for(0), (1_000, 10_000));
    }
}
