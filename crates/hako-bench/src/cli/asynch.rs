//! The async part of the reports: request/response under tokio
//! (`crate::transports::runtimes`) next to tokio's sockets and hako's blocking calls —
//! round trips, requests per second with requests in flight, their
//! summary, the goals of the async issue (#19) and the JSON `async`
//! array, shaped as `request_response` (see [`super::reqres`]).

use serde_json::Value;

use crate::harness::rounds::paired_rate_ratio;
use crate::report::{format_ratio, format_size};
use crate::suite::{OneWayRow, SuiteResult};
use crate::transport::PayloadMode;

use super::output::round_trip_table;
use super::reqres::{cells, in_flight_table, json_rows, rate_of};
use super::summary::worst_at_most;
use super::table::{rate, Table};

/// Per runtime: its label, hako async with the ports' default wait, busy,
/// parked, and tokio's unix socket, on that runtime.
const RUNTIMES: [(&str, [&str; 4]); 2] = [
    (
        "current-thread",
        [
            "hako-async",
            "hako-async-busy",
            "hako-async-park",
            "tokio-unix",
        ],
    ),
    (
        "multi-thread",
        [
            "hako-async-mt",
            "hako-async-busy-mt",
            "hako-async-park-mt",
            "tokio-unix-mt",
        ],
    ),
];

/// hako's blocking request/response that sleeps at once.
const BLOCKING_PARK: &str = "hako-reqres-park";

/// The async tables that have rows.
pub fn tables(result: &SuiteResult) -> Vec<Table> {
    let mut t = Vec::new();
    if !result.async_round_trip.is_empty() {
        t.push(round_trip_table(
            "Async (tokio): one request at a time, round trip between a client task and a \
             server task (-mt: a multi-threaded runtime)",
            &result.async_round_trip,
            result.probe,
        ));
    }
    if !result.async_in_flight.is_empty() {
        t.push(in_flight_table(
            "Async (tokio): requests in flight from one client task to one server task",
            &result.async_in_flight,
        ));
    }
    t
}

/// hako async against tokio's sockets and hako's blocking calls: round
/// trips per size (block by block), rates per cell (run by run).
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for (label, [hako, busy, park, unix]) in RUNTIMES {
        for (what, a, b) in [
            ("hako async (busy) / tokio UnixStream", busy, unix),
            ("hako async / tokio UnixStream", hako, unix),
            (
                "hako async (park) / hako blocking (park)",
                park,
                BLOCKING_PARK,
            ),
        ] {
            let parts: Vec<String> = result
                .async_round_trip
                .iter()
                .filter_map(|r| {
                    let ratio = r.row.get(a)?.vs(b)?;
                    Some(format!(
                        "{} {} {}",
                        format_size(r.row.size),
                        r.payload.name(),
                        format_ratio(Some(ratio))
                    ))
                })
                .collect();
            if !parts.is_empty() {
                lines.push(format!(
                    "{what} round trip, {label} (block by block; below 1x hako is faster): {}",
                    parts.join(", ")
                ));
            }
        }
        for cell in cells(&result.async_in_flight) {
            let (Some(h), Some(o)) = (
                cell.iter().find(|r| r.transport == hako),
                cell.iter().find(|r| r.transport == unix),
            ) else {
                continue;
            };
            let (Some(ratio), Some(hr)) = (paired_rate_ratio(h, o), rate_of(h)) else {
                continue;
            };
            lines.push(format!(
                "hako async with {} in flight, {} {}, {label}: {} req/s = {} tokio UnixStream \
                 (run by run; above 1x hako is faster)",
                h.depth,
                format_size(h.size),
                h.payload.name(),
                rate(hr),
                format_ratio(Some(ratio))
            ));
        }
    }
    lines
}

/// The cell of `rates` at `depth` in flight, 64 B, touch mode.
fn cell_at(rates: &[OneWayRow], depth: u32) -> Option<Vec<&OneWayRow>> {
    cells(rates).into_iter().find(|c| {
        let c = c[0];
        (c.depth, c.size, c.payload) == (depth, 64, PayloadMode::Touch)
    })
}

