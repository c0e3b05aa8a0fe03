//! The summary of a run: the ratios that matter, each from the same run
//! and said in words, with what they were taken over.

use crate::harness::floor_level;
use crate::harness::rounds::{cells, paired_rate_ratio, OneWayRow};
use crate::registry::PEER_NAMES;
use crate::suite::{PingPongRow, SuiteResult};
use crate::transport::{Pattern, PayloadMode};
use crate::units::{format_ratio, format_size, rate, us};

use super::footprint;
use super::goals::{full_vs_memory, round_trip_targets, Rows};

/// Every summary line of `result`, in the order of the report.
pub fn summary(result: &SuiteResult) -> Vec<String> {
    let mut lines = publish_subscribe(result);
    lines.extend(wait_note(result));
    lines.extend(footprint::summary(&result.footprint));
    lines.extend(request_response(result));
    lines.extend(asynch(result));
    lines.extend(bridge(result));
    lines
}

/// A note when hako-park slept in fewer than half of its waits at the
/// smallest size: its figure is then not the cost of a wake-up.
fn wait_note(result: &SuiteResult) -> Option<String> {
    let small = result
        .ping_pong
        .iter()
        .filter(|r| r.payload == PayloadMode::Touch)
        .min_by_key(|r| r.row.size)?;
    let (sl, sf) = small.row.get("hako-park")?.sleeps_per_round_trip();
    ((sl + sf) / 2.0 < 0.5).then(|| {
        format!(
            "hako-park slept in about {:.0} % of its waits at {} (sleeps per round trip {sl:.2} / \
             {sf:.2}): most answers came before it got to sleep, so its figure is not the cost \
             of a wake-up",
            100.0 * (sl + sf) / 2.0,
            format_size(small.row.size)
        )
    })
}

