//! Loans and the chunk pool: bounded loans, a pool that runs out with a
//! typed error, loans that outlive their publisher, and large samples that
//! reuse their chunk.

use hako::NodeBuilder;

use super::{config, Msg};

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

/// A queue deeper than 64 has its return slots in several words: a send
/// whose slot is not in the word used last finds it all the same, under
/// either policy, and every chunk comes back.
#[test]
fn a_queue_deeper_than_64_uses_every_return_slot() {
    for (name, policy) in [
        ("deep-drop", hako::OverflowPolicy::DropOldest),
        ("deep-bp", hako::OverflowPolicy::Backpressure),
    ] {
        let cfg = config(name);
        let node = NodeBuilder::new().config(&cfg).create().unwrap();
        let svc = node
            .service_builder(&name.try_into().unwrap())
            .publish_subscribe::<Msg>()
            .max_subscribers(1)
            .subscriber_max_buffer_size(150)
            .subscriber_max_borrowed_samples(150)
            .overflow_policy(policy)
            .create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let pool = publisher.pool_size() as usize;
        let mut seq = 0u64;
        for round in 0..4 {
            // Fill the queue, then hold every sample at once: all the
            // connection's slots in use, over three words.
            for _ in 0..150 {
                let msg = Msg { seq, data: [0; 4] };
                publisher.send_copy(msg).unwrap();
                seq += 1;
            }
            let held: Vec<_> = (0..150).map(|_| sub.receive().unwrap().unwrap()).collect();
            for (k, s) in held.iter().enumerate() {
                assert_eq!(s.seq, round * 150 + k as u64, "{name}, round {round}");
            }
            drop(held);
            assert!(sub.receive().unwrap().is_none(), "{name}, round {round}");
        }
        drop(sub);
        // With the subscriber gone, everything is back in the pool.
        publisher.send_copy(Msg::default()).unwrap();
        assert_eq!(publisher.free_chunks(), pool, "{name}");
        drop((publisher, svc, node));
        std::fs::remove_dir(&cfg.root).unwrap();
    }
}
