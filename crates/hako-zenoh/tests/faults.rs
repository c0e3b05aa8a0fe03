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
fn a_plain_zenoh_program_subscribes_and_publishes() {
    let p = prefix("plain");
    let a = Domain::new("plain", "a");
    let pa = free_port();
    let _ba = bridge(&a, &p, pa, &[], &[]);
    let svc = pubsub(&a, "t/plain");
    let publisher = svc.publisher_builder().create().unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    let session = plain_session(pa);
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
    full_local_subscriber("full", hako::OverflowPolicy::DropOldest, 16, 200);
}

#[test]
fn a_full_local_subscriber_of_a_backpressure_service_loses_bridged_samples_counted() {
    // The bridge's publisher discards what the stuck subscriber cannot
    // take rather than wait for it; the reader's queue holds more than it
    // may fall behind.
    full_local_subscriber("fullbp", hako::OverflowPolicy::Backpressure, 512, 1000);
}

/// A subscriber in B that never reads, another that reads along: the first
/// loses what its queue cannot hold, counted by the bridge's publisher in
/// B, and stalls nothing.
fn full_local_subscriber(test: &str, overflow: hako::OverflowPolicy, buffer: u32, n: u64) {
    let (a, b, _bridges) = joined(test, &[]);
    let name: hako::ServiceName = format!("t/{test}").as_str().try_into().unwrap();
    let open = |dom: &Domain| {
        dom.node
            .service_builder(&name)
            .publish_subscribe::<u64>()
            .overflow_policy(overflow)
            .subscriber_max_buffer_size(buffer)
            .open_or_create()
            .unwrap()
    };
    let publisher = open(&a).publisher_builder().create().unwrap();
    b.wait_for_service(name.as_str());
    let sb = open(&b);
    let _stuck = sb.subscriber_builder().create().unwrap();
    let reader = sb.subscriber_builder().create().unwrap();
    // The reader gets the last sample: the stuck one stalls nothing. (On
    // a loaded machine the reader may fall behind too and lose some: in
    // order and never twice is what holds.)
    let got = stream(&publisher, &reader, n);
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
    // The stuck subscriber lost all but `buffer` of what reached B (under
    // load a few may not have: samples the bridge in A fell behind on).
    let lost = n - u64::from(buffer);
    assert!(
        dropped >= lost / 2,
        "the bridge publisher counted {dropped} dropped; the stuck subscriber lost about {lost}"
    );
}

#[test]
fn a_slow_network_never_holds_a_backpressure_service_back_and_every_loss_is_counted() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let p = prefix("slow");
    let a = Domain::new("slow", "a");
    let pa = free_port();
    let _ba = bridge(&a, &p, pa, &[], &[]);
    // A Zenoh reader slower than the network: its callback holds Zenoh's
    // receiving thread, so the link backs up to the bridge.
    let session = plain_session(pa);
    let received = Arc::new(AtomicU64::new(0));
    let counted = received.clone();
    let _zsub = session
        .declare_subscriber(format!("{p}/pubsub/t/slow"))
        .callback(move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(20));
        })
        .wait()
        .unwrap();
    // Backpressure, and a publisher that waits for room (Block, the
    // default): only the bridge subscribes, and it is never waited for.
    let name: hako::ServiceName = "t/slow".try_into().unwrap();
    const BYTES: usize = 512 << 10;
    let svc = a
        .node
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(2)
        .open_or_create()
        .unwrap();
    let publisher = svc
        .publisher_builder()
        .max_slice_len(BYTES)
        .create()
        .unwrap();
    let data = vec![7u8; BYTES];
    let cfg = hako::Config::default().with_root(&a.root);
    let dropped = || match hako::inspect::service(&cfg, &name).unwrap().publishers[0].counters {
        hako::inspect::PortCounters::Publisher { dropped, .. } => dropped,
        other => panic!("{other:?}"),
    };
    // The bridge's subscriber connected and the way to the reader open
    // (Zenoh drops what it has no route for yet); then a quiet moment, so
    // the count starts from here.
    wait_until("a first sample across", || {
        publisher.send_slice_copy(&data[..8]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        received.load(Ordering::Relaxed) > 0
    });
    std::thread::sleep(Duration::from_millis(500));
    let (received_before, dropped_before) = (received.load(Ordering::Relaxed), dropped());
    // 100 MB for a reader taking 50 samples a second: far more than the
    // link's buffers hold.
    const SENT: u64 = 200;
    for _ in 0..SENT {
        assert_eq!(publisher.send_slice_copy(&data).unwrap(), 1);
    }
    // Every sample reached the reader or was counted as the publisher's
    // overflow towards the bridge (`hako monitor` shows it): none lost
    // where no counter sees it.
    let start = std::time::Instant::now();
    let (mut got, mut lost) = (0, 0);
    while got + lost != SENT {
        assert!(
            start.elapsed() < WATCHDOG,
            "sent {SENT}: received {got}, counted {lost} dropped"
        );
        std::thread::sleep(Duration::from_millis(10));
        got = received.load(Ordering::Relaxed) - received_before;
        lost = dropped() - dropped_before;
    }
    assert!(lost > 0, "the network held nothing back");
    session.close().wait().unwrap();
}
