//! `hako monitor --prometheus`: a scrape over HTTP while a publisher and a
//! subscriber of another process talk, parsed as OpenMetrics text.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use super::{text, wait, Domain};

/// `(metric name, labels) -> value` of an OpenMetrics text, and whether it
/// ends with `# EOF`; panics on a line that is neither a comment nor a
/// sample.
fn parse(body: &str) -> (BTreeMap<(String, String), f64>, Vec<String>, bool) {
    let mut samples = BTreeMap::new();
    let mut types = Vec::new();
    for line in body.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            types.push(t.to_owned());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let value: f64 = value.parse().unwrap_or_else(|e| panic!("{e}: {line}"));
        samples.insert((name.to_owned(), labels.to_owned()), value);
    }
    (samples, types, body.trim_end().ends_with("# EOF"))
}

/// A GET of `path` at `addr`: the status line, the headers and the body.
fn get(addr: &str, path: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap();
    (status.to_owned(), headers.to_owned(), body.to_owned())
}

#[test]
fn monitor_serves_the_counters_to_prometheus() {
    let d = Domain::new("prometheus");
    let sub = d.spawn(&["sub", "demo/prom", "--create", "--count", "100"]);
    d.service("demo/prom");
    let pub_ = d.spawn(&[
        "pub",
        "demo/prom",
        "tick",
        "--repeat",
        "100",
        "--interval",
        "20",
        "--wait-subscribers",
        "1",
    ]);
    // Some samples sent (the publisher goes on for two seconds).
    d.until("samples sent", || {
        let o = d.run(&["inspect", "demo/prom", "--json"]);
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .is_ok_and(|v| v["publishers"][0]["counters"]["sent"].as_u64() > Some(0))
    });
    let mut monitor = d.spawn(&["monitor", "--prometheus", "127.0.0.1:0"]);
    let mut first = String::new();
    BufReader::new(monitor.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{first}");

    let (status, headers, body) = get(&addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(
        headers.contains("application/openmetrics-text"),
        "{headers}"
    );
    let (samples, types, eof) = parse(&body);
    assert!(eof, "{body}");
    assert!(types.contains(&"hako_sent counter".to_owned()), "{body}");
    assert!(types.contains(&"hako_ports gauge".to_owned()), "{body}");
    let of = |name: &str, role: &str| -> Vec<f64> {
        samples
            .iter()
            .filter(|((n, l), _)| {
                n == name
                    && l.contains("service=\"demo/prom\"")
                    && l.contains(&format!("role=\"{role}\""))
            })
            .map(|(_, v)| *v)
            .collect()
    };
    // One publisher and one subscriber, both counting.
    let sent = of("hako_sent_total", "publisher");
    assert!(sent.len() == 1 && sent[0] >= 1.0, "{body}");
    let received = of("hako_received_total", "subscriber");
    assert!(received.len() == 1 && received[0] >= 1.0, "{body}");
    assert_eq!(of("hako_dropped_total", "subscriber"), [0.0], "{body}");
    assert_eq!(
        of("hako_ports", "publisher").iter().sum::<f64>(),
        1.0,
        "{body}"
    );
    let alive: f64 = samples
        .iter()
        .filter(|((n, l), _)| n == "hako_nodes" && l.contains("alive"))
        .map(|(_, v)| *v)
        .sum();
    assert!(alive >= 1.0, "{body}");
    // Anything else is not found.
    let (status, _, _) = get(&addr, "/nope");
    assert!(status.contains("404"), "{status}");

    // SIGTERM ends it cleanly.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(monitor.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let o = wait(monitor);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(wait(pub_).status.success());
    assert!(wait(sub).status.success());
}
