//! Events and request/response across hosts (two hako domains on this
//! machine, joined by `hako-bridge` processes over loopback).

mod common;
use std::time::{Duration, Instant};

use common::*;
use hako::EventId;

/// Totals per event id a listener counts until `until` holds of them.
fn count_events(
    listener: &hako::Listener,
    totals: &mut std::collections::BTreeMap<u64, u64>,
    until: impl Fn(&std::collections::BTreeMap<u64, u64>) -> bool,
) {
    let start = Instant::now();
    while !until(totals) {
        assert!(start.elapsed() < WATCHDOG, "watchdog: events {totals:?}");
        for (EventId(id), n) in listener.timed_wait(Duration::from_millis(20)).unwrap() {
            *totals.entry(id).or_default() += n;
        }
    }
}

#[test]
fn events_cross_with_their_ids_and_counts_and_never_come_back() {
    let (a, b, _bridges) = joined("ev", &[]);
    let name: hako::ServiceName = "t/ev".try_into().unwrap();
    let ea = a
        .node
        .service_builder(&name)
        .event()
        .event_id_max(15)
        .open_or_create()
        .unwrap();
    let notifier = ea.notifier_builder().create().unwrap();
    let listener_a = ea.listener_builder().create().unwrap();
    b.wait_for_service("t/ev");
    let eb = b.node.service_builder(&name).event().open().unwrap();
    assert_eq!(eb.description().pattern, ea.description().pattern);
    let listener_b = eb.listener_builder().create().unwrap();
    // Until the link stands, id 0 now and then.
    let mut seen = std::collections::BTreeMap::<u64, u64>::new();
    let mut warm = 0u64;
    let start = Instant::now();
    while seen.is_empty() {
        assert!(start.elapsed() < WATCHDOG, "watchdog: no event crossed");
        notifier.notify_with_id(EventId(0)).unwrap();
        warm += 1;
        for (EventId(id), n) in listener_b.timed_wait(Duration::from_millis(20)).unwrap() {
            *seen.entry(id).or_default() += n;
        }
    }
    let mut totals = std::collections::BTreeMap::new();
    for _ in 0..5 {
        notifier.notify_with_id(EventId(3)).unwrap();
    }
    for _ in 0..2 {
        notifier.notify_with_id(EventId(15)).unwrap();
    }
    count_events(&listener_b, &mut totals, |t| {
        t.get(&3) == Some(&5) && t.get(&15) == Some(&2)
    });
    // A's own listener counted each event once: none came back.
    let mut local = std::collections::BTreeMap::new();
    count_events(&listener_a, &mut local, |t| {
        t.get(&3) == Some(&5) && t.get(&15) == Some(&2) && t.get(&0) == Some(&warm)
    });
    std::thread::sleep(Duration::from_millis(300));
    let more = listener_a.try_wait();
    assert!(more.is_empty(), "events came back: {more:?}");
    let more: Vec<_> = listener_b
        .try_wait()
        .into_iter()
        .filter(|(id, _)| id.0 != 0)
        .collect();
    assert!(more.is_empty(), "events doubled: {more:?}");
    // And B to A.
    let notifier_b = eb.notifier_builder().create().unwrap();
    notifier_b.notify_with_id(EventId(7)).unwrap();
    let mut back = std::collections::BTreeMap::new();
    count_events(&listener_a, &mut back, |t| t.get(&7) == Some(&1));
}

/// A server that answers each request `x` with the stream `x, x+1, x+2`,
/// until `stop`.
fn serve(server: hako::Server<u64, u64>, stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(r) = server.receive_timeout(Duration::from_millis(20)).unwrap() {
            let x = *r;
            for k in 0..3 {
                r.send_copy(x + k).unwrap();
            }
        }
    }
}

