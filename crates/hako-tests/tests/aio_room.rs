//! The async form of waiting sends (`hako::aio::AsyncPublisher`,
//! `ready()`): a publisher under `Block` backpressure awaits room that a
//! slow subscriber in another process makes, without blocking its thread
//! and without losing a sample, and a wait for a subscriber that died ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hako::aio::AsyncPublisher;
use hako::{BackpressureStrategy, Config, Node, OverflowPolicy};
use hako_tests::harness::{refs, with, Domain};
use hako_tests::TestMsg;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A backpressure service with queues of 4, and a blocking publisher.
fn blocking_publisher(node: &Node, name: &str) -> hako::Publisher<TestMsg> {
    let service = node
        .service_builder(&name.try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    service
        .publisher_builder()
        .backpressure(BackpressureStrategy::Block)
        .create()
        .unwrap()
}

fn assert_send<T: Send>(_: &T) {}

/// The futures of every waiting send are `Send` (checked by the compiler).
#[allow(dead_code)]
fn ready_futures_are_send(
    p: &mut AsyncPublisher<u64>,
    c: &mut hako::aio::AsyncClient<u64, u64>,
    s: &mut hako::aio::AsyncServer<u64, u64>,
) {
    assert_send(&p.ready());
    assert_send(&c.ready());
    assert_send(&s.ready());
}

const SVC_ARGS: [&str; 4] = ["--overflow", "backpressure", "--buffer", "4"];

#[test]
fn an_async_publisher_awaits_room_from_a_slow_subscriber_and_loses_nothing() {
    let d = Domain::new("aio-room", HELPER);
    let node = d.node();
    let publisher = blocking_publisher(&node, "it/aio-room");
    let ready = d.arg("ready");
    let svc = [&["--service", "it/aio-room"][..], &SVC_ARGS].concat();
    let s = with(
        &[
            "subscribe",
            "--expect",
            "300",
            "--delay-us",
            "300",
            "--ready-file",
            &ready,
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    d.wait_file("ready", &mut procs);
    let ticks = Arc::new(AtomicU64::new(0));
    let ticker_ticks = ticks.clone();
    let full = current_thread().block_on(async move {
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                ticker_ticks.fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut publisher = AsyncPublisher::new(publisher);
        while publisher.get_ref().subscriber_count() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut full = 0u32;
        for seq in 0..300u64 {
            if !publisher.get_ref().has_room() {
                full += 1;
            }
            let sample = publisher
                .get_ref()
                .loan_uninit()
                .unwrap()
                .write_payload(TestMsg::new(0, seq));
            // Never waits in the thread: the ticker runs meanwhile.
            let send = publisher.send(sample);
            assert_send(&send);
            assert_eq!(send.await, 1, "seq {seq}");
        }
        ticker.abort();
        full
    });
    // A reader 300 µs per sample behind a queue of 4: the publisher found
    // it full, and waited, many times (each wait lets a few samples go).
    assert!(full > 20, "found the queue full {full} times");
    assert!(ticks.load(Ordering::Relaxed) > 0, "the ticker never ran");
    let out = d.wait_all(procs);
    let r = out[0].result();
    assert_eq!(r.num("received"), 300);
    drop(node);
    d.finish();
}

#[test]
fn a_wait_for_room_ends_when_the_full_subscriber_dies() {
    let d = Domain::new("aio-room-dead", HELPER);
    let node = d.node();
    let publisher = blocking_publisher(&node, "it/aio-room-dead");
    let (ready, never) = (d.arg("ready"), d.arg("never"));
    let svc = [&["--service", "it/aio-room-dead"][..], &SVC_ARGS].concat();
    // It reads nothing: it waits for a file that never comes.
    let s = with(
        &[
            "subscribe",
            "--expect",
            "10",
            "--ready-file",
            &ready,
            "--wait-file",
            &never,
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    d.wait_file("ready", &mut procs);
    let subscriber = procs.pop().unwrap();
    current_thread().block_on(async move {
        let mut publisher = AsyncPublisher::new(publisher);
        while publisher.get_ref().subscriber_count() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for seq in 0..4u64 {
            publisher.ready().await;
            assert_eq!(
                publisher.get_ref().send_copy(TestMsg::new(0, seq)).unwrap(),
                1
            );
        }
        assert!(!publisher.get_ref().has_room());
        // Cancel-safe: a wait cut short by a timeout sent nothing.
        assert!(
            tokio::time::timeout(Duration::from_millis(20), publisher.ready())
                .await
                .is_err()
        );
        let killer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tokio::task::spawn_blocking(move || subscriber.kill())
                .await
                .unwrap()
        });
        // Ends once the dead subscriber is noticed and disconnected.
        publisher.ready().await;
        assert_eq!(killer.await.unwrap().code, None);
        assert!(publisher.get_ref().has_room());
        assert_eq!(publisher.get_ref().subscriber_count(), 0);
    });
    hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
    drop(node);
    d.finish();
}
