//! The summary of `hako bench`: ratios that matter, and the goals of the
//! issues the suite was built for, judged on the numbers of the run.

use crate::harness::blocks::Measured;
use crate::harness::rounds::paired_rate_ratio;
use crate::registry::PEER_NAMES;
use crate::report::{format_ratio, format_size};
use crate::suite::{floor_level, OneWayRow, PingPongRow, SuiteResult};
use crate::transport::{Pattern, PayloadMode};

use super::table::{rate, us};

/// The peers that ran in `row`, or (none in this build or run) every
/// transport that is neither hako nor a floor; and which of the two it is.
fn rivals(row: &[Measured]) -> (Vec<&Measured>, &'static str) {
    let peers: Vec<&Measured> = row
        .iter()
        .filter(|m| PEER_NAMES.contains(&m.name))
        .collect();
    if !peers.is_empty() {
        return (peers, "peer");
    }
    let others = row
        .iter()
        .filter(|m| {
            !m.name.starts_with("hako")
                && !["floor", "floor2", "futex", "reference"].contains(&m.name)
        })
        .collect();
    (others, "other transport")
}

/// The summary line of busy-poll hako's round trip over `floor` at each
/// size, with the worst; `None` if no size has the ratio.
fn over_floor(
    floor: &str,
    payload: PayloadMode,
    ratios: impl Iterator<Item = (usize, f64)>,
) -> Option<String> {
    let ratios: Vec<(usize, f64)> = ratios.collect();
    if ratios.is_empty() {
        return None;
    }
    let worst = ratios.iter().map(|&(_, r)| r).fold(0.0, f64::max);
    let parts: Vec<String> = ratios
        .iter()
        .map(|&(s, r)| format!("{} {}", format_size(s), format_ratio(Some(r))))
        .collect();
    Some(format!(
        "hako (busy-poll) round trip / {floor}, {}: {} (worst {})",
        payload.name(),
        parts.join(", "),
        format_ratio(Some(worst))
    ))
}

