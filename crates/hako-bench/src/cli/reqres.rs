//! The request/response part of the reports: the round trip of one request
//! at a time (ping-pong columns), requests per second with requests in
//! flight (one-way columns, per request), their summary, the goals of the
//! request/response issue (#18) and the JSON `request_response` array.
//!
//! In that array every row has a `kind` — `round_trip` (one request at a
//! time, measured in blocks between floor probes) or `in_flight` (a rate,
//! measured in rounds) — its `payload`, `size` and `in_flight` depth, and
//! per transport its `median_ns` (per round trip, or per request of the
//! median run) and `vs`: its time over every other transport's, block by
//! block or run by run (below 1 it is the faster).

use serde_json::{json, Value};

use crate::harness::rounds::paired_rate_ratio;
use crate::report::{format_ratio, format_size};
use crate::suite::{floor_level, OneWayRow, PingPongRow, SuiteResult};
use crate::transport::PayloadMode;

use super::json::{cpu_json, stats_json, vs_json};
use super::output::{rate_cells, round_trip_table};
use super::summary::worst_at_most;
use super::table::{rate, Table};

/// hako's request/response transport.
const HAKO: &str = "hako-reqres";

/// What hako's request/response is compared with in the summary: name, and
/// how the summary calls it.
const RIVALS: [(&str, &str); 5] = [
    ("hako", "hako pub/sub ping-pong"),
    ("iceoryx2-reqres", "iceoryx2 request/response"),
    ("shmipc", "shmipc"),
    ("unix", "a unix socket"),
    ("tcp", "TCP loopback"),
];

/// The request/response tables that have rows.
pub fn tables(result: &SuiteResult) -> Vec<Table> {
    let mut t = Vec::new();
    if !result.request_response.is_empty() {
        t.push(round_trip_table(
            "Request/response: one request at a time, round trip between a client and a server",
            &result.request_response,
            result.probe,
        ));
    }
    if !result.in_flight.is_empty() {
        t.push(in_flight_table(
            "Request/response: requests in flight from one client to one server",
            &result.in_flight,
        ));
    }
    t
}

/// Requests per second with requests in flight: the rate rows `rates`.
pub fn in_flight_table(title: &str, rates: &[OneWayRow]) -> Table {
    let mut t = Table::new(
        title,
        &[
            "size",
            "payload",
            "in flight",
            "transport",
            "req/s",
            "µs/req",
            "cpu client",
            "cpu server",
            "requests",
            "probe",
        ],
    );
    let mut last = None;
    for r in rates {
        let first = last != Some((r.payload, r.size, r.depth));
        last = Some((r.payload, r.size, r.depth));
        let head = |s: String| if first { s } else { String::new() };
        let mut row = vec![
            head(format_size(r.size)),
            head(r.payload.name().to_owned()),
            head(r.depth.to_string()),
            r.transport.to_owned(),
        ];
        row.extend(rate_cells(r, false));
        t.rows.push(row);
    }
    t
}

/// The rate rows of `rates` by cell (payload mode, size, depth), in table
/// order.
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

/// The rate of `r`'s median run.
pub fn rate_of(r: &OneWayRow) -> Option<f64> {
    r.median_run().map(|m| m.messages_per_s())
}

/// hako request/response against each rival: round trips per payload
/// mode, block by block; rates per cell, run by run.
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for payload in PayloadMode::ALL {
        let rows: Vec<&PingPongRow> = result
            .request_response
            .iter()
            .filter(|r| r.payload == payload)
            .collect();
        for (other, what) in RIVALS {
            let parts: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    let ratio = r.row.get(HAKO)?.vs(other)?;
                    Some(format!(
                        "{} {}",
                        format_size(r.row.size),
                        format_ratio(Some(ratio))
                    ))
                })
                .collect();
            if !parts.is_empty() {
                lines.push(format!(
                    "hako request/response round trip / {what}, {} (block by block; below 1x \
                     hako is faster): {}",
                    payload.name(),
                    parts.join(", ")
                ));
            }
        }
    }
    for cell in cells(&result.in_flight) {
        let Some(h) = cell.iter().find(|r| r.transport == HAKO) else {
            continue;
        };
        let Some(hr) = rate_of(h) else { continue };
        let parts: Vec<String> = cell
            .iter()
            .filter(|o| o.transport != HAKO)
            .filter_map(|o| {
                let ratio = paired_rate_ratio(h, o)?;
                Some(format!("{} {}", format_ratio(Some(ratio)), o.transport))
            })
            .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "hako request/response with {} in flight, {} {}: {} req/s = {} (run by run; \
                 above 1x hako is faster)",
                h.depth,
                format_size(h.size),
                h.payload.name(),
                rate(hr),
                parts.join(", ")
            ));
        }
    }
    lines
}

