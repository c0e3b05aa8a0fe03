//! Layouts of the shared segments, and the arithmetic that places things in them.
//!
//! Every structure here is `#[repr(C)]`, starts with a magic number and a
//! version, and has its offsets checked at compile time. Headers written once
//! by their creator are read by other processes as a *copy*
//! (`read_volatile`) and validated before any field is used; fields that change
//! after creation are atomics.
//!
//! ## Publisher data segment (one file per publisher)
//!
//! ```text
//!  0               128            256             pool_offset (page aligned)   total_size
//!  +---------------+--------------+---------------+----------------------------+
//!  | SegmentHeader | PubCounters  | ConnBlock × S | chunk 0 | chunk 1 | ...    |
//!  +---------------+--------------+---------------+----------------------------+
//!  mapped read-write by publisher and subscribers   | read-only for subscribers
//!
//!  ConnBlock (one per subscriber slot, conn_stride bytes)
//!  +0                connected: AtomicU64  (subscriber port id served; 0 = none)
//!  +8                attached: AtomicU64   (subscriber port id that mapped the segment)
//!  +16               dropped: AtomicU64    (samples this subscriber lost to overflow)
//!  +LINE             head: AtomicU64       (submission consumer position)
//!  +2·LINE           submission slots      (1 << sub_log2 × 2 u64: descriptor, length;
//!                                           tagged: × 4 u64, the tag after them;
//!                                           inline: × 8 u64, one line, the payload
//!                                           in the words after those)
//!  +2·LINE + sub     return words          ((buffer + borrowed) × u64, one per
//!                                           return slot: a block does not grow
//!                                           with the pool)
//!  + returns         withdrawal words      (withdrawals × u64, a server's segment
//!                                           only: word s holds 1 + the generation
//!                                           of the last request in the client's
//!                                           slot s whose pending response it
//!                                           dropped before the stream ended; the
//!                                           client writes, the server reads: a hint
//!                                           that ends a wait for room to answer)
//!
//!  chunk (chunk_size bytes, aligned to max(64, payload align))
//!  +0                payload               (its length travels in the descriptor)
//! ```
//!
//! ## Service dynamic segment (one file per service)
//!
//! ```text
//!  +-----------+------------------+-----------------+-----------------+---------------+--------+
//!  | DynHeader | NodeSlot × nodes | PortSlot × pubs | PortSlot × subs | extra × subs  | shared |
//!  +-----------+------------------+-----------------+-----------------+---------------+--------+
//!  (events: pubs = notifiers, subs = listeners, extra = a listener's event counters;
//!   publish/subscribe: extra = a subscriber's own counters, one line each;
//!   blackboard: pubs = its writer, subs = readers, extra = a reader's pins,
//!   shared = the board: every entry's buffers, see `blackboard/board.rs`)
//! ```
//! Tables are changed only under the domain lock; readers use atomics. A port
//! slot is in use while `port_id != 0`; `generation` counts table changes.

use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicU32, AtomicU64};

use super::ring::{
    INLINE_SLOT_WORDS, INLINE_WORDS, MAX_RETURN_SLOTS, SLOT_WORDS, TAGGED_INLINE_WORDS,
    TAGGED_SLOT_WORDS,
};

