//! Payloads that travel in the queue slot (`PublisherBuilder::inline_payloads`,
//! on by default for payloads of at most 48 bytes aligned to at most 8):
//! every quality of service keeps its meaning. The publisher and the
//! subscribers live in nodes of their own, as separate programs would.

mod common;
use common::Root;

use hako::{OverflowPolicy, PubSubService, ShmSafe};

/// Six words: the largest fixed payload a slot carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ShmSafe)]
#[repr(C)]
struct Pose {
    seq: u64,
    x: u64,
    y: u64,
    z: u64,
    stamp: u64,
    check: u64,
}

impl Pose {
    fn new(seq: u64) -> Self {
        Self {
            seq,
            x: seq * 3,
            y: !seq,
            z: seq << 7,
            stamp: seq ^ 0x5a5a,
            check: seq.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        }
    }
}

fn service(node: &hako::Node, name: &str, history: u32, buffer: u32) -> PubSubService<Pose> {
    node.service_builder(&name.try_into().unwrap())
        .publish_subscribe::<Pose>()
        .history_size(history)
        .subscriber_max_buffer_size(buffer)
        .subscriber_max_borrowed_samples(4)
        .max_subscribers(4)
        .open_or_create()
        .unwrap()
}

#[test]
fn held_samples_keep_their_values_while_the_queue_moves_on() {
    let root = Root::new("inline-held");
    let (a, b) = (root.node(), root.node());
    let publisher = service(&a, "test/held", 0, 2)
        .publisher_builder()
        .create()
        .unwrap();
    let subscriber = service(&b, "test/held", 0, 2)
        .subscriber_builder()
        .create()
        .unwrap();
    let mut held = Vec::new();
    for seq in 0..4 {
        publisher.send_copy(Pose::new(seq)).unwrap();
        held.push(subscriber.receive().unwrap().expect("sent"));
    }
    // The queue (two slots) went round twice under the held samples.
    for _ in 0..10 {
        publisher.send_copy(Pose::new(99)).unwrap();
        let _ = subscriber.receive();
    }
    for (seq, s) in held.iter().enumerate() {
        assert_eq!(**s, Pose::new(seq as u64));
    }
    // Held samples count against the borrow limit as chunks do.
    publisher.send_copy(Pose::new(5)).unwrap();
    assert!(
        subscriber.receive().is_err(),
        "a fifth borrowed sample is refused"
    );
    drop(held);
    assert!(subscriber.receive().is_ok());
}

#[test]
fn every_subscriber_and_a_late_one_get_the_same_values() {
    let root = Root::new("inline-fan");
    let (a, b, c) = (root.node(), root.node(), root.node());
    let svc = service(&a, "test/fan", 3, 8);
    let publisher = svc.publisher_builder().create().unwrap();
    let first = service(&b, "test/fan", 3, 8)
        .subscriber_builder()
        .create()
        .unwrap();
    let second = svc.subscriber_builder().create().unwrap();
    for seq in 0..6 {
        assert_eq!(publisher.send_copy(Pose::new(seq)).unwrap(), 2);
    }
    for sub in [&first, &second] {
        let got: Vec<Pose> = std::iter::from_fn(|| sub.receive().unwrap().map(|s| *s)).collect();
        assert_eq!(got, (0..6).map(Pose::new).collect::<Vec<_>>());
    }
    // The history (the last three) reaches a subscriber that comes later,
    // in the slots too.
    let late = service(&c, "test/fan", 3, 8)
        .subscriber_builder()
        .create()
        .unwrap();
    publisher.update_connections();
    let got: Vec<Pose> = std::iter::from_fn(|| late.receive().unwrap().map(|s| *s)).collect();
    assert_eq!(got, (3..6).map(Pose::new).collect::<Vec<_>>());
}

#[test]
fn drop_oldest_keeps_the_newest() {
    let root = Root::new("inline-drop");
    let (a, b) = (root.node(), root.node());
    let svc = a
        .service_builder(&"test/drop".try_into().unwrap())
        .publish_subscribe::<Pose>()
        .overflow_policy(OverflowPolicy::DropOldest)
        .subscriber_max_buffer_size(3)
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let subscriber = b
        .service_builder(&"test/drop".try_into().unwrap())
        .publish_subscribe::<Pose>()
        .open()
        .unwrap()
        .subscriber_builder()
        .create()
        .unwrap();
    for seq in 0..100 {
        publisher.send_copy(Pose::new(seq)).unwrap();
    }
    let got: Vec<Pose> = std::iter::from_fn(|| subscriber.receive().unwrap().map(|s| *s)).collect();
    assert_eq!(got, (97..100).map(Pose::new).collect::<Vec<_>>());
}

#[test]
fn slices_of_every_length_up_to_the_slot_come_through() {
    let root = Root::new("inline-slices");
    let (a, b) = (root.node(), root.node());
    let name = "test/slices".try_into().unwrap();
    let svc = a
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().max_slice_len(48).create().unwrap();
    let subscriber = b
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .open()
        .unwrap()
        .subscriber_builder()
        .create()
        .unwrap();
    for len in 0..=48usize {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        publisher.send_slice_copy(&bytes).unwrap();
        let s = subscriber.receive().unwrap().expect("sent");
        assert_eq!(&*s, &bytes[..], "{len} bytes");
    }
}

#[test]
fn inline_and_chunked_publishers_share_a_service() {
    // One publisher carries its payloads in the slots, the other (as
    // asked, and one of a type aligned to 16 always) in its pool; a
    // subscriber of each service reads both the same way.
    let root = Root::new("inline-mixed");
    let (a, b) = (root.node(), root.node());
    let svc = service(&a, "test/mixed", 0, 8);
    let inline = svc.publisher_builder().create().unwrap();
    let chunked = svc
        .publisher_builder()
        .inline_payloads(false)
        .create()
        .unwrap();
    let subscriber = service(&b, "test/mixed", 0, 8)
        .subscriber_builder()
        .create()
        .unwrap();
    for seq in 0..10 {
        let p = if seq % 2 == 0 { &inline } else { &chunked };
        p.send_copy(Pose::new(seq)).unwrap();
    }
    let mut got: Vec<u64> =
        std::iter::from_fn(|| subscriber.receive().unwrap().map(|s| s.seq)).collect();
    got.sort_unstable();
    assert_eq!(got, (0..10).collect::<Vec<_>>());

    let wide = a
        .service_builder(&"test/wide".try_into().unwrap())
        .publish_subscribe::<u128>()
        .open_or_create()
        .unwrap();
    let publisher = wide.publisher_builder().create().unwrap();
    let subscriber = wide.subscriber_builder().create().unwrap();
    publisher.send_copy(u128::MAX - 5).unwrap();
    assert_eq!(*subscriber.receive().unwrap().unwrap(), u128::MAX - 5);
}
