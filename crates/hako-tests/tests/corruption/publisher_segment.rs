//! Garbage in a publisher's segment: the submission ring, a descriptor's
//! chunk index, payload length and announced next chunk, and the segment
//! header; and garbage that reaches a subscriber in another process.

use std::time::{Duration, Instant};

use hako::unstable::layout::LAYOUT_VERSION;
use hako::ReceiveError;
use hako_tests::harness::{Domain, WATCHDOG};
use hako_tests::{exit, TestMsg};

use super::{node, service, Segment, HELPER};

/// Runs `corrupt` on a connected publisher/subscriber pair with one message
/// queued, then checks that receive reports it, recovers, and that a second
/// publisher still works.
fn corrupted_publisher_case(test: &str, what: &str, corrupt: impl FnOnce(&Segment, u64)) {
    let d = Domain::new(test, HELPER);
    let name = "it/corrupt";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        // A healthy message first: the connection works and is mapped.
        assert_eq!(publisher.send_copy(TestMsg::new(0, 0)).unwrap(), 1);
        let s = sub.receive().unwrap().expect("the first message");
        assert!(s.is_intact() && s.seq == 0);
        drop(s);

        // One message queued, unread: the corruption hits it.
        assert_eq!(publisher.send_copy(TestMsg::new(0, 1)).unwrap(), 1);
        let seg = Segment::open(&d.root, name, publisher.id());
        let slot = seg.slot_of(sub.id());
        corrupt(&seg, slot);

        match sub.receive() {
            Err(ReceiveError::CorruptedPublisher {
                publisher: p,
                what: w,
            }) => {
                assert_eq!(p, publisher.id());
                assert!(w.contains(what), "{w:?} should contain {what:?}");
            }
            other => panic!("expected CorruptedPublisher, got {other:?}"),
        }
        // The subscriber goes on: nothing more from the broken publisher.
        assert!(matches!(sub.receive(), Ok(None)));
        // The broken publisher itself does not fail either.
        publisher.send_copy(TestMsg::new(0, 2)).unwrap();
        assert!(matches!(sub.receive(), Ok(None)));
        // Another publisher of the same service is unaffected.
        let second = svc.publisher_builder().create().unwrap();
        assert_eq!(second.send_copy(TestMsg::new(1, 0)).unwrap(), 1);
        let s = sub
            .receive()
            .unwrap()
            .expect("a message from the second publisher");
        assert_eq!((s.publisher, s.seq), (1, 0));
        assert!(s.is_intact());
        drop(s);
        assert!(matches!(sub.receive(), Ok(None)));
    }
    d.finish();
}

#[test]
fn garbage_in_the_submission_ring() {
    corrupted_publisher_case("garbage-ring", "submission queue", |seg, slot| {
        let (off, _) = seg.next_submission(slot);
        // A lap stamp no position can have.
        seg.write(off, 0xdead_beef_0000_0001);
    });
}

#[test]
fn descriptor_with_a_chunk_index_out_of_range() {
    corrupted_publisher_case("garbage-index", "chunk index out of range", |seg, slot| {
        let (off, stamp) = seg.next_submission(slot);
        // A well-formed entry pointing past the pool.
        seg.write(off, stamp | (seg.params.chunk_count + 5));
    });
}

#[test]
fn garbage_payload_length() {
    corrupted_publisher_case(
        "garbage-length",
        "payload length out of range",
        |seg, slot| {
            // The queued message's length (the second word of its slot)
            // claims 7 elements; a fixed-size payload has exactly 1.
            let (desc, _) = seg.next_submission(slot);
            seg.write(desc + 8, 7);
        },
    );
}

/// Sends 80 messages; the first 40 in step (each received and dropped
/// before the next is sent), then holding a sample now and then. Returns how
/// many of the in-step messages came in the chunk the previous descriptor
/// announced, and how many did not.
fn announcements(test: &str, buffer: u32, history: u32) -> (u32, u32) {
    let d = Domain::new(test, HELPER);
    let name = "it/announced";
    let counts;
    {
        let node = node(&d);
        let svc = node
            .service_builder(&name.try_into().unwrap())
            .publish_subscribe::<TestMsg>()
            .subscriber_max_buffer_size(buffer)
            .history_size(history)
            .open_or_create()
            .unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let seg = Segment::open(&d.root, name, publisher.id());
        let slot = seg.slot_of(sub.id());
        let mut announced = None;
        let mut held = Vec::new();
        let (mut hits, mut misses) = (0, 0);
        for seq in 0..80u64 {
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            let (desc, _) = seg.next_submission(slot);
            let index = seg.read(desc) & 0xffff_ffff;
            let next = (seg.read(desc + 8) >> 47).checked_sub(1);
            assert!(next.is_none_or(|n| n < seg.params.chunk_count));
            if seq > 0 && seq < 40 {
                if announced == Some(index) {
                    hits += 1;
                } else {
                    misses += 1;
                }
            }
            announced = next;
            let s = sub.receive().unwrap().expect("the message");
            assert!(s.is_intact() && s.seq == seq);
            if seq >= 40 {
                // Guesses may miss now; messages stay intact.
                held.push(s);
                if seq % 7 < 4 || held.len() == 2 {
                    held.clear();
                }
            }
        }
        counts = (hits, misses);
    }
    d.finish();
    counts
}

