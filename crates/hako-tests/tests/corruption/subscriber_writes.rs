//! Garbage written by a subscriber into its connection (consumer index,
//! return words): the publisher drops or ignores it, keeps serving the
//! others and gets every chunk back.

use hako::unstable::layout::LINE;
use hako::ReceiveError;
use hako_tests::harness::Domain;
use hako_tests::TestMsg;

use super::{node, service, Segment, HELPER};

/// Subscriber A writes garbage that the publisher reads; the publisher drops
/// A's connection and goes on serving subscriber B.
fn garbage_from_a_subscriber(test: &str, corrupt: impl FnOnce(&Segment, u64)) {
    let d = Domain::new(test, HELPER);
    let name = "it/bad-sub";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let a = svc.subscriber_builder().create().unwrap();
        let b = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert_eq!(publisher.send_copy(TestMsg::new(0, 0)).unwrap(), 2);
        drop(a.receive().unwrap().unwrap());
        drop(b.receive().unwrap().unwrap());

        let seg = Segment::open(&d.root, name, publisher.id());
        corrupt(&seg, seg.slot_of(a.id()));

        // Enough traffic for the publisher to look at A's words.
        for seq in 1..=12 {
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            let s = b.receive().unwrap().expect("B gets every message");
            assert_eq!(s.seq, seq);
            assert!(s.is_intact());
            drop(s);
            // A may see its own garbage; it must not panic.
            match a.receive() {
                Ok(_) | Err(ReceiveError::CorruptedPublisher { .. }) => {}
                Err(e) => panic!("unexpected error at A: {e}"),
            }
        }
        let _ = publisher.free_chunks();
        assert_eq!(publisher.subscriber_count(), 1, "A should be disconnected");
        assert_eq!(publisher.send_copy(TestMsg::new(0, 13)).unwrap(), 1);
        assert_eq!(b.receive().unwrap().unwrap().seq, 13);
        // Nothing is lost for good: the broken connection's chunks came back.
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    d.finish();
}

#[test]
fn garbage_in_the_return_words() {
    // A subscriber that scribbles over its return words (one per delivery
    // its connection may have outstanding) can only fail to return its own
    // chunks: the publisher takes back a delivery only if it is outstanding
    // on that connection, through that word, and the word holds its stamp. Other subscribers see nothing of it, and
    // everything comes back once the scribbler leaves.
    let d = Domain::new("garbage-returns", HELPER);
    let name = "it/bad-returns";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let a = svc.subscriber_builder().create().unwrap();
        let b = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert_eq!(publisher.send_copy(TestMsg::new(0, 0)).unwrap(), 2);
        let held_by_a = a.receive().unwrap().unwrap();
        drop(b.receive().unwrap().unwrap());
        let seg = Segment::open(&d.root, name, publisher.id());
        let base = seg.conn_base(seg.slot_of(a.id())) + seg.geo.returns_offset;
        let words = seg.geo.return_slots;
        let scribble = |round: u64| {
            for i in 0..words {
                // Garbage, and plausible stamps of deliveries A never had.
                let v = if i % 2 == 0 {
                    0xdead_beef_0000_0000 | i
                } else {
                    round + i
                };
                seg.write(base + 8 * i, v);
            }
        };
        for seq in 1..=40 {
            scribble(seq);
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            let s = b.receive().unwrap().expect("B gets every message");
            assert_eq!(s.seq, seq);
            assert!(s.is_intact());
            drop(s);
            // A may get samples or nothing; it must not panic.
            if let Ok(Some(s)) = a.receive() {
                assert!(s.is_intact());
            }
        }
        // A's own stamps never appear, so its held chunk was never reused.
        assert_eq!(held_by_a.seq, 0);
        assert!(held_by_a.is_intact());
        drop(held_by_a);
        drop(a);
        publisher.update_connections();
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    d.finish();
}

#[test]
fn garbage_consumer_index() {
    garbage_from_a_subscriber("garbage-head", |seg, slot| {
        // The subscriber's head far beyond anything the publisher sent: the
        // publisher finds more queued than the ring holds.
        seg.write(seg.conn_base(slot) + LINE, 0x5a5a_5a5a_5a5a_5a5a);
    });
}