/// The goals of the async issue, each with the figures that decide it; a
/// goal whose figures were not measured is left out.
pub fn goals(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    let at_64 = |a: &str, b: &str| -> Vec<f64> {
        result
            .async_round_trip
            .iter()
            .filter(|r| r.payload == PayloadMode::Touch && r.row.size == 64)
            .filter_map(|r| r.row.get(a)?.vs(b))
            .collect()
    };
    for (label, [hako, busy, park, unix]) in RUNTIMES {
        worst_at_most(
            &mut lines,
            &format!(
                "busy reader: hako async round trip at most 0.1x tokio UnixStream's at 64 B \
                 ({busy} / {unix}, touch)"
            ),
            &at_64(busy, unix),
            0.1,
        );
        worst_at_most(
            &mut lines,
            &format!(
                "sleeping reader: hako async round trip at most 1.2x hako blocking's at 64 B \
                 ({park} / {BLOCKING_PARK}, touch)"
            ),
            &at_64(park, BLOCKING_PARK),
            1.2,
        );
        let Some(cell) = cell_at(&result.async_in_flight, 256) else {
            continue;
        };
        let (Some(h), Some(o)) = (
            cell.iter().find(|r| r.transport == hako),
            cell.iter().find(|r| r.transport == unix),
        ) else {
            continue;
        };
        let (Some(ratio), Some(hr), Some(or)) = (paired_rate_ratio(h, o), rate_of(h), rate_of(o))
        else {
            continue;
        };
        lines.push(format!(
            "goal: hako async with 256 in flight at 64 B at least 10x tokio UnixStream's \
             requests per second ({label}, touch): {} ({} vs {} req/s, medians; {} run by run)",
            if ratio >= 10.0 { "met" } else { "NOT met" },
            rate(hr),
            rate(or),
            format_ratio(Some(ratio))
        ));
    }
    lines
}

/// The JSON `async` array.
pub fn json(result: &SuiteResult) -> Vec<Value> {
    json_rows(&result.async_round_trip, &result.async_in_flight)
}

#[cfg(test)]
mod tests {
    use super::super::reqres::tests::{measured, rate_row_at};
    use super::*;
    use crate::harness::blocks::Row;
    use crate::harness::Stats;
    use crate::suite::PingPongRow;

    fn rate_row(transport: &'static str, elapsed_us: &[u64]) -> OneWayRow {
        rate_row_at(transport, elapsed_us, 256)
    }

    fn result(busy_vs_unix: f64, park_vs_blocking: f64, unix_us: u64) -> SuiteResult {
        let row = Row {
            size: 64,
            probe: "floor",
            floor: Stats::uniform(100, 100),
            transports: vec![
                measured("hako-async-busy", 300, vec![("tokio-unix", busy_vs_unix)]),
                measured(
                    "hako-async-park",
                    30_000,
                    vec![(BLOCKING_PARK, park_vs_blocking)],
                ),
                measured("tokio-unix", 40_000, vec![]),
                measured(BLOCKING_PARK, 29_000, vec![]),
            ],
            skipped: vec![],
            blocks: 4,
            stable: 4,
        };
        SuiteResult {
            probe: "floor",
            async_round_trip: vec![PingPongRow {
                payload: PayloadMode::Touch,
                row,
            }],
            async_in_flight: vec![
                rate_row("hako-async", &[100, 100, 100]),
                rate_row("tokio-unix", &[unix_us, unix_us, unix_us]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn goals_judge_the_busy_and_sleeping_round_trips_and_the_rate() {
        let g = goals(&result(0.008, 1.03, 2000)).join("\n");
        assert!(
            g.contains("busy reader: hako async round trip at most 0.1x tokio UnixStream's at 64 B (hako-async-busy / tokio-unix, touch): met (worst 0.0080x)"),
            "{g}"
        );
        assert!(
            g.contains("(hako-async-park / hako-reqres-park, touch): met (worst 1.03x)"),
            "{g}"
        );
        assert!(
            g.contains(
                "at least 10x tokio UnixStream's requests per second (current-thread, touch): met"
            ),
            "{g}"
        );
        let g = goals(&result(0.2, 1.5, 500)).join("\n");
        assert!(
            g.contains("(hako-async-busy / tokio-unix, touch): NOT met (worst 0.20x)"),
            "{g}"
        );
        assert!(g.contains("touch): NOT met (worst 1.50x)"), "{g}");
        assert!(g.contains("(current-thread, touch): NOT met"), "{g}");
        // The multi-threaded runtime was not measured: no goal for it.
        assert!(!g.contains("multi-thread"), "{g}");
        assert!(goals(&SuiteResult::default()).is_empty());
    }

    #[test]
    fn summary_tables_and_json_carry_the_async_rows() {
        let r = result(0.008, 1.03, 2000);
        let s = summary(&r).join("\n");
        assert!(s.contains("hako async (busy) / tokio UnixStream round trip, current-thread (block by block; below 1x hako is faster): 64 B touch 0.0080x"), "{s}");
        assert!(
            s.contains("hako async with 256 in flight, 64 B touch, current-thread: 10.00M req/s = 20.0x tokio UnixStream"),
            "{s}"
        );
        assert_eq!(tables(&r).len(), 2);
        let j = Value::Array(json(&r));
        assert_eq!(j[0]["kind"], "round_trip");
        assert_eq!(j[0]["transports"][0]["transport"], "hako-async-busy");
        assert_eq!(j[1]["kind"], "in_flight");
        assert_eq!(j[1]["in_flight"], 256);
    }
}
