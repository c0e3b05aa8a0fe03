//! A report for the terminal and as Markdown: per pinning mode a header,
//! the tables, the summary and the goals.

use std::fmt::Write as _;

use super::goals::judge;
use super::lines::summary;
use super::model::{Meta, Report, Run};
use super::tables;

/// Everything, for the terminal.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    for run in &report.runs {
        s.push_str(&header(&report.meta, run));
        for t in tables::all(&run.result) {
            s.push_str(&t.to_text());
        }
        s.push_str("\nSummary (ratios from the same run):\n");
        for line in lines(run) {
            let _ = writeln!(s, "  {line}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "wall time {:.1} s", report.meta.wall.as_secs_f64());
    s
}

/// Everything, as Markdown.
pub fn markdown(report: &Report) -> String {
    let mut s = String::from("## hako bench\n");
    for run in &report.runs {
        s.push('\n');
        for line in header(&report.meta, run).lines() {
            let _ = writeln!(s, "{line}  ");
        }
        for t in tables::all(&run.result) {
            s.push_str(&t.to_markdown());
        }
        s.push_str("\n### Summary\n\n");
        for line in lines(run) {
            let _ = writeln!(s, "- {line}");
        }
    }
    s
}

/// The summary lines, then the goals.
fn lines(run: &Run) -> Vec<String> {
    let mut lines = summary(&run.result);
    lines.extend(judge(&run.result).iter().map(|v| v.line()));
    lines
}

/// The machine, the mode and the settings.
fn header(meta: &Meta, run: &Run) -> String {
    let machine = &meta.machine;
    let result = &run.result;
    let pin = match (run.leader_cpu, run.follower_cpu) {
        (Some(l), Some(f)) => format!("leader on CPU {l}, followers on CPU {f}"),
        _ => "not pinned".to_owned(),
    };
    let mut s = format!(
        "hako bench: {} ({} CPUs online), Linux {}; {} ({pin})\n",
        machine["cpu_model"].as_str().unwrap_or("?"),
        machine["cpus_online"],
        machine["kernel"].as_str().unwrap_or("?"),
        run.pinning,
    );
    let _ = writeln!(
        s,
        "{} blocks per row of about {} ms each per transport; clock read {:.1} ns (one per \
         round trip, while the message travels); hako: {}",
        meta.plan.blocks,
        meta.plan.budget.as_millis(),
        result.clock_ns,
        meta.hako
    );
    if let Some(ns) = run.single_thread_ns {
        let _ = writeln!(
            s,
            "hako in one thread (loan, send, receive, drop a 64 B sample; no other CPU): {ns:.1} \
             ns per message"
        );
    }
    if !result.bridge.is_empty() {
        let _ = writeln!(
            s,
            "bridge rows: {} blocks of about {} ms each per transport",
            meta.bridge_plan.blocks,
            meta.bridge_plan.budget.as_millis()
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