/// Padding unit between fields written by different processes (x86-64
/// prefetches cache lines in pairs, so 128 bytes avoids false sharing).
pub const LINE: u64 = 128;
/// Page size assumed for mapping offsets.
pub const PAGE: u64 = 4096;
/// Layout version of every segment; bumped on any incompatible change
/// (5: a wake block's fourth word says whether a sleeper was notified;
/// 6: rings may be tagged, and the segment header says so;
/// 7: return words are indexed by a return slot the descriptor names, one
/// per delivery a connection may have outstanding, instead of by chunk;
/// 8: a server's connection blocks end with a withdrawal word per request
/// slot of its client;
/// 9: a service's dynamic header counts table changes in a futex word, so
/// that a process can sleep until a port comes or goes;
/// 10: a dynamic segment may end with an area of the whole service, the
/// blackboard's entries;
/// 11: a publisher of small payloads may carry them in its ring slots, and
/// the segment header says so).
pub const LAYOUT_VERSION: u32 = 11;
/// Magic of a publisher data segment ("HAKOPUB1").
pub const SEGMENT_MAGIC: u64 = u64::from_le_bytes(*b"HAKOPUB1");
/// Magic of a service dynamic segment ("HAKODYN1").
pub const DYN_MAGIC: u64 = u64::from_le_bytes(*b"HAKODYN1");
/// Largest payload alignment supported (chunks are placed at page granularity).
pub const MAX_ALIGN: u64 = PAGE;
/// Offset of the `attached` word in a connection block.
pub const ATTACHED_OFFSET: u64 = 8;
/// Offset of the `dropped` counter in a connection block (publisher writes).
pub const DROPPED_OFFSET: u64 = 16;
/// Bytes of a subscriber's own counters in the extra area of a
/// publish/subscribe service's dynamic segment: a line that only that
/// subscriber writes (`received` at +0).
pub const SUB_COUNTERS_SIZE: u64 = LINE;
/// Offset of the [`PubCounters`] in a publisher segment.
pub const COUNTERS_OFFSET: u64 = LINE;
#[inline]
const fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// Header of a publisher data segment. Written once before the segment is
/// announced; immutable afterwards.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// [`SEGMENT_MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// Number of chunks in the pool.
    pub chunk_count: u32,
    /// Id of the publisher port that owns the segment.
    pub port_id: u64,
    /// Parameters the geometry is derived from.
    pub params: SegmentParams,
}

/// A publisher's counters, on a line of its own that only the publisher
/// writes (plain stores under its lock, no read-modify-write) and that
/// inspectors read now and then. Informational: never trusted by the data
/// path.
#[repr(C)]
#[derive(Debug, Default)]
pub struct PubCounters {
    /// Samples sent.
    pub sent: AtomicU64,
    /// Deliveries (a sample sent to three subscribers counts three).
    pub deliveries: AtomicU64,
    /// Deliveries lost to overflow (taken back under drop-oldest, or not
    /// made under backpressure with discard or retry).
    pub dropped: AtomicU64,
    /// Samples loaned and not yet sent or dropped.
    pub loans: AtomicU64,
    /// Chunks of the pool free after the last send.
    pub free_chunks: AtomicU64,
}

const _: () = assert!(size_of::<PubCounters>() as u64 <= LINE);

/// Everything that determines a publisher segment's geometry.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentParams {
    /// Size of one payload element.
    pub elem_size: u64,
    /// Alignment of the payload.
    pub align: u64,
    /// Maximum number of elements per sample (1 for a fixed-size type).
    pub max_len: u64,
    /// Number of chunks.
    pub chunk_count: u64,
    /// Subscriber slots of the service.
    pub max_subscribers: u64,
    /// Logical capacity of a submission ring (subscriber buffer size).
    pub buffer: u64,
    /// Chunks a subscriber may borrow at once.
    pub borrowed: u64,
    /// 1 if the submission rings are tagged (four words per slot, see
    /// `core::ring`), else 0.
    pub tagged: u64,
    /// Withdrawal words per connection block: for a server, the requests
    /// a client may have in flight; 0 for every other sender.
    pub withdrawals: u64,
    /// 1 if the payload travels in the ring slots (eight words per slot,
    /// see `core::ring`): allowed only when the largest payload fits the
    /// slot's payload words and is aligned to at most 8; else 0.
    pub inline: u64,
}

/// Whether a payload of `elem_size`-byte elements, at most `max_len` of
/// them, aligned to `align`, fits an inline ring's slot (tagged or not).
pub const fn fits_inline(elem_size: u64, max_len: u64, align: u64, tagged: bool) -> bool {
    let words = if tagged {
        TAGGED_INLINE_WORDS
    } else {
        INLINE_WORDS
    } as u64;
    align <= 8 && max_len <= 8 * words && elem_size.saturating_mul(max_len) <= 8 * words
}