/// The goals of the request/response issue, each with the numbers that
/// decide it; a goal whose figures were not measured is left out.
pub fn goals(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    let ratios = |other: &str, touch_only: bool| -> Vec<f64> {
        result
            .request_response
            .iter()
            .filter(|r| !touch_only || r.payload == PayloadMode::Touch)
            .filter_map(|r| r.row.get(HAKO)?.vs(other))
            .collect()
    };
    worst_at_most(
        &mut lines,
        "hako request/response round trip at most 1.1x hako pub/sub ping-pong at every size \
         and payload mode",
        &ratios("hako", false),
        1.1,
    );
    // Against iceoryx2 in touch mode, as the publish/subscribe goal: in
    // full mode both write and read every byte in place, and from a few
    // KiB up that memory traffic, the same for both, is most of the time.
    worst_at_most(
        &mut lines,
        "hako request/response round trip at most 0.3x iceoryx2 request/response at every \
         size (touch)",
        &ratios("iceoryx2-reqres", true),
        0.3,
    );
    for (other, what, limit) in [
        ("iceoryx2-reqres", "iceoryx2's", 5.0),
        ("unix", "the unix-socket server's", 20.0),
    ] {
        for cell in cells(&result.in_flight) {
            let c = cell[0];
            if (c.depth, c.size, c.payload) != (16, 64, PayloadMode::Touch) {
                continue;
            }
            let (Some(h), Some(o)) = (
                cell.iter().find(|r| r.transport == HAKO),
                cell.iter().find(|r| r.transport == other),
            ) else {
                continue;
            };
            let (Some(ratio), Some(hr), Some(or)) =
                (paired_rate_ratio(h, o), rate_of(h), rate_of(o))
            else {
                continue;
            };
            lines.push(format!(
                "goal: hako request/response with 16 in flight at 64 B at least {limit}x {what} \
                 requests per second (touch): {} ({} vs {} req/s, medians; {} run by run)",
                if ratio >= limit { "met" } else { "NOT met" },
                rate(hr),
                rate(or),
                format_ratio(Some(ratio))
            ));
        }
    }
    lines
}

/// The JSON `request_response` array (see the module's documentation).
pub fn json(result: &SuiteResult) -> Vec<Value> {
    json_rows(&result.request_response, &result.in_flight)
}

