//! `--json FILE`: every figure of a run, the settings, the machine, the
//! summary and the goals, in one document (its fields are described in
//! docs/benchmark.md).
//!
//! In the arrays `request_response` and `async` every row has a `kind` —
//! `round_trip` (one request at a time, measured in blocks between floor
//! probes) or `in_flight` (a rate, measured in rounds) — its `payload`,
//! `size` and `in_flight` depth, and per transport its `median_ns` (per
//! round trip, or per request of the median run) and `vs`: its time over
//! every other transport's, block by block or run by run (below 1 it is
//! the faster).

use serde_json::{json, Value};

use crate::harness::blocks::Measured;
use crate::harness::floor_level;
use crate::harness::rounds::{cells, paired_rate_ratio, OneWayRow};
use crate::harness::Stats;
use crate::suite::{PingPongRow, SuiteResult};
use crate::sys::cpu::CpuTime;
use crate::transport::PayloadMode;

use super::footprint;
use super::goals::{judge, Figure, Limit, Rows, Sizes, GOALS};
use super::lines::{bridge_ratios, summary, BRIDGED_KINDS};
use super::model::{Meta, Report, Run};

/// A float as JSON: a number, or null when it is not finite.
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The report as one JSON document: with one pinning mode, that mode's
/// figures at the top level; with several (`--pinning both`), the first
/// mode's at the top level and every mode's in `runs`.
pub fn json(report: &Report) -> Value {
    let mut docs: Vec<Value> = report.runs.iter().map(|r| run(&report.meta, r)).collect();
    let mut doc = docs.first().cloned().unwrap_or(Value::Null);
    if docs.len() > 1 {
        doc["runs"] = Value::Array(std::mem::take(&mut docs));
    }
    doc
}

/// One pinning mode's document.
fn run(meta: &Meta, run: &Run) -> Value {
    let result = &run.result;
    let memory: Vec<Value> = result
        .memory
        .iter()
        .map(|m| {
            json!({
                "size": m.size,
                "write_read_ns": num(m.write_read_ns),
                "write_read_across_cpus_ns": num(m.across_ns),
            })
        })
        .collect();
    let verdicts = judge(result);
    let targets: Vec<Value> = verdicts
        .iter()
        .map(|v| {
            let (key, limit) = v.goal.limit.key();
            let mut t = json!({"goal": v.goal.what, "value": num(v.value), "met": v.met});
            t[key] = json!(limit);
            t
        })
        .collect();
    json!({
        "tool": "hako bench",
        "version": env!("CARGO_PKG_VERSION"),
        "machine": meta.machine,
        "pinning": {
            "mode": run.pinning,
            "leader_cpu": run.leader_cpu,
            "follower_cpu": run.follower_cpu,
        },
        "settings": {
            "blocks": meta.plan.blocks,
            "block_ms": meta.plan.budget.as_millis() as u64,
            "max_round_trips_per_block": meta.plan.iterations,
            "min_round_trips_per_block": meta.plan.min_iterations,
            "probe_round_trips": meta.plan.probe,
            "one_way_block_ms": meta.stream.budget.as_millis() as u64,
            "min_messages": meta.stream.min_messages,
            "fanout": meta.fanout,
            "bridge_blocks": meta.bridge_plan.blocks,
            "bridge_block_ms": meta.bridge_plan.budget.as_millis() as u64,
            "hako": meta.hako,
        },
        "clock_read_ns": num(result.clock_ns),
        "single_thread_ns": run.single_thread_ns.map(num),
        "probe_transport": result.probe,
        "left_out": result.left_out,
        "wall_time_s": meta.wall.as_secs_f64(),
        "memory": memory,
        "footprint": footprint::json(&result.footprint),
        "ping_pong": round_trip_rows(&result.ping_pong),
        "one_way": one_way_json(result),
        "request_response": request_rows(&result.request_response, &result.in_flight),
        "async": request_rows(&result.async_round_trip, &result.async_in_flight),
        "bridge": bridge(result),
        "summary": summary(result),
        "goals": verdicts.iter().map(|v| v.line()).collect::<Vec<_>>(),
        "targets": targets,
    })
}

/// A round-trip transport's time over every other's of its row, block by
/// block.
fn vs_json(m: &Measured) -> serde_json::Map<String, Value> {
    m.vs.iter().map(|(n, r)| (n.to_string(), num(*r))).collect()
}

fn stats_json(s: &Stats) -> Value {
    json!({
        "count": s.count, "min_ns": s.min, "median_ns": s.median, "p99_ns": s.p99,
        "p999_ns": s.p999, "max_ns": s.max, "mean_ns": num(s.mean), "iqm_ns": num(s.iqm),
    })
}

