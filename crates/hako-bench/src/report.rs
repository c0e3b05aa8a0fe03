//! The ping-pong table, as text and as JSON.

use std::fmt::Write as _;

use crate::blocks::Row;
use crate::harness::Stats;

/// `64 B`, `4 KiB`, `1 MiB`, or the byte count when not a whole unit.
pub fn format_size(size: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if size >= MIB && size & (MIB - 1) == 0 {
        format!("{} MiB", size / MIB)
    } else if size >= KIB && size & (KIB - 1) == 0 {
        format!("{} KiB", size / KIB)
    } else {
        format!("{size} B")
    }
}

/// Parses `64`, `64B`, `4K`, `4KiB`, `1M`, `1MiB` (case-insensitive).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = if let Some(d) = t.strip_suffix("kib").or(t.strip_suffix('k')) {
        (d, 1024)
    } else if let Some(d) = t.strip_suffix("mib").or(t.strip_suffix('m')) {
        (d, 1024 * 1024)
    } else {
        (t.strip_suffix('b').unwrap_or(&t), 1)
    };
    let n: usize = digits
        .trim()
        .parse()
        .map_err(|_| format!("bad size {text:?}: use e.g. 64, 4K, 1MiB"))?;
    let n = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size {text:?} is too large"))?;
    if n == 0 {
        return Err("sizes must be at least 1 byte".into());
    }
    Ok(n)
}

fn us(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

/// The table, one line per row, times in microseconds: the floor, then
/// median, p99 and ratio to the floor of each transport, then how many
/// blocks counted (see [`crate::blocks`]).
pub fn table(rows: &[Row]) -> String {
    let names: Vec<&str> = rows
        .first()
        .map(|r| r.transports.iter().map(|m| m.name).collect())
        .unwrap_or_default();
    let short = |n: &str| n.chars().take(5).collect::<String>();
    let mut s = String::new();
    let _ = write!(s, "{:>8} | {:>9} {:>9} |", "size", "floor med", "floor p99");
    for n in &names {
        let n = short(n);
        let _ = write!(
            s,
            " {:>9} {:>9} {:>6} |",
            format!("{n} med"),
            format!("{n} p99"),
            "ratio"
        );
    }
    let _ = writeln!(s, " {:>6}", "stable");
    let _ = write!(s, "{:->8}-+-{:->9}-{:->9}-+", "", "", "");
    for _ in &names {
        let _ = write!(s, "-{:->9}-{:->9}-{:->6}-+", "", "", "");
    }
    let _ = writeln!(s, "-{:->6}", "");
    for r in rows {
        let _ = write!(
            s,
            "{:>8} | {:>9} {:>9} |",
            format_size(r.size),
            us(r.floor.median),
            us(r.floor.p99)
        );
        for m in &r.transports {
            let _ = write!(
                s,
                " {:>9} {:>9} {:>5.2}x |",
                us(m.stats.median),
                us(m.stats.p99),
                m.ratio
            );
        }
        let _ = writeln!(
            s,
            " {:>6}{}",
            format!("{}/{}", r.stable, r.blocks),
            if r.stable == 0 { " !" } else { "" }
        );
    }
    s
}

fn stats_json(s: &Stats) -> String {
    format!(
        "{{\"count\": {}, \"min_ns\": {}, \"median_ns\": {}, \"p99_ns\": {}, \"p999_ns\": {}, \"max_ns\": {}, \"mean_ns\": {:.1}}}",
        s.count, s.min, s.median, s.p99, s.p999, s.max, s.mean
    )
}

/// The results as a JSON document (written by hand: no JSON crate here).
/// `single_thread_ns` is hako's cost per message with no other CPU involved,
/// when measured.
pub fn json(clock_ns: f64, single_thread_ns: Option<f64>, floor: &Stats, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\n  \"benchmark\": \"pingpong\",\n  \"clock_read_ns\": {clock_ns:.1},\n  \"single_thread_ns\": {},\n  \"floor\": {},\n  \"rows\": [",
        single_thread_ns.map_or_else(|| "null".to_owned(), |v| format!("{v:.1}")),
        stats_json(floor)
    );
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            s,
            "{}\n    {{\"size\": {}, \"blocks\": {}, \"stable_blocks\": {},\n     \"floor\": {}",
            if i == 0 { "" } else { "," },
            r.size,
            r.blocks,
            r.stable,
            stats_json(&r.floor),
        );
        for m in &r.transports {
            let _ = write!(
                s,
                ",\n     \"{}\": {{\"ratio\": {:.3}, \"stats\": {}}}",
                m.name.escape_default(),
                m.ratio,
                stats_json(&m.stats)
            );
        }
        s.push('}');
    }
    s.push_str("\n  ]\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        for (text, n) in [
            ("64", 64),
            ("64B", 64),
            ("1K", 1024),
            ("4KiB", 4096),
            ("64k", 65536),
            ("1M", 1 << 20),
            ("4MiB", 4 << 20),
        ] {
            assert_eq!(parse_size(text), Ok(n), "{text}");
        }
        assert!(parse_size("0").is_err());
        assert!(parse_size("x").is_err());
        assert_eq!(format_size(64), "64 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(4 << 20), "4 MiB");
        assert_eq!(format_size(1500), "1500 B");
    }
}
