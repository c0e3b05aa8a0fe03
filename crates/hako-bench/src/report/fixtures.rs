//! Figures made up for the report's unit tests.

use crate::harness::blocks::{Measured, Row};
use crate::harness::rounds::{example_row, OneWayRow};
use crate::harness::Stats;
use crate::suite::{MemoryFigure, PingPongRow, SuiteResult};
use crate::sys::cpu::CpuTime;
use crate::transport::{Pattern, PayloadMode};

/// A transport measured at `median` ns over 100 round trips (a floor of
/// 100 ns), with its ratios `vs` others; each side slept once per round
/// trip.
pub fn measured(name: &'static str, median: u64, vs: Vec<(&'static str, f64)>) -> Measured {
    let cpu = CpuTime {
        sleeps: 100,
        ..Default::default()
    };
    Measured {
        name,
        stats: Stats::uniform(100, median),
        ratio: median as f64 / 100.0,
        iterations: 100,
        leader_cpu: cpu,
        follower_cpu: cpu,
        counted: 100,
        vs,
    }
}

/// A touch-mode round-trip row at `size` with a cache-line floor of 100 ns.
pub fn row_of(size: usize, transports: Vec<Measured>) -> PingPongRow {
    row_in(PayloadMode::Touch, size, transports)
}

/// A round-trip row of `payload` at `size` with a cache-line floor of
/// 100 ns.
pub fn row_in(payload: PayloadMode, size: usize, transports: Vec<Measured>) -> PingPongRow {
    PingPongRow {
        payload,
        row: Row {
            size,
            probe: "floor",
            floor: Stats::uniform(100, 100),
            transports,
            skipped: Vec::new(),
            blocks: 4,
            stable: 4,
        },
    }
}

/// A request/response rate row at 64 B with `depth` in flight, one run per
/// entry of `elapsed_us` (1000 requests each).
pub fn rate_row_at(transport: &'static str, elapsed_us: &[u64], depth: u32) -> OneWayRow {
    let mut r = example_row(transport, elapsed_us);
    r.pattern = Pattern::RequestResponse;
    r.size = 64;
    r.depth = depth;
    for run in &mut r.runs {
        run.spec.pattern = Pattern::RequestResponse;
        run.spec.size = 64;
        run.spec.depth = depth;
    }
    r
}

/// Publish/subscribe figures: hako at `hako_touch_ns` at 64 B (a floor of
/// 100 ns), `vs` times iceoryx2's; full mode at 1 MiB at `full_ns` with a
/// cross-CPU memory figure of 30 µs.
pub fn pubsub_result(hako_touch_ns: u64, vs: f64, full_ns: u64) -> SuiteResult {
    SuiteResult {
        clock_ns: 20.0,
        probe: "floor",
        memory: vec![MemoryFigure {
            size: 1 << 20,
            write_read_ns: 20_000.0,
            across_ns: 30_000.0,
        }],
        ping_pong: vec![
            row_of(
                64,
                vec![measured("hako", hako_touch_ns, vec![("iceoryx2", vs)])],
            ),
            row_in(
                PayloadMode::Full,
                1 << 20,
                vec![measured("hako", full_ns, vec![("iceoryx2", 1.0)])],
            ),
        ],
        ..Default::default()
    }
}

/// Request/response figures: hako-reqres `vs_pubsub` times hako's ping-pong
/// and `vs_iox` times iceoryx2's; with 16 in flight, 1000 requests in
/// 100 µs against iceoryx2's `iox_us` and the unix socket's 2-3 ms.
pub fn reqres_result(vs_pubsub: f64, vs_iox: f64, iox_us: u64) -> SuiteResult {
    let mut row = row_of(
        64,
        vec![
            measured(
                "hako-reqres",
                200,
                vec![("hako", vs_pubsub), ("iceoryx2-reqres", vs_iox)],
            ),
            measured("hako", 190, vec![("hako-reqres", 1.0 / vs_pubsub)]),
            measured("iceoryx2-reqres", 900, vec![("hako-reqres", 1.0 / vs_iox)]),
        ],
    );
    row.row.skipped = vec![("mq", "no".to_owned())];
    SuiteResult {
        probe: "floor",
        request_response: vec![row],
        in_flight: vec![
            rate_row_at("hako-reqres", &[100, 100, 100], 16),
            rate_row_at("iceoryx2-reqres", &[iox_us, iox_us, iox_us], 16),
            rate_row_at("unix", &[3000, 2500, 2000], 16),
        ],
        ..Default::default()
    }
}

/// Async figures at 64 B: the busy reader `busy_vs_unix` times tokio's
/// socket, the sleeping one `park_vs_blocking` times hako's blocking
/// call; with 256 in flight, 100 µs per 1000 requests against tokio's
/// `unix_us`.
pub fn async_result(busy_vs_unix: f64, park_vs_blocking: f64, unix_us: u64) -> SuiteResult {
    SuiteResult {
        probe: "floor",
        async_round_trip: vec![row_of(
            64,
            vec![
                measured("hako-async-busy", 300, vec![("tokio-unix", busy_vs_unix)]),
                measured(
                    "hako-async-park",
                    30_000,
                    vec![("hako-reqres-park", park_vs_blocking)],
                ),
                measured("tokio-unix", 40_000, vec![]),
                measured("hako-reqres-park", 29_000, vec![]),
            ],
        )],
        async_in_flight: vec![
            rate_row_at("hako-async", &[100, 100, 100], 256),
            rate_row_at("tokio-unix", &[unix_us, unix_us, unix_us], 256),
        ],
        ..Default::default()
    }
}

/// A bridge row at `size`: hako-bridge `ratio` times plain Zenoh's 100 µs,
/// the low-latency bridges 1x.
pub fn bridge_row(size: usize, payload: PayloadMode, ratio: f64) -> PingPongRow {
    row_in(
        payload,
        size,
        vec![
            measured(
                "zenoh",
                100_000,
                vec![
                    ("hako-bridge", 1.0 / ratio),
                    ("hako-bridge-low-latency", 1.0),
                ],
            ),
            measured("hako-bridge", 130_000, vec![("zenoh", ratio)]),
            measured("hako-bridge-low-latency", 100_000, vec![("zenoh", 1.0)]),
        ],
    )
}

/// Bridge rows: hako-bridge 1.3x plain Zenoh at 64 B and 1.1x at 1 MiB
/// (touch), 1x at 64 B (full).
pub fn bridge_result() -> SuiteResult {
    SuiteResult {
        bridge: vec![
            bridge_row(64, PayloadMode::Touch, 1.3),
            bridge_row(1 << 20, PayloadMode::Touch, 1.1),
            bridge_row(64, PayloadMode::Full, 1.0),
        ],
        ..SuiteResult::default()
    }
}

/// Wait-strategy rows: hako-park at `park` ns against the futex floor's
/// `futex` and a unix socket's `unix`, at `size`.
pub fn wait_row(size: usize, park: u64, futex: u64, unix: u64) -> PingPongRow {
    let r = |a: u64, b: u64| a as f64 / b as f64;
    row_of(
        size,
        vec![
            measured(
                "hako-park",
                park,
                vec![("futex", r(park, futex)), ("unix", r(park, unix))],
            ),
            measured("futex", futex, vec![]),
            measured("unix", unix, vec![]),
        ],
    )
}

/// Panics unless `text` contains every one of `parts`, naming the missing.
pub fn contains_all(text: &str, parts: &[&str]) {
    let missing: Vec<&&str> = parts.iter().filter(|p| !text.contains(**p)).collect();
    assert!(missing.is_empty(), "missing {missing:?} in:\n{text}");
}