fn cpu_json(cpu: CpuTime, n: u64) -> Value {
    let n = n.max(1) as f64;
    json!({
        // Measured by the process's CPU clock; user/system is the kernel's
        // tick-based split of it (see CpuTime).
        "cpu_ns": num(cpu.total_ns() as f64 / n),
        "user_ns": num(cpu.user_ns as f64 / n),
        "system_ns": num(cpu.system_ns as f64 / n),
        "sleeps": num(cpu.sleeps as f64 / n),
    })
}

/// The one-way rows, for the JSON output: each with its runs and its rate
/// against every other transport of its cell, run by run.
pub fn one_way_json(result: &SuiteResult) -> Vec<Value> {
    result
        .one_way
        .iter()
        .map(|r| {
            let runs: Vec<Value> = r
                .runs
                .iter()
                .map(|m| {
                    json!({
                        "messages": m.spec.messages,
                        "elapsed_ns": m.elapsed_ns,
                        "messages_per_s": m.messages_per_s(),
                        "bytes_per_s": m.bytes_per_s(),
                        "cpu_per_message": {
                            "sender": cpu_json(m.leader_cpu, m.spec.messages),
                            "receivers": cpu_json(m.follower_cpu, m.spec.messages),
                        },
                    })
                })
                .collect();
            let median = r.median_run();
            // This row's rate over every other transport's of its cell,
            // run by run (see paired_rate_ratio).
            let vs: serde_json::Map<String, Value> = result
                .one_way
                .iter()
                .filter(|o| {
                    o.pattern == r.pattern
                        && o.payload == r.payload
                        && o.size == r.size
                        && o.transport != r.transport
                })
                .filter_map(|o| Some((o.transport.to_owned(), json!(paired_rate_ratio(r, o)?))))
                .collect();
            json!({
                "pattern": r.pattern.name(),
                "payload": r.payload.name(),
                "size": r.size,
                "followers": r.followers,
                "transport": r.transport,
                "skipped": r.skipped,
                "probe": r.probe.map(|p| json!({"stats": stats_json(&p), "level": floor_level(p.median)})),
                "messages_per_s": median.map(|m| m.messages_per_s()),
                "bytes_per_s": median.map(|m| m.bytes_per_s()),
                "vs": vs,
                "runs": runs,
            })
        })
        .collect()
}

/// Round-trip rows as the JSON's `ping_pong` array holds them.
pub fn round_trip_rows(rows: &[PingPongRow]) -> Vec<Value> {
    rows.iter()
        .map(|PingPongRow { payload, row }| {
            let transports: Vec<Value> = row
                .transports
                .iter()
                .map(|m| {
                    json!({
                        "transport": m.name,
                        "stats": stats_json(&m.stats),
                        "ratio_to_floor": m.ratio,
                        "vs": vs_json(m),
                        "round_trips_per_block": m.iterations,
                        "cpu_per_round_trip": {
                            "leader": cpu_json(m.leader_cpu, m.counted),
                            "follower": cpu_json(m.follower_cpu, m.counted),
                        },
                    })
                })
                .collect();
            let skipped: Vec<Value> = row
                .skipped
                .iter()
                .map(|(n, why)| json!({"transport": n, "reason": why}))
                .collect();
            json!({
                "payload": payload.name(),
                "size": row.size,
                "probe": {"transport": row.probe, "stats": stats_json(&row.floor), "level": floor_level(row.floor.median)},
                "blocks": row.blocks,
                "stable_blocks": row.stable,
                "transports": transports,
                "skipped": skipped,
            })
        })
        .collect()
}