const _: () = assert!(offset_of!(SegmentHeader, magic) == 0);
const _: () = assert!(offset_of!(SegmentHeader, version) == 8);
const _: () = assert!(offset_of!(SegmentHeader, chunk_count) == 12);
const _: () = assert!(offset_of!(SegmentHeader, port_id) == 16);
const _: () = assert!(offset_of!(SegmentHeader, params) == 24);
const _: () = assert!(size_of::<SegmentHeader>() == 24 + 10 * 8);
const _: () = assert!(size_of::<SegmentHeader>() as u64 <= LINE);

/// Where everything sits in a publisher segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentGeometry {
    /// Offset of the first connection block.
    pub conns_offset: u64,
    /// Bytes per connection block.
    pub conn_stride: u64,
    /// log2 of the submission ring's slot count.
    pub sub_log2: u32,
    /// Words per submission slot (`core::ring::SLOT_WORDS`,
    /// `TAGGED_SLOT_WORDS` for tagged rings, `INLINE_SLOT_WORDS` for
    /// inline rings).
    pub slot_words: u64,
    /// Whether the rings are tagged.
    pub tagged: bool,
    /// Whether the payloads travel in the slots.
    pub inline: bool,
    /// Offset of the submission slots within a connection block.
    pub sub_offset: u64,
    /// Offset of the return words within a connection block.
    pub returns_offset: u64,
    /// Return words per connection: the deliveries it may have outstanding
    /// (its queue plus what the subscriber may borrow).
    pub return_slots: u64,
    /// Offset of the withdrawal words within a connection block.
    pub withdrawn_offset: u64,
    /// Withdrawal words per connection (0 but for a server's segment).
    pub withdrawals: u64,
    /// Offset of chunk 0 (page aligned).
    pub pool_offset: u64,
    /// Bytes per chunk (its payload starts at its first byte).
    pub chunk_size: u64,
    /// Size of the whole segment.
    pub total_size: u64,
}

/// Upper bounds that keep the arithmetic far from overflow.
const MAX_SEGMENT: u64 = 1 << 46;

impl SegmentParams {
    /// Computes the geometry, or `None` if the parameters are out of range
    /// (what another process wrote is checked with this too).
    pub fn geometry(&self) -> Option<SegmentGeometry> {
        let p = self;
        if !p.align.is_power_of_two()
            || p.align > MAX_ALIGN
            || p.max_len == 0
            || p.chunk_count == 0
            || p.chunk_count > u64::from(u32::MAX)
            || p.max_subscribers == 0
            || p.max_subscribers > 4096
            || p.buffer == 0
            || p.buffer > 1 << 20
            || p.borrowed == 0
            || p.borrowed > 1 << 20
            || p.tagged > 1
            || p.inline > 1
            || p.withdrawals > 1 << 20
            || p.elem_size > MAX_SEGMENT
            || p.max_len > MAX_SEGMENT
        {
            return None;
        }
        let payload_bytes = p.elem_size.checked_mul(p.max_len)?;
        if payload_bytes > MAX_SEGMENT {
            return None;
        }
        let sub_slots = p.buffer.next_power_of_two();
        let inline = p.inline == 1;
        if inline && !fits_inline(p.elem_size, p.max_len, p.align, p.tagged == 1) {
            return None;
        }
        let slot_words = if inline {
            INLINE_SLOT_WORDS
        } else if p.tagged == 1 {
            TAGGED_SLOT_WORDS
        } else {
            SLOT_WORDS
        } as u64;
        let sub_offset = 2 * LINE;
        let returns_offset = sub_offset + round_up(8 * slot_words * sub_slots, LINE);
        let return_slots = p.buffer + p.borrowed;
        if return_slots >= MAX_RETURN_SLOTS {
            return None;
        }
        let withdrawn_offset = returns_offset + round_up(8 * return_slots, LINE);
        let conn_stride = withdrawn_offset + round_up(8 * p.withdrawals, LINE);
        let conns_offset = COUNTERS_OFFSET + LINE;
        let pool_offset = round_up(conns_offset + p.max_subscribers * conn_stride, PAGE);
        // Cache-line aligned and headerless, so a payload of up to 64 bytes
        // is one line to write and to fetch.
        let chunk_size = round_up(payload_bytes.max(1), p.align.max(64));
        let pool_bytes = chunk_size.checked_mul(p.chunk_count)?;
        let total_size = pool_offset.checked_add(pool_bytes)?;
        if total_size > MAX_SEGMENT {
            return None;
        }
        Some(SegmentGeometry {
            conns_offset,
            conn_stride,
            sub_log2: sub_slots.trailing_zeros(),
            slot_words,
            tagged: p.tagged == 1,
            inline,
            sub_offset,
            returns_offset,
            return_slots,
            withdrawn_offset,
            withdrawals: p.withdrawals,
            pool_offset,
            chunk_size,
            total_size,
        })
    }
}