/// The summary: hako against the floor, against the fastest peer, its
/// throughput against the peers', and `full` mode against memory.
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for payload in PayloadMode::ALL {
        let rows: Vec<&PingPongRow> = result
            .ping_pong
            .iter()
            .filter(|r| r.payload == payload)
            .collect();
        if result.probe == "floor" {
            lines.extend(over_floor(
                "cache-line floor",
                payload,
                rows.iter()
                    .filter_map(|r| Some((r.row.size, r.row.get("hako")?.ratio))),
            ));
        }
        // Against the two-line floor, where it was measured: what hako adds
        // to the least any descriptor-plus-payload handoff costs.
        lines.extend(over_floor(
            "two-line floor (a descriptor line and a payload line each way)",
            payload,
            rows.iter()
                .filter_map(|r| Some((r.row.size, r.row.get("hako")?.vs("floor2")?))),
        ));
        // What the library adds beyond its data path: hako over the
        // two-line floor and over `reference` (the same data path written
        // by hand, no library around it), side by side, with the floor
        // state of each row's probe.
        let side: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let h = r.row.get("hako")?;
                Some(format!(
                    "{} {} / {} ({} floor)",
                    format_size(r.row.size),
                    format_ratio(Some(h.vs("floor2")?)),
                    format_ratio(Some(h.vs("reference")?)),
                    floor_level(r.row.floor.median)
                ))
            })
            .collect();
        if !side.is_empty() {
            lines.push(format!(
                "hako round trip / two-line floor and / reference (hako's data path by hand), {}: {}",
                payload.name(),
                side.join(", ")
            ));
        }
        // The C API against Rust.
        let c_api: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let ratio = r.row.get("hako-c")?.vs("hako")?;
                Some(format!(
                    "{} {}",
                    format_size(r.row.size),
                    format_ratio(Some(ratio))
                ))
            })
            .collect();
        if !c_api.is_empty() {
            lines.push(format!(
                "hako-c (ping-pong in C through the C API) round trip / hako in Rust, {} (block \
                 by block): {}",
                payload.name(),
                c_api.join(", ")
            ));
        }
        // Against the futex floor (shown as "-" where it was not measured),
        // and against busy-poll hako: back to back, the adaptive spin
        // should catch every answer.
        for (against, what, needs_it) in [
            ("futex", "futex floor (two kernel wake-ups)", false),
            ("hako", "busy-poll hako (answers back to back)", true),
        ] {
            let parts: Vec<String> = rows
                .iter()
                .filter(|r| !needs_it || r.row.get(against).is_some())
                .filter_map(|r| {
                    let m = r.row.get("hako-spin-park")?;
                    Some(format!(
                        "{} {}",
                        format_size(r.row.size),
                        format_ratio(m.vs(against))
                    ))
                })
                .collect();
            if !parts.is_empty() {
                lines.push(format!(
                    "hako-spin-park round trip / {what}, {}: {}",
                    payload.name(),
                    parts.join(", ")
                ));
            }
        }
        for name in ["hako"] {
            let mut parts = Vec::new();
            let mut kind = "peer";
            for r in &rows {
                let Some(h) = r.row.get(name) else { continue };
                let (rivals, k) = rivals(&r.row.transports);
                kind = k;
                let Some(best) = rivals.iter().min_by_key(|m| m.stats.median) else {
                    continue;
                };
                parts.push(format!(
                    "{} {} {}",
                    format_size(r.row.size),
                    format_ratio(h.vs(best.name)),
                    best.name
                ));
            }
            if !parts.is_empty() {
                lines.push(format!(
                    "{name} round trip / fastest {kind}, {} (block by block; below 1x hako is faster): {}",
                    payload.name(),
                    parts.join(", ")
                ));
            }
        }
    }
    for pattern in [Pattern::Throughput, Pattern::FanOut] {
        for payload in PayloadMode::ALL {
            let mut parts = Vec::new();
            let mut kind = "peer";
            let sizes: Vec<usize> = result
                .one_way
                .iter()
                .filter(|r| r.pattern == pattern && r.payload == payload)
                .map(|r| r.size)
                .fold(Vec::new(), |mut v, s| {
                    if !v.contains(&s) {
                        v.push(s);
                    }
                    v
                });
            for size in sizes {
                let rows: Vec<&OneWayRow> = result
                    .one_way
                    .iter()
                    .filter(|r| r.pattern == pattern && r.payload == payload && r.size == size)
                    .collect();
                let Some(hako) = rows.iter().find(|r| r.transport == "hako") else {
                    continue;
                };
                let Some(h) = hako.median_run().map(|m| m.messages_per_s()) else {
                    continue;
                };
                let rated = |r: &&&OneWayRow| r.median_run().is_some();
                let mut rival: Vec<&OneWayRow> = rows
                    .iter()
                    .filter(|r| PEER_NAMES.contains(&r.transport))
                    .filter(rated)
                    .copied()
                    .collect();
                if rival.is_empty() {
                    kind = "other transport";
                    rival = rows
                        .iter()
                        .filter(|r| !r.transport.starts_with("hako"))
                        .filter(rated)
                        .copied()
                        .collect();
                }
                let rate_of = |r: &OneWayRow| r.median_run().map_or(0.0, |m| m.messages_per_s());
                let Some(best) = rival
                    .iter()
                    .max_by(|a, b| rate_of(a).total_cmp(&rate_of(b)))
                else {
                    continue;
                };
                parts.push(format!(
                    "{} {} msg/s = {} {} ({} msg/s)",
                    format_size(size),
                    rate(h),
                    format_ratio(paired_rate_ratio(hako, best)),
                    best.transport,
                    rate(rate_of(best))
                ));
            }
            if !parts.is_empty() {
                lines.push(format!(
                    "hako {} / fastest {kind}, {} (run by run; above 1x hako is faster): {}",
                    pattern.name(),
                    payload.name(),
                    parts.join("; ")
                ));
            }
        }
    }
    let full: Vec<String> = full_vs_memory(result, 64 << 10)
        .map(|(size, median, mem)| {
            format!(
                "{} {} µs = {} of 2 × {} µs",
                format_size(size),
                us(median),
                format_ratio(Some(median / (2.0 * mem))),
                us(mem)
            )
        })
        .collect();
    if !full.is_empty() {
        lines.push(format!(
            "hako full-mode round trip / writing and reading the payload twice, each time \
             written on one CPU and read on the other (the memory figure): {}",
            full.join(", ")
        ));
    }
    // Memory per port against the subscribers a service allows.
    lines.extend(super::footprint::summary(&result.footprint));
    lines
}

/// hako's full-mode ping-pong rows from `min_size` up, each with the memory
/// figure of its size: (size, hako's median round trip in ns, write once on
/// one CPU + read once on the other, in ns).
fn full_vs_memory(
    result: &SuiteResult,
    min_size: usize,
) -> impl Iterator<Item = (usize, f64, f64)> + '_ {
    result
        .ping_pong
        .iter()
        .filter(move |r| r.payload == PayloadMode::Full && r.row.size >= min_size)
        .filter_map(|r| {
            let m = r.row.get("hako")?;
            let mem = result.memory.iter().find(|f| f.size == r.row.size)?;
            Some((r.row.size, m.stats.median as f64, mem.across_ns))
        })
}

/// Adds the goal line "`what`: met/NOT met (worst …)" judged by the largest
/// of `ratios` against `limit`; nothing when nothing was measured.
pub(super) fn worst_at_most(lines: &mut Vec<String>, what: &str, ratios: &[f64], limit: f64) {
    if ratios.is_empty() {
        return;
    }
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    lines.push(format!(
        "goal: {what}: {} (worst {})",
        if worst <= limit { "met" } else { "NOT met" },
        format_ratio(Some(worst))
    ));
}