/// A JSON array of round-trip rows `round_trips` and rate rows `rates`
/// (see the module's documentation).
fn request_rows(round_trips: &[PingPongRow], rates: &[OneWayRow]) -> Vec<Value> {
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

/// The JSON object `bridge`: the round-trip rows (shaped as `ping_pong`'s),
/// each bridged transport over zenoh per row, the goals, and why the rows
/// are missing, if they are.
fn bridge(result: &SuiteResult) -> Value {
    let ratios: Vec<Value> = BRIDGED_KINDS
        .iter()
        .flat_map(|&(name, _)| {
            PayloadMode::ALL.into_iter().flat_map(move |p| {
                bridge_ratios(result, p, name)
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
        .filter_map(|g| match (g.figure, g.limit) {
            (
                Figure::RoundTrip {
                    rows: Rows::Bridge,
                    a,
                    sizes: Sizes::At(size),
                    ..
                },
                Limit::AtMost(l),
            ) => Some(json!({"transport": a, "size": size, "at_most": l})),
            _ => None,
        })
        .collect();
    json!({
        "rows": round_trip_rows(&result.bridge),
        "ratios": ratios,
        "goals": goals,
        "not_measured": result.bridge_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::blocks::Plan;
    use crate::harness::rounds::{example_row, StreamPlan};
    use crate::report::fixtures::*;
    use std::time::Duration;

    fn report(results: Vec<SuiteResult>) -> Report {
        let plan = Plan {
            blocks: 2,
            iterations: 100,
            min_iterations: 10,
            warmup: 10,
            budget: Duration::from_millis(3),
            probe: 100,
            probe_warmup: 20,
        };
        Report {
            meta: Meta {
                machine: json!({"cpu_model": "test CPU", "cpus_online": 2}),
                plan,
                bridge_plan: plan,
                stream: StreamPlan {
                    blocks: 2,
                    budget: Duration::from_millis(12),
                    min_messages: 100,
                    max_messages: 1000,
                    cap: Duration::from_millis(40),
                },
                fanout: 2,
                hako: "buffer 2, borrowed 1, loans 1".into(),
                wall: Duration::from_secs(1),
            },
            runs: results
                .into_iter()
                .zip(["cross-cpu", "same-cpu"])
                .map(|(result, pinning)| Run {
                    pinning,
                    leader_cpu: Some(0),
                    follower_cpu: Some(1),
                    single_thread_ns: Some(f64::NAN),
                    result,
                })
                .collect(),
        }
    }

    #[test]
    fn rates_are_compared_run_by_run() {
        let mut r = pubsub_result(190, 0.25, 66_000);
        r.one_way = vec![
            example_row("hako", &[50, 100, 40]),
            example_row("iceoryx2", &[200, 400, 200]),
        ];
        let v = json(&report(vec![r]));
        assert_eq!(v["one_way"][0]["vs"]["iceoryx2"], 4.0, "{v}");
        assert_eq!(v["one_way"][1]["vs"]["hako"], 0.25, "{v}");
        // A figure that is not a number is null.
        assert!(v["single_thread_ns"].is_null(), "{v}");
        assert!(v.get("runs").is_none());
        // Every goal judged is a line and a target.
        let goals = v["goals"].as_array().unwrap();
        let targets = v["targets"].as_array().unwrap();
        assert_eq!(goals.len(), targets.len());
        let t = targets
            .iter()
            .find(|t| {
                t["goal"]
                    .as_str()
                    .unwrap()
                    .contains("at least 5x iceoryx2's")
            })
            .unwrap();
        assert_eq!(t["at_least"], 5.0, "{t}");
        assert_eq!(t["value"], 4.0, "{t}");
        assert_eq!(t["met"], false, "{t}");
    }

    #[test]
    fn request_rows_carry_every_ratio() {
        let v = json(&report(vec![reqres_result(1.05, 0.25, 600)]));
        let j = &v["request_response"];
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
        let v = json(&report(vec![async_result(0.008, 1.03, 2000)]));
        let j = &v["async"];
        assert_eq!(j[0]["transports"][0]["transport"], "hako-async-busy");
        assert_eq!(j[1]["kind"], "in_flight");
        assert_eq!(j[1]["in_flight"], 256);
    }

    #[test]
    fn the_bridge_object_has_rows_ratios_and_targets() {
        let result = bridge_result();
        let v = &json(&report(vec![result]))["bridge"];
        assert_eq!(v["rows"].as_array().unwrap().len(), 3);
        assert_eq!(v["ratios"][1]["size"], 1 << 20);
        assert_eq!(v["ratios"][1]["vs_zenoh"], 1.1);
        assert_eq!(v["ratios"][1]["transport"], "hako-bridge");
        assert_eq!(v["ratios"][3]["transport"], "hako-bridge-low-latency");
        assert_eq!(v["goals"].as_array().unwrap().len(), 3);
        assert_eq!(v["goals"][1]["at_most"], 1.35);
        assert!(v["not_measured"].is_null());
    }

    #[test]
    fn two_modes_are_two_documents_in_runs() {
        let v = json(&report(vec![
            pubsub_result(190, 0.25, 66_000),
            pubsub_result(300, 0.25, 66_000),
        ]));
        assert_eq!(v["pinning"]["mode"], "cross-cpu");
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1]["pinning"]["mode"], "same-cpu");
        assert_eq!(
            runs[1]["ping_pong"][0]["transports"][0]["stats"]["median_ns"],
            300
        );
    }
}
