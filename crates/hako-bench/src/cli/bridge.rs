//! The bridge part of the reports: the round trip through two
//! `hako-bridge` processes (as they run by default, and with
//! `--low-latency`) next to plain Zenoh's: its table, its summary lines,
//! its goals and the JSON object `bridge`.

use serde_json::{json, Value};

use crate::report::{format_ratio, format_size};
use crate::suite::SuiteResult;
use crate::transport::PayloadMode;

use super::output::round_trip_table;
use super::summary::worst_at_most;
use super::table::{us, Table};

/// hako through two bridges.
const BRIDGED: &str = "hako-bridge";
/// hako through two bridges that poll (`--low-latency`).
const LOW_LATENCY: &str = "hako-bridge-low-latency";
/// Plain Zenoh.
const PLAIN: &str = "zenoh";

/// The bridged transports, each with what the summary calls it.
const BRIDGED_KINDS: [(&str, &str); 2] = [
    (BRIDGED, "hako through two bridges"),
    (LOW_LATENCY, "hako through two low-latency bridges"),
];

/// The goals: the most each bridged transport may add to plain Zenoh's
/// round trip, at a message size (touch mode).
pub const GOALS: [(&str, usize, f64); 3] = [
    (BRIDGED, 64, 1.5),
    (BRIDGED, 1 << 20, 1.35),
    (LOW_LATENCY, 64, 1.15),
];

/// The bridge table, if it has rows.
pub fn tables(result: &SuiteResult) -> Vec<Table> {
    if result.bridge.is_empty() {
        return Vec::new();
    }
    vec![round_trip_table(
        "Bridge: round trip through two hako-bridge processes over Zenoh (hako-bridge;          hako-bridge-low-latency: bridges that poll), and through plain Zenoh (zenoh), TCP          over loopback",
        &result.bridge,
        result.probe,
    )]
}

/// Per size of `payload`'s rows: `name`'s round trip over zenoh's (block
/// by block) and both medians in ns.
fn ratios(result: &SuiteResult, payload: PayloadMode, name: &str) -> Vec<(usize, f64, u64, u64)> {
    result
        .bridge
        .iter()
        .filter(|r| r.payload == payload)
        .filter_map(|r| {
            let b = r.row.get(name)?;
            let z = r.row.get(PLAIN)?;
            Some((r.row.size, b.vs(PLAIN)?, b.stats.median, z.stats.median))
        })
        .collect()
}

/// The goals of `name`, as text (`≤ 1.5x at 64 B, ≤ 1.35x at 1 MiB`).
fn goal_text(name: &str) -> String {
    GOALS
        .iter()
        .filter(|g| g.0 == name)
        .map(|&(_, size, limit)| format!("≤ {limit}x at {}", format_size(size)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary: per bridged transport and payload mode, what the bridge
/// adds at each size; or why the rows were not measured.
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(why) = &result.bridge_note {
        lines.push(format!("bridge: not measured: {why}"));
    }
    for (name, label) in BRIDGED_KINDS {
        for payload in PayloadMode::ALL {
            let parts: Vec<String> = ratios(result, payload, name)
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
                    "bridge: {label} / plain Zenoh round trip: {} (goal {}; {}, block by block, \
                     medians {name} / zenoh)",
                    parts.join(", "),
                    goal_text(name),
                    payload.name()
                ));
            }
        }
    }
    lines
}

/// The goals of the bridge issues: through two bridges, a round trip
/// takes at most [`GOALS`]' multiple of plain Zenoh's at its size (touch
/// mode); a goal whose size was not measured is left out.
pub fn goals(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, size, limit) in GOALS {
        let at: Vec<f64> = ratios(result, PayloadMode::Touch, name)
            .iter()
            .filter(|r| r.0 == size)
            .map(|r| r.1)
            .collect();
        let label = BRIDGED_KINDS
            .iter()
            .find(|k| k.0 == name)
            .map_or(name, |k| k.1);
        worst_at_most(
            &mut lines,
            &format!(
                "{label} at most {limit}x plain Zenoh's round trip at {} ({name} / zenoh, touch)",
                format_size(size)
            ),
            &at,
            limit,
        );
    }
    lines
}