/// Smallest payload the full-mode memory-bandwidth goal applies to.
const FULL_GOAL_MIN_SIZE: usize = 1 << 20;

/// The performance goals of the suite's issue (#4), each with the numbers
/// that decide it; a goal whose figures were not measured is left out.
pub fn goals(result: &SuiteResult) -> Vec<String> {
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let touch: Vec<&PingPongRow> = result
        .ping_pong
        .iter()
        .filter(|r| r.payload == PayloadMode::Touch)
        .collect();
    let mut lines = Vec::new();
    let floor: Vec<f64> = touch
        .iter()
        .filter_map(|r| Some(r.row.get("hako")?.ratio))
        .collect();
    if result.probe == "floor" {
        worst_at_most(
            &mut lines,
            "hako round trip within 2x of the cache-line floor at every size (touch)",
            &floor,
            2.0,
        );
    }
    let peer: Vec<f64> = touch
        .iter()
        .filter_map(|r| r.row.get("hako")?.vs("iceoryx2"))
        .collect();
    worst_at_most(
        &mut lines,
        "hako round trip at most 0.3x iceoryx2's at every size (touch)",
        &peer,
        0.3,
    );
    // The C API (issue #20): hako's ping-pong written in C against Rust's,
    // block by block, at every size and payload mode.
    let c_api: Vec<f64> = result
        .ping_pong
        .iter()
        .filter_map(|r| r.row.get("hako-c")?.vs("hako"))
        .collect();
    worst_at_most(
        &mut lines,
        "hako round trip through the C API (hako-c) at most 1.1x hako's in Rust at every size",
        &c_api,
        1.1,
    );
    // Throughput against iceoryx2 is a goal in touch mode only: in full mode
    // both write and read every byte, so both are bound by memory bandwidth
    // (the summary shows that ratio, and the next goal judges full mode).
    let row_of = |name: &str| {
        result.one_way.iter().find(|r| {
            r.pattern == Pattern::Throughput
                && r.payload == PayloadMode::Touch
                && r.size == 1 << 20
                && r.transport == name
        })
    };
    if let (Some(h), Some(i)) = (row_of("hako"), row_of("iceoryx2")) {
        let rate_of = |r: &OneWayRow| r.median_run().map(|m| m.messages_per_s());
        if let (Some(ratio), Some(hr), Some(ir)) = (paired_rate_ratio(h, i), rate_of(h), rate_of(i))
        {
            lines.push(format!(
                "goal: hako throughput of 1 MiB messages at least 5x iceoryx2's (touch): {} \
                 ({} vs {} msg/s, medians; {} run by run)",
                verdict(ratio >= 5.0),
                rate(hr),
                rate(ir),
                format_ratio(Some(ratio))
            ));
        }
    }
    // Against the same data path by hand streaming one way (issue 25):
    // what the library costs a stream of large messages.
    if let (Some(h), Some(r)) = (row_of("hako"), row_of("reference")) {
        let rate_of = |r: &OneWayRow| r.median_run().map(|m| m.messages_per_s());
        if let (Some(ratio), Some(hr), Some(rr)) = (paired_rate_ratio(h, r), rate_of(h), rate_of(r))
        {
            lines.push(format!(
                "goal: hako throughput of 1 MiB messages at least 0.8x a raw descriptor ring's \
                 (reference, touch): {} ({} vs {} msg/s, medians; {} run by run)",
                verdict(ratio >= 0.8),
                rate(hr),
                rate(rr),
                format_ratio(Some(ratio))
            ));
        }
    }
    // Full-mode latency for large payloads: a round trip writes and reads
    // the payload twice, each time written on one CPU and read on the other,
    // so its floor is twice the cross-CPU memory figure; "limited only by
    // memory bandwidth" is read as within 1.2x of that.
    let full: Vec<f64> = full_vs_memory(result, FULL_GOAL_MIN_SIZE)
        .map(|(_, median, mem)| median / (2.0 * mem))
        .collect();
    worst_at_most(
        &mut lines,
        "hako full-mode round trip from 1 MiB up within 1.2x of writing and reading the payload twice across CPUs (memory bandwidth)",
        &full,
        1.2,
    );
    lines.extend(super::footprint::goals(&result.footprint));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::json::one_way_json;
    use crate::harness::blocks::Row;
    use crate::harness::rounds::example_row;
    use crate::harness::Stats;
    use crate::suite::MemoryFigure;
    use serde_json::Value;

    fn stats(median: u64) -> Stats {
        Stats::uniform(100, median)
    }

    fn measured(name: &'static str, median: u64, floor: u64, vs: f64) -> Measured {
        Measured {
            name,
            stats: stats(median),
            ratio: median as f64 / floor as f64,
            iterations: 100,
            leader_cpu: Default::default(),
            follower_cpu: Default::default(),
            counted: 100,
            vs: vec![("iceoryx2", vs)],
        }
    }

    fn row(payload: PayloadMode, size: usize, hako_ns: u64, vs: f64) -> PingPongRow {
        PingPongRow {
            payload,
            row: Row {
                size,
                probe: "floor",
                floor: stats(100),
                transports: vec![measured("hako", hako_ns, 100, vs)],
                skipped: Vec::new(),
                blocks: 4,
                stable: 4,
            },
        }
    }

    fn result(hako_touch_ns: u64, vs: f64, full_ns: u64) -> SuiteResult {
        SuiteResult {
            clock_ns: 20.0,
            probe: "floor",
            memory: vec![MemoryFigure {
                size: 1 << 20,
                write_read_ns: 20_000.0,
                across_ns: 30_000.0,
            }],
            ping_pong: vec![
                row(PayloadMode::Touch, 64, hako_touch_ns, vs),
                row(PayloadMode::Full, 1 << 20, full_ns, 1.0),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn goals_judge_the_numbers() {
        let g = goals(&result(190, 0.25, 66_000)).join("\n");
        assert!(
            g.contains("cache-line floor at every size (touch): met (worst 1.90x)"),
            "{g}"
        );
        assert!(
            g.contains("0.3x iceoryx2's at every size (touch): met"),
            "{g}"
        );
        assert!(g.contains("(memory bandwidth): met (worst 1.10x)"), "{g}");
        let g = goals(&result(250, 0.4, 80_000)).join("\n");
        assert!(g.contains("(touch): NOT met (worst 2.50x)"), "{g}");
        assert!(
            g.contains("0.3x iceoryx2's at every size (touch): NOT met"),
            "{g}"
        );
        assert!(
            g.contains("(memory bandwidth): NOT met (worst 1.33x)"),
            "{g}"
        );
        // No throughput rows measured: no throughput goal.
        assert!(!g.contains("throughput"), "{g}");
    }

    #[test]
    fn throughput_is_judged_run_by_run() {
        // The second round ran while the machine was slow for both: the
        // medians (20 M and 5 M/s) say 4x, the rounds 4x, 10x and 5x.
        let mut r = result(190, 0.25, 66_000);
        r.one_way = vec![
            example_row("hako", &[50, 100, 40]),
            example_row("iceoryx2", &[200, 1000, 200]),
        ];
        let g = goals(&r).join("\n");
        assert!(
            g.contains("at least 5x iceoryx2's (touch): met (20.00M vs 5.00M msg/s, medians; 5.00x run by run)"),
            "{g}"
        );
        let s = summary(&r).join("\n");
        assert!(
            s.contains("hako throughput / fastest peer, touch (run by run; above 1x hako is faster): 1 MiB 20.00M msg/s = 5.00x iceoryx2 (5.00M msg/s)"),
            "{s}"
        );
        r.one_way[1] = example_row("iceoryx2", &[200, 400, 200]);
        let g = goals(&r).join("\n");
        assert!(
            g.contains("(touch): NOT met (20.00M vs 5.00M msg/s, medians; 4.00x run by run)"),
            "{g}"
        );
        let json = Value::Array(one_way_json(&r));
        assert_eq!(json[0]["vs"]["iceoryx2"], 4.0, "{json}");
        assert_eq!(json[1]["vs"]["hako"], 0.25, "{json}");
    }

    #[test]
    fn the_two_line_floor_is_summarised_where_it_ran() {
        let mut r = result(190, 0.25, 66_000);
        assert!(!summary(&r).join("\n").contains("two-line floor"));
        let transports = &mut r.ping_pong[0].row.transports;
        transports[0].vs.push(("floor2", 1.5));
        transports.push(measured("floor2", 127, 100, 1.0));
        let s = summary(&r).join("\n");
        assert!(
            s.contains("/ two-line floor (a descriptor line and a payload line each way), touch: 64 B 1.50x (worst 1.50x)"),
            "{s}"
        );
        // floor2 is a floor, never a rival hako is compared with.
        assert!(!s.contains("fastest"), "{s}");
        // With the reference measured too: both ratios side by side.
        let transports = &mut r.ping_pong[0].row.transports;
        transports[0].vs.push(("reference", 1.2));
        transports.push(measured("reference", 160, 100, 1.25));
        let s = summary(&r).join("\n");
        assert!(
            s.contains("hako round trip / two-line floor and / reference (hako's data path by hand), touch: 64 B 1.50x / 1.20x (low floor)"),
            "{s}"
        );
    }
}
