//! Ratios to the floor that survive a floor that changes under our feet.
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
//! A block is *stable* when the probes on both sides agree within 25 %; its
//! ratio is the transport's block median over the mean of those two probe
//! medians. A row reports the median of its stable blocks' ratios, and
//! medians and p99 over the round trips of those blocks only. When no block
//! is stable, all blocks count and the row is flagged.

use crate::harness::{RunRow, Session, Stats};
use crate::Result;

/// How a row is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Blocks per row.
    pub blocks: u32,
    /// Timed round trips per block and transport.
    pub iterations: u64,
    /// Untimed round trips before each block.
    pub warmup: u64,
    /// Timed round trips of each floor probe.
    pub probe: u64,
    /// Untimed round trips before each probe.
    pub probe_warmup: u64,
}

/// A transport's result in one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// [`crate::transport::Transport::name`].
    pub name: &'static str,
    /// Round trips of the counted blocks.
    pub stats: Stats,
    /// Median over the counted blocks of (block median / floor median).
    pub ratio: f64,
}

/// One row: every transport at one message size, against the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Message size in bytes.
    pub size: usize,
    /// Floor probes next to the counted blocks.
    pub floor: Stats,
    /// One entry per transport, in the order given.
    pub transports: Vec<Measured>,
    /// Blocks measured.
    pub blocks: u32,
    /// Blocks whose floor probes agreed (the ones counted, unless 0).
    pub stable: u32,
}

/// Whether two floor medians agree within 25 %.
pub fn floors_agree(a: u64, b: u64) -> bool {
    let (a, b) = (a as f64, b as f64);
    (a - b).abs() <= 0.25 * a.min(b)
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// Measures `transports` at `size` in `plan.blocks` blocks between floor
/// probes of `floor`.
pub fn measure_row(
    session: &mut Session,
    floor: &dyn RunRow,
    transports: &[&dyn RunRow],
    size: usize,
    plan: &Plan,
) -> Result<Row> {
    let blocks = plan.blocks.max(1);
    let mut probes = vec![floor.run_row(session, 8, plan.probe_warmup, plan.probe)?];
    let mut runs: Vec<Vec<crate::harness::RowResult>> = vec![Vec::new(); transports.len()];
    for _ in 0..blocks {
        for (t, out) in transports.iter().zip(runs.iter_mut()) {
            out.push(t.run_row(session, size, plan.warmup, plan.iterations)?);
        }
        probes.push(floor.run_row(session, 8, plan.probe_warmup, plan.probe)?);
    }
    let stable_blocks: Vec<usize> = (0..blocks as usize)
        .filter(|&b| floors_agree(probes[b].stats.median, probes[b + 1].stats.median))
        .collect();
    let stable = stable_blocks.len() as u32;
    let counted: Vec<usize> = if stable_blocks.is_empty() {
        (0..blocks as usize).collect()
    } else {
        stable_blocks
    };
    let floor_of = |b: usize| (probes[b].stats.median + probes[b + 1].stats.median) as f64 / 2.0;
    let mut floor_samples = Vec::new();
    for &b in &counted {
        floor_samples.extend_from_slice(&probes[b].samples);
        floor_samples.extend_from_slice(&probes[b + 1].samples);
    }
    let mut measured = Vec::with_capacity(transports.len());
    for (t, out) in transports.iter().zip(&runs) {
        let mut samples = Vec::new();
        let mut ratios = Vec::new();
        for &b in &counted {
            samples.extend_from_slice(&out[b].samples);
            ratios.push(out[b].stats.median as f64 / floor_of(b).max(1.0));
        }
        measured.push(Measured {
            name: t.row_name(),
            stats: Stats::from_samples(&samples)?,
            ratio: median(&mut ratios),
        });
    }
    Ok(Row {
        size,
        floor: Stats::from_samples(&floor_samples)?,
        transports: measured,
        blocks,
        stable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_and_median() {
        assert!(floors_agree(140, 130));
        assert!(floors_agree(100, 125));
        assert!(!floors_agree(80, 140));
        assert!(!floors_agree(430, 140));
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
