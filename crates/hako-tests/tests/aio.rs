//! The async ports (`hako::aio`, the `tokio` feature): samples and events
//! awaited across processes and threads, cancellation that loses nothing,
//! many tasks on a small runtime, and a publisher killed while awaited.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hako::aio::{AsyncError, AsyncListener, AsyncSubscriber};
use hako::{Config, EventId, ReceiveError};
use hako_tests::harness::{refs, with, Domain};
use hako_tests::TestMsg;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn samples_from_another_process_are_awaited_in_order() {
    let d = Domain::new("aio-cross", HELPER);
    let svc = [
        "--service",
        "it/aio",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
    ];
    let node = d.node();
    let service = node
        .service_builder(&"it/aio".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let sub = service.subscriber_builder().create().unwrap();
    let p = with(
        &[
            "publish",
            "--count",
            "20000",
            "--wait-subscribers",
            "1",
            "--linger",
        ],
        &svc,
    );
    let publisher = d.spawn("pub", &refs(&p));
    runtime(2).block_on(async move {
        // Moved into a task of the multi-threaded runtime: Send.
        let task = tokio::spawn(async move {
            let mut sub = AsyncSubscriber::new(sub).unwrap();
            for seq in 0..20_000u64 {
                let s = sub.receive().await.unwrap();
                assert!(s.is_intact() && s.seq == seq, "got {} for {seq}", s.seq);
            }
            sub.into_inner()
        });
        let sub = task.await.unwrap();
        drop(sub);
    });
    let out = d.wait_all(vec![publisher]);
    assert_eq!(out[0].result().num("delivered"), 20000);
    drop(service);
    drop(node);
    d.finish();
}

#[test]
fn thousands_of_cancelled_receives_lose_nothing() {
    let d = Domain::new("aio-cancel", HELPER);
    let node = d.node();
    let service = node
        .service_builder(&"it/cancel".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(8)
        .open_or_create()
        .unwrap();
    let publisher = service.publisher_builder().create().unwrap();
    let mut sub = Some(service.subscriber_builder().create().unwrap());
    const N: u64 = 6000;
    let (go, send) = std::sync::mpsc::channel::<u64>();
    std::thread::scope(|s| {
        s.spawn(move || {
            // Sends each sample when told, and a burst of the next ones now
            // and then, which the receiver finds queued.
            let mut next = 0;
            while let Ok(upto) = send.recv() {
                while next <= upto {
                    publisher.send_copy(next).unwrap();
                    next += 1;
                }
            }
        });
        runtime(2).block_on(async {
            let mut sub = AsyncSubscriber::new(sub.take().unwrap()).unwrap();
            let (mut next, mut cancelled) = (0u64, 0u64);
            while next < N {
                // Nothing is queued: a receive polled once registers its
                // interest and is dropped, taking nothing.
                assert!(futures::FutureExt::now_or_never(sub.receive()).is_none());
                cancelled += 1;
                let upto = if next % 10 == 0 {
                    (next + 5).min(N - 1)
                } else {
                    next
                };
                go.send(upto).unwrap();
                // Now and then one more is dropped while the sample is on its
                // way (a timeout shorter than the trip).
                if next % 3 == 0 {
                    match tokio::time::timeout(Duration::from_nanos(1), sub.receive()).await {
                        Ok(s) => {
                            assert_eq!(*s.unwrap(), next, "a sample lost or doubled");
                            next += 1;
                        }
                        Err(_) => cancelled += 1,
                    }
                }
                // Everything sent so far comes, in order, exactly once.
                while next <= upto {
                    let s = tokio::time::timeout(Duration::from_secs(10), sub.receive())
                        .await
                        .expect("a sample that was sent")
                        .unwrap();
                    assert_eq!(*s, next, "a sample lost or doubled");
                    next += 1;
                }
            }
            drop(go);
            // One receive cancelled per round at least (a round takes one
            // sample, or a burst of six).
            assert!(cancelled >= N / 2, "{cancelled} receives were cancelled");
            // Nothing more, and nothing left registered or behind.
            assert!(sub.get_ref().receive().unwrap().is_none());
            println!("{N} samples, {cancelled} receives cancelled");
        });
    });
}

#[test]
fn a_thousand_tasks_wait_on_a_two_worker_runtime() {
    let d = Domain::new("aio-tasks", HELPER);
    let node = d.node();
    const TASKS: usize = 1000;
    let service = node
        .service_builder(&"it/tasks".try_into().unwrap())
        .publish_subscribe::<u64>()
        .max_subscribers(TASKS as u32)
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let publisher = service.publisher_builder().create().unwrap();
    let rt = runtime(2);
    let waiting = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let sub = service.subscriber_builder().create().unwrap();
            let waiting = waiting.clone();
            rt.spawn(async move {
                let mut sub = AsyncSubscriber::new(sub).unwrap();
                waiting.fetch_add(1, Ordering::Relaxed);
                for want in 0..3u64 {
                    assert_eq!(*sub.receive().await.unwrap(), want);
                }
            })
        })
        .collect();
    // Every task is asleep in its receive before anything is sent.
    while waiting.load(Ordering::Relaxed) < TASKS {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    for i in 0..3u64 {
        assert_eq!(publisher.send_copy(i).unwrap(), TASKS);
        std::thread::sleep(Duration::from_millis(20));
    }
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn a_publisher_killed_while_awaited_ends_the_wait_with_an_error() {
    let d = Domain::new("aio-crash", HELPER);
    let svc = ["--service", "it/aio-crash", "--buffer", "4"];
    let node = d.node();
    let service = node
        .service_builder(&"it/aio-crash".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let sub = service
        .subscriber_builder()
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
    runtime(2).block_on(async move {
        let mut sub = AsyncSubscriber::new(sub).unwrap();
        for seq in 0..3 {
            assert_eq!(sub.receive().await.unwrap().seq, seq);
        }
        // Asleep in the next receive when the publisher dies.
        let killer = tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(100));
            publisher.kill()
        });
        let t0 = Instant::now();
        let e = sub.receive().await.unwrap_err();
        assert!(
            matches!(e, AsyncError::Port(ReceiveError::PublishersGone(_))),
            "{e}"
        );
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert_eq!(killer.await.unwrap().code, None);
    });
    hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
    drop(service);
    drop(node);
    d.finish();
}