#[test]
fn requests_cross_and_response_streams_come_back_whole() {
    let (a, b, _bridges) = joined("rr", &[]);
    let name: hako::ServiceName = "t/rr".try_into().unwrap();
    let ra = a
        .node
        .service_builder(&name)
        .request_response::<u64, u64>()
        .open_or_create()
        .unwrap();
    let server = ra.server_builder().create().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| serve(server, &stop));
        b.wait_for_server("t/rr");
        let rb = b
            .node
            .service_builder(&name)
            .request_response::<u64, u64>()
            .open()
            .unwrap();
        let client = rb.client_builder().create().unwrap();
        // Until the link forwards (a request sent before it stands finds
        // no server here and fails, or is given up on).
        let start = Instant::now();
        let first = loop {
            assert!(start.elapsed() < WATCHDOG, "watchdog: no request crossed");
            let Ok(pending) = client.send_copy(100) else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let mut got = Vec::new();
            let ok = loop {
                match pending.receive_timeout(Duration::from_secs(5)) {
                    Ok(Some(r)) => got.push(*r),
                    Ok(None) if pending.is_finished() => break true,
                    Ok(None) => {}
                    Err(_) => break false,
                }
            };
            if ok {
                break got;
            }
        };
        assert_eq!(first, vec![100, 101, 102]);
        for x in [7u64, 1000, u64::MAX - 2] {
            let pending = client.send_copy(x).unwrap();
            let mut got = Vec::new();
            while let Some(r) = pending.blocking_receive().unwrap() {
                got.push(*r);
            }
            assert_eq!(got, vec![x, x + 1, x + 2]);
            assert!(pending.is_finished());
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

#[test]
fn a_long_stream_holds_up_no_other_request_across_the_bridge() {
    // A server in A holds request 0 until it has answered request 1 (or
    // gives up after a while): only bridges that carry requests
    // concurrently, both ways, let request 1 through meanwhile.
    let (a, b, _bridges) = joined("many", &[]);
    let name: hako::ServiceName = "t/many".try_into().unwrap();
    let open = |node: &hako::Node| {
        node.service_builder(&name)
            .request_response::<u64, u64>()
            .max_requests_in_flight(4)
            .open_or_create()
            .unwrap()
    };
    let server = open(&a.node).server_builder().create().unwrap();
    let answering = std::thread::spawn(move || {
        let mut held = None;
        let start = Instant::now();
        while start.elapsed() < WATCHDOG {
            let Some(r) = server.receive_timeout(Duration::from_millis(20)).unwrap() else {
                continue;
            };
            match *r {
                0 => held = Some(r),
                1 => {
                    // The other request came while the first is held.
                    let overlapped = held.is_some();
                    r.send_last_copy(11).unwrap();
                    if let Some(h) = held.take() {
                        h.send_last_copy(10).unwrap();
                    }
                    return overlapped;
                }
                x => r.send_last_copy(x).unwrap(), // the link's warm-up
            }
        }
        false
    });
    b.wait_for_server("t/many");
    let client = open(&b.node).client_builder().create().unwrap();
    // Until the link forwards.
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < WATCHDOG, "watchdog: no request crossed");
        if let Ok(p) = client.send_copy(2) {
            if let Ok(Some(r)) = p.receive_timeout(Duration::from_secs(5)) {
                assert_eq!(*r, 2);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let slow = client.send_copy(0).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let fast = client.send_copy(1).unwrap();
    assert_eq!(fast.blocking_receive().unwrap().map(|r| *r), Some(11));
    assert_eq!(slow.blocking_receive().unwrap().map(|r| *r), Some(10));
    assert!(
        answering.join().unwrap(),
        "request 1 reached the server only after request 0 ended"
    );
}

#[test]
fn a_service_whose_type_differs_across_hosts_is_not_bridged_and_the_bridge_says_why() {
    use std::io::BufRead;
    let p = prefix("mismatch");
    let (a, b) = (Domain::new("mismatch", "a"), Domain::new("mismatch", "b"));
    let (pa, pb) = (free_port(), free_port());
    let name: hako::ServiceName = "t/mismatch".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let publisher = sa.publisher_builder().create().unwrap();
    // The same name in B, another type.
    let sb = b
        .node
        .service_builder(&name)
        .publish_subscribe::<u32>()
        .open_or_create()
        .unwrap();
    let sub = sb.subscriber_builder().create().unwrap();
    // Both exist before the bridges start (else a bridge could make one
    // host's copy first, and the other type would not open at all).
    let _ba = bridge(&a, &p, pa, &[], &[]);
    let mut bb = bridge_with(&b, &p, pb, &[pa], &[], std::process::Stdio::piped());
    let log = std::io::BufReader::new(bb.child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in log.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let start = Instant::now();
    let said = loop {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: the bridge never said why"
        );
        publisher.send_copy(1).unwrap();
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            if line.contains("t/mismatch") && line.contains("differs") {
                break line;
            }
        }
    };
    assert!(said.contains("u64") && said.contains("u32"), "{said}");
    // Nothing crossed into the u32 service.
    assert!(sub.receive().unwrap().is_none());
}

#[test]
fn once_the_notifier_counts_the_bridge_every_event_crosses() {
    let p = prefix("ev-first");
    let (a, b) = (Domain::new("ev-first", "a"), Domain::new("ev-first", "b"));
    let (pa, pb) = (free_port(), free_port());
    let name: hako::ServiceName = "t/ev-first".try_into().unwrap();
    let open = |node: &hako::Node| {
        node.service_builder(&name)
            .event()
            .event_id_max(7)
            .open_or_create()
            .unwrap()
    };
    let notifier = open(&a.node).notifier_builder().create().unwrap();
    let _ba = bridge(&a, &p, pa, &[], &[]);
    // A's bridge has found the service before B starts.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(notifier.listener_count(), 0, "nobody listens anywhere yet");
    let listener = open(&b.node).listener_builder().create().unwrap();
    let _bb = bridge(&b, &p, pb, &[pa], &[]);
    wait_until("the notifier counts a listener", || {
        notifier.listener_count() >= 1
    });
    notifier.notify_with_id(EventId(5)).unwrap();
    let mut totals = std::collections::BTreeMap::new();
    count_events(&listener, &mut totals, |t| t.get(&5) == Some(&1));
    assert_eq!(totals.len(), 1, "{totals:?}");
}