impl SegmentGeometry {
    /// Words of one connection's submission ring.
    pub fn ring_words(&self) -> u64 {
        self.slot_words << self.sub_log2
    }
}

impl SegmentHeader {
    /// Validates a header copied out of shared memory against the file size.
    pub fn validate(&self, file_size: u64) -> Result<SegmentGeometry, &'static str> {
        if self.magic != SEGMENT_MAGIC {
            return Err("bad magic number");
        }
        if self.version != LAYOUT_VERSION {
            return Err("layout version mismatch");
        }
        if u64::from(self.chunk_count) != self.params.chunk_count {
            return Err("inconsistent chunk count");
        }
        let g = self.params.geometry().ok_or("parameters out of range")?;
        if g.total_size != file_size {
            return Err("segment size does not match its header");
        }
        Ok(g)
    }
}

/// Header of a service's dynamic segment.
#[repr(C)]
#[derive(Debug)]
pub struct DynHeader {
    /// [`DYN_MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// Entries in the node table.
    pub max_nodes: u32,
    /// Entries in the publisher table.
    pub max_publishers: u32,
    /// Entries in the subscriber table.
    pub max_subscribers: u32,
    /// Bumped after every change of the port tables.
    pub generation: AtomicU64,
    /// Bumped with `generation`, and the futex its waiters sleep on
    /// (`Client::wait_for_server`): whoever bumps it wakes them all.
    pub changes: AtomicU32,
    /// Padding, zero.
    pub _reserved: u32,
}

const _: () = assert!(offset_of!(DynHeader, magic) == 0);
const _: () = assert!(offset_of!(DynHeader, version) == 8);
const _: () = assert!(offset_of!(DynHeader, max_nodes) == 12);
const _: () = assert!(offset_of!(DynHeader, max_publishers) == 16);
const _: () = assert!(offset_of!(DynHeader, max_subscribers) == 20);
const _: () = assert!(offset_of!(DynHeader, generation) == 24);
const _: () = assert!(offset_of!(DynHeader, changes) == 32);
const _: () = assert!(size_of::<DynHeader>() == 40);
// The header fits the line before the node table.
const _: () = assert!(size_of::<DynHeader>() as u64 <= LINE);

/// A node that holds the service open, and how many handles it holds.
#[repr(C)]
#[derive(Debug)]
pub struct NodeSlot {
    /// Node id; 0 = free.
    pub node_id: AtomicU64,
    /// Open service handles of that node.
    pub refs: AtomicU64,
}
const _: () = assert!(size_of::<NodeSlot>() == 16);

/// A port registered with the service (publishers and subscribers; for
/// events, notifiers and listeners).
#[cfg(not(loom))]
#[repr(C)]
#[derive(Debug)]
pub struct PortSlot {
    /// Port id; 0 = free. Written last when a port registers.
    pub port_id: AtomicU64,
    /// Node that owns the port.
    pub node_id: AtomicU64,
    /// Publishers: maximum elements per sample. Others: unused.
    pub max_len: AtomicU64,
    /// Publishers: chunks in the pool. Others: unused.
    pub chunk_count: AtomicU64,
    /// [`PORT_RETIRED`] for a publisher that has left while a subscriber
    /// still had to map its segment to collect queued samples.
    pub flags: AtomicU64,
    /// How to wake the port when it sleeps (subscribers, listeners).
    pub wake: super::park::WakeBlock,
    /// Reserved; zero.
    pub reserved: AtomicU64,
}

