//! `hako hz` on a service in use: the rate and intervals of a publisher's
//! samples from another process, and a backpressure publisher that `hz`
//! never holds back (what it cannot keep up with is counted as missed).

use std::time::{Duration, Instant};

use hako::{NodeBuilder, OverflowPolicy};
use serde_json::Value;

use super::{text, wait, Domain, WATCHDOG};

fn reports(out: &[u8]) -> Vec<Value> {
    text(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn hz_reports_the_rate_and_intervals() {
    let d = Domain::new("hz");
    let pub_ = d.spawn(&[
        "pub",
        "demo/hz",
        "tick",
        "--create",
        "--repeat",
        "200",
        "--interval",
        "5",
        "--wait-subscribers",
        "1",
    ]);
    d.service("demo/hz");
    let o = d.run(&[
        "hz",
        "demo/hz",
        "--interval",
        "0.3",
        "--count",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = reports(&o.stdout);
    assert_eq!(r.len(), 2, "{}", text(&o.stdout));
    let last = &r[1];
    assert_eq!(last["service"], "demo/hz");
    assert!(last["received"].as_u64().unwrap() >= 2, "{last}");
    assert!(last["window"].as_u64().unwrap() >= 2, "{last}");
    assert!(last["rate_hz"].as_f64().unwrap() > 0.0, "{last}");
    let (min, mean, max) = (
        last["min_s"].as_f64().unwrap(),
        last["mean_s"].as_f64().unwrap(),
        last["max_s"].as_f64().unwrap(),
    );
    assert!(0.0 <= min && min <= mean && mean <= max, "{last}");
    assert!(last["std_dev_s"].as_f64().unwrap() >= 0.0, "{last}");
    assert_eq!(last["missed"], 0, "{last}");
    // From the counters: no subscriber of its own.
    let o = d.run(&[
        "hz",
        "demo/hz",
        "--counters",
        "--interval",
        "0.2",
        "--count",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = reports(&o.stdout);
    assert_eq!(r.len(), 2, "{}", text(&o.stdout));
    assert_eq!(r[1]["from"], "counters");
    assert_eq!(r[1]["publishers"], 1, "{}", r[1]);
    assert!(r[1]["rate_hz"].as_f64().unwrap() > 0.0, "{}", r[1]);
    assert!(wait(pub_).status.success());

    // Text, and a service that does not exist.
    let o = d.run(&["hz", "demo/none", "--count", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("does not exist"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn hz_never_holds_a_backpressure_publisher_back() {
    let d = Domain::new("hz-backpressure");
    let node = NodeBuilder::new()
        .name("hz-publisher")
        .unwrap()
        .config(&hako::Config::default().with_root(&d.0))
        .signal_handling(false)
        .create()
        .unwrap();
    let service = node
        .service_builder(&"demo/fast".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(2)
        .create()
        .unwrap();
    let publisher = service.publisher_builder().create().unwrap();
    let hz = d.spawn(&[
        "hz",
        "demo/fast",
        "--interval",
        "0.5",
        "--count",
        "5",
        "--json",
    ]);
    let start = Instant::now();
    while {
        publisher.update_connections();
        publisher.subscriber_count() == 0
    } {
        assert!(start.elapsed() < WATCHDOG, "hz never subscribed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // As fast as it can: a subscriber that held it back would make a send
    // wait (backpressure) and this loop would never end.
    for i in 0..100_000u64 {
        publisher.send_copy(i).unwrap();
    }
    let o = wait(hz);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let last = reports(&o.stdout).pop().unwrap();
    let (received, missed) = (
        last["received"].as_u64().unwrap(),
        last["missed"].as_u64().unwrap(),
    );
    assert!(received > 0, "{last}");
    // Every sample was either received or counted as missed.
    assert_eq!(received + missed, 100_000, "{last}");
}