/// A subscriber built with the default settings waits on when its only
/// publisher goes and takes the samples of the next one.
#[test]
fn an_awaited_receive_outlives_a_restart_of_the_publisher() {
    let d = Domain::new("aio-restart", HELPER);
    let node = d.node();
    let service = node
        .service_builder(&"it/aio-restart".try_into().unwrap())
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let sub = service.subscriber_builder().create().unwrap();
    let first = service.publisher_builder().create().unwrap();
    runtime(2).block_on(async move {
        let mut sub = AsyncSubscriber::new(sub).unwrap();
        first.send_copy(1).unwrap();
        assert_eq!(*sub.receive().await.unwrap(), 1);
        drop(first);
        let again = tokio::task::spawn_blocking(move || {
            // Several of the wait's liveness checks find no publisher.
            std::thread::sleep(Duration::from_millis(300));
            let second = service.publisher_builder().create().unwrap();
            second.send_copy(2).unwrap();
            second
        });
        assert_eq!(*sub.receive().await.unwrap(), 2);
        let second = again.await.unwrap();
        let changes = sub.get_ref().take_publisher_changes();
        assert_eq!((changes.connected, changes.departed), (2, 1));
        drop(second);
    });
    drop(node);
    d.finish();
}

#[test]
fn events_are_awaited_and_streamed_with_a_timer_in_a_select() {
    let d = Domain::new("aio-events", HELPER);
    let node = d.node();
    let events = node
        .service_builder(&"it/bell".try_into().unwrap())
        .event()
        .open_or_create()
        .unwrap();
    let notifier = events.notifier_builder().create().unwrap();
    let listener = events.listener_builder().create().unwrap();
    let topic = node
        .service_builder(&"it/topic".try_into().unwrap())
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let publisher = topic.publisher_builder().create().unwrap();
    let sub = topic.subscriber_builder().create().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..20u64 {
                std::thread::sleep(Duration::from_millis(2));
                if i % 2 == 0 {
                    notifier.notify_with_id(EventId(7)).unwrap();
                } else {
                    publisher.send_copy(i).unwrap();
                }
            }
        });
        runtime(2).block_on(async {
            let mut listener = AsyncListener::new(listener).unwrap();
            let mut sub = AsyncSubscriber::new(sub).unwrap();
            let (mut events, mut samples, mut ticks) = (0u64, 0u64, 0u64);
            let mut tick = tokio::time::interval(Duration::from_millis(5));
            while events < 10 || samples < 10 {
                tokio::select! {
                    e = listener.next() => {
                        for (id, n) in e.unwrap().unwrap() {
                            assert_eq!(id, EventId(7));
                            events += n;
                        }
                    }
                    s = sub.next() => {
                        assert_eq!(*s.unwrap().unwrap() % 2, 1);
                        samples += 1;
                    }
                    _ = tick.tick() => ticks += 1,
                }
            }
            assert_eq!((events, samples), (10, 10));
            assert!(ticks > 0);
        });
    });
}

/// Whether `fd` is readable, waiting at most `ms` milliseconds.
fn readable(fd: std::os::fd::BorrowedFd<'_>, ms: i64) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let t = Timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    };
    poll(&mut fds, Some(&t)).unwrap() == 1
}

