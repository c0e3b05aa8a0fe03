//! Hostile shared state (issue #2, scenarios 12 and 13).
//!
//! "Shared memory is hostile input": garbage written into another process's
//! segments must become an error value, never a panic, and must break only
//! the connection it was written into.
//!
//! * garbage in a submission ring, a descriptor with a chunk index out of
//!   range, and a garbage payload length: `receive` returns
//!   `Err(ReceiveError::CorruptedPublisher { .. })`, the next `receive`
//!   returns `Ok`, and another publisher of the same service still delivers.
//!   These run in the test process (a publisher and a subscriber with the
//!   public API, plus writes into the publisher's segment file
//!   `<root>/svc_<hash>/pub_<port id>`, located with the public layout in
//!   `hako::unstable::layout`); one variant runs the subscriber in a helper
//!   process, which must exit with the CorruptedPublisher code, not panic.
//! * a garbage publisher segment header (bad magic, inconsistent chunk
//!   count, parameters out of range): the subscriber reports
//!   `CorruptedPublisher` once and ignores that publisher;
//! * garbage written by a subscriber: in its consumer index, the publisher
//!   drops that subscriber's connection, keeps serving the others, and gets
//!   every chunk back; in its return words, the scribbler only keeps its own
//!   chunks from coming back (never one it still holds), the others see
//!   nothing of it, and everything comes back when it leaves;
//! * a garbage `static.toml` (unparsable, out-of-range values, non-UTF-8,
//!   another service's name): `open` and `open_or_create` return
//!   `ServiceError::Corrupted`, in this process and in a helper process.
//! * a service directory without `static.toml` (debris of a creator that
//!   died halfway): `open` says the service does not exist, and
//!   `open_or_create` cleans the debris and succeeds.
//!
//! Each test ends with an empty domain root.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hako::unstable::layout::{SegmentGeometry, SegmentParams, LAYOUT_VERSION, LINE, SEGMENT_MAGIC};
use hako::{Config, Node, NodeBuilder, PubSubService, ReceiveError, ServiceError};
use hako_tests::harness::{Domain, WATCHDOG};
use hako_tests::{exit, fnv1a, TestMsg, FNV_OFFSET};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn node(d: &Domain) -> Node {
    NodeBuilder::new()
        .config(&Config::default().with_root(&d.root))
        .create()
        .unwrap()
}

