//! The text tables of the commands (`list`, `nodes`, `monitor`): columns
//! aligned with spaces, numbers to the right, a rule under the headers.

use comfy_table::{Cell, CellAlignment, ContentArrangement, TableComponent};

/// `rows` under `headers`, as lines (no trailing newline on each). Cells
/// that start with a digit are aligned to the right.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut t = comfy_table::Table::new();
    // No borders and no column lines: only the rule under the headers.
    t.load_preset(comfy_table::presets::NOTHING)
        .set_style(TableComponent::HeaderLines, '-')
        .set_style(TableComponent::MiddleHeaderIntersections, ' ')
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.to_vec());
    for row in rows {
        t.add_row(row.iter().map(|c| {
            let cell = Cell::new(c);
            if c.starts_with(|ch: char| ch.is_ascii_digit()) {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }
    // Each cell is padded by a space on either side: the first one goes.
    t.lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_owned())
        .collect()
}

/// Prints [`render`]'s lines.
pub fn print(headers: &[&str], rows: &[Vec<String>]) {
    for line in render(headers, rows) {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up() {
        let rows = vec![
            vec!["a/b".to_owned(), "7".to_owned()],
            vec!["a/longer".to_owned(), "1234".to_owned()],
        ];
        let lines = super::render(&["SERVICE", "PUBS"], &rows);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0].starts_with("SERVICE"), "{lines:?}");
        assert!(lines[1].starts_with("---"), "{lines:?}");
        assert!(
            lines[2].starts_with("a/b") && lines[2].ends_with(" 7"),
            "{lines:?}"
        );
        assert_eq!(lines[2].len(), lines[3].len(), "{lines:?}");
    }
}
