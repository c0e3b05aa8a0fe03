//! Single-process checks of events, blocking receive and the waitset
//! (cross-process tests live in hako-tests).

use std::time::{Duration, Instant};

use hako::{
    Config, EventId, NodeBuilder, NotifyError, WaitEvent, WaitOutcome, WaitSet, WaitStrategy,
};

fn config(test: &str) -> Config {
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-test-ev-{}-{}",
        test,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    Config::default().with_root(root)
}

#[test]
fn notify_and_wait() {
    let cfg = config("notify");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"ev".try_into().unwrap())
            .event()
            .event_id_max(100)
            .open_or_create()
            .unwrap();
        let listener = svc.listener_builder().create().unwrap();
        let notifier = svc.notifier_builder().create().unwrap();
        assert!(listener.try_wait().is_empty());
        assert_eq!(notifier.notify_with_id(EventId(3)).unwrap(), 1);
        notifier.notify_with_id(EventId(3)).unwrap();
        notifier.notify_with_id(EventId(99)).unwrap();
        assert_eq!(listener.try_wait(), vec![(EventId(3), 2), (EventId(99), 1)]);
        assert_eq!(
            notifier.notify_with_id(EventId(101)),
            Err(NotifyError::EventIdOutOfRange { id: 101, max: 100 })
        );
        assert!(listener.timed_wait(Duration::ZERO).unwrap().is_empty());
        let t0 = Instant::now();
        assert!(listener
            .timed_wait(Duration::from_millis(30))
            .unwrap()
            .is_empty());
        assert!(t0.elapsed() >= Duration::from_millis(30));

        // A sleeping listener is woken by a notify from another thread.
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                notifier.notify_with_id(EventId(7)).unwrap();
            });
            let got = listener.blocking_wait().unwrap();
            assert_eq!(got, vec![(EventId(7), 1)]);
        });
    }
    assert_eq!(std::fs::read_dir(&cfg.root).unwrap().count(), 0);
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn blocked_subscriber_wakes_on_send() {
    let cfg = config("block");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"blk".try_into().unwrap())
            .publish_subscribe::<u64>()
            .open_or_create()
            .unwrap();
        for strategy in [
            WaitStrategy::Park,
            WaitStrategy::SpinThenPark,
            WaitStrategy::BusySpin,
        ] {
            let sub = svc
                .subscriber_builder()
                .wait_strategy(strategy)
                .create()
                .unwrap();
            let publisher = svc.publisher_builder().create().unwrap();
            assert!(sub
                .receive_timeout(Duration::from_millis(5))
                .unwrap()
                .is_none());
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(30));
                    publisher.send_copy(42).unwrap();
                });
                let sample = sub.blocking_receive().unwrap();
                assert_eq!(*sample, 42);
            });
        }
    }
    assert_eq!(std::fs::read_dir(&cfg.root).unwrap().count(), 0);
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn waitset_sources_and_timers() {
    let cfg = config("waitset");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let ev = node
        .service_builder(&"ws/ev".try_into().unwrap())
        .event()
        .open_or_create()
        .unwrap();
    let ps = node
        .service_builder(&"ws/ps".try_into().unwrap())
        .publish_subscribe::<u32>()
        .open_or_create()
        .unwrap();
    let listener = ev.listener_builder().create().unwrap();
    let notifier = ev.notifier_builder().create().unwrap();
    let sub = ps.subscriber_builder().create().unwrap();
    let publisher = ps.publisher_builder().create().unwrap();

    let mut ws = WaitSet::new().unwrap();
    let l = ws.attach_listener(&listener).unwrap();
    let s = ws.attach_subscriber(&sub).unwrap();
    let tick = ws.attach_interval(Duration::from_millis(20));
    let dl = ws.attach_deadline(s, Duration::from_millis(50)).unwrap();

    // Nothing yet: the first event is a tick.
    let mut seen = Vec::new();
    ws.wait_and_process(|e| seen.push(e)).unwrap();
    assert_eq!(seen, vec![WaitEvent::Tick(tick)]);

    std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(5));
            notifier.notify().unwrap();
            publisher.send_copy(5).unwrap();
        });
        let mut got_l = false;
        let mut got_s = false;
        while !(got_l && got_s) {
            ws.wait_and_process(|e| match e {
                WaitEvent::Ready(id) if id == l => {
                    assert_eq!(listener.try_wait(), vec![(EventId(0), 1)]);
                    got_l = true;
                }
                WaitEvent::Ready(id) if id == s => {
                    assert_eq!(*sub.receive().unwrap().unwrap(), 5);
                    got_s = true;
                }
                _ => {}
            })
            .unwrap();
        }
    });

    // The subscriber now stays silent: its deadline fires.
    let t0 = Instant::now();
    let mut missed = false;
    while !missed {
        ws.wait_and_process(|e| missed |= e == WaitEvent::DeadlineMissed(dl))
            .unwrap();
    }
    assert!(t0.elapsed() >= Duration::from_millis(30));
    let out = WaitSet::new()
        .unwrap()
        .wait_and_process_timeout(|_| {}, Duration::from_millis(10))
        .unwrap();
    assert_eq!(out, WaitOutcome::TimedOut);
    drop(ws);
    drop((listener, notifier, sub, publisher, ev, ps, node));
    assert_eq!(std::fs::read_dir(&cfg.root).unwrap().count(), 0);
    std::fs::remove_dir(&cfg.root).unwrap();
}
