//! The tables of a run's figures.
//!
//! Round-trip columns (times in µs per round trip, over the blocks whose
//! floor probes agreed): `median`, `p99`, `p99.9`, `mean`; `/floor` — the
//! median over blocks of (this transport's block interquartile mean / the
//! floor probes' next to it); `cpu lead` and `cpu foll` — CPU time (user +
//! system) per round trip of the leader and of the follower; `probe` — the
//! floor probes of the row, their level (`low` or `high`: a VM's floor may
//! flip between two) and how many blocks had agreeing probes.
//!
//! Rate columns: `msg/s` (`req/s`) — messages (requests) per second, each
//! delivered to every receiver; `GB/s` — payload bytes per second
//! delivered, counting each receiver's copy (10⁹ bytes); `µs/msg`; `cpu
//! send`, `cpu recv` (`cpu client`, `cpu server`) — CPU µs per message of
//! each side, all receivers together; `probe` — the floor probe taken
//! before the row's cell (all transports at that size and mode).
//!
//! Wait strategies: every hako transport of a ping-pong row over the futex
//! floor and each kernel mechanism, block by block, and the sleeps
//! (voluntary context switches) per round trip of each side.

use crate::harness::rounds::OneWayRow;
use crate::suite::{PingPongRow, SuiteResult};
use crate::transport::{Pattern, PayloadMode};
use crate::units::{format_ratio, format_size, per_round_trip, rate, us};

use super::footprint;
use super::table::{probe_cell, Table};

/// Every table that has rows, in the order of the report.
pub fn all(result: &SuiteResult) -> Vec<Table> {
    let mut t = Vec::new();
    let probe = result.probe;
    if !result.ping_pong.is_empty() {
        t.push(round_trip_table(
            "Ping-pong: round trip between two processes",
            &result.ping_pong,
            probe,
        ));
    }
    t.extend(wait_table(&result.ping_pong));
    for p in [Pattern::Throughput, Pattern::FanOut] {
        if result.one_way.iter().any(|r| r.pattern == p) {
            t.push(one_way_table(result, p));
        }
    }
    if !result.request_response.is_empty() {
        t.push(round_trip_table(
            "Request/response: one request at a time, round trip between a client and a server",
            &result.request_response,
            probe,
        ));
    }
    if !result.in_flight.is_empty() {
        t.push(in_flight_table(
            "Request/response: requests in flight from one client to one server",
            &result.in_flight,
        ));
    }
    if !result.async_round_trip.is_empty() {
        t.push(round_trip_table(
            "Async: one request at a time, round trip between a client task and a server task \
             (tokio; -mt: a multi-threaded runtime; monoio and tokio-uring: io_uring)",
            &result.async_round_trip,
            probe,
        ));
    }
    if !result.async_in_flight.is_empty() {
        t.push(in_flight_table(
            "Async: requests in flight from one client task to one server task",
            &result.async_in_flight,
        ));
    }
    if !result.bridge.is_empty() {
        t.push(round_trip_table(
            "Bridge: round trip through two hako-bridge processes over Zenoh (hako-bridge; \
             hako-bridge-low-latency: bridges that poll), and through plain Zenoh (zenoh), TCP \
             over loopback",
            &result.bridge,
            probe,
        ));
    }
    if !result.memory.is_empty() {
        t.push(memory_table(result));
    }
    if !result.footprint.rows.is_empty() {
        t.push(footprint::table(&result.footprint));
    }
    t
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

/// The kernel mechanisms and the floor the wait strategies are set against.
const WAIT_PEERS: [&str; 4] = ["futex", "pipe", "unix", "mq"];

/// How hako's wait strategies compare with the futex floor and the
/// kernel's mechanisms, and how often each side slept; only when a
/// strategy other than busy polling ran beside one of them.
pub fn wait_table(rows: &[PingPongRow]) -> Option<Table> {
    let ran = |name: &str| rows.iter().any(|r| r.row.get(name).is_some());
    let peers: Vec<&str> = WAIT_PEERS.into_iter().filter(|p| ran(p)).collect();
    let strategies = ["hako-spin", "hako-park", "hako-spin-park"];
    if peers.is_empty() || !strategies.iter().any(|s| ran(s)) {
        return None;
    }
    let columns: Vec<String> = peers.iter().map(|p| format!("/{p}")).collect();
    let mut headers = vec!["size", "payload", "transport"];
    headers.extend(columns.iter().map(String::as_str));
    headers.push("sleeps lead/foll");
    let mut t = Table::new(
        "Wait strategies: hako's round trip over the futex floor and the kernel's, block by \
         block (below 1x hako is faster), and sleeps per round trip",
        &headers,
    );
    for PingPongRow { payload, row } in rows {
        let mut first = true;
        for m in row.transports.iter().filter(|m| m.name.starts_with("hako")) {
            let head = |s: String| if first { s } else { String::new() };
            let (sl, sf) = m.sleeps_per_round_trip();
            let mut cells = vec![
                head(format_size(row.size)),
                head(payload.name().to_owned()),
                m.name.to_owned(),
            ];
            cells.extend(peers.iter().map(|p| format_ratio(m.vs(p))));
            cells.push(format!("{}/{}", per_round_trip(sl), per_round_trip(sf)));
            t.rows.push(cells);
            first = false;
        }
    }
    Some(t)
}

/// The throughput or fan-out table.
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

/// Requests per second with requests in flight: the rate rows `rates`.
pub fn in_flight_table(title: &str, rates: &[OneWayRow]) -> Table {
    let mut t = Table::new(
        title,
        &[
            "size",
            "payload",
            "in flight",
            "transport",
            "req/s",
            "µs/req",
            "cpu client",
            "cpu server",
            "requests",
            "probe",
        ],
    );
    let mut last = None;
    for r in rates {
        let first = last != Some((r.payload, r.size, r.depth));
        last = Some((r.payload, r.size, r.depth));
        let head = |s: String| if first { s } else { String::new() };
        let mut row = vec![
            head(format_size(r.size)),
            head(r.payload.name().to_owned()),
            head(r.depth.to_string()),
            r.transport.to_owned(),
        ];
        row.extend(rate_cells(r, false));
        t.rows.push(row);
    }
    t
}

/// The cells of a rate row after its name: rate, (with `bytes`) GB/s,
/// µs and CPU µs per message of each side, messages, probe; or why it has
/// none.
fn rate_cells(r: &OneWayRow, bytes: bool) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::contains_all;
    use crate::report::fixtures::{measured, row_of};

    #[test]
    fn wait_strategies_are_set_against_the_kernel() {
        let rows = [row_of(
            64,
            vec![
                measured("hako-park", 105, vec![("futex", 1.05), ("unix", 0.7)]),
                measured("futex", 100, vec![]),
                measured("unix", 150, vec![]),
            ],
        )];
        let text = wait_table(&rows).unwrap().to_text();
        contains_all(&text, &["/futex", "/unix"]);
        assert!(!text.contains("/mq"), "{text}");
        let line = text.lines().find(|l| l.contains("hako-park")).unwrap();
        contains_all(line, &["1.05x", "0.70x"]);
        assert!(line.ends_with("1.00/1.00"), "{text}");
        // Busy polling alone: no table.
        let rows = [row_of(
            64,
            vec![measured("hako", 100, vec![]), measured("unix", 150, vec![])],
        )];
        assert!(wait_table(&rows).is_none());
    }
}