/// The JSON object `bridge`: the round-trip rows (shaped as `ping_pong`'s),
/// each bridged transport over zenoh per row, the goals, and why the rows
/// are missing, if they are.
pub fn json(result: &SuiteResult) -> Value {
    let ratios: Vec<Value> = BRIDGED_KINDS
        .iter()
        .flat_map(|&(name, _)| {
            PayloadMode::ALL.into_iter().flat_map(move |p| {
                ratios(result, p, name)
                    .into_iter()
                    .map(move |(size, r, b, z)| {
                        json!({
                            "transport": name,
                            "payload": p.name(),
                            "size": size,
                            "vs_zenoh": r,
                            "median_ns": b,
                            "zenoh_median_ns": z,
                        })
                    })
            })
        })
        .collect();
    let goals: Vec<Value> = GOALS
        .iter()
        .map(|&(name, size, limit)| json!({"transport": name, "size": size, "at_most": limit}))
        .collect();
    json!({
        "rows": super::json::round_trip_rows(&result.bridge),
        "ratios": ratios,
        "goals": goals,
        "not_measured": result.bridge_note,
    })
}

#[cfg(test)]
mod tests {
    use super::super::reqres::tests::measured;
    use super::*;
    use crate::harness::blocks::Row;
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
                    measured(
                        PLAIN,
                        100_000,
                        vec![(BRIDGED, 1.0 / ratio), (LOW_LATENCY, 1.0)],
                    ),
                    measured(BRIDGED, 130_000, vec![(PLAIN, ratio)]),
                    measured(LOW_LATENCY, 100_000, vec![(PLAIN, 1.0)]),
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
        assert_eq!(s.len(), 4, "{s:?}");
        assert!(
            s[0].starts_with(
                "bridge: hako through two bridges / plain Zenoh round trip: 1.30x at 64 B \
                 (130.0 / 100.0 µs), 1.10x at 1 MiB"
            ),
            "{s:?}"
        );
        assert!(
            s[0].contains("goal ≤ 1.5x at 64 B, ≤ 1.35x at 1 MiB; touch"),
            "{s:?}"
        );
        assert!(s[1].contains("full"), "{s:?}");
        assert!(
            s[2].starts_with("bridge: hako through two low-latency bridges / plain Zenoh")
                && s[2].contains("goal ≤ 1.15x at 64 B; touch"),
            "{s:?}"
        );
        let g = goals(&result);
        assert_eq!(g.len(), 3, "{g:?}");
        assert!(
            g[0].contains("at 64 B") && g[0].contains(": met (worst 1.30x)"),
            "{g:?}"
        );
        assert!(
            g[1].contains("at 1 MiB") && g[1].contains(": met (worst 1.10x)"),
            "{g:?}"
        );
        assert!(
            g[2].contains("low-latency") && g[2].contains(": met (worst 1.00x)"),
            "{g:?}"
        );
        let v = json(&result);
        assert_eq!(v["rows"].as_array().unwrap().len(), 3);
        assert_eq!(v["ratios"][1]["size"], 1 << 20);
        assert_eq!(v["ratios"][1]["vs_zenoh"], 1.1);
        assert_eq!(v["ratios"][1]["transport"], BRIDGED);
        assert_eq!(v["ratios"][3]["transport"], LOW_LATENCY);
        assert_eq!(v["goals"].as_array().unwrap().len(), 3);
        assert!(v["not_measured"].is_null());
        assert_eq!(tables(&result).len(), 1);
        // Over the goal: NOT met.
        let worse = SuiteResult {
            bridge: vec![row(64, PayloadMode::Touch, 1.6)],
            ..SuiteResult::default()
        };
        assert!(goals(&worse)[0].contains("NOT met (worst 1.60x)"));
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
