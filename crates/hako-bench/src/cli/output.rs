//! The reports of `hako bench`: terminal tables, Markdown, JSON, and the
//! summary of ratios.
//!
//! Ping-pong columns (times in µs per round trip, over the blocks whose
//! floor probes agreed): `median`, `p99`, `p99.9`, `mean`; `/floor` — the
//! median over blocks of (this transport's block interquartile mean / the
//! floor probes' next to it); `cpu lead` and `cpu foll` — CPU time (user + system)
//! per round trip of the leader and of the follower; `probe` — the floor
//! probes of the row, their level (`low` or `high`: this VM's floor flips
//! between two) and how many blocks had agreeing probes.
//!
//! One-way columns: `msg/s` — messages per second, each delivered to every
//! receiver; `GB/s` — payload bytes per second delivered, counting each
//! receiver's copy (10⁹ bytes); `µs/msg`; `cpu send`, `cpu recv` — CPU µs per
//! message of the sender and of all receivers together; `probe` — the floor
//! probe taken before the row's cell (all transports at that size and mode)
//! and its level.
//!
//! Request/response tables: the round trip of one request at a time has the
//! ping-pong columns; the rates with requests in flight have the one-way
//! columns, per request ([`super::reqres`]).

use std::fmt::Write as _;

use crate::report::{format_ratio, format_size};
use crate::suite::{OneWayRow, PingPongRow, SuiteResult};
use crate::transport::{Pattern, PayloadMode};

use super::summary::{goals, summary};
use super::table::{probe_cell, rate, us, Table};
use super::{reqres, RunInfo};

/// The ping-pong table.
pub fn ping_pong_table(result: &SuiteResult) -> Table {
    round_trip_table(
        "Ping-pong: round trip between two processes",
        &result.ping_pong,
        result.probe,
    )
}

/// A table of round trips, `rows`, under `what`; `probe` names the floor.
pub fn round_trip_table(what: &str, rows: &[PingPongRow], probe: &str) -> Table {
    let mut t = Table::new(
        format!(
            "{what}, µs (probe: the {} floor, its level, stable blocks)",
            if probe == "futex" {
                "futex"
            } else {
                "cache-line"
            }
        ),
        &[
            "size",
            "payload",
            "transport",
            "median",
            "p99",
            "p99.9",
            "mean",
            "/floor",
            "cpu lead",
            "cpu foll",
            "probe",
        ],
    );
    for PingPongRow { payload, row } in rows {
        let mut first = true;
        let probe = probe_cell(row.floor.median, &format!(" {}/{}", row.stable, row.blocks));
        for m in &row.transports {
            let (lead, foll) = m.cpu_per_round_trip_ns();
            let head = |s: String| if first { s } else { String::new() };
            t.rows.push(vec![
                head(format_size(row.size)),
                head(payload.name().to_owned()),
                m.name.to_owned(),
                us(m.stats.median as f64),
                us(m.stats.p99 as f64),
                us(m.stats.p999 as f64),
                us(m.stats.mean),
                format_ratio(Some(m.ratio)),
                us(lead),
                us(foll),
                head(probe.clone()),
            ]);
            first = false;
        }
        for (name, why) in &row.skipped {
            t.rows.push(vec![
                String::new(),
                String::new(),
                name.to_string(),
                format!("skipped: {why}"),
            ]);
        }
    }
    t
}

/// The throughput and fan-out table.
pub fn one_way_table(result: &SuiteResult, pattern: Pattern) -> Table {
    let followers = result
        .one_way
        .iter()
        .find(|r| r.pattern == pattern)
        .map_or(1, |r| r.followers);
    let title = match pattern {
        Pattern::FanOut => format!(
            "Fan-out: one sender, {followers} receivers (GB/s counts every receiver's copy)"
        ),
        _ => "Throughput: one way, back to back, one receiver".to_owned(),
    };
    let mut t = Table::new(
        title,
        &[
            "size",
            "payload",
            "transport",
            "msg/s",
            "GB/s",
            "µs/msg",
            "cpu send",
            "cpu recv",
            "messages",
            "probe",
        ],
    );
    let mut last: Option<(PayloadMode, usize)> = None;
    for r in result.one_way.iter().filter(|r| r.pattern == pattern) {
        let first = last != Some((r.payload, r.size));
        last = Some((r.payload, r.size));
        let head = |s: String| if first { s } else { String::new() };
        let mut row = vec![
            head(format_size(r.size)),
            head(r.payload.name().to_owned()),
            r.transport.to_owned(),
        ];
        row.extend(rate_cells(r, true));
        t.rows.push(row);
    }
    t
}

