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

use std::fmt::Write as _;

use serde_json::{json, Value};

use hako_bench::blocks::Measured;
use hako_bench::report::{format_ratio, format_size};
use hako_bench::select::PEER_NAMES;
use hako_bench::suite::{floor_level, paired_rate_ratio, OneWayRow, PingPongRow, SuiteResult};
use hako_bench::transport::{Pattern, PayloadMode};

use super::RunInfo;

/// A table: a title, headers, rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Shown above the table.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells (as many as headers; a shorter row is padded).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Columns aligned with spaces: text to the left, numbers to the right.
    pub fn to_text(&self) -> String {
        let n = self.headers.len();
        // A row shorter than the headers ends in a note that runs on (it
        // does not widen its column).
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            let cells = if row.len() < n {
                row.len().saturating_sub(1)
            } else {
                n
            };
            for (i, c) in row.iter().enumerate().take(cells) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let numeric = |c: &str| {
            c.chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_digit() || ch == '-')
        };
        let line = |cells: &[String]| {
            let mut s = String::new();
            if cells.len() < n {
                for (i, c) in cells.iter().enumerate() {
                    if i + 1 == cells.len() {
                        s.push_str(c);
                    } else {
                        s.push_str(&format!("{c:<w$}  ", w = width[i]));
                    }
                }
                return s.trim_end().to_owned() + "\n";
            }
            for (i, &w) in width.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                let pad = w.saturating_sub(c.chars().count());
                let last = i + 1 == n;
                if numeric(c) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    if !last {
                        s.push_str(&" ".repeat(pad));
                    }
                }
                if !last {
                    s.push_str("  ");
                }
            }
            s.trim_end().to_owned() + "\n"
        };
        let mut s = format!("\n{}\n", self.title);
        s.push_str(&line(&self.headers));
        let rule: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
        s.push_str(&line(&rule));
        for row in &self.rows {
            s.push_str(&line(row));
        }
        s
    }

    /// A Markdown table under a level-3 heading.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("\n### {}\n\n", self.title);
        let _ = writeln!(s, "| {} |", self.headers.join(" | "));
        let _ = writeln!(s, "|{}", " --- |".repeat(self.headers.len()));
        for row in &self.rows {
            let mut cells = row.clone();
            cells.resize(self.headers.len(), String::new());
            let _ = writeln!(
                s,
                "| {} |",
                cells.join(" | ").replace('|', "\\|").replace("\\| ", "| ")
            );
        }
        s
    }
}

fn us(ns: f64) -> String {
    let us = ns / 1000.0;
    if us < 10.0 {
        format!("{us:.3}")
    } else if us < 1000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// `12.3M`, `456k`, `789`.
fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn probe_cell(median_ns: u64, extra: &str) -> String {
    format!("{} {}{extra}", us(median_ns as f64), floor_level(median_ns))
}

/// The ping-pong table.
pub fn ping_pong_table(result: &SuiteResult) -> Table {
    let mut t = Table::new(
        format!(
            "Ping-pong: round trip between two processes, µs (probe: the {} floor, its level, stable blocks)",
            if result.probe == "futex" { "futex" } else { "cache-line" }
        ),
        &[
            "size", "payload", "transport", "median", "p99", "p99.9", "mean", "/floor", "cpu lead",
            "cpu foll", "probe",
        ],
    );
    for PingPongRow { payload, row } in &result.ping_pong {
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
        match (&r.skipped, r.median_run()) {
            (Some(why), _) => row.push(format!("skipped: {why}")),
            (None, Some(m)) => {
                let n = m.spec.messages.max(1) as f64;
                row.extend([
                    rate(m.messages_per_s()),
                    format!("{:.2}", m.bytes_per_s() / 1e9),
                    us(m.elapsed_ns as f64 / n),
                    us(m.leader_cpu.total_ns() as f64 / n),
                    us(m.follower_cpu.total_ns() as f64 / n),
                    m.spec.messages.to_string(),
                    r.probe
                        .map_or_else(String::new, |p| probe_cell(p.median, "")),
                ]);
            }
            (None, None) => row.push("no run".to_owned()),
        }
        t.rows.push(row);
    }
    t
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
fn worst_at_most(lines: &mut Vec<String>, what: &str, ratios: &[f64], limit: f64) {
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
    lines
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
    for line in summary(result).into_iter().chain(goals(result)) {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(s, "wall time {:.1} s", info.wall.as_secs_f64());
    s
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
    if !result.memory.is_empty() {
        t.push(memory_table(result));
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
    for line in summary(result).into_iter().chain(goals(result)) {
        let _ = writeln!(s, "- {line}");
    }
    s
}

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
        "cpus_online": hako_bench::cpu::online_cpus(),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned()).unwrap_or_default(),
        "msgsize_max": hako_bench::kernel::msgsize_max(),
    })
}

fn stats_json(s: &hako_bench::harness::Stats) -> Value {
    json!({
        "count": s.count, "min_ns": s.min, "median_ns": s.median, "p99_ns": s.p99,
        "p999_ns": s.p999, "max_ns": s.max, "mean_ns": s.mean, "iqm_ns": s.iqm,
    })
}

fn cpu_json(cpu: hako_bench::cpu::CpuTime, n: u64) -> Value {
    let n = n.max(1) as f64;
    json!({
        "user_ns": cpu.user_ns as f64 / n,
        "system_ns": cpu.system_ns as f64 / n,
        "sleeps": cpu.sleeps as f64 / n,
    })
}

/// The one-way rows, for the JSON output: each with its runs and its rate
/// against every other transport of its cell, run by run.
fn one_way_json(result: &SuiteResult) -> Vec<Value> {
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

/// Every figure, the settings and the machine.
pub fn json(result: &SuiteResult, info: &RunInfo) -> Value {
    let ping_pong: Vec<Value> = result
        .ping_pong
        .iter()
        .map(|PingPongRow { payload, row }| {
            let transports: Vec<Value> = row
                .transports
                .iter()
                .map(|m| {
                    let vs: serde_json::Map<String, Value> =
                        m.vs.iter().map(|(n, r)| (n.to_string(), json!(r))).collect();
                    json!({
                        "transport": m.name,
                        "stats": stats_json(&m.stats),
                        "ratio_to_floor": m.ratio,
                        "vs": vs,
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
        .collect();
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
        },
        "clock_read_ns": result.clock_ns,
        "probe_transport": result.probe,
        "left_out": result.left_out,
        "wall_time_s": info.wall.as_secs_f64(),
        "memory": memory,
        "ping_pong": ping_pong,
        "one_way": one_way,
        "summary": summary(result),
        "goals": goals(result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hako_bench::blocks::Row;
    use hako_bench::harness::Stats;
    use hako_bench::suite::example_row;
    use hako_bench::suite::MemoryFigure;

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
    }
}