/// A JSON array of round-trip rows `round_trips` and rate rows `rates`
/// (see the module's documentation).
pub fn json_rows(round_trips: &[PingPongRow], rates: &[OneWayRow]) -> Vec<Value> {
    let mut rows: Vec<Value> = round_trips
        .iter()
        .map(|PingPongRow { payload, row }| {
            let transports: Vec<Value> = row
                .transports
                .iter()
                .map(|m| {
                    json!({
                        "transport": m.name,
                        "median_ns": m.stats.median,
                        "stats": stats_json(&m.stats),
                        "ratio_to_floor": m.ratio,
                        "vs": vs_json(m),
                        "cpu_per_request": {
                            "client": cpu_json(m.leader_cpu, m.counted),
                            "server": cpu_json(m.follower_cpu, m.counted),
                        },
                    })
                })
                .collect();
            json!({
                "kind": "round_trip",
                "payload": payload.name(),
                "size": row.size,
                "in_flight": 1,
                "probe": {"transport": row.probe, "stats": stats_json(&row.floor), "level": floor_level(row.floor.median)},
                "transports": transports,
                "skipped": skipped_json(row.skipped.iter().map(|(n, why)| (*n, why.as_str()))),
            })
        })
        .collect();
    for cell in cells(rates) {
        let c = cell[0];
        let transports: Vec<Value> = cell
            .iter()
            .filter(|r| r.skipped.is_none())
            .map(|r| {
                let m = r.median_run();
                let vs: serde_json::Map<String, Value> = cell
                    .iter()
                    .filter(|o| o.transport != r.transport)
                    // Time over time: the other's rate over this one's.
                    .filter_map(|o| {
                        Some((
                            o.transport.to_owned(),
                            json!(1.0 / paired_rate_ratio(r, o)?),
                        ))
                    })
                    .collect();
                json!({
                    "transport": r.transport,
                    "median_ns": m.map(|m| m.elapsed_ns as f64 / m.spec.messages.max(1) as f64),
                    "requests_per_s": m.map(|m| m.messages_per_s()),
                    "vs": vs,
                    "runs": r.runs.iter().map(|m| json!({
                        "requests": m.spec.messages,
                        "elapsed_ns": m.elapsed_ns,
                        "requests_per_s": m.messages_per_s(),
                        "cpu_per_request": {
                            "client": cpu_json(m.leader_cpu, m.spec.messages),
                            "server": cpu_json(m.follower_cpu, m.spec.messages),
                        },
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        rows.push(json!({
            "kind": "in_flight",
            "payload": c.payload.name(),
            "size": c.size,
            "in_flight": c.depth,
            "probe": c.probe.map(|p| json!({"stats": stats_json(&p), "level": floor_level(p.median)})),
            "transports": transports,
            "skipped": skipped_json(cell.iter().filter_map(|r| Some((r.transport, r.skipped.as_deref()?)))),
        }));
    }
    rows
}

fn skipped_json<'a>(skipped: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<Value> {
    skipped
        .map(|(n, why)| json!({"transport": n, "reason": why}))
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::harness::blocks::{Measured, Row};
    use crate::harness::rounds::example_row;
    use crate::harness::Stats;
    use crate::transport::Pattern;

    /// A transport measured at `median` ns (a floor of 100), with its
    /// ratios `vs` others.
    pub(in crate::cli) fn measured(
        name: &'static str,
        median: u64,
        vs: Vec<(&'static str, f64)>,
    ) -> Measured {
        Measured {
            name,
            stats: Stats::uniform(100, median),
            ratio: median as f64 / 100.0,
            iterations: 100,
            leader_cpu: Default::default(),
            follower_cpu: Default::default(),
            counted: 100,
            vs,
        }
    }

    /// A request/response rate row at 64 B with `depth` in flight, one
    /// run per entry of `elapsed_us`.
    pub(in crate::cli) fn rate_row_at(
        transport: &'static str,
        elapsed_us: &[u64],
        depth: u32,
    ) -> OneWayRow {
        let mut r = example_row(transport, elapsed_us);
        r.pattern = Pattern::RequestResponse;
        r.size = 64;
        r.depth = depth;
        for run in &mut r.runs {
            run.spec.pattern = Pattern::RequestResponse;
            run.spec.size = 64;
            run.spec.depth = depth;
        }
        r
    }

    fn rate_row(transport: &'static str, elapsed_us: &[u64]) -> OneWayRow {
        rate_row_at(transport, elapsed_us, 16)
    }

    fn result(vs_pubsub: f64, vs_iox: f64, iox_us: u64) -> SuiteResult {
        let row = Row {
            size: 64,
            probe: "floor",
            floor: Stats::uniform(100, 100),
            transports: vec![
                measured(
                    HAKO,
                    200,
                    vec![("hako", vs_pubsub), ("iceoryx2-reqres", vs_iox)],
                ),
                measured("hako", 190, vec![(HAKO, 1.0 / vs_pubsub)]),
                measured("iceoryx2-reqres", 900, vec![(HAKO, 1.0 / vs_iox)]),
            ],
            skipped: vec![("mq", "no".to_owned())],
            blocks: 4,
            stable: 4,
        };
        SuiteResult {
            probe: "floor",
            request_response: vec![PingPongRow {
                payload: PayloadMode::Touch,
                row,
            }],
            in_flight: vec![
                rate_row(HAKO, &[100, 100, 100]),
                rate_row("iceoryx2-reqres", &[iox_us, iox_us, iox_us]),
                rate_row("unix", &[3000, 2500, 2000]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn goals_judge_round_trips_and_rates() {
        let g = goals(&result(1.05, 0.25, 600)).join("\n");
        assert!(
            g.contains(
                "1.1x hako pub/sub ping-pong at every size and payload mode: met (worst 1.05x)"
            ),
            "{g}"
        );
        assert!(
            g.contains("0.3x iceoryx2 request/response at every size (touch): met"),
            "{g}"
        );
        assert!(g.contains("at least 5x iceoryx2's requests per second (touch): met (10.00M vs 1.67M req/s, medians; 6.00x run by run)"), "{g}");
        assert!(
            g.contains("at least 20x the unix-socket server's requests per second (touch): met"),
            "{g}"
        );
        let g = goals(&result(1.2, 0.4, 400)).join("\n");
        assert!(
            g.contains("ping-pong at every size and payload mode: NOT met (worst 1.20x)"),
            "{g}"
        );
        assert!(
            g.contains("request/response at every size (touch): NOT met (worst 0.40x)"),
            "{g}"
        );
        assert!(
            g.contains("iceoryx2's requests per second (touch): NOT met"),
            "{g}"
        );
        // Nothing measured, no goal.
        assert!(goals(&SuiteResult::default()).is_empty());
    }

    #[test]
    fn summary_and_json_carry_every_ratio() {
        let r = result(1.05, 0.25, 600);
        let s = summary(&r).join("\n");
        assert!(s.contains("round trip / hako pub/sub ping-pong, touch (block by block; below 1x hako is faster): 64 B 1.05x"), "{s}");
        assert!(
            s.contains(
                "with 16 in flight, 64 B touch: 10.00M req/s = 6.00x iceoryx2-reqres, 25.0x unix"
            ),
            "{s}"
        );
        let j = Value::Array(json(&r));
        assert_eq!(j[0]["kind"], "round_trip");
        assert_eq!(j[0]["in_flight"], 1);
        assert_eq!(j[0]["transports"][0]["median_ns"], 200);
        assert_eq!(j[0]["transports"][0]["vs"]["hako"], 1.05);
        assert_eq!(j[0]["skipped"][0]["transport"], "mq");
        assert_eq!(j[1]["kind"], "in_flight");
        assert_eq!(j[1]["in_flight"], 16);
        assert_eq!(j[1]["size"], 64);
        // 1000 requests in 100 µs: 100 ns each; a sixth of iceoryx2's time.
        assert_eq!(j[1]["transports"][0]["median_ns"], 100.0);
        let vs = j[1]["transports"][0]["vs"]["iceoryx2-reqres"]
            .as_f64()
            .unwrap();
        assert!((vs - 1.0 / 6.0).abs() < 1e-9, "{vs}");
        assert_eq!(j[1]["transports"].as_array().unwrap().len(), 3);
    }
}
