//! The memory footprint ([`crate::suite::footprint`]) in a report: its
//! table, its JSON and its summary line (its goal is one of
//! [`super::goals::GOALS`]).
//!
//! Columns (bytes of address space mapped, binary units): `allowed` —
//! subscribers the `u64` service allows (one publisher); `service` — mapped
//! by creating the service; `publisher` — by creating one publisher, then
//! the same per allowed subscriber; `segment` — the size of the files
//! creating the publisher made (hako's publisher segment, iceoryx2's data
//! segment); `subscriber` — by creating one subscriber and its
//! first receive, then per allowed subscriber; `pub at send` — by the
//! publisher while it sent its first sample to that subscriber (its side of
//! the connection, which iceoryx2 maps per subscriber that joins).

use serde_json::{json, Value};

use crate::suite::footprint::{Footprint, FootprintReport};
use crate::units::{bytes, count};

use super::table::Table;

/// The table: a row per count and library, the libraries of a count side
/// by side, hako first; a failed row says so, and why below the table.
pub fn table(report: &FootprintReport) -> Table {
    let mut t = Table::new(
        "Memory footprint: bytes mapped by one publisher and one subscriber of a u64 service, \
         by the subscribers it allows (one publisher; one sample sent and received)",
        &[
            "allowed",
            "library",
            "service",
            "publisher",
            "per allowed",
            "segment",
            "subscriber",
            "per allowed",
            "pub at send",
        ],
    );
    let mut notes = Vec::new();
    let mut rows: Vec<&Footprint> = report.rows.iter().collect();
    // Stable: the libraries keep their order within a count.
    rows.sort_by_key(|r| r.allowed);
    let mut last = None;
    for r in rows {
        let head = if last == Some(r.allowed) {
            String::new()
        } else {
            count(r.allowed)
        };
        last = Some(r.allowed);
        let mut row = vec![head, r.library.to_owned()];
        match (&r.figures, r.per_allowed()) {
            (Ok(f), Some((per_pub, per_sub))) => row.extend([
                bytes(f.service as f64),
                bytes(f.publisher as f64),
                bytes(per_pub),
                bytes(f.segment as f64),
                bytes(f.subscriber as f64),
                bytes(per_sub),
                bytes(f.at_first_send as f64),
            ]),
            (Err(why), _) => {
                row.push("failed".to_owned());
                row.extend(std::iter::repeat_n("-".to_owned(), 6));
                notes.push(vec![format!(
                    "{} allowed, {} failed: {why}",
                    count(r.allowed),
                    r.library
                )]);
            }
            (Ok(_), None) => unreachable!("per_allowed is Some for measured rows"),
        }
        t.rows.push(row);
    }
    t.rows.extend(notes);
    t
}

/// One row as JSON: every figure in bytes, or the error.
fn row_json(r: &Footprint) -> Value {
    let per = r.per_allowed();
    match &r.figures {
        Ok(f) => json!({
            "library": r.library,
            "allowed_subscribers": r.allowed,
            "service_bytes": f.service,
            "publisher_bytes": f.publisher,
            "publisher_bytes_per_allowed_subscriber": per.map(|p| p.0),
            "publisher_file_bytes": f.segment,
            "subscriber_bytes": f.subscriber,
            "subscriber_bytes_per_allowed_subscriber": per.map(|p| p.1),
            "publisher_bytes_at_first_send": f.at_first_send,
            "error": null,
        }),
        Err(why) => json!({
            "library": r.library,
            "allowed_subscribers": r.allowed,
            "error": why,
        }),
    }
}

