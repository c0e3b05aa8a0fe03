//! A table of the reports, as text or Markdown.

use std::fmt::Write as _;

use crate::harness::floor_level;
use crate::units::us;

/// A table: a title, headers, rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Shown above the table.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells (as many as headers; a shorter row is a note shown
    /// after the table).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table.
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Columns aligned with spaces, text to the left and numbers to the
    /// right, under a rule; rows shorter than the headers (notes such as
    /// `skipped: ...`) follow the table as lines of their own.
    pub fn to_text(&self) -> String {
        // No borders, no column lines, a rule under the headers.
        let mut t = self.render("     -             ");
        t.set_style(comfy_table::TableComponent::MiddleHeaderIntersections, ' ');
        // Each cell is padded by one space on either side: every line
        // starts with the same space, which goes.
        let mut s = format!("\n{}\n", self.title);
        for line in t.lines() {
            let line = line
                .strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned();
            s.push_str(&line);
            s.push('\n');
        }
        self.notes(&mut s, "");
        s
    }

    /// A Markdown table under a level-3 heading; notes follow it as a list.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("\n### {}\n\n", self.title);
        let t = self.render(comfy_table::presets::ASCII_MARKDOWN);
        for line in t.lines() {
            s.push_str(line.trim_end());
            s.push('\n');
        }
        self.notes(&mut s, "- ");
        s
    }

    /// The table of the full rows, in `preset`'s style.
    fn render(&self, preset: &str) -> comfy_table::Table {
        use comfy_table::{Cell, CellAlignment, ContentArrangement};
        let numeric = |c: &str| {
            c.chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_digit() || ch == '-')
        };
        let mut t = comfy_table::Table::new();
        t.load_preset(preset)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(&self.headers);
        for row in self.rows.iter().filter(|r| r.len() >= self.headers.len()) {
            t.add_row(row.iter().map(|c| {
                let cell = Cell::new(c);
                if numeric(c) {
                    cell.set_alignment(CellAlignment::Right)
                } else {
                    cell
                }
            }));
        }
        t
    }

    /// The rows shorter than the headers, one line each after `bullet`.
    fn notes(&self, s: &mut String, bullet: &str) {
        let notes: Vec<_> = self
            .rows
            .iter()
            .filter(|r| r.len() < self.headers.len())
            .collect();
        if !notes.is_empty() {
            s.push('\n');
        }
        for row in notes {
            let _ = writeln!(s, "{bullet}{}", row.join(" "));
        }
    }
}

/// A floor probe's cell: its median in µs and its level, then `extra`.
pub fn probe_cell(median_ns: u64, extra: &str) -> String {
    format!("{} {}{extra}", us(median_ns as f64), floor_level(median_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::contains_all;

    fn sample() -> Table {
        let mut t = Table::new("Round trip", &["size", "transport", "median µs"]);
        t.rows
            .push(vec!["64 B".into(), "hako".into(), "0.250".into()]);
        t.rows
            .push(vec!["1 MiB".into(), "unix".into(), "125.0".into()]);
        t.rows.push(vec!["64 B".into(), "skipped: no peer".into()]);
        t
    }

    #[test]
    fn text_aligns_numbers_right_and_puts_notes_after() {
        let text = sample().to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Round trip", "{text}");
        assert!(lines[2].starts_with("size"), "{text}");
        assert!(lines[3].starts_with("----"), "{text}");
        // The numbers end in one column.
        let end = |l: &str| l.trim_end().chars().count();
        assert_eq!(end(lines[4]), end(lines[5]), "{text}");
        assert!(
            lines[4].ends_with("0.250") && lines[5].ends_with("125.0"),
            "{text}"
        );
        assert_eq!(lines.last().unwrap(), &"64 B skipped: no peer", "{text}");
    }

    #[test]
    fn markdown_is_a_pipe_table() {
        let md = sample().to_markdown();
        contains_all(
            &md,
            &[
                "### Round trip",
                "| size",
                "|--",
                "| hako ",
                "- 64 B skipped: no peer",
            ],
        );
    }
}
