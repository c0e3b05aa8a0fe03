//! Ports and samples on several threads: a publisher shared by threads,
//! samples that outlive their subscriber or are dropped on another thread,
//! and a subscriber moved to another thread.

use hako::{NodeBuilder, OverflowPolicy};

use super::{config, Msg};

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