fn service(node: &Node, name: &str) -> PubSubService<TestMsg> {
    node.service_builder(&name.try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap()
}

/// `<root>/svc_<FNV-1a of the name>`, as documented in crates/hako/src/domain/service/mod.rs.
fn service_dir(root: &Path, name: &str) -> PathBuf {
    root.join(format!("svc_{:016x}", fnv1a(FNV_OFFSET, name.as_bytes())))
}

/// A publisher's data segment, read and written through its file.
struct Segment {
    file: File,
    geo: SegmentGeometry,
    params: SegmentParams,
}

impl Segment {
    fn open(root: &Path, service: &str, port_id: u64) -> Self {
        let dir = service_dir(root, service);
        assert!(dir.is_dir(), "{} should exist", dir.display());
        let path = dir.join(format!("pub_{port_id:016x}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut seg = Self {
            file,
            geo: SegmentParams {
                elem_size: 0,
                align: 1,
                max_len: 1,
                chunk_count: 1,
                max_subscribers: 1,
                buffer: 1,
                borrowed: 1,
                tagged: 0,
            }
            .geometry()
            .unwrap(),
            params: SegmentParams {
                elem_size: 0,
                align: 0,
                max_len: 0,
                chunk_count: 0,
                max_subscribers: 0,
                buffer: 0,
                borrowed: 0,
                tagged: 0,
            },
        };
        // SegmentHeader: magic u64, version u32, chunk_count u32, port_id u64,
        // then the eight u64 of SegmentParams.
        assert_eq!(seg.read(0), SEGMENT_MAGIC);
        assert_eq!(seg.read(16), port_id);
        let p = |i: u64| seg.read(24 + 8 * i);
        seg.params = SegmentParams {
            elem_size: p(0),
            align: p(1),
            max_len: p(2),
            chunk_count: p(3),
            max_subscribers: p(4),
            buffer: p(5),
            borrowed: p(6),
            tagged: p(7),
        };
        seg.geo = seg.params.geometry().expect("a valid segment header");
        seg
    }

    fn read(&self, off: u64) -> u64 {
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, off).unwrap();
        u64::from_le_bytes(b)
    }

    fn write(&self, off: u64, v: u64) {
        self.file.write_all_at(&v.to_le_bytes(), off).unwrap();
    }

    fn conn_base(&self, slot: u64) -> u64 {
        self.geo.conns_offset + slot * self.geo.conn_stride
    }

    /// The connection slot serving subscriber `sub_id` (its connected word).
    fn slot_of(&self, sub_id: u64) -> u64 {
        (0..self.params.max_subscribers)
            .find(|&j| self.read(self.conn_base(j)) == sub_id)
            .expect("the subscriber is connected")
    }

    /// The submission slot the subscriber on `slot` reads next, and the lap
    /// stamp a valid entry there carries (see core/ring.rs).
    fn next_submission(&self, slot: u64) -> (u64, u64) {
        let base = self.conn_base(slot);
        let head = self.read(base + LINE);
        let mask = (1u64 << self.geo.sub_log2) - 1;
        // The lap stamp in the top ten bits (see hako's core::ring).
        let stamp = ((head >> self.geo.sub_log2) + 1) << 54;
        (
            base + self.geo.sub_offset + 8 * self.geo.slot_words * (head & mask),
            stamp,
        )
    }
}

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

/// Writes `content` over the service's static.toml while this process holds
/// the service open, then checks `open` here and in a helper process.
fn garbage_static(test: &str, content: &[u8], reason: &str) {
    let d = Domain::new(test, HELPER);
    let name = "it/static";
    {
        let owner = node(&d);
        let _svc = service(&owner, name);
        let path = service_dir(&d.root, name).join("static.toml");
        assert!(path.is_file());
        std::fs::write(&path, content).unwrap();

        let other = node(&d);
        let b = || {
            other
                .service_builder(&name.try_into().unwrap())
                .publish_subscribe::<TestMsg>()
        };
        for r in [b().open(), b().open_or_create()] {
            match r {
                Err(e @ ServiceError::Corrupted { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(reason), "{msg:?} should contain {reason:?}");
                }
                other => panic!("expected Corrupted, got {other:?}"),
            }
        }
        for mode in ["open", "open-or-create"] {
            let o = d
                .spawn(
                    &format!("open-{mode}"),
                    &["open", "--service", name, "--mode", mode],
                )
                .wait();
            o.assert_code(exit::CORRUPTED);
            let line = o.error_line();
            assert!(line.contains("is corrupted"), "{line}");
            assert!(line.contains(reason), "{line} should contain {reason:?}");
        }
    }
    // The owner's drop removes the service, garbage and all.
    d.finish();
}

#[test]
fn static_description_that_does_not_parse() {
    garbage_static(
        "static-garbage",
        b"this is = = not toml [",
        "does not parse",
    );
}

#[test]
fn static_description_with_values_out_of_range() {
    let desc = format!("version = {LAYOUT_VERSION}\n")
        + "name = \"it/static\"\npattern = \"publish_subscribe\"\n\n[payload]\n\
                type_name = \"hako_tests::TestMsg\"\nsize = 64\nalign = 8\nslice = false\n\n[qos]\n\
                max_publishers = 0\nmax_subscribers = 8\nmax_nodes = 32\n\
                subscriber_max_buffer_size = 4\nsubscriber_max_borrowed_samples = 2\n\
                history_size = 0\noverflow = \"drop_oldest\"\n";
    garbage_static("static-range", desc.as_bytes(), "max_publishers");
}

#[test]
fn static_description_that_is_not_text() {
    garbage_static(
        "static-binary",
        &[0xff, 0xfe, 0x00, 0x80, 0xc3],
        "not UTF-8",
    );
}

#[test]
fn static_description_of_another_service() {
    let desc = format!("version = {LAYOUT_VERSION}\n")
        + "name = \"it/someone-else\"\npattern = \"publish_subscribe\"\n\n[payload]\n\
                type_name = \"hako_tests::TestMsg\"\nsize = 64\nalign = 8\nslice = false\n\n[qos]\n\
                max_publishers = 2\nmax_subscribers = 8\nmax_nodes = 32\n\
                subscriber_max_buffer_size = 4\nsubscriber_max_borrowed_samples = 2\n\
                history_size = 0\noverflow = \"drop_oldest\"\n";
    garbage_static("static-other", desc.as_bytes(), "it/someone-else");
}

#[test]
fn half_created_service_is_cleaned_by_open_or_create() {
    let d = Domain::new("half-created", HELPER);
    let name = "it/half";
    let dir = service_dir(&d.root, name);
    // What a creator that died before publishing static.toml leaves behind.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("dynamic"), vec![0xa5u8; 4096]).unwrap();
    std::fs::write(dir.join("static.toml.tmp"), b"version = 1\nname = ").unwrap();

    let o = d
        .spawn("open", &["open", "--service", name, "--mode", "open"])
        .wait();
    o.assert_code(exit::DOES_NOT_EXIST);
    assert!(
        dir.join("dynamic").exists(),
        "open must not touch the debris"
    );

    // Another process cleans the debris and creates the service.
    let o = d
        .spawn(
            "open-or-create",
            &["open", "--service", name, "--mode", "open-or-create"],
        )
        .wait();
    o.assert_code(exit::OK);
    assert_eq!(o.result().get("type"), "hako_tests::TestMsg");
    d.assert_root_empty();

    // And once more in this process, with traffic over the fresh segments.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("dynamic"), vec![0x5au8; 100]).unwrap();
    {
        let node = node(&d);
        let svc = service(&node, name);
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert_eq!(publisher.send_copy(TestMsg::new(3, 7)).unwrap(), 1);
        let s = sub.receive().unwrap().unwrap();
        assert_eq!((s.publisher, s.seq), (3, 7));
        assert!(s.is_intact());
    }
    d.finish();
}

#[test]
fn garbage_in_the_port_tables() {
    // Entries that no port made: a publisher whose segment does not exist
    // and whose limits are absurd, a subscriber that never reads. Nobody
    // panics, the real ports keep talking, and since no live node owns the
    // entries, the ports that follow the change reclaim them.
    use hako::unstable::layout::{DynGeometry, PORT_SLOT_SIZE, SUB_COUNTERS_SIZE};
    use std::os::unix::fs::FileExt;
    let d = Domain::new("garbage-tables", HELPER);
    let name = "it/tables";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let q = svc.qos().clone();
        let geo = DynGeometry::new(
            q.max_nodes,
            q.max_publishers * 2,
            q.max_subscribers,
            SUB_COUNTERS_SIZE,
        );
        let dynamic = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(service_dir(&d.root, name).join("dynamic"))
            .unwrap();
        let put = |off: u64, v: u64| dynamic.write_all_at(&v.to_le_bytes(), off).unwrap();
        let slot = |base: u64, i: u64| base + i * PORT_SLOT_SIZE;
        let last_pub = slot(geo.pubs_offset, u64::from(q.max_publishers) * 2 - 1);
        for (k, v) in [0xbad0_0001u64, 0xdead_beef, u64::MAX, u64::MAX]
            .iter()
            .enumerate()
        {
            put(last_pub + 8 * k as u64, *v);
        }
        let last_sub = slot(geo.subs_offset, u64::from(q.max_subscribers) - 1);
        put(last_sub, 0xbad0_0002);
        put(last_sub + 8, 0xdead_beef);
        let mut gen = [0u8; 8];
        dynamic.read_exact_at(&mut gen, 24).unwrap();
        put(24, u64::from_le_bytes(gen) + 1);
        for seq in 0..20 {
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            match sub.receive() {
                Ok(Some(s)) => assert!(s.is_intact() && s.seq == seq),
                other => panic!("message {seq}: {other:?}"),
            }
        }
        // The ports that followed the change of the tables found the
        // entries' node dead and reclaimed them already.
        let mut word = [0u8; 8];
        for off in [last_pub, last_sub] {
            dynamic.read_exact_at(&mut word, off).unwrap();
            assert_eq!(u64::from_le_bytes(word), 0, "entry at {off} still there");
        }
        let done = hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
        assert!(done.is_empty(), "{done:?}");
        publisher.send_copy(TestMsg::new(0, 20)).unwrap();
        assert_eq!(sub.receive().unwrap().unwrap().seq, 20);
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    d.finish();
}
