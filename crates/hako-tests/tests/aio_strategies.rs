//! The wait strategies of the async ports (`hako::aio`): each one awaits
//! every sample from another process in order; a busy-spinning task lets
//! the other tasks of its runtime run, and learns that its publisher died.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hako::aio::{AsyncError, AsyncSubscriber};
use hako::{Config, ReceiveError, WaitStrategy};
use hako_tests::harness::{refs, with, Domain};
use hako_tests::TestMsg;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

/// One thread: a task that busy-spins there shares it with every other.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn every_wait_strategy_awaits_samples_from_another_process_in_order() {
    let strategies = [
        ("busy", WaitStrategy::BusySpin),
        ("spin-park", WaitStrategy::SpinThenPark),
        ("park", WaitStrategy::Park),
    ];
    for (label, strategy) in strategies {
        let d = Domain::new(&format!("aio-strategy-{label}"), HELPER);
        let name = format!("it/aio-{label}");
        let svc = [
            "--service",
            name.as_str(),
            "--overflow",
            "backpressure",
            "--buffer",
            "4",
        ];
        let node = d.node();
        let service = node
            .service_builder(&name.as_str().try_into().unwrap())
            .publish_subscribe::<TestMsg>()
            .overflow_policy(hako::OverflowPolicy::Backpressure)
            .subscriber_max_buffer_size(4)
            .open_or_create()
            .unwrap();
        let sub = service
            .subscriber_builder()
            .wait_strategy(strategy)
            .create()
            .unwrap();
        // Paced, so that the reader waits between samples (and sleeps
        // between them unless it busy-spins).
        let p = with(
            &[
                "publish",
                "--count",
                "2000",
                "--wait-subscribers",
                "1",
                "--pace-us",
                "20",
                "--linger",
            ],
            &svc,
        );
        let publisher = d.spawn("pub", &refs(&p));
        let ticks = Arc::new(AtomicU64::new(0));
        let ticker_ticks = ticks.clone();
        current_thread().block_on(async move {
            // Another task on the same thread: it must run while the
            // receiving task waits, whatever its strategy.
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    ticker_ticks.fetch_add(1, Ordering::Relaxed);
                }
            });
            let receiver = tokio::spawn(async move {
                let mut sub = AsyncSubscriber::new(sub).unwrap();
                for seq in 0..2000u64 {
                    let s = sub.receive().await.unwrap();
                    assert!(
                        s.is_intact() && s.seq == seq,
                        "{label}: {} for {seq}",
                        s.seq
                    );
                }
                sub.into_inner()
            });
            let sub = receiver.await.unwrap();
            ticker.abort();
            drop(sub);
        });
        // 2,000 samples 20 µs apart take 40 ms at the very least: a ticker
        // of 1 ms that ran at all ticked. (A lower bound only, never a
        // limit on time.)
        assert!(
            ticks.load(Ordering::Relaxed) > 0,
            "{label}: the ticker never ran"
        );
        let out = d.wait_all(vec![publisher]);
        assert_eq!(out[0].result().num("delivered"), 2000, "{label}");
        drop(service);
        drop(node);
        d.finish();
    }
}

#[test]
fn a_busy_spinning_task_learns_that_its_publisher_died() {
    let d = Domain::new("aio-busy-crash", HELPER);
    let svc = ["--service", "it/aio-busy-crash", "--buffer", "4"];
    let node = d.node();
    let service = node
        .service_builder(&"it/aio-busy-crash".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let sub = service
        .subscriber_builder()
        .wait_strategy(WaitStrategy::BusySpin)
        .end_when_publishers_gone(true)
        .create()
        .unwrap();
    let (pause, paused) = (d.arg("never"), d.arg("paused"));
    let p = with(
        &[
            "publish",
            "--count",
            "100",
            "--wait-subscribers",
            "1",
            "--pause-at",
            "3",
            "--pause-file",
            &pause,
            "--paused-file",
            &paused,
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("pub", &refs(&p))];
    d.wait_file("paused", &mut procs);
    let publisher = procs.pop().unwrap();
    current_thread().block_on(async move {
        let mut sub = AsyncSubscriber::new(sub).unwrap();
        for seq in 0..3 {
            assert_eq!(sub.receive().await.unwrap().seq, seq);
        }
        // Spinning in the next receive when the publisher dies: the task
        // that kills it runs on the same thread, between the spin's slices.
        let killer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tokio::task::spawn_blocking(move || publisher.kill())
                .await
                .unwrap()
        });
        let e = sub.receive().await.unwrap_err();
        assert!(
            matches!(e, AsyncError::Port(ReceiveError::PublishersGone(_))),
            "{e}"
        );
        assert_eq!(killer.await.unwrap().code, None);
    });
    hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
    drop(service);
    drop(node);
    d.finish();
}
