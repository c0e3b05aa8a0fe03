//! The runs of one-way and request/response rows: a cell of transports at
//! one pattern, payload mode and size (and depth), measured in rounds so
//! that their rates can be compared run by run.

use std::time::Duration;

use super::blocks::Plan;
use super::progress::Steps;
use super::rows::{OneWay, OneWayResult};
use super::session::{RunRow, Session};
use super::stats::Stats;
use crate::error::Result;
use crate::transport::{Pattern, PayloadMode};

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

/// One one-way or request/response rate row: a transport at one size,
/// payload mode, pattern (and depth).
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
    /// Requests in flight (request/response; 1 otherwise).
    pub depth: u32,
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

    /// The rate of the median run (messages or requests per second).
    pub fn rate(&self) -> Option<f64> {
        self.median_run().map(|m| m.messages_per_s())
    }
}

/// The rows of one cell, none run yet: every transport of `rows`, each
/// with the reason it cannot carry the cell, if it cannot (a request/
/// response cell asks also whether it keeps `depth` requests in flight).
pub fn cell_of(
    rows: &[&dyn RunRow],
    (pattern, payload, size): (Pattern, PayloadMode, usize),
    followers: u32,
    depth: u32,
) -> Vec<OneWayRow> {
    rows.iter()
        .map(|t| OneWayRow {
            pattern,
            payload,
            size,
            followers,
            depth,
            transport: t.row_name(),
            skipped: t.row_skip_reason(size, pattern).or_else(|| {
                (pattern == Pattern::RequestResponse)
                    .then(|| t.row_in_flight_skip(size, depth))
                    .flatten()
            }),
            probe: None,
            runs: Vec::new(),
        })
        .collect()
}

/// The rate rows of `rates` by cell (payload mode, size, depth), in the
/// order they were measured.
pub fn cells(rates: &[OneWayRow]) -> Vec<Vec<&OneWayRow>> {
    let mut cells: Vec<Vec<&OneWayRow>> = Vec::new();
    for r in rates {
        match cells.last_mut() {
            Some(c) if (c[0].payload, c[0].size, c[0].depth) == (r.payload, r.size, r.depth) => {
                c.push(r)
            }
            _ => cells.push(vec![r]),
        }
    }
    cells
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
pub(crate) fn measure_one_way(
    (plan, stream): (&Plan, &StreamPlan),
    session: &mut Session,
    probe: &dyn RunRow,
    rows: &[&dyn RunRow],
    cell: &mut [OneWayRow],
    steps: &mut Steps<'_>,
) -> Result<()> {
    let context = |row: &OneWayRow, e: crate::error::BoxError| -> crate::error::BoxError {
        format!(
            "{}{} through {}, {} mode, {}: {e}",
            row.pattern.name(),
            in_flight(row),
            row.transport,
            row.payload.name(),
            crate::units::format_size(row.size)
        )
        .into()
    };
    // One step per row of the cell; a measured row's step ends with its
    // last round.
    let label = |row: &OneWayRow, doing: &str| {
        format!(
            "{}{} {} {}: {doing}",
            row.pattern.name(),
            in_flight(row),
            row.payload.name(),
            crate::units::format_size(row.size),
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
        let spec = calibrate(stream, session, *t, row).map_err(|e| context(row, e))?;
        specs.push(Some(spec));
    }
    let rounds = stream.blocks.max(1);
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

/// ` (16 in flight)` for a request/response row, nothing otherwise.
fn in_flight(row: &OneWayRow) -> String {
    if row.pattern == Pattern::RequestResponse {
        format!(" ({} in flight)", row.depth)
    } else {
        String::new()
    }
}

/// The run of `t` for `row`: a transport that buffers looks fast while its
/// buffers fill, so the count grows (×8) until a run takes a quarter of the
/// budget or reaches the count its speed calls for.
fn calibrate(
    stream: &StreamPlan,
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
        depth: row.depth,
    };
    let per_message = loop {
        let r = t.run_one_way(session, spec)?;
        let per = r.elapsed_ns / spec.messages;
        let want = stream.messages_for(row.size, per);
        if u128::from(r.elapsed_ns) * 4 >= stream.budget.as_nanos() || spec.messages >= want {
            break per;
        }
        spec.messages = (spec.messages * 8).min(want);
    };
    spec.messages = stream.messages_for(row.size, per_message);
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
        depth: 1,
    };
    OneWayRow {
        pattern: spec.pattern,
        payload: spec.payload,
        size: spec.size,
        followers: 1,
        depth: 1,
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
/// in the same round of `measure_one_way`) and the median of those
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
    Some(crate::harness::blocks::median(&mut ratios))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