/// `64 B 1.05x, 1 MiB 1.10x`: `a`'s round trip over `b`'s, block by block,
/// in each of `rows` where both ran (the payload mode after the size, with
/// `mode`); `None` where none did.
fn per_size<'a>(
    rows: impl IntoIterator<Item = &'a PingPongRow>,
    a: &str,
    b: &str,
    mode: bool,
) -> Option<String> {
    let parts: Vec<String> = rows
        .into_iter()
        .filter_map(|r| {
            let ratio = format_ratio(Some(r.row.get(a)?.vs(b)?));
            let size = format_size(r.row.size);
            Some(match mode {
                true => format!("{size} {} {ratio}", r.payload.name()),
                false => format!("{size} {ratio}"),
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The peers among `items` (named by `name`), or (none in this build or
/// run) every one that is neither hako nor a floor; and which of the two
/// it is.
fn rivals<T>(items: &[T], name: impl Fn(&T) -> &str) -> (Vec<&T>, &'static str) {
    let peers: Vec<&T> = items
        .iter()
        // A blackboard's update-to-visible is no message transport's rival.
        .filter(|m| PEER_NAMES.contains(&name(m)) && !name(m).ends_with("-board"))
        .collect();
    if !peers.is_empty() {
        return (peers, "peer");
    }
    let others = items
        .iter()
        .filter(|m| {
            let n = name(m);
            !n.starts_with("hako")
                && !n.ends_with("-board")
                && !["floor", "floor2", "futex", "reference"].contains(&n)
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

/// hako's publish/subscribe against the floors, against the fastest peer,
/// its throughput against the peers', and `full` mode against memory.
fn publish_subscribe(result: &SuiteResult) -> Vec<String> {
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
        // What the library adds beyond its data path: hako over the
        // two-line floor and over `reference` (the same data path written
        // by hand, no library around it), side by side, with the floor
        // state of each row's probe.
        let side: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let h = r.row.get("hako")?;
                Some(format!(
                    "{} {} / {} ({} floor)",
                    format_size(r.row.size),
                    format_ratio(Some(h.vs("floor2")?)),
                    format_ratio(Some(h.vs("reference")?)),
                    floor_level(r.row.floor.median)
                ))
            })
            .collect();
        if !side.is_empty() {
            lines.push(format!(
                "hako round trip / two-line floor and / reference (a minimal descriptor ring by hand), {}: {}",
                payload.name(),
                side.join(", ")
            ));
        }
        // The C API and the Go module against Rust; Go's own socket.
        for (a, b, what) in [
            (
                "hako-c",
                "hako",
                "hako-c (ping-pong in C through the C API) round trip / hako in Rust",
            ),
            (
                "hako-go",
                "hako",
                "hako-go (ping-pong in Go through the Go module) round trip / hako in Rust",
            ),
            (
                "hako-go",
                "go-unix",
                "hako-go round trip / Go's unix socket (go-unix)",
            ),
        ] {
            if let Some(ratios) = per_size(rows.iter().copied(), a, b, false) {
                lines.push(format!(
                    "{what}, {} (block by block): {ratios}",
                    payload.name()
                ));
            }
        }
        {
            let name = "hako";
            let mut parts = Vec::new();
            let mut kind = "peer";
            for r in &rows {
                let Some(h) = r.row.get(name) else { continue };
                let (rivals, k) = rivals(&r.row.transports, |m| m.name);
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
                let rated: Vec<&OneWayRow> = rows
                    .iter()
                    .filter(|r| r.rate().is_some())
                    .copied()
                    .collect();
                let (rival, k) = rivals(&rated, |r| r.transport);
                kind = k;
                let rate_of = |r: &OneWayRow| r.median_run().map_or(0.0, |m| m.messages_per_s());
                let Some(best) = rival
                    .into_iter()
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

/// hako's request/response transport.
const HAKO: &str = "hako-reqres";

/// What hako's request/response is compared with in the summary: name, and
/// how the summary calls it.
const RIVALS: [(&str, &str); 5] = [
    ("hako", "hako pub/sub ping-pong"),
    ("iceoryx2-reqres", "iceoryx2 request/response"),
    ("shmipc", "shmipc"),
    ("unix", "a unix socket"),
    ("tcp", "TCP loopback"),
];

/// hako request/response against each rival: round trips per payload
/// mode, block by block; rates per cell, run by run.
fn request_response(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for payload in PayloadMode::ALL {
        let rows: Vec<&PingPongRow> = result
            .request_response
            .iter()
            .filter(|r| r.payload == payload)
            .collect();
        for (other, what) in RIVALS {
            if let Some(parts) = per_size(rows.iter().copied(), HAKO, other, false) {
                lines.push(format!(
                    "hako request/response round trip / {what}, {} (block by block; below 1x \
                     hako is faster): {parts}",
                    payload.name(),
                ));
            }
        }
    }
    for cell in cells(&result.in_flight) {
        let Some(h) = cell.iter().find(|r| r.transport == HAKO) else {
            continue;
        };
        let Some(hr) = h.rate() else { continue };
        let parts: Vec<String> = cell
            .iter()
            .filter(|o| o.transport != HAKO)
            .filter_map(|o| {
                let ratio = paired_rate_ratio(h, o)?;
                Some(format!("{} {}", format_ratio(Some(ratio)), o.transport))
            })
            .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "hako request/response with {} in flight, {} {}: {} req/s = {} (run by run; \
                 above 1x hako is faster)",
                h.depth,
                format_size(h.size),
                h.payload.name(),
                rate(hr),
                parts.join(", ")
            ));
        }
    }
    lines
}

/// Per runtime: its label, hako async with the ports' default wait, busy,
/// parked, and tokio's unix socket, on that runtime.
const RUNTIMES: [(&str, [&str; 4]); 2] = [
    (
        "current-thread",
        [
            "hako-async",
            "hako-async-busy",
            "hako-async-park",
            "tokio-unix",
        ],
    ),
    (
        "multi-thread",
        [
            "hako-async-mt",
            "hako-async-busy-mt",
            "hako-async-park-mt",
            "tokio-unix-mt",
        ],
    ),
];

/// hako's blocking request/response that sleeps at once.
const BLOCKING_PARK: &str = "hako-reqres-park";

/// hako async against tokio's sockets and hako's blocking calls: round
/// trips per size (block by block), rates per cell (run by run).
fn asynch(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    for (label, [hako, busy, park, unix]) in RUNTIMES {
        let mut pairs = vec![
            (
                "hako async (busy) / tokio UnixStream".to_owned(),
                busy,
                unix,
            ),
            ("hako async / tokio UnixStream".to_owned(), hako, unix),
            (
                "hako async (park) / hako blocking (park)".to_owned(),
                park,
                BLOCKING_PARK,
            ),
        ];
        // The io_uring runtimes are thread-per-core: set against hako on a
        // current-thread runtime.
        if label == "current-thread" {
            pairs.extend(URING.map(|(name, what)| (format!("hako async / {what}"), hako, name)));
        }
        for (what, a, b) in pairs {
            if let Some(parts) = per_size(&result.async_round_trip, a, b, true) {
                lines.push(format!(
                    "{what} round trip, {label} (block by block; below 1x hako is faster): {parts}"
                ));
            }
        }
        let mut rivals = vec![(unix, "tokio UnixStream")];
        if label == "current-thread" {
            rivals.extend(URING);
        }
        for cell in cells(&result.async_in_flight) {
            let Some(h) = cell.iter().find(|r| r.transport == hako) else {
                continue;
            };
            let Some(hr) = h.rate() else { continue };
            let parts: Vec<String> = rivals
                .iter()
                .filter_map(|&(name, what)| {
                    let o = cell.iter().find(|r| r.transport == name)?;
                    Some(format!("{} {what}", format_ratio(paired_rate_ratio(h, o))))
                })
                .collect();
            if parts.is_empty() {
                continue;
            }
            lines.push(format!(
                "hako async with {} in flight, {} {}, {label}: {} req/s = {} \
                 (run by run; above 1x hako is faster)",
                h.depth,
                format_size(h.size),
                h.payload.name(),
                rate(hr),
                parts.join(", ")
            ));
        }
    }
    lines
}

/// The io_uring runtimes' unix sockets, and what the summary calls them.
const URING: [(&str, &str); 2] = [
    ("monoio-unix", "monoio unix socket (io_uring)"),
    ("tokio-uring-unix", "tokio-uring unix socket (io_uring)"),
];

/// hako through two bridges.
const BRIDGED: &str = "hako-bridge";
/// hako through two bridges that poll (`--low-latency`).
const LOW_LATENCY: &str = "hako-bridge-low-latency";
/// Plain Zenoh.
pub const PLAIN: &str = "zenoh";

/// The bridged transports, each with what the summary calls it.
pub const BRIDGED_KINDS: [(&str, &str); 2] = [
    (BRIDGED, "hako through two bridges"),
    (LOW_LATENCY, "hako through two low-latency bridges"),
];

/// Per size of `payload`'s rows: `name`'s round trip over zenoh's (block
/// by block) and both medians in ns.
pub fn bridge_ratios(
    result: &SuiteResult,
    payload: PayloadMode,
    name: &str,
) -> Vec<(usize, f64, u64, u64)> {
    result
        .bridge
        .iter()
        .filter(|r| r.payload == payload)
        .filter_map(|r| {
            let b = r.row.get(name)?;
            let z = r.row.get(PLAIN)?;
            Some((r.row.size, b.vs(PLAIN)?, b.stats.median, z.stats.median))
        })
        .collect()
}

/// The summary: per bridged transport and payload mode, what the bridge
/// adds at each size; or why the rows were not measured.
fn bridge(result: &SuiteResult) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(why) = &result.bridge_note {
        lines.push(format!("bridge: not measured: {why}"));
    }
    for (name, label) in BRIDGED_KINDS {
        for payload in PayloadMode::ALL {
            let parts: Vec<String> = bridge_ratios(result, payload, name)
                .iter()
                .map(|&(size, ratio, b, z)| {
                    format!(
                        "{} at {} ({} / {} µs)",
                        format_ratio(Some(ratio)),
                        format_size(size),
                        us(b as f64),
                        us(z as f64)
                    )
                })
                .collect();
            if !parts.is_empty() {
                lines.push(format!(
                    "bridge: {label} / plain Zenoh round trip: {} (goal {}; {}, block by block, \
                     medians {name} / zenoh)",
                    parts.join(", "),
                    round_trip_targets(Rows::Bridge, name, PLAIN).join(", "),
                    payload.name()
                ));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::rounds::example_row;
    use crate::report::fixtures::*;

    fn text(result: &SuiteResult) -> String {
        summary(result).join("\n")
    }

    #[test]
    fn throughput_is_set_against_the_fastest_peer_run_by_run() {
        let mut r = pubsub_result(190, 0.25, 66_000);
        r.one_way = vec![
            example_row("hako", &[50, 100, 40]),
            example_row("iceoryx2", &[200, 1000, 200]),
        ];
        let s = text(&r);
        contains_all(&s, &["hako throughput / fastest peer, touch (run by run; above 1x hako is faster): 1 MiB 20.00M msg/s = 5.00x iceoryx2 (5.00M msg/s)"]);
    }

    #[test]
    fn the_two_line_floor_is_summarised_where_it_ran() {
        let mut r = pubsub_result(190, 0.25, 66_000);
        assert!(!text(&r).contains("two-line floor"));
        let transports = &mut r.ping_pong[0].row.transports;
        transports[0].vs.push(("floor2", 1.5));
        transports.push(measured("floor2", 127, vec![("hako", 1.0 / 1.5)]));
        let s = text(&r);
        contains_all(&s, &["/ two-line floor (a descriptor line and a payload line each way), touch: 64 B 1.50x (worst 1.50x)"]);
        // floor2 is a floor, never a rival hako is compared with.
        assert!(!s.contains("fastest other transport, touch (block by block; below 1x hako is faster): 64 B 1.50x floor2"), "{s}");
        let transports = &mut r.ping_pong[0].row.transports;
        transports[0].vs.push(("reference", 1.2));
        transports.push(measured("reference", 160, vec![]));
        let s = text(&r);
        contains_all(&s, &["hako round trip / two-line floor and / reference (a minimal descriptor ring by hand), touch: 64 B 1.50x / 1.20x (low floor)"]);
    }

    #[test]
    fn request_response_and_async_ratios_are_said() {
        let s = text(&reqres_result(1.05, 0.25, 600));
        contains_all(&s, &["round trip / hako pub/sub ping-pong, touch (block by block; below 1x hako is faster): 64 B 1.05x", "with 16 in flight, 64 B touch: 10.00M req/s = 6.00x iceoryx2-reqres, 25.0x unix"]);
        let s = text(&async_result(0.008, 1.03, 2000));
        contains_all(&s, &["hako async (busy) / tokio UnixStream round trip, current-thread (block by block; below 1x hako is faster): 64 B touch 0.0080x", "hako async with 256 in flight, 64 B touch, current-thread: 10.00M req/s = 20.0x tokio UnixStream"]);
    }

    #[test]
    fn the_io_uring_runtimes_are_set_against_hako_async() {
        let r = SuiteResult {
            async_round_trip: vec![row_of(
                64,
                vec![
                    measured("hako-async", 3_000, vec![("monoio-unix", 0.06)]),
                    measured("monoio-unix", 50_000, vec![("hako-async", 1.0 / 0.06)]),
                ],
            )],
            async_in_flight: vec![
                rate_row_at("hako-async", &[100, 100, 100], 16),
                rate_row_at("tokio-uring-unix", &[4000, 4000, 4000], 16),
            ],
            ..Default::default()
        };
        let s = text(&r);
        contains_all(&s, &["hako async / monoio unix socket (io_uring) round trip, current-thread (block by block; below 1x hako is faster): 64 B touch 0.060x", "hako async with 16 in flight, 64 B touch, current-thread: 10.00M req/s = 40.0x tokio-uring unix socket (io_uring)"]);
    }

    #[test]
    fn the_bridge_line_gives_the_ratio_per_size_and_its_targets() {
        let result = bridge_result();
        let s = summary(&result);
        assert_eq!(s.len(), 4, "{s:?}");
        assert!(
            s[0].starts_with(
                "bridge: hako through two bridges / plain Zenoh round trip: 1.30x at 64 B \
                 (130.0 / 100.0 µs), 1.10x at 1 MiB"
            ),
            "{s:?}"
        );
        assert!(
            s[0].contains("goal ≤ 1.5x at 64 B, ≤ 1.35x at 1 MiB; touch"),
            "{s:?}"
        );
        assert!(s[1].contains("full"), "{s:?}");
        assert!(
            s[2].starts_with("bridge: hako through two low-latency bridges / plain Zenoh")
                && s[2].contains("goal ≤ 1.15x at 64 B; touch"),
            "{s:?}"
        );
        let missing = SuiteResult {
            bridge_note: Some(crate::suite::BRIDGE_LEFT_OUT.to_owned()),
            ..SuiteResult::default()
        };
        let s = summary(&missing);
        assert_eq!(s.len(), 1);
        assert!(s[0].contains("--features bridge"), "{s:?}");
    }

    #[test]
    fn a_park_that_hardly_slept_is_noted() {
        let mut r = SuiteResult {
            ping_pong: vec![wait_row(64, 105, 100, 150)],
            ..Default::default()
        };
        assert!(!text(&r).contains("slept in about"));
        let park = &mut r.ping_pong[0].row.transports[0];
        park.leader_cpu.sleeps = 10;
        park.follower_cpu.sleeps = 30;
        assert!(
            text(&r).contains("hako-park slept in about 20 % of its waits at 64 B"),
            "{}",
            text(&r)
        );
    }
}