/// Bytes per port table entry.
pub const PORT_SLOT_SIZE: u64 = 64;
/// [`PortSlot::flags`]: the publisher is gone; its segment stays until every
/// subscriber with queued samples has mapped it.
pub const PORT_RETIRED: u64 = 1;
/// [`PortSlot::flags`] of a subscriber: it takes no samples from publishers
/// of its own node, and they queue none for it (a relay's, see
/// `SubscriberBuilder::skip_own_node`).
pub const PORT_SKIP_OWN_NODE: u64 = 2;
/// [`PortSlot::flags`] of a subscriber: publishers never wait for it under
/// backpressure; when its queue is full they drop its oldest sample, as on
/// a drop-oldest service (see `SubscriberBuilder::lossy`).
pub const PORT_LOSSY: u64 = 4;
#[cfg(not(loom))]
const _: () = {
    assert!(offset_of!(PortSlot, port_id) == 0);
    assert!(offset_of!(PortSlot, node_id) == 8);
    assert!(offset_of!(PortSlot, max_len) == 16);
    assert!(offset_of!(PortSlot, chunk_count) == 24);
    assert!(offset_of!(PortSlot, flags) == 32);
    assert!(offset_of!(PortSlot, wake) == 40);
    assert!(size_of::<PortSlot>() as u64 == PORT_SLOT_SIZE);
};

/// Where the tables sit in a dynamic segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynGeometry {
    /// Offset of the node table.
    pub nodes_offset: u64,
    /// Offset of the first port table (publishers, notifiers).
    pub pubs_offset: u64,
    /// Offset of the second port table (subscribers, listeners).
    pub subs_offset: u64,
    /// Offset of the extra area: `extra_per_second` bytes per entry of the
    /// second table (the event counters of listeners).
    pub extra_offset: u64,
    /// Offset of the service's shared area (`shared` bytes, page-aligned;
    /// the blackboard's entries), at the end.
    pub shared_offset: u64,
    /// Size of the segment.
    pub total_size: u64,
}

