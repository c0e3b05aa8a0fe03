//! Publish/subscribe across hosts, as two or three hako domains on this
//! machine joined by `hako-bridge` processes over loopback.

mod common;
use common::*;

#[test]
fn samples_cross_both_ways_once_each() {
    let (a, b, _bridges) = joined("ps", &[]);
    let name: hako::ServiceName = "t/ps".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(512)
        .open_or_create()
        .unwrap();
    let pub_a = sa.publisher_builder().create().unwrap();
    let sub_a = sa.subscriber_builder().create().unwrap();
    b.wait_for_service("t/ps");
    let sb = b
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .open()
        .unwrap();
    // The copy has the original's settings.
    assert_eq!(sb.description().pattern, sa.description().pattern);
    let sub_b = sb.subscriber_builder().create().unwrap();
    // A to B: every sample, once.
    let got = stream(&pub_a, &sub_b, 300);
    exactly_once(&got);
    // A's own subscriber got them once too: nothing came back from B.
    let mut local = Vec::new();
    while let Some(s) = sub_a.receive().unwrap() {
        local.push(*s);
    }
    exactly_once(&local);
    // B to A, through the same service.
    let pub_b = sb.publisher_builder().create().unwrap();
    let got = stream(&pub_b, &sub_a, 300);
    exactly_once(&got);
}

#[test]
fn slices_of_any_length_and_structs_keep_their_bytes() {
    let (a, b, _bridges) = joined("slices", &[]);
    let name: hako::ServiceName = "t/frames".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&name)
        .publish_subscribe::<[u32]>()
        .open_or_create()
        .unwrap();
    let publisher = sa
        .publisher_builder()
        .max_slice_len(1 << 18)
        .create()
        .unwrap();
    b.wait_for_service("t/frames");
    let sb = b
        .node
        .service_builder(&name)
        .publish_subscribe::<[u32]>()
        .open()
        .unwrap();
    let sub = sb.subscriber_builder().create().unwrap();
    // Links first: a short one until it crosses.
    let start = std::time::Instant::now();
    loop {
        assert!(start.elapsed() < WATCHDOG, "watchdog: nothing crossed");
        publisher.send_slice_copy(&[0]).unwrap();
        if sub
            .receive_timeout(std::time::Duration::from_millis(20))
            .unwrap()
            .is_some()
        {
            break;
        }
    }
    while sub.receive().unwrap().is_some() {}
    // Longer than the bridge's first publisher holds: it makes a larger one.
    for len in [1usize, 3, 1000, 100_000, 1 << 18] {
        let data: Vec<u32> = (0..len as u32)
            .map(|i| i.wrapping_mul(2654435761))
            .collect();
        publisher.send_slice_copy(&data).unwrap();
        let s = loop {
            if let Some(s) = sub
                .receive_timeout(std::time::Duration::from_millis(100))
                .unwrap()
            {
                break s;
            }
        };
        assert_eq!(&s[..], &data[..], "a slice of {len}");
    }
}

#[test]
fn a_ring_of_three_domains_delivers_each_sample_once() {
    let p = prefix("ring");
    let d: Vec<Domain> = ["a", "b", "c"]
        .iter()
        .map(|n| Domain::new("ring", n))
        .collect();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    // A ring: a <- b <- c <- a (each connects to the one before it).
    let _bridges: Vec<_> = (0..3)
        .map(|i| bridge(&d[i], &p, ports[i], &[ports[(i + 2) % 3]], &[]))
        .collect();
    let name: hako::ServiceName = "t/ring".try_into().unwrap();
    let open = |dom: &Domain| {
        dom.node
            .service_builder(&name)
            .publish_subscribe::<u64>()
            .subscriber_max_buffer_size(512)
            .open_or_create()
            .unwrap()
    };
    let s0 = open(&d[0]);
    let publisher = s0.publisher_builder().create().unwrap();
    d[1].wait_for_service("t/ring");
    d[2].wait_for_service("t/ring");
    let subs: Vec<_> = d
        .iter()
        .map(|dom| open(dom).subscriber_builder().create().unwrap())
        .collect();
    // Each domain's subscriber gets each sample once: B and C from A
    // directly or through the other, never both, and A none back.
    for (i, sub) in subs.iter().enumerate().skip(1) {
        let got = stream(&publisher, sub, 200);
        exactly_once(&got);
        for (j, other) in subs.iter().enumerate() {
            if j != i {
                let mut rest = Vec::new();
                while let Some(s) = other.receive().unwrap() {
                    rest.push(*s);
                }
                exactly_once(&rest);
            }
        }
    }
}

/// A publisher and its bridge start first; then, in another domain, a
/// subscriber and its bridge. Once the publisher counts the bridge's
/// subscriber, every sample it sends crosses, from the first.
fn first_samples_cross(test: &str, overflow: hako::OverflowPolicy) {
    let p = prefix(test);
    let (a, b) = (Domain::new(test, "a"), Domain::new(test, "b"));
    let (pa, pb) = (free_port(), free_port());
    let name: hako::ServiceName = "t/first".try_into().unwrap();
    let open = |node: &hako::Node| {
        node.service_builder(&name)
            .publish_subscribe::<u64>()
            .subscriber_max_buffer_size(512)
            .overflow_policy(overflow)
            .open_or_create()
            .unwrap()
    };
    let publisher = open(&a.node).publisher_builder().create().unwrap();
    let _ba = bridge(&a, &p, pa, &[], &[]);
    // A's bridge has found the service (a scan is 50 ms) before B starts.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sub = open(&b.node).subscriber_builder().create().unwrap();
    let _bb = bridge(&b, &p, pb, &[pa], &[]);
    wait_until("the publisher counts a subscriber", || {
        publisher.subscriber_count() >= 1
    });
    let n = 200u64;
    for seq in 0..n {
        publisher.send_copy(seq).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut got = Vec::new();
    wait_until("the last sample", || {
        while let Some(s) = sub.receive().unwrap() {
            got.push(*s);
        }
        got.last() == Some(&(n - 1))
    });
    assert_eq!(
        got.first(),
        Some(&0),
        "the first samples were lost: {got:?}"
    );
    exactly_once(&got);
}

#[test]
fn once_the_publisher_counts_the_bridge_every_sample_crosses() {
    first_samples_cross("first-do", hako::OverflowPolicy::DropOldest);
}

#[test]
fn once_the_publisher_counts_the_bridge_every_sample_of_a_backpressure_service_crosses() {
    first_samples_cross("first-bp", hako::OverflowPolicy::Backpressure);
}
