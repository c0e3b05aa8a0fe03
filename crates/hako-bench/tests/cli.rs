//! `hako bench` as a user runs it: its program, `hako-bench`, with small
//! settings. Every transport of the build (with `--features peers`,
//! iceoryx2 and shmipc too) runs each pattern and payload mode; the JSON holds every row, the
//! SVG is well-formed with one line per transport and panel, the Markdown
//! has the tables; bad arguments fail with a clear message; an interrupted
//! or killed run leaves no process and no files behind. Asserts behaviour,
//! never speed.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use hako_bench::registry::{BRIDGE_NAMES, GO_NAMES};
use serde_json::Value;

mod common;
use common::{all_transports, hako, left_in, scratch, text};

#[test]
fn every_transport_pattern_and_mode_reports_in_every_format() {
    let dir = scratch("all");
    let shm = dir.join("shm");
    std::fs::create_dir(&shm).unwrap();
    // The bridge rows start Zenoh sessions and hako-bridge processes: they
    // have a test of their own (tests/bridge.rs). The Go rows run a Go
    // program, built and tested by ./scripts/go (go/cmd/hako-bench-go).
    let transports: Vec<String> = all_transports()
        .into_iter()
        .filter(|t| !BRIDGE_NAMES.contains(&t.as_str()) && !GO_NAMES.contains(&t.as_str()))
        .collect();
    assert!(transports.contains(&"tcp".to_owned()), "{transports:?}");
    let (json, md, svg) = (
        dir.join("out.json"),
        dir.join("out.md"),
        dir.join("out.svg"),
    );
    let out = hako()
        .args(["--transports", &transports.join(",")])
        .args(["--sizes", "64,4K", "--iterations", "40", "--blocks", "1"])
        .args(["--block-ms", "1", "--min-messages", "10", "--fanout", "2"])
        .args(["--in-flight", "1,16", "--in-flight-sizes", "64"])
        .args(["--async-sizes", "64,4K", "--async-in-flight", "1,16"])
        .args(["--patterns", "pingpong,throughput,fanout,reqres,async"])
        .arg("--shm-dir")
        .arg(&shm)
        .arg("--json")
        .arg(&json)
        .arg("--markdown")
        .arg(&md)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for heading in [
        "Ping-pong",
        "Throughput",
        "Fan-out",
        "Request/response: one request at a time",
        "Request/response: requests in flight",
        "Async: one request at a time",
        "Async: requests in flight",
        "Memory",
        "Memory footprint",
        "Summary",
    ] {
        assert!(stdout.contains(heading), "{heading}: {stdout}");
    }

    // The JSON parses and holds every row.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["machine"]["cpu_model"].is_string(), "{v}");
    assert!(v["machine"]["cpus_online"].as_u64().unwrap() >= 1);
    assert!(v["pinning"]["mode"].is_string());
    let ping_pong = v["ping_pong"].as_array().unwrap();
    assert_eq!(ping_pong.len(), 4, "2 sizes x 2 modes");
    for row in ping_pong {
        let ran: Vec<&str> = row["transports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["transport"].as_str().unwrap())
            .collect();
        let skipped: Vec<&str> = row["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["transport"].as_str().unwrap())
            .collect();
        for t in &transports {
            assert!(
                ran.contains(&t.as_str()) || skipped.contains(&t.as_str()),
                "{t} missing in {row}"
            );
        }
        for t in row["transports"].as_array().unwrap() {
            for key in ["median_ns", "p99_ns", "p999_ns", "mean_ns"] {
                assert!(t["stats"][key].as_f64().unwrap() > 0.0, "{key}: {t}");
            }
            assert!(t["cpu_per_round_trip"]["follower"]["user_ns"].is_number());
            // Measured, not sampled: every side of a round trip runs, so its
            // CPU clock moved.
            for side in ["leader", "follower"] {
                let cpu = &t["cpu_per_round_trip"][side];
                assert!(cpu["cpu_ns"].as_f64().unwrap() > 0.0, "{side}: {cpu}");
            }
        }
        assert!(row["probe"]["level"].is_string());
    }
    let one_way = v["one_way"].as_array().unwrap();
    for pattern in ["throughput", "fanout"] {
        for payload in ["touch", "full"] {
            for size in [64, 4096] {
                for t in &transports {
                    let row = one_way
                        .iter()
                        .find(|r| {
                            r["pattern"] == pattern
                                && r["payload"] == payload
                                && r["size"] == size
                                && r["transport"] == t.as_str()
                        })
                        .unwrap_or_else(|| panic!("{pattern} {payload} {size} {t} missing"));
                    if row["skipped"].is_null() {
                        assert!(row["messages_per_s"].as_f64().unwrap() > 0.0, "{row}");
                        assert!(row["probe"]["stats"]["median_ns"].is_number(), "{row}");
                        // Its rate over every other transport measured in
                        // the same cell, run by run.
                        let others = one_way.iter().filter(|o| {
                            o["pattern"] == pattern
                                && o["payload"] == payload
                                && o["size"] == size
                                && o["skipped"].is_null()
                                && o["transport"] != t.as_str()
                        });
                        for o in others {
                            let name = o["transport"].as_str().unwrap();
                            assert!(row["vs"][name].as_f64().unwrap() > 0.0, "{name}: {row}");
                        }
                    } else {
                        // The floors and the blackboards measure ping-pong
                        // only; shmipc's one-way rows are skipped (see its
                        // module).
                        // Request/response transports (the async ones
                        // too) answer every message.
                        let ok = [
                            "floor",
                            "floor2",
                            "futex",
                            "reference",
                            "shmipc",
                            "iceoryx2-reqres",
                            "hako-c",
                            "hako-board",
                            "iceoryx2-board",
                        ];
                        let answers = ["hako-reqres", "hako-async", "tokio-", "monoio-"]
                            .iter()
                            .any(|p| t.starts_with(p));
                        assert!(ok.contains(&t.as_str()) || answers, "{row}");
                    }
                    if pattern == "fanout" {
                        assert_eq!(row["followers"], 2);
                    }
                }
            }
        }
    }
    assert_eq!(v["memory"].as_array().unwrap().len(), 2);

    // Request/response: round trips at both sizes and modes, then rates at
    // 64 B with 1 and 16 in flight; every transport of a row measured
    // against every other.
    let reqres = v["request_response"].as_array().unwrap();
    let (trips, rates): (Vec<&Value>, Vec<&Value>) =
        reqres.iter().partition(|r| r["kind"] == "round_trip");
    assert_eq!(trips.len(), 4, "2 sizes x 2 modes");
    assert_eq!(rates.len(), 4, "2 depths x 2 modes");
    for row in &trips {
        assert_eq!(row["in_flight"], 1);
    }
    for row in &rates {
        assert_eq!(row["size"], 64);
        assert!(row["in_flight"] == 1 || row["in_flight"] == 16, "{row}");
    }
    for row in trips.iter().chain(&rates) {
        let measured = row["transports"].as_array().unwrap();
        let names: Vec<&str> = measured
            .iter()
            .map(|t| t["transport"].as_str().unwrap())
            .collect();
        for want in ["hako-reqres", "hako", "unix", "tcp"] {
            assert!(names.contains(&want), "{want} missing in {row}");
        }
        for t in measured {
            assert!(t["median_ns"].as_f64().unwrap() > 0.0, "{t}");
            for other in names.iter().filter(|&&n| n != t["transport"]) {
                assert!(t["vs"][*other].as_f64().unwrap() > 0.0, "{other}: {t}");
            }
        }
    }
    assert!(v["goals"].as_array().unwrap().iter().any(|g| g
        .as_str()
        .unwrap()
        .contains("hako request/response round trip")));

    // Async: the same shape, hako's async ports against tokio's sockets
    // and hako's blocking calls, on both runtimes.
    let asynch = v["async"].as_array().unwrap();
    let (async_trips, async_rates): (Vec<&Value>, Vec<&Value>) =
        asynch.iter().partition(|r| r["kind"] == "round_trip");
    assert_eq!(async_trips.len(), 4, "2 sizes x 2 modes");
    assert_eq!(async_rates.len(), 4, "2 depths x 2 modes");
    for row in async_trips.iter().chain(&async_rates) {
        let measured = row["transports"].as_array().unwrap();
        let names: Vec<&str> = measured
            .iter()
            .map(|t| t["transport"].as_str().unwrap())
            .collect();
        for want in [
            "hako-async",
            "hako-async-busy",
            "hako-async-park",
            "tokio-unix",
            "tokio-tcp",
            "hako-async-mt",
            "tokio-unix-mt",
            "hako-reqres-park",
        ] {
            assert!(names.contains(&want), "{want} missing in {row}");
        }
        // The io_uring runtimes are peers: in a build with them.
        if cfg!(feature = "peers") {
            for want in ["monoio-unix", "tokio-uring-unix"] {
                assert!(names.contains(&want), "{want} missing in {row}");
            }
        }
        for t in measured {
            assert!(t["median_ns"].as_f64().unwrap() > 0.0, "{t}");
        }
    }
    let goals: Vec<&str> = v["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    for want in [
        "busy reader: hako async round trip",
        "sleeping reader: hako async round trip",
    ] {
        assert!(goals.iter().any(|g| g.contains(want)), "{want}: {goals:?}");
    }

    // The SVG is XML with an <svg> root, and one line per transport in each
    // of the two panels (the series are the polylines 2 px wide; axes and
    // legend frames are 1 px).
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&svg_text).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .count();
    let measured = ping_pong[0]["transports"].as_array().unwrap().len();
    let measured_reqres = trips[0]["transports"].as_array().unwrap().len();
    let measured_async = async_trips[0]["transports"].as_array().unwrap().len();
    assert_eq!(
        lines,
        2 * measured + 2 * measured_reqres + 2 * measured_async,
        "{svg_text}"
    );
    assert!(svg_text.contains("touch mode") && svg_text.contains("full mode"));
    assert!(svg_text.contains("request/response: round trip"));
    for t in &transports {
        assert!(svg_text.contains(&format!(">\n{t}\n<")), "legend for {t}");
    }

    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.contains("### Ping-pong"), "{md_text}");
    assert!(md_text.contains("| size |"), "{md_text}");

    // Nothing of the run is left in the shm directory.
    assert_eq!(left_in(&shm), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fails_with(args: &[&str], needle: &str) {
    let out = hako().args(args).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{args:?} succeeded: {stdout}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

#[test]
fn bad_arguments_fail_clearly() {
    fails_with(
        &["--transports", "hako,carrier-pigeon"],
        "unknown transport \"carrier-pigeon\"",
    );
    fails_with(&["--transports", "carrier-pigeon"], "hako-spin-park");
    fails_with(&["--sizes", "0"], "at least 1 byte");
    fails_with(&["--sizes", "64,lots"], "bad size");
    fails_with(&["--sizes", "1024M"], "above the largest");
    fails_with(&["--patterns", "smoke-signals"], "unknown pattern");
    fails_with(
        &["--async-transports", "carrier-pigeon"],
        "unknown transport",
    );
    fails_with(&["--payload", "half"], "unknown payload mode");
    fails_with(&["--fanout", "0"], "fanout");
    if let Some(max) = std::fs::read_to_string("/proc/sys/fs/mqueue/msgsize_max")
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
    {
        let too_big = (max + 1).to_string();
        fails_with(
            &["--transports", "mq", "--sizes", &too_big],
            "transport mq cannot carry",
        );
    }
    let out = hako().arg("frobnicate").output().unwrap();
    assert!(!out.status.success());
}

/// The pids of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only a reaped or never-reaped dead process is
    // gone from /proc, so look at the state too.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Starts a long `hako bench` in `shm`, waits until its followers run;
/// returns it and their pids.
fn start_long_run(shm: &Path) -> (Child, Vec<u32>) {
    let mut child = hako()
        .args([
            "--transports",
            "futex",
            "--patterns",
            "pingpong",
            "--payload",
            "touch",
        ])
        .args([
            "--iterations",
            "100000000",
            "--blocks",
            "1",
            "--block-ms",
            "600000",
        ])
        .args(["--fanout", "3"])
        .arg("--shm-dir")
        .arg(shm)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let kids = children(child.id());
        let run_dir = shm.join(format!("hako-bench-{}", child.id()));
        if !kids.is_empty() && run_dir.exists() {
            // Let the row begin.
            std::thread::sleep(Duration::from_millis(300));
            return (child, kids);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no follower started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_gone(pids: &[u32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "followers still alive: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_and_kill_leave_no_process_and_no_files() {
    use rustix::process::{kill_process, Pid, Signal};
    let dir = scratch("signals");

    // Ctrl-C: the leader removes its files and exits; followers die with it.
    let (mut child, kids) = start_long_run(&dir);
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    wait_gone(&kids);
    assert_eq!(left_in(&dir), Vec::<String>::new());

    // SIGKILL: nothing runs on the leader's side, followers still die
    // (PDEATHSIG); the next run removes the leftover directory.
    let (mut child, kids) = start_long_run(&dir);
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    kill_process(pid, Signal::KILL).unwrap();
    child.wait().unwrap();
    wait_gone(&kids);
    assert_eq!(left_in(&dir), vec![format!("hako-bench-{}", child.id())]);
    let out = hako()
        .args([
            "--transports",
            "pipe",
            "--sizes",
            "64",
            "--patterns",
            "pingpong",
        ])
        .args([
            "--payload",
            "touch",
            "--iterations",
            "20",
            "--blocks",
            "1",
            "--block-ms",
            "1",
        ])
        .arg("--shm-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("removed the leftovers of a dead run"),
        "{stderr}"
    );
    assert_eq!(left_in(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn help_names_the_command_hako_bench() {
    let out = hako().arg("--help").output().unwrap();
    assert!(out.status.success());
    let (help, _) = text(&out);
    assert!(help.contains("Usage: hako bench"), "{help}");
    assert!(help.contains("--transports"), "{help}");
}
