//! A table of the reports, as text or Markdown, and how its cells are
//! written.

use std::fmt::Write as _;

use hako_bench::suite::floor_level;

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
    pub(super) fn new(title: impl Into<String>, headers: &[&str]) -> Self {
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

pub(super) fn us(ns: f64) -> String {
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
pub(super) fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

pub(super) fn probe_cell(median_ns: u64, extra: &str) -> String {
    format!("{} {}{extra}", us(median_ns as f64), floor_level(median_ns))
}