#[test]
fn another_event_loop_waits_on_the_public_descriptor_and_registration() {
    use std::os::fd::AsFd;
    let d = Domain::new("aio-fd", HELPER);
    let node = d.node();
    let service = node
        .service_builder(&"it/fd".try_into().unwrap())
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let publisher = service.publisher_builder().create().unwrap();
    let sub = service.subscriber_builder().create().unwrap();
    // A reader that keeps up registers nothing, and senders make no
    // system call for it: the descriptor stays silent.
    publisher.send_copy(1).unwrap();
    assert!(!readable(sub.as_fd(), 0));
    assert_eq!(*sub.receive().unwrap().unwrap(), 1);
    // About to sleep: register, look once more, sleep on the descriptor.
    assert!(!sub.arm_wakeup());
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            publisher.send_copy(2).unwrap();
        });
        assert!(
            readable(sub.as_fd(), 10_000),
            "the send woke the descriptor"
        );
    });
    sub.disarm_wakeup();
    assert!(!readable(sub.as_fd(), 0), "disarm drains the descriptor");
    assert_eq!(*sub.receive().unwrap().unwrap(), 2);
    // Disarmed, sends leave it silent again.
    publisher.send_copy(3).unwrap();
    assert!(!readable(sub.as_fd(), 0));
    // Armed while a sample waits: the registration says so.
    assert!(sub.arm_wakeup());
    sub.disarm_wakeup();
    assert_eq!(*sub.receive().unwrap().unwrap(), 3);
}

#[test]
fn a_runtime_shut_down_while_a_task_waits_leaves_the_port_usable() {
    use std::os::fd::AsFd;
    let d = Domain::new("aio-shutdown", HELPER);
    let node = d.node();
    let service = node
        .service_builder(&"it/shutdown".try_into().unwrap())
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap();
    let publisher = service.publisher_builder().create().unwrap();
    let sub = service.subscriber_builder().create().unwrap();
    let rt = runtime(2);
    let mut sub = rt.block_on(async { AsyncSubscriber::new(sub).unwrap() });
    // A task asleep in a receive when its runtime goes.
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let got = sub.receive().await.map(|s| *s).ok();
        // Never reached: the runtime shuts down first.
        let _ = got;
        tx.send(sub).ok();
    });
    std::thread::sleep(Duration::from_millis(50));
    drop(rt);
    assert!(rx.recv().is_err(), "the task was dropped with its runtime");
    // Its subscriber went with it, its interest withdrawn on the way: a
    // new one on the same service works, and no send wakes anybody.
    let sub = service.subscriber_builder().create().unwrap();
    publisher.send_copy(5).unwrap();
    assert!(!readable(sub.as_fd(), 0));
    assert_eq!(*sub.receive().unwrap().unwrap(), 5);
    // A port taken back out of a runtime that is gone works on, blocking.
    let rt = runtime(1);
    let mut a = rt.block_on(async { AsyncSubscriber::new(sub).unwrap() });
    rt.block_on(async {
        tokio::select! {
            _ = a.receive() => panic!("nothing was sent"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    });
    drop(rt);
    let sub = a.into_inner();
    publisher.send_copy(6).unwrap();
    assert!(!readable(sub.as_fd(), 0), "nothing left registered");
    assert_eq!(
        *sub.receive_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap(),
        6
    );
}

#[test]
fn events_from_another_process_are_awaited_until_its_notifier_goes() {
    let d = Domain::new("aio-events-cross", HELPER);
    let node = d.node();
    let events = node
        .service_builder(&"it/aio-bell".try_into().unwrap())
        .event()
        .event_id_max(7)
        .open_or_create()
        .unwrap();
    let listener = events.listener_builder().create().unwrap();
    let (ready, release) = (d.arg("ready"), d.arg("release"));
    let notifier = d.spawn(
        "notifier",
        &[
            "notify",
            "--service",
            "it/aio-bell",
            "--event-id-max",
            "7",
            "--id",
            "3",
            "--count",
            "200",
            "--pace-us",
            "300",
            "--ready-file",
            &ready,
            "--release-file",
            &release,
        ],
    );
    let total = runtime(2).block_on(async {
        let mut listener = AsyncListener::new(listener).unwrap();
        let mut total = 0u64;
        // Every notification counted once (bursts come as one batch with
        // their count).
        while total < 200 {
            for (id, n) in listener.wait().await.unwrap() {
                assert_eq!(id, EventId(3));
                total += n;
            }
        }
        // Then the notifier goes while we wait (the wait saw it first),
        // and the wait says so.
        let wait = listener.wait();
        tokio::pin!(wait);
        assert!(futures::poll!(&mut wait).is_pending());
        d.touch("release");
        match wait.await {
            Err(AsyncError::Port(hako::ListenerError::NotifiersGone(_))) => {}
            other => panic!("{other:?}"),
        }
        total
    });
    assert_eq!(total, 200);
    let out = d.wait_all(vec![notifier]);
    assert_eq!(out[0].result().num("sent"), 200);
    drop(events);
    drop(node);
    d.finish();
}
