//! The bridge part of the reports: the round trip through two
//! `hako-bridge` processes next to plain Zenoh's — its table, its summary
//! lines, its goal (the bridge adds at most 1.2x to plain Zenoh) and the
//! JSON object `bridge`.

use serde_json::{json, Value};

use crate::report::{format_ratio, format_size};
use crate::suite::SuiteResult;
use crate::transport::PayloadMode;

use super::output::round_trip_table;
use super::summary::worst_at_most;
use super::table::{us, Table};

/// hako through two bridges.
const BRIDGED: &str = "hako-bridge";
/// Plain Zenoh.
const PLAIN: &str = "zenoh";
/// The most the bridge may add: its round trip over plain Zenoh's.
pub const GOAL: f64 = 1.2;

/// The bridge table, if it has rows.
pub fn tables(result: &SuiteResult) -> Vec<Table> {
    if result.bridge.is_empty() {
        return Vec::new();
    }
    vec![round_trip_table(
        "Bridge: round trip through two hako-bridge processes over Zenoh (hako-bridge), and \
         through plain Zenoh (zenoh), TCP over loopback",
        &result.bridge,
        result.probe,
    )]
}

/// Per size of `payload`'s rows: hako-bridge's round trip over zenoh's
/// (block by block) and both medians in ns.
fn ratios(result: &SuiteResult, payload: PayloadMode) -> Vec<(usize, f64, u64, u64)> {
    result
        .bridge
        .iter()
        .filter(|r| r.payload == payload)
        .filter_map(|r| {
            let b = r.row.get(BRIDGED)?;
            let z = r.row.get(PLAIN)?;
            Some((r.row.size, b.vs(PLAIN)?, b.stats.median, z.stats.median))
        })
        .collect()
}

/// The summary: per payload mode, what the bridge adds at each size; or
/// why the rows were not measured.
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(why) = &result.bridge_note {
        lines.push(format!("bridge: not measured: {why}"));
    }
    for payload in PayloadMode::ALL {
        let parts: Vec<String> = ratios(result, payload)
            .iter()
            .map(|&(size, ratio, b, z)| {
                format!(
                    "{} at {} ({} / {} µs)",
                    format_ratio(Some(ratio)),
                    format_size(size),
                    us(b as f64),
                    us(z as f64)
                )
            })
            .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "bridge: hako through two bridges / plain Zenoh round trip: {} (goal ≤ {GOAL}x; \
                 {}, block by block, medians hako-bridge / zenoh)",
                parts.join(", "),
                payload.name()
            ));
        }
    }
    lines
}

/// The goal of the bridge issue: through two bridges, a round trip takes
/// at most [`GOAL`] times plain Zenoh's, at every size (touch mode).
pub fn goals(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    let touch: Vec<f64> = ratios(result, PayloadMode::Touch)
        .iter()
        .map(|&(_, r, _, _)| r)
        .collect();
    worst_at_most(
        &mut lines,
        &format!(
            "hako through two bridges at most {GOAL}x plain Zenoh's round trip at every size \
             (hako-bridge / zenoh, touch)"
        ),
        &touch,
        GOAL,
    );
    lines
}

/// The JSON object `bridge`: the round-trip rows (shaped as `ping_pong`'s),
/// hako-bridge over zenoh per row, and why the rows are missing, if they
/// are.
pub fn json(result: &SuiteResult) -> Value {
    let ratios: Vec<Value> = PayloadMode::ALL
        .into_iter()
        .flat_map(|p| {
            ratios(result, p).into_iter().map(move |(size, r, b, z)| {
                json!({
                    "payload": p.name(),
                    "size": size,
                    "hako_bridge_vs_zenoh": r,
                    "hako_bridge_median_ns": b,
                    "zenoh_median_ns": z,
                })
            })
        })
        .collect();
    json!({
        "rows": super::json::round_trip_rows(&result.bridge),
        "ratios": ratios,
        "goal": GOAL,
        "not_measured": result.bridge_note,
    })
}

#[cfg(test)]
mod tests {
    use super::super::reqres::tests::measured;
    use super::*;
    use crate::blocks::Row;
    use crate::harness::Stats;
    use crate::suite::PingPongRow;

    fn row(size: usize, payload: PayloadMode, ratio: f64) -> PingPongRow {
        PingPongRow {
            payload,
            row: Row {
                size,
                probe: "floor",
                floor: Stats::uniform(100, 100),
                transports: vec![
                    measured(PLAIN, 100_000, vec![(BRIDGED, 1.0 / ratio)]),
                    measured(BRIDGED, 130_000, vec![(PLAIN, ratio)]),
                ],
                skipped: Vec::new(),
                blocks: 2,
                stable: 2,
            },
        }
    }

    #[test]
    fn summary_goal_and_json_give_the_ratio_per_size() {
        let result = SuiteResult {
            bridge: vec![
                row(64, PayloadMode::Touch, 1.3),
                row(1 << 20, PayloadMode::Touch, 1.1),
                row(64, PayloadMode::Full, 1.0),
            ],
            ..SuiteResult::default()
        };
        let s = summary(&result);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(
            s[0].starts_with(
                "bridge: hako through two bridges / plain Zenoh round trip: 1.30x at 64 B \
                 (130.0 / 100.0 µs), 1.10x at 1 MiB"
            ),
            "{s:?}"
        );
        assert!(s[0].contains("goal ≤ 1.2x; touch"), "{s:?}");
        assert!(s[1].contains("full"), "{s:?}");
        let g = goals(&result);
        assert_eq!(g.len(), 1);
        assert!(g[0].contains("NOT met (worst 1.30x)"), "{g:?}");
        let v = json(&result);
        assert_eq!(v["rows"].as_array().unwrap().len(), 3);
        assert_eq!(v["ratios"][1]["size"], 1 << 20);
        assert_eq!(v["ratios"][1]["hako_bridge_vs_zenoh"], 1.1);
        assert!(v["not_measured"].is_null());
        assert_eq!(tables(&result).len(), 1);
    }

    #[test]
    fn a_build_without_zenoh_says_so() {
        let result = SuiteResult {
            bridge_note: Some(crate::suite::BRIDGE_LEFT_OUT.to_owned()),
            ..SuiteResult::default()
        };
        let s = summary(&result);
        assert_eq!(s.len(), 1);
        assert!(s[0].contains("--features bridge"), "{s:?}");
        assert!(goals(&result).is_empty());
        assert!(tables(&result).is_empty());
        assert!(json(&result)["not_measured"].is_string());
    }
}
