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
//!
//! This file holds what the tests share (a node and a service in a test's
//! domain, and [`Segment`], a publisher's segment read and written through
//! its file); the tests are in `corruption/`, by what the garbage hits.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use hako::unstable::layout::{SegmentGeometry, SegmentParams, LINE, SEGMENT_MAGIC};
use hako::{Config, Node, NodeBuilder, PubSubService};
use hako_tests::harness::Domain;
use hako_tests::{fnv1a, TestMsg, FNV_OFFSET};

/// Garbage in a publisher's segment: its submission ring, descriptors and
/// header; one variant with the subscriber in another process.
#[path = "corruption/publisher_segment.rs"]
mod publisher_segment;

/// Garbage a subscriber writes into its connection: consumer index, return
/// words.
#[path = "corruption/subscriber_writes.rs"]
mod subscriber_writes;

/// Garbage in the service's own files: `static.toml`, the debris of a
/// half-created service, the port tables.
#[path = "corruption/service_files.rs"]
mod service_files;

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
                withdrawals: 0,
                inline: 0,
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
                withdrawals: 0,
                inline: 0,
            },
        };
        // SegmentHeader: magic u64, version u32, chunk_count u32, port_id u64,
        // then the ten u64 of SegmentParams.
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
            withdrawals: p(8),
            inline: p(9),
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