impl DynGeometry {
    /// Geometry for the given table sizes, `extra_per_second` bytes per
    /// entry of the second table and a shared area of `shared` bytes.
    pub fn new(
        max_nodes: u32,
        first: u32,
        second: u32,
        extra_per_second: u64,
        shared: u64,
    ) -> Self {
        let nodes_offset = LINE;
        let pubs_offset = round_up(nodes_offset + 16 * u64::from(max_nodes), LINE);
        let subs_offset = round_up(pubs_offset + PORT_SLOT_SIZE * u64::from(first), LINE);
        let extra_offset = round_up(subs_offset + PORT_SLOT_SIZE * u64::from(second), LINE);
        let shared_offset = round_up(extra_offset + extra_per_second * u64::from(second), PAGE);
        let total_size = round_up(shared_offset + shared, PAGE).max(PAGE);
        Self {
            nodes_offset,
            pubs_offset,
            subs_offset,
            extra_offset,
            shared_offset,
            total_size,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn params() -> SegmentParams {
        SegmentParams {
            elem_size: 100,
            align: 8,
            max_len: 1,
            chunk_count: 10,
            max_subscribers: 2,
            buffer: 3,
            borrowed: 2,
            tagged: 0,
            withdrawals: 0,
            inline: 0,
        }
    }

    #[test]
    fn geometry_is_aligned_and_sized() {
        let g = params().geometry().unwrap();
        assert_eq!(g.pool_offset % PAGE, 0);
        assert_eq!(g.chunk_size % 64, 0);
        assert!(g.chunk_size >= 100);
        assert_eq!(g.sub_log2, 2);
        assert!(g.returns_offset >= g.sub_offset + 16 * 4);
        // Return words: buffer + borrowed, not one per chunk.
        assert_eq!(g.return_slots, 5);
        assert_eq!(g.conn_stride, g.returns_offset + LINE);
        assert_eq!(g.conn_stride % LINE, 0);
        assert_eq!(g.total_size, g.pool_offset + 10 * g.chunk_size);
        let big = SegmentParams {
            align: 4096,
            ..params()
        }
        .geometry()
        .unwrap();
        assert_eq!(big.chunk_size, 4096);
        let tagged = SegmentParams {
            tagged: 1,
            buffer: 8,
            ..params()
        }
        .geometry()
        .unwrap();
        assert_eq!(tagged.slot_words, 4);
        assert_eq!(tagged.returns_offset, tagged.sub_offset + 32 * 8);
        // A server's blocks end with withdrawal words; others' do not.
        assert_eq!(g.withdrawn_offset, g.conn_stride);
        let server = SegmentParams {
            withdrawals: 20,
            ..params()
        }
        .geometry()
        .unwrap();
        assert_eq!(server.withdrawn_offset, g.conn_stride);
        assert_eq!(server.conn_stride, g.conn_stride + 2 * LINE);
        // Inline rings: a line per slot, for payloads that fit one.
        let small = SegmentParams {
            elem_size: 1,
            max_len: 48,
            inline: 1,
            ..params()
        };
        let inline = small.geometry().unwrap();
        assert_eq!(inline.slot_words, 8);
        assert!(inline.inline && !inline.tagged);
        assert_eq!(inline.returns_offset, inline.sub_offset + 4 * 64);
        let tagged_small = SegmentParams { tagged: 1, ..small };
        assert!(
            tagged_small.geometry().is_none(),
            "48 bytes do not fit beside a tag"
        );
        let tagged_small = SegmentParams {
            max_len: 32,
            ..tagged_small
        };
        assert_eq!(tagged_small.geometry().unwrap().slot_words, 8);
        for bad in [
            SegmentParams {
                max_len: 49,
                ..small
            },
            SegmentParams {
                align: 16,
                elem_size: 16,
                max_len: 1,
                ..small
            },
            SegmentParams { inline: 2, ..small },
            SegmentParams {
                inline: 1,
                ..params()
            },
        ] {
            assert!(bad.geometry().is_none(), "{bad:?}");
        }
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for p in [
            SegmentParams {
                align: 3,
                ..params()
            },
            SegmentParams {
                tagged: 2,
                ..params()
            },
            SegmentParams {
                align: 8192,
                ..params()
            },
            SegmentParams {
                chunk_count: 0,
                ..params()
            },
            SegmentParams {
                elem_size: u64::MAX,
                ..params()
            },
            SegmentParams {
                max_len: u64::MAX / 2,
                elem_size: 4,
                ..params()
            },
            SegmentParams {
                buffer: 0,
                ..params()
            },
            SegmentParams {
                withdrawals: (1 << 20) + 1,
                ..params()
            },
        ] {
            assert!(p.geometry().is_none(), "{p:?}");
        }
    }

    #[test]
    fn header_validation() {
        let p = params();
        let g = p.geometry().unwrap();
        let h = SegmentHeader {
            magic: SEGMENT_MAGIC,
            version: LAYOUT_VERSION,
            chunk_count: 10,
            port_id: 7,
            params: p,
        };
        assert_eq!(h.validate(g.total_size), Ok(g));
        assert!(h.validate(g.total_size - 1).is_err());
        assert!(SegmentHeader { magic: 1, ..h }
            .validate(g.total_size)
            .is_err());
        assert!(SegmentHeader { version: 99, ..h }
            .validate(g.total_size)
            .is_err());
        assert!(SegmentHeader {
            chunk_count: 11,
            ..h
        }
        .validate(g.total_size)
        .is_err());
    }

    #[test]
    fn dyn_geometry() {
        let g = DynGeometry::new(4, 2, 8, 0, 0);
        assert!(g.pubs_offset >= g.nodes_offset + 64);
        assert!(g.subs_offset >= g.pubs_offset + 64);
        assert_eq!(g.total_size % PAGE, 0);
    }
}
