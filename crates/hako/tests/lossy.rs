//! Lossy subscribers (`SubscriberBuilder::lossy`): on a backpressure
//! service, publishers never wait for them; a full queue loses its oldest,
//! counted as overflow where inspectors see it, while the other
//! subscribers keep the backpressure they asked for. The publisher and the
//! subscribers live in nodes of their own, as separate programs would: the
//! mark travels in the service's shared table.

mod common;
use common::Root;

use hako::inspect::{self, PortCounters};
use hako::{BackpressureStrategy, OverflowPolicy, PubSubService};

fn service(node: &hako::Node) -> PubSubService<u64> {
    node.service_builder(&"test/lossy".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(2)
        .open_or_create()
        .unwrap()
}

/// A lossy subscriber of the service, in `node`.
fn lossy(node: &hako::Node) -> hako::Subscriber<u64> {
    service(node)
        .subscriber_builder()
        .lossy(true)
        .create()
        .unwrap()
}

fn drain(sub: &hako::Subscriber<u64>) -> Vec<u64> {
    std::iter::from_fn(|| sub.receive().unwrap().map(|s| *s)).collect()
}

#[test]
fn a_waiting_publisher_never_waits_for_a_lossy_subscriber() {
    let root = Root::new("lossy-block");
    let (here, there) = (root.node(), root.node());
    let forwarder = lossy(&there);
    let svc = service(&here);
    // Block, the default: with an ordinary subscriber that does not read,
    // the third send would wait for ever. (In a thread of its own, so that
    // a publisher that waits fails the test instead of hanging it.)
    let publisher = svc.publisher_builder().create().unwrap();
    let sending = std::thread::spawn(move || {
        for i in 0..100 {
            assert_eq!(publisher.send_copy(i).unwrap(), 1, "send {i}");
        }
        publisher
    });
    for _ in 0..30_000 {
        if sending.is_finished() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        sending.is_finished(),
        "the publisher waits for the lossy subscriber"
    );
    let publisher = sending.join().unwrap();
    // The newest two, in order; the 98 before them counted as overflow.
    assert_eq!(drain(&forwarder), vec![98, 99]);
    let info = inspect::service(&root.config(), svc.name()).unwrap();
    match info.publishers[0].counters {
        PortCounters::Publisher { dropped, .. } => assert_eq!(dropped, 98),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        info.subscribers[0].counters,
        PortCounters::Subscriber {
            received: 2,
            dropped: 98
        }
    );
    // Nothing leaked: the pool is whole again.
    drop(forwarder);
    publisher.send_copy(100).unwrap();
    assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
}

#[test]
fn the_other_subscribers_keep_their_backpressure() {
    let root = Root::new("lossy-others");
    let (here, there) = (root.node(), root.node());
    let forwarder = lossy(&there);
    let reader = service(&there).subscriber_builder().create().unwrap();
    let svc = service(&here);
    let publisher = svc
        .publisher_builder()
        .backpressure(BackpressureStrategy::Discard)
        .create()
        .unwrap();
    let deliveries: Vec<usize> = (0..6).map(|i| publisher.send_copy(i).unwrap()).collect();
    // The ordinary subscriber's full queue refuses the third and later
    // (discard: nothing of its queue is overwritten); the lossy one takes
    // every sample and keeps the newest.
    assert_eq!(deliveries, vec![2, 2, 1, 1, 1, 1]);
    assert_eq!(drain(&reader), vec![0, 1]);
    assert_eq!(drain(&forwarder), vec![4, 5]);
    // Both kinds of loss are the publisher's overflow: 4 refused, 4 taken
    // back.
    let info = inspect::service(&root.config(), svc.name()).unwrap();
    match info.publishers[0].counters {
        PortCounters::Publisher { dropped, .. } => assert_eq!(dropped, 8),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lossy_subscriber_reading_in_step_loses_nothing() {
    let root = Root::new("lossy-step");
    let (here, there) = (root.node(), root.node());
    let forwarder = lossy(&there);
    let publisher = service(&here).publisher_builder().create().unwrap();
    let mut got = Vec::new();
    for i in 0..1000 {
        publisher.send_copy(i).unwrap();
        got.extend(drain(&forwarder));
    }
    assert_eq!(got, (0..1000).collect::<Vec<_>>());
}