/// The cells of a rate row after its name: rate, (with `bytes`) GB/s,
/// µs and CPU µs per message of each side, messages, probe; or why it has
/// none.
pub(super) fn rate_cells(r: &OneWayRow, bytes: bool) -> Vec<String> {
    let m = match (&r.skipped, r.median_run()) {
        (Some(why), _) => return vec![format!("skipped: {why}")],
        (None, None) => return vec!["no run".to_owned()],
        (None, Some(m)) => m,
    };
    let n = m.spec.messages.max(1) as f64;
    let mut cells = vec![rate(m.messages_per_s())];
    if bytes {
        cells.push(format!("{:.2}", m.bytes_per_s() / 1e9));
    }
    cells.extend([
        us(m.elapsed_ns as f64 / n),
        us(m.leader_cpu.total_ns() as f64 / n),
        us(m.follower_cpu.total_ns() as f64 / n),
        m.spec.messages.to_string(),
        r.probe
            .map_or_else(String::new, |p| probe_cell(p.median, "")),
    ]);
    cells
}

/// The memory figure table.
pub fn memory_table(result: &SuiteResult) -> Table {
    let mut t = Table::new(
        "Memory: write a payload once and read it once into a checksum, µs: on one CPU, and written on the leader's CPU, read on the followers'",
        &["size", "one CPU", "GB/s", "across CPUs", "GB/s"],
    );
    let gbs = |size: usize, ns: f64| format!("{:.2}", size as f64 / ns.max(1.0));
    for m in &result.memory {
        t.rows.push(vec![
            format_size(m.size),
            us(m.write_read_ns),
            gbs(m.size, m.write_read_ns),
            us(m.across_ns),
            gbs(m.size, m.across_ns),
        ]);
    }
    t
}

fn header(result: &SuiteResult, info: &RunInfo) -> String {
    let machine = &info.machine;
    let pin = match (info.leader_cpu, info.follower_cpu) {
        (Some(l), Some(f)) => format!("leader on CPU {l}, followers on CPU {f}"),
        _ => "not pinned".to_owned(),
    };
    let mut s = format!(
        "hako bench: {} ({} CPUs online), Linux {}; {} ({pin})\n",
        machine["cpu_model"].as_str().unwrap_or("?"),
        machine["cpus_online"],
        machine["kernel"].as_str().unwrap_or("?"),
        info.pinning.label(),
    );
    let _ = writeln!(
        s,
        "{} blocks per row of about {} ms each per transport; clock read {:.1} ns (one per round trip, while the message travels)",
        info.plan.blocks,
        info.plan.budget.as_millis(),
        result.clock_ns
    );
    if !result.bridge.is_empty() {
        let _ = writeln!(
            s,
            "bridge rows: {} blocks of about {} ms each per transport",
            info.bridge_plan.blocks,
            info.bridge_plan.budget.as_millis()
        );
    }
    if !result.left_out.is_empty() {
        let _ = writeln!(
            s,
            "left out (busy-polling, and both processes share one CPU): {}",
            result.left_out.join(", ")
        );
    }
    s
}

/// Everything, for the terminal.
pub fn text(result: &SuiteResult, info: &RunInfo) -> String {
    let mut s = header(result, info);
    for t in tables(result) {
        s.push_str(&t.to_text());
    }
    s.push_str("\nSummary (ratios from the same run):\n");
    for line in all_lines(result) {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(s, "wall time {:.1} s", info.wall.as_secs_f64());
    s
}

/// The summary lines, then the goals.
pub fn all_lines(result: &SuiteResult) -> Vec<String> {
    let mut lines = summary(result);
    lines.extend(reqres::summary(result));
    lines.extend(super::asynch::summary(result));
    lines.extend(super::bridge::summary(result));
    lines.extend(goals(result));
    lines.extend(reqres::goals(result));
    lines.extend(super::asynch::goals(result));
    lines.extend(super::bridge::goals(result));
    lines
}

fn tables(result: &SuiteResult) -> Vec<Table> {
    let mut t = Vec::new();
    if !result.ping_pong.is_empty() {
        t.push(ping_pong_table(result));
    }
    for p in [Pattern::Throughput, Pattern::FanOut] {
        if result.one_way.iter().any(|r| r.pattern == p) {
            t.push(one_way_table(result, p));
        }
    }
    t.extend(reqres::tables(result));
    t.extend(super::asynch::tables(result));
    t.extend(super::bridge::tables(result));
    if !result.memory.is_empty() {
        t.push(memory_table(result));
    }
    if !result.footprint.rows.is_empty() {
        t.push(super::footprint::table(&result.footprint));
    }
    t
}

/// Everything, as Markdown.
pub fn markdown(result: &SuiteResult, info: &RunInfo) -> String {
    let mut s = String::from("## hako bench\n\n");
    for line in header(result, info).lines() {
        let _ = writeln!(s, "{line}  ");
    }
    for t in tables(result) {
        s.push_str(&t.to_markdown());
    }
    s.push_str("\n### Summary\n\n");
    for line in all_lines(result) {
        let _ = writeln!(s, "- {line}");
    }
    s
}
