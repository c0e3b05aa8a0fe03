//! Bridges that crash, restart or stand by; a host that vanishes in the
//! middle of a request; and a plain Zenoh program taking part.

mod common;
use std::time::{Duration, Instant};

use common::*;
use zenoh::Wait;

fn pubsub(dom: &Domain, name: &str) -> hako::PubSubService<u64> {
    dom.node
        .service_builder(&name.try_into().unwrap())
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(512)
        .open_or_create()
        .unwrap()
}

#[test]
fn a_killed_bridge_restarts_and_the_services_resume() {
    let p = prefix("restart");
    let (a, b) = (Domain::new("restart", "a"), Domain::new("restart", "b"));
    let (pa, pb) = (free_port(), free_port());
    let _ba = bridge(&a, &p, pa, &[], &[]);
    let bb = bridge(&b, &p, pb, &[pa], &[]);
    let publisher = pubsub(&a, "t/restart")
        .publisher_builder()
        .create()
        .unwrap();
    b.wait_for_service("t/restart");
    let sub = pubsub(&b, "t/restart")
        .subscriber_builder()
        .create()
        .unwrap();
    exactly_once(&stream(&publisher, &sub, 50));
    // B's bridge crashes; its publisher in B is reclaimed; a new bridge
    // takes over and the same subscriber goes on receiving.
    bb.kill();
    let _bb = bridge(&b, &p, free_port(), &[pa], &[]);
    let got = stream(&publisher, &sub, 50);
    exactly_once(&got);
}

#[test]
fn a_second_bridge_of_a_domain_stands_by_and_takes_over() {
    let p = prefix("standby");
    let (a, b) = (Domain::new("standby", "a"), Domain::new("standby", "b"));
    let (pa, pa2, pb) = (free_port(), free_port(), free_port());
    let first = bridge(&a, &p, pa, &[], &[]);
    // Give the first the domain's lock before the second starts.
    std::thread::sleep(Duration::from_millis(500));
    let _second = bridge(&a, &p, pa2, &[pb], &[]);
    let _bb = bridge(&b, &p, pb, &[pa], &[]);
    let publisher = pubsub(&a, "t/standby")
        .publisher_builder()
        .create()
        .unwrap();
    b.wait_for_service("t/standby");
    let sub = pubsub(&b, "t/standby")
        .subscriber_builder()
        .create()
        .unwrap();
    // Two bridges on A, each sample once.
    exactly_once(&stream(&publisher, &sub, 100));
    // The active one stops; the stand-by (which reaches B through its own
    // connection) carries on, each sample still once.
    first.stop();
    exactly_once(&stream(&publisher, &sub, 100));
}

#[test]
fn a_request_to_a_vanished_host_ends_with_an_error() {
    let p = prefix("vanish");
    let (a, b) = (Domain::new("vanish", "a"), Domain::new("vanish", "b"));
    let (pa, pb) = (free_port(), free_port());
    let ba = bridge(&a, &p, pa, &[], &[]);
    let _bb = bridge(&b, &p, pb, &[pa], &["--query-timeout", "3000"]);
    let name: hako::ServiceName = "t/vanish".try_into().unwrap();
    let ra = a
        .node
        .service_builder(&name)
        .request_response::<u64, u64>()
        .open_or_create()
        .unwrap();
    // A server that answers once and then holds every request.
    let server = ra.server_builder().create().unwrap();
    b.wait_for_server("t/vanish");
    let rb = b
        .node
        .service_builder(&name)
        .request_response::<u64, u64>()
        .open()
        .unwrap();
    let client = rb.client_builder().create().unwrap();
    let pending = client.send_copy(1).unwrap();
    let start = Instant::now();
    let request = loop {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: the request never came"
        );
        if let Some(r) = server.receive_timeout(Duration::from_millis(20)).unwrap() {
            break r;
        }
    };
    request.send_copy(10).unwrap();
    // The response crosses; then A's bridge dies with the request open.
    assert_eq!(pending.blocking_receive().unwrap().map(|r| *r), Some(10));
    ba.kill();
    match pending.blocking_receive() {
        Err(hako::ReqResReceiveError::Aborted) => {}
        other => panic!("expected Aborted, got {other:?}"),
    }
    assert!(pending.is_finished());
    drop(request);
}

