//! `--json FILE`: every figure of a run, the settings and the machine.

use serde_json::{json, Value};

use crate::harness::rounds::paired_rate_ratio;
use crate::suite::{floor_level, PingPongRow, SuiteResult};

use super::RunInfo;

fn first_line_with(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// The machine: CPU model, CPUs online, kernel.
pub fn machine() -> Value {
    json!({
        "cpu_model": first_line_with("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into()),
        "cpus_online": crate::sys::cpu::online_cpus(),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned()).unwrap_or_default(),
        "msgsize_max": crate::transports::kernel::msgsize_max(),
    })
}

/// A round-trip transport's time over every other's of its row, block by
/// block.
pub(super) fn vs_json(m: &crate::harness::blocks::Measured) -> serde_json::Map<String, Value> {
    m.vs.iter()
        .map(|(n, r)| (n.to_string(), json!(r)))
        .collect()
}

pub(super) fn stats_json(s: &crate::harness::Stats) -> Value {
    json!({
        "count": s.count, "min_ns": s.min, "median_ns": s.median, "p99_ns": s.p99,
        "p999_ns": s.p999, "max_ns": s.max, "mean_ns": s.mean, "iqm_ns": s.iqm,
    })
}

pub(super) fn cpu_json(cpu: crate::sys::cpu::CpuTime, n: u64) -> Value {
    let n = n.max(1) as f64;
    json!({
        // Measured by the process's CPU clock; user/system is the kernel's
        // tick-based split of it (see crate::sys::cpu::CpuTime).
        "cpu_ns": cpu.total_ns() as f64 / n,
        "user_ns": cpu.user_ns as f64 / n,
        "system_ns": cpu.system_ns as f64 / n,
        "sleeps": cpu.sleeps as f64 / n,
    })
}

/// The one-way rows, for the JSON output: each with its runs and its rate
/// against every other transport of its cell, run by run.
pub(super) fn one_way_json(result: &SuiteResult) -> Vec<Value> {
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
pub(super) fn round_trip_rows(rows: &[PingPongRow]) -> Vec<Value> {
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

/// Every figure, the settings and the machine.
pub fn json(result: &SuiteResult, info: &RunInfo) -> Value {
    let ping_pong = round_trip_rows(&result.ping_pong);
    let one_way = one_way_json(result);
    let memory: Vec<Value> = result
        .memory
        .iter()
        .map(|m| {
            json!({
                "size": m.size,
                "write_read_ns": m.write_read_ns,
                "write_read_across_cpus_ns": m.across_ns,
            })
        })
        .collect();
    json!({
        "tool": "hako bench",
        "version": env!("CARGO_PKG_VERSION"),
        "machine": info.machine,
        "pinning": {
            "mode": info.pinning.label(),
            "leader_cpu": info.leader_cpu,
            "follower_cpu": info.follower_cpu,
        },
        "settings": {
            "blocks": info.plan.blocks,
            "block_ms": info.plan.budget.as_millis() as u64,
            "max_round_trips_per_block": info.plan.iterations,
            "probe_round_trips": info.plan.probe,
            "one_way_block_ms": info.stream.budget.as_millis() as u64,
            "min_messages": info.stream.min_messages,
            "fanout": info.fanout,
            "bridge_blocks": info.bridge_plan.blocks,
            "bridge_block_ms": info.bridge_plan.budget.as_millis() as u64,
        },
        "clock_read_ns": result.clock_ns,
        "probe_transport": result.probe,
        "left_out": result.left_out,
        "wall_time_s": info.wall.as_secs_f64(),
        "memory": memory,
        "footprint": super::footprint::json(&result.footprint),
        "ping_pong": ping_pong,
        "one_way": one_way,
        "request_response": super::reqres::json(result),
        "async": super::asynch::json(result),
        "bridge": super::bridge::json(result),
        "summary": super::output::all_lines(result).into_iter().filter(|l| !l.starts_with("goal: ")).collect::<Vec<_>>(),
        "goals": super::output::all_lines(result).into_iter().filter(|l| l.starts_with("goal: ")).collect::<Vec<_>>(),
    })
}