/// The JSON of the footprint: the service's shape, the wall time, a row per
/// library and count.
pub fn json(report: &FootprintReport) -> Value {
    json!({
        "payload": "u64",
        "max_publishers": 1,
        "wall_time_s": report.wall.as_secs_f64(),
        "rows": report.rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

/// The count of allowed subscribers the summary quotes (the largest
/// measured), and the one it compares it with (64, if measured and
/// smaller).
fn counts(report: &FootprintReport) -> Option<(u32, Option<u32>)> {
    let large = report.rows.iter().map(|r| r.allowed).max()?;
    let small = report
        .rows
        .iter()
        .any(|r| r.allowed == 64 && large > 64)
        .then_some(64);
    Some((large, small))
}

/// The summary line: what a hako publisher and subscriber map at the
/// largest count, per allowed subscriber (and at 64), and iceoryx2's.
pub fn summary(report: &FootprintReport) -> Vec<String> {
    let Some((large, small)) = counts(report) else {
        return Vec::new();
    };
    let mut parts = Vec::new();
    for library in ["hako", "iceoryx2"] {
        let Some(r) = report.get(library, large) else {
            continue;
        };
        let (f, (per_pub, per_sub)) = match (&r.figures, r.per_allowed()) {
            (Ok(f), Some(per)) => (f, per),
            (Err(why), _) => {
                parts.push(format!("{library} failed: {why}"));
                continue;
            }
            (Ok(_), None) => continue,
        };
        let at_small = |which: fn((f64, f64)) -> f64| {
            small
                .and_then(|s| report.get(library, s)?.per_allowed())
                .map_or_else(String::new, |p| {
                    format!(", {} at {}", bytes(which(p)), count(small.unwrap_or(0)))
                })
        };
        let mut part = format!(
            "{library}'s publisher maps {} ({} per subscriber allowed{}), its subscriber {} ({}{})",
            bytes(f.publisher as f64),
            bytes(per_pub),
            at_small(|p| p.0),
            bytes(f.subscriber as f64),
            bytes(per_sub),
            at_small(|p| p.1),
        );
        if f.at_first_send > 0 {
            part.push_str(&format!(
                ", and its publisher {} more for each subscriber that connects ({} for all {})",
                bytes(f.at_first_send as f64),
                bytes(f.at_first_send as f64 * f64::from(large)),
                count(large)
            ));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "memory, a u64 service allowing {} subscribers: {}",
        count(large),
        parts.join("; ")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::contains_all;
    use crate::suite::footprint::Figures;
    use std::time::Duration;

    fn report() -> FootprintReport {
        let ok = |library, allowed: u32, per_pub: u64, per_sub: u64| Footprint {
            library,
            allowed,
            figures: Ok(Figures {
                service: 4096,
                publisher: per_pub * u64::from(allowed),
                segment: per_pub * u64::from(allowed) - 100,
                subscriber: per_sub * u64::from(allowed),
                at_first_send: if library == "hako" { 0 } else { 4096 },
            }),
        };
        FootprintReport {
            rows: vec![
                ok("hako", 64, 1000, 400),
                ok("hako", 4096, 800, 256),
                ok("iceoryx2", 64, 256, 320),
                Footprint {
                    library: "iceoryx2",
                    allowed: 4096,
                    figures: Err("iceoryx2: creating a service: TooMany".into()),
                },
            ],
            wall: Duration::from_millis(30),
        }
    }

    #[test]
    fn the_table_shows_figures_and_errors() {
        let text = table(&report()).to_text();
        contains_all(&text, &["Memory footprint"]);
        // hako at 4,096: the publisher maps 3.2 MiB, 800 B per allowed.
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("4,096") && l.contains("hako"))
            .unwrap();
        contains_all(line, &["3.12 MiB", "800 B"]);
        assert!(line.contains("256 B"), "{text}");
        // iceoryx2 beside hako at each count; its failure in the row, the
        // error below the table.
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l == &line).unwrap();
        let failed = lines[at + 1];
        contains_all(failed, &["iceoryx2", "failed"]);
        assert!(!failed.contains("TooMany"), "{text}");
        contains_all(
            &text,
            &["4,096 allowed, iceoryx2 failed: iceoryx2: creating a service: TooMany"],
        );
    }

    #[test]
    fn json_and_summary_hold_the_figures() {
        let r = report();
        let v = json(&r);
        assert_eq!(v["rows"][1]["allowed_subscribers"], 4096);
        assert_eq!(v["rows"][1]["publisher_bytes"], 800 * 4096);
        assert_eq!(
            v["rows"][1]["subscriber_bytes_per_allowed_subscriber"],
            256.0
        );
        assert!(v["rows"][1]["error"].is_null());
        assert!(v["rows"][3]["error"].as_str().unwrap().contains("TooMany"));
        let s = summary(&r).join("\n");
        contains_all(&s, &["memory, a u64 service allowing 4,096 subscribers: hako's publisher maps 3.12 MiB (800 B per subscriber allowed, 1000 B at 64), its subscriber 1 MiB (256 B, 400 B at 64); iceoryx2 failed: iceoryx2: creating a service: TooMany"]);
        // A publisher that maps a connection per subscriber: what all the
        // allowed ones would cost it.
        let mut r = r;
        r.rows[3] = report().rows[2].clone();
        r.rows[3].allowed = 4096;
        let s = summary(&r).join("\n");
        contains_all(&s, &["and its publisher 4 KiB more for each subscriber that connects (16 MiB for all 4,096)"]);
    }
}
