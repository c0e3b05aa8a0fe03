//! Single-process checks of the API (cross-process tests live in hako-tests).

use hako::{Config, NodeBuilder, OverflowPolicy, ServiceError, ShmSafe};

#[derive(Debug, Clone, Copy, Default, PartialEq, ShmSafe)]
#[repr(C)]
struct Msg {
    seq: u64,
    data: [u32; 4],
}

fn config(test: &str) -> Config {
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-test-{}-{}",
        test,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    Config::default().with_root(root)
}

#[test]
fn publish_receive_and_cleanup() {
    let cfg = config("basic");
    {
        let node = NodeBuilder::new()
            .name("t")
            .unwrap()
            .config(&cfg)
            .create()
            .unwrap();
        let svc = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(4)
            .open_or_create()
            .unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert!(sub.receive().unwrap().is_none());
        for i in 0..3 {
            let n = publisher
                .loan_uninit()
                .unwrap()
                .write_payload(Msg {
                    seq: i,
                    data: [i as u32; 4],
                })
                .send();
            assert_eq!(n, 1);
        }
        for i in 0..3 {
            let s = sub.receive().unwrap().unwrap();
            assert_eq!(s.seq, i);
            assert_eq!(s.data, [i as u32; 4]);
        }
        assert!(sub.receive().unwrap().is_none());
        // drop-oldest by default: 10 sends into a queue of 4 keep the last 4.
        for i in 0..10 {
            publisher
                .send_copy(Msg {
                    seq: i,
                    data: [0; 4],
                })
                .unwrap();
        }
        let got: Vec<u64> = std::iter::from_fn(|| sub.receive().unwrap().map(|s| s.seq)).collect();
        assert_eq!(got, vec![6, 7, 8, 9]);
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);

        let e = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<u64>()
            .open()
            .unwrap_err();
        assert!(
            matches!(
                e,
                ServiceError::IncompatibleType {
                    field: "type_name",
                    ..
                }
            ),
            "{e}"
        );
        let e = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .overflow_policy(OverflowPolicy::Backpressure)
            .open()
            .unwrap_err();
        assert!(
            matches!(
                e,
                ServiceError::IncompatibleQos {
                    field: "overflow",
                    ..
                }
            ),
            "{e}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn slices() {
    let cfg = config("slices");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"s".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .create()
        .unwrap();
    let publisher = svc
        .publisher_builder()
        .max_slice_len(1000)
        .create()
        .unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    publisher
        .loan_slice_uninit(10)
        .unwrap()
        .write_from_fn(|i| i as u8)
        .send();
    let s = sub.receive().unwrap().unwrap();
    assert_eq!(&*s, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert!(publisher.loan_slice_uninit(1001).is_err());
    drop((s, sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn ports_and_samples_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    fn send<T: Send>() {}
    both::<hako::Node>();
    both::<hako::PubSubService<Msg>>();
    both::<hako::Publisher<Msg>>();
    // A subscriber moves between threads but is used by one at a time.
    send::<hako::Subscriber<Msg>>();
    send::<hako::Listener>();
    both::<hako::Sample<Msg>>();
    both::<hako::SampleMut<Msg>>();
    both::<hako::SampleMutUninit<Msg>>();
    both::<hako::Sample<[u8]>>();
    both::<hako::SampleMut<[u8]>>();
}

#[test]
fn loans_are_bounded() {
    let cfg = config("loans");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"loans".try_into().unwrap())
        .publish_subscribe::<Msg>()
        .max_subscribers(1)
        .subscriber_max_buffer_size(1)
        .subscriber_max_borrowed_samples(1)
        .create()
        .unwrap();
    let publisher = svc
        .publisher_builder()
        .max_loaned_samples(2)
        .create()
        .unwrap();
    let a = publisher.loan().unwrap();
    let b = publisher.loan().unwrap();
    assert_eq!(
        publisher.loan().unwrap_err(),
        hako::LoanError::ExceedsMaxLoans(2)
    );
    drop(a);
    assert!(publisher.loan().is_ok());
    drop(b);
    // A subscriber that holds its one sample and leaves one queued: the
    // pool of 1 * (1 + 1) + 2 chunks still serves both loans.
    let sub = svc.subscriber_builder().create().unwrap();
    publisher.send_copy(Msg::default()).unwrap();
    let held = sub.receive().unwrap().unwrap();
    assert!(matches!(
        sub.receive(),
        Err(hako::ReceiveError::ExceedsMaxBorrowed(1))
    ));
    publisher.send_copy(Msg::default()).unwrap();
    let l1 = publisher.loan().unwrap();
    let l2 = publisher.loan().unwrap();
    assert_eq!(publisher.free_chunks(), 0);
    drop((l1, l2, held));
    assert_eq!(publisher.free_chunks(), 3);
    drop((sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn a_small_pool_runs_out_with_a_typed_error() {
    let cfg = config("pool");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"pool".try_into().unwrap())
        .publish_subscribe::<Msg>()
        .subscriber_max_buffer_size(4)
        .subscriber_max_borrowed_samples(4)
        .create()
        .unwrap();
    assert!(svc
        .publisher_builder()
        .max_loaned_samples(2)
        .pool_size(1)
        .create()
        .is_err());
    let publisher = svc
        .publisher_builder()
        .max_loaned_samples(1)
        .pool_size(3)
        .create()
        .unwrap();
    assert_eq!(publisher.pool_size(), 3);
    let sub = svc.subscriber_builder().create().unwrap();
    for _ in 0..3 {
        publisher.send_copy(Msg::default()).unwrap();
    }
    let held: Vec<_> = (0..3).map(|_| sub.receive().unwrap().unwrap()).collect();
    assert_eq!(
        publisher.loan().unwrap_err(),
        hako::LoanError::OutOfMemory(3)
    );
    drop(held);
    assert!(publisher.loan().is_ok());
    drop((sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn loans_outlive_their_publisher() {
    let cfg = config("orphan");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"orphan".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .create()
            .unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc
            .publisher_builder()
            .max_loaned_samples(3)
            .create()
            .unwrap();
        let kept = publisher.loan().unwrap();
        let dropped = publisher.loan().unwrap();
        let moved = publisher.loan().unwrap();
        drop(publisher);
        // The loans still work: sent from here and from another thread, or
        // dropped; the last one to go releases the publisher.
        let mut kept = kept;
        kept.seq = 1;
        assert_eq!(kept.send(), 1);
        drop(dropped);
        let sent = std::thread::spawn(move || {
            let mut moved = moved;
            moved.seq = 2;
            moved.send()
        })
        .join()
        .unwrap();
        assert_eq!(sent, 1);
        assert_eq!(sub.receive().unwrap().unwrap().seq, 1);
        assert_eq!(sub.receive().unwrap().unwrap().seq, 2);
        assert!(sub.receive().unwrap().is_none());
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn a_publisher_is_shared_by_threads() {
    let cfg = config("shared");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"shared".try_into().unwrap())
        .publish_subscribe::<Msg>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(8)
        .create()
        .unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    let publisher = svc
        .publisher_builder()
        .max_loaned_samples(8)
        .create()
        .unwrap();
    let per_thread = 2_000u64;
    let mut seen = std::collections::HashSet::new();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let publisher = &publisher;
            s.spawn(move || {
                for i in 0..per_thread {
                    loop {
                        match publisher.loan() {
                            Ok(mut m) => {
                                m.seq = t * per_thread + i;
                                assert_eq!(m.send(), 1);
                                break;
                            }
                            Err(_) => std::thread::yield_now(),
                        }
                    }
                }
            });
        }
        while seen.len() < 4 * per_thread as usize {
            match sub.receive().unwrap() {
                Some(m) => assert!(seen.insert(m.seq), "{} twice", m.seq),
                None => std::thread::yield_now(),
            }
        }
    });
    assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    drop((sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn samples_outlive_their_subscriber_on_other_threads() {
    let cfg = config("outlive");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"outlive".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(4)
            .subscriber_max_borrowed_samples(4)
            .create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        for round in 0..50u64 {
            let sub = svc.subscriber_builder().create().unwrap();
            for i in 0..3 {
                publisher
                    .send_copy(Msg {
                        seq: round * 10 + i,
                        data: [0; 4],
                    })
                    .unwrap();
            }
            let samples: Vec<_> = (0..3).map(|_| sub.receive().unwrap().unwrap()).collect();
            // The subscriber goes first, or in the middle, or last.
            let (early, late): (Vec<_>, Vec<_>) =
                samples.into_iter().partition(|s| s.seq % 2 == round % 2);
            let t = std::thread::spawn(move || {
                for s in late {
                    assert_eq!(s.seq / 10, round);
                }
            });
            drop(sub);
            for s in early {
                assert_eq!(s.seq / 10, round);
            }
            t.join().unwrap();
        }
        // Every chunk came back.
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn samples_dropped_by_the_receiving_thread_while_the_subscriber_goes_elsewhere() {
    // The receiving thread counts its drops with plain stores (a biased
    // counter); dropping the subscriber on another thread at the same time
    // revokes that bias. Every chunk must come back and every connection be
    // freed exactly once, whichever side is last.
    let cfg = config("revoke");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"revoke".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(8)
            .subscriber_max_borrowed_samples(8)
            .create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        for round in 0..200u64 {
            let sub = svc.subscriber_builder().create().unwrap();
            for i in 0..6 {
                publisher
                    .send_copy(Msg {
                        seq: round * 10 + i,
                        data: [0; 4],
                    })
                    .unwrap();
            }
            let mut samples: Vec<_> = (0..6).map(|_| sub.receive().unwrap().unwrap()).collect();
            // Dropped here, by the owner, before the race: plain counts.
            drop(samples.remove(0));
            let go = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                s.spawn(|| {
                    go.wait();
                    drop(sub);
                });
                go.wait();
                for sample in samples {
                    assert_eq!(sample.seq / 10, round);
                }
            });
        }
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn a_subscriber_moved_to_another_thread_counts_its_drops_there() {
    // Created on this thread, used on another: the limit on borrowed samples
    // still sees every drop, wherever it happens.
    let cfg = config("moved");
    {
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&"moved".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(4)
            .subscriber_max_borrowed_samples(2)
            .create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let p = &publisher;
        let sub = std::thread::scope(|s| {
            s.spawn(move || {
                for seq in 0..100 {
                    p.send_copy(Msg { seq, data: [0; 4] }).unwrap();
                    let a = sub.receive().unwrap().unwrap();
                    p.send_copy(Msg { seq, data: [1; 4] }).unwrap();
                    let b = sub.receive().unwrap().unwrap();
                    p.send_copy(Msg { seq, data: [2; 4] }).unwrap();
                    assert!(matches!(
                        sub.receive(),
                        Err(hako::ReceiveError::ExceedsMaxBorrowed(2))
                    ));
                    // One dropped on another thread, one here.
                    std::thread::spawn(move || drop(a)).join().unwrap();
                    drop(b);
                    let c = sub.receive().unwrap().unwrap();
                    assert_eq!(c.data, [2; 4]);
                }
                sub
            })
            .join()
            .unwrap()
        });
        drop(sub);
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn inspection_shows_nodes_ports_and_counters() {
    use hako::inspect::{self, PortCounters};
    let cfg = config("inspect");
    let node = NodeBuilder::new()
        .name("looker")
        .unwrap()
        .config(&cfg)
        .create()
        .unwrap();
    let name: hako::ServiceName = "inspect/me".try_into().unwrap();
    let svc = node
        .service_builder(&name)
        .publish_subscribe::<Msg>()
        .subscriber_max_buffer_size(2)
        .create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let reader = svc.subscriber_builder().create().unwrap();
    let sleeper = svc.subscriber_builder().create().unwrap();
    for seq in 0..5 {
        publisher.send_copy(Msg { seq, data: [0; 4] }).unwrap();
        if seq < 3 {
            drop(reader.receive().unwrap().unwrap());
        }
    }
    let loan = publisher.loan().unwrap();

    let nodes = inspect::nodes(&cfg).unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id, node.id());
    assert_eq!(nodes[0].name, "looker");
    assert_eq!(nodes[0].pid, Some(std::process::id()));
    assert!(nodes[0].alive);

    let all = inspect::services(&cfg).unwrap();
    assert_eq!(all.len(), 1);
    let info = inspect::service(&cfg, &name).unwrap();
    assert_eq!(&info, all[0].as_ref().unwrap());
    assert_eq!(info.name, "inspect/me");
    assert_eq!(info.nodes, vec![node.id()]);
    assert_eq!(info.publishers.len(), 1);
    let p = &info.publishers[0];
    assert_eq!(
        (p.id, p.node, p.node_alive, p.retired),
        (publisher.id(), node.id(), true, false)
    );
    match p.counters {
        PortCounters::Publisher {
            sent,
            deliveries,
            dropped,
            loans,
            chunks_in_use,
            pool_size,
        } => {
            assert_eq!((sent, deliveries, loans), (5, 10, 1));
            // The sleeper's queue of 2 overflowed three times.
            assert_eq!(dropped, 3);
            assert_eq!(pool_size, u64::from(publisher.pool_size()));
            assert!(chunks_in_use >= 2, "{chunks_in_use}");
        }
        other => panic!("{other:?}"),
    }
    let counts: Vec<_> = info
        .subscribers
        .iter()
        .map(|s| (s.id, s.counters))
        .collect();
    assert!(counts.contains(&(
        reader.id(),
        PortCounters::Subscriber {
            received: 3,
            dropped: 0
        }
    )));
    assert!(counts.contains(&(
        sleeper.id(),
        PortCounters::Subscriber {
            received: 0,
            dropped: 3
        }
    )));
    drop((loan, reader, sleeper, publisher, svc, node));
    assert!(inspect::services(&cfg).unwrap().is_empty());
    std::fs::remove_dir(&cfg.root).unwrap();
}

/// Large samples exchanged in step (send, receive, drop, send again): a
/// publisher that fills them slowly loans the chunk it sent last again once
/// it came back, so the exchange stays in one chunk's worth of cache; one
/// that fills them quickly cycles through chunks (it does not wait to
/// learn whether the last one came back); a chunk still held is never
/// loaned again.
#[test]
fn large_samples_filled_slowly_in_step_reuse_their_chunk() {
    const LEN: usize = 4 << 20;
    let cfg = config("reuse");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"large".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .subscriber_max_buffer_size(2)
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().max_slice_len(LEN).create().unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    // One exchange of a `len`-byte sample filled over `fill` or more;
    // returns the address of the chunk loaned, and the sample if `keep`.
    let exchange = |seq: u8, len: usize, fill: std::time::Duration, keep: bool| {
        let mut s = publisher.loan_slice_uninit(len).unwrap();
        let addr = s.payload_mut().as_ptr() as usize;
        let s = s.write_from_fn(|i| seq.wrapping_add(i as u8));
        std::thread::sleep(fill);
        assert_eq!(s.send(), 1);
        let got = sub.receive().unwrap().unwrap();
        assert!((0..len)
            .step_by(4093)
            .all(|i| got[i] == seq.wrapping_add(i as u8)));
        (addr, keep.then_some(got))
    };
    let quick = std::time::Duration::ZERO;
    let slow = std::time::Duration::from_millis(2);
    // One loan in 16 is timed, and one taking 10 µs or more makes the next
    // 16 check for the chunk sent last: 160 quick exchanges cycle through
    // chunks unless ten timed loans in a row were each held up that long.
    let quick_chunks: std::collections::HashSet<usize> = (0..160)
        .map(|i| exchange(i as u8, 64, quick, false).0)
        .collect();
    assert!(quick_chunks.len() >= 2, "{quick_chunks:?}");
    // One loan in 16 is timed: within 16 slow fills, every loan gets the
    // chunk sent last.
    for i in 40..56 {
        exchange(i, LEN, slow, false);
    }
    let slow_chunks: Vec<usize> = (56..60).map(|i| exchange(i, LEN, slow, false).0).collect();
    assert!(
        slow_chunks.iter().all(|&a| a == slow_chunks[0]),
        "{slow_chunks:?}"
    );
    // Held by the subscriber: never loaned while held, and intact.
    let (held_at, held) = exchange(60, LEN, slow, true);
    let held = held.unwrap();
    assert_eq!(held_at, slow_chunks[0]);
    for i in 61..70 {
        let (addr, _) = exchange(i, LEN, slow, false);
        assert_ne!(addr, held_at);
    }
    assert!((0..LEN)
        .step_by(4093)
        .all(|i| held[i] == 60u8.wrapping_add(i as u8)));
    drop(held);
    let back: Vec<usize> = (70..75).map(|i| exchange(i, LEN, slow, false).0).collect();
    assert!(back[1..].iter().all(|&a| a == back[0]), "{back:?}");
    drop((sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}