#[test]
fn a_plain_zenoh_program_subscribes_and_publishes() {
    let p = prefix("plain");
    let a = Domain::new("plain", "a");
    let pa = free_port();
    let _ba = bridge(&a, &p, pa, &[], &[]);
    let svc = pubsub(&a, "t/plain");
    let publisher = svc.publisher_builder().create().unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    let mut config = zenoh::Config::default();
    config
        .insert_json5("connect/endpoints", &format!("[\"{}\"]", endpoint(pa)))
        .unwrap();
    config
        .insert_json5("scouting/multicast/enabled", "false")
        .unwrap();
    let session = zenoh::open(config).wait().unwrap();
    let key = format!("{p}/pubsub/t/plain");
    let zsub = session.declare_subscriber(&key).wait().unwrap();
    // hako -> Zenoh: a u64 is its 8 bytes, little-endian on this machine.
    let start = Instant::now();
    let mut seq = 0u64;
    let first = loop {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: nothing reached Zenoh"
        );
        publisher.send_copy(seq).unwrap();
        seq += 1;
        if let Ok(Some(s)) = zsub.recv_timeout(Duration::from_millis(20)) {
            break s;
        }
    };
    let bytes = first.payload().to_bytes();
    assert_eq!(bytes.len(), 8);
    assert!(u64::from_le_bytes(bytes[..].try_into().unwrap()) < seq);
    // Zenoh -> hako: 8 bytes put on the key arrive as a u64.
    while sub.receive().unwrap().is_some() {}
    let start = Instant::now();
    let got = loop {
        assert!(start.elapsed() < WATCHDOG, "watchdog: nothing reached hako");
        session
            .put(&key, 4242u64.to_le_bytes().to_vec())
            .wait()
            .unwrap();
        if let Some(s) = sub.receive_timeout(Duration::from_millis(20)).unwrap() {
            if *s == 4242 {
                break *s;
            }
        }
    };
    assert_eq!(got, 4242);
    // A message that does not fit the type is dropped, not delivered.
    session.put(&key, vec![1u8, 2, 3]).wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    while let Some(s) = sub.receive().unwrap() {
        assert_eq!(*s, 4242, "only whole u64 values arrive");
    }
    session.close().wait().unwrap();
}

#[test]
fn a_full_local_subscriber_loses_bridged_samples_counted_without_stalling_the_bridge() {
    let (a, b, _bridges) = joined("full", &[]);
    let name: hako::ServiceName = "t/full".try_into().unwrap();
    let open = |dom: &Domain| {
        dom.node
            .service_builder(&name)
            .publish_subscribe::<u64>()
            .subscriber_max_buffer_size(16)
            .open_or_create()
            .unwrap()
    };
    let publisher = open(&a).publisher_builder().create().unwrap();
    b.wait_for_service("t/full");
    let sb = open(&b);
    // One subscriber in B never reads; another reads along.
    let _stuck = sb.subscriber_builder().create().unwrap();
    let reader = sb.subscriber_builder().create().unwrap();
    // The reader gets the last sample: the stuck one stalls nothing. (On
    // a loaded machine the reader may fall behind too and lose its
    // oldest: in order and never twice is what holds.)
    let got = stream(&publisher, &reader, 200);
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "in order, once: {got:?}"
    );
    // The bridge's publisher in B counted what the stuck subscriber lost
    // (as `hako monitor` and `hako inspect` show it).
    let cfg = hako::Config::default().with_root(&b.root);
    let info = hako::inspect::service(&cfg, &name).unwrap();
    let dropped: u64 = info
        .publishers
        .iter()
        .map(|port| match port.counters {
            hako::inspect::PortCounters::Publisher { dropped, .. } => dropped,
            _ => 0,
        })
        .sum();
    assert!(
        dropped >= 100,
        "the bridge publisher counted {dropped} dropped"
    );
}