/// Each descriptor announces the chunk the publisher will most likely loan
/// next (what subscribers prefetch while they wait): right every time for a
/// subscriber that keeps pace, with or without history, and harmless when
/// it does not.
#[test]
fn a_descriptor_announces_the_chunk_of_the_next_message() {
    for (buffer, history) in [(2, 0), (4, 0), (2, 1), (4, 3)] {
        let test = format!("announcement-{buffer}-{history}");
        assert_eq!(
            announcements(&test, buffer, history),
            (39, 0),
            "in-step announcements with a queue of {buffer} and a history of {history}"
        );
    }
}

/// The chunk a descriptor announces for the next message is only a hint for
/// prefetching: garbage there (out of the pool, or the wrong chunk) changes
/// nothing a subscriber sees.
#[test]
fn garbage_in_the_announced_next_chunk_is_harmless() {
    let d = Domain::new("garbage-announcement", HELPER);
    let name = "it/announce";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let seg = Segment::open(&d.root, name, publisher.id());
        let slot = seg.slot_of(sub.id());
        // The slot's second word: bits 47 and up hold the next chunk + 1.
        let garbage = [
            0x1_ffff,                   // the highest the bits can say
            seg.params.chunk_count + 1, // just past the pool
            seg.params.chunk_count,     // the last chunk, not the next
            1,                          // chunk 0, not the next
        ];
        for (seq, g) in garbage.into_iter().enumerate() {
            assert_eq!(publisher.send_copy(TestMsg::new(0, seq as u64)).unwrap(), 1);
            let (desc, _) = seg.next_submission(slot);
            let word = seg.read(desc + 8);
            assert_eq!(
                word & ((1 << 47) - 1),
                1,
                "a fixed-size payload has length 1"
            );
            seg.write(desc + 8, 1 | (g << 47));
            let s = sub.receive().unwrap().expect("the message");
            assert_eq!(s.seq, seq as u64);
            assert!(s.is_intact());
        }
        // And the stream goes on as before.
        for seq in 10..20 {
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            let s = sub.receive().unwrap().expect("the message");
            assert!(s.is_intact() && s.seq == seq);
        }
        assert!(matches!(sub.receive(), Ok(None)));
    }
    d.finish();
}

/// A publisher whose segment header is garbage before the subscriber maps it:
/// the subscriber reports it once and ignores that publisher.
fn garbage_segment_header(test: &str, off: u64, value: u64, what: &str) {
    let d = Domain::new(test, HELPER);
    let name = "it/header";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let seg = Segment::open(&d.root, name, publisher.id());
        seg.write(off, value);
        match sub.receive() {
            Err(ReceiveError::CorruptedPublisher {
                publisher: p,
                what: w,
            }) => {
                assert_eq!(p, publisher.id());
                assert!(w.contains(what), "{w:?} should contain {what:?}");
            }
            other => panic!("expected CorruptedPublisher, got {other:?}"),
        }
        assert!(matches!(sub.receive(), Ok(None)));
        assert_eq!(sub.publisher_count(), 0);
        let second = svc.publisher_builder().create().unwrap();
        second.send_copy(TestMsg::new(1, 0)).unwrap();
        let s = sub
            .receive()
            .unwrap()
            .expect("a message from the second publisher");
        assert_eq!((s.publisher, s.seq), (1, 0));
    }
    d.finish();
}

#[test]
fn segment_header_with_a_bad_magic() {
    garbage_segment_header("header-magic", 0, 0x0bad_0bad, "bad magic");
}

#[test]
fn segment_header_with_an_inconsistent_chunk_count() {
    // chunk_count (u32 at 12) disagrees with params.chunk_count.
    garbage_segment_header(
        "header-chunks",
        8,
        u64::from(LAYOUT_VERSION) | (12345 << 32),
        "chunk count",
    );
}

#[test]
fn segment_header_with_parameters_out_of_range() {
    // params.buffer (u64 at 24 + 5 * 8) = 0.
    garbage_segment_header("header-params", 24 + 5 * 8, 0, "out of range");
}

/// Wait (under the watchdog) until `cond` holds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: {what} never happened"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn garbage_reaches_a_subscriber_in_another_process() {
    let d = Domain::new("garbage-xproc", HELPER);
    let name = "it/corrupt-x";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let publisher = svc.publisher_builder().create().unwrap();
        let ready = d.arg("sub-ready");
        let mut procs = vec![d.spawn(
            "sub",
            &[
                "subscribe",
                "--service",
                name,
                "--ready-file",
                &ready,
                "--expect",
                "1",
            ],
        )];
        d.wait_file("sub-ready", &mut procs);
        wait_until("the subscriber connects", || {
            publisher.subscriber_count() == 1
        });
        let seg = Segment::open(&d.root, name, publisher.id());
        let slot = (0..seg.params.max_subscribers)
            .find(|&j| seg.read(seg.conn_base(j)) != 0)
            .unwrap();
        let (off, _) = seg.next_submission(slot);
        seg.write(off, 0xdead_beef_0000_0001);

        let out = procs.pop().unwrap().wait();
        // An error value, reported; not a panic (exit code 101) or a hang.
        out.assert_code(exit::CORRUPTED_PUBLISHER);
        let line = out.error_line();
        assert!(line.starts_with("ERROR CorruptedPublisher: "), "{line}");
        assert!(line.contains("garbage in the submission queue"), "{line}");
        assert!(
            line.contains(&format!("{:016x}", publisher.id())),
            "{line} should name the publisher"
        );
        // The publisher is unaffected by what happened at the subscriber.
        publisher.send_copy(TestMsg::new(0, 0)).unwrap();
    }
    d.finish();
}
