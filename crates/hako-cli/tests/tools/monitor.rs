//! `hako monitor` over a domain in use: rates of publish/subscribe and of
//! request/response, over several reports or one; and a publisher whose
//! segment another process corrupted, as `inspect` and `monitor` show it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::{text, wait, Domain};

#[test]
fn monitor_reports_rates() {
    let d = Domain::new("monitor");
    let sub = d.spawn(&[
        "sub",
        "demo/rate",
        "--create",
        "--count",
        "20",
        "--timeout",
        "30",
    ]);
    d.service("demo/rate");
    let pub_ = d.spawn(&[
        "pub",
        "demo/rate",
        "tick",
        "--repeat",
        "20",
        "--interval",
        "20",
        "--wait-subscribers",
        "1",
    ]);
    let o = d.run(&["monitor", "--interval", "100", "--count", "2", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), 2);
    // Losses to overflow are a rate, as the other columns are.
    assert!(reports[0][0]["dropped_per_s"].is_number(), "{}", reports[0]);
    assert!(wait(pub_).status.success());
    assert!(wait(sub).status.success());
}

#[test]
fn monitor_reports_request_response_rates() {
    use std::io::Write;
    let d = Domain::new("monitor-reqres");
    let serve = d.spawn(&["serve", "demo/rr", "--create", "--echo", "--count", "60"]);
    d.service("demo/rr");
    let mut call = d
        .cmd(&["call", "demo/rr"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = call.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for i in 0..60 {
            writeln!(stdin, "request {i}").unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let o = d.run(&["monitor", "--interval", "150", "--count", "3", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let busy = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .any(|r| {
            r.as_array().unwrap().iter().any(|s| {
                s["sent_per_s"].as_f64().unwrap() > 0.0
                    && s["delivered_per_s"].as_f64().unwrap() > 0.0
            })
        });
    assert!(busy, "no request and response rates in {}", text(&o.stdout));
    feeder.join().unwrap();
    let o = wait(call);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 60);
    assert!(wait(serve).status.success());
}

#[test]
fn a_publisher_with_a_corrupted_segment_is_shown_as_such() {
    use std::os::unix::fs::FileExt;
    let d = Domain::new("corrupt");
    // A publisher that waits for a subscriber that never comes.
    let mut publisher = d.spawn(&[
        "pub",
        "demo/bad",
        "hi",
        "--create",
        "--wait-subscribers",
        "1",
    ]);
    d.service("demo/bad");
    let segment = || -> Option<PathBuf> {
        let dir = std::fs::read_dir(&d.0)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("svc_"))?;
        std::fs::read_dir(dir.path())
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("pub_"))
            .map(|e| e.path())
    };
    d.until("the publisher's segment", || segment().is_some());
    let info = d.json(&["inspect", "demo/bad", "--json"]);
    assert_eq!(info["publishers"][0]["corrupted"], Value::Null);
    // Another process scribbles over its header's magic number.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(segment().unwrap())
        .unwrap();
    file.write_all_at(&0x0bad_0badu64.to_le_bytes(), 0).unwrap();
    let info = d.json(&["inspect", "demo/bad", "--json"]);
    assert_eq!(info["publishers"][0]["corrupted"], "bad magic number");
    let human = text(&d.run(&["inspect", "demo/bad"]).stdout);
    assert!(
        human.contains("CORRUPTED data segment: bad magic number"),
        "{human}"
    );
    let monitor = d.json(&["monitor", "--count", "1", "--json"]);
    assert_eq!(monitor[0]["corrupted_ports"], 1);
    let _ = publisher.kill();
    let _ = publisher.wait();
}

#[test]
fn one_monitor_report_has_real_rates() {
    let d = Domain::new("monitor-one");
    let sub = d.spawn(&[
        "sub",
        "demo/once",
        "--create",
        "--count",
        "40",
        "--timeout",
        "30",
    ]);
    d.service("demo/once");
    let pub_ = d.spawn(&[
        "pub",
        "demo/once",
        "tick",
        "--repeat",
        "40",
        "--interval",
        "10",
        "--wait-subscribers",
        "1",
    ]);
    d.until("the publisher sends", || {
        d.json(&["inspect", "demo/once", "--json"])["publishers"][0]["counters"]["sent"]
            .as_u64()
            .is_some_and(|n| n > 0)
    });
    let o = d.run(&["monitor", "--interval", "150", "--count", "1", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rate = report[0]["sent_per_s"].as_f64().unwrap();
    assert!(
        rate > 0.0,
        "a single report measured over one interval: {report}"
    );
    assert!(wait(pub_).status.success());
    assert!(wait(sub).status.success());
}
