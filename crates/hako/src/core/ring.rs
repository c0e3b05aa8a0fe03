//! The index ring and the return words of a publisher → subscriber connection.
//!
//! The ring carries *descriptors*: the index of a chunk in the publisher's
//! pool, with a *lap stamp* in the same `u64`, so a reader learns from one
//! load of one slot whether it holds a new entry, and, in the slot's second
//! word, the payload's length, so the reader can go for the payload's cache
//! lines at once instead of first learning the length from the chunk (a
//! dependent miss). No shared tail index exists: the consumer polls the slot it expects
//! next, which costs one cache-line transfer per message instead of two
//! (tail, then slot).
//!
//! The second word also *announces* the chunk the publisher expects to loan
//! next (right every time for subscribers that keep pace with a publisher
//! loaning one sample at a time: see the publisher's `upcoming`). The payload's lines are a second transfer after
//! the slot's, and without the announcement a reader learns where they are
//! only from the slot, so it fetches them one transfer after it. With it, a waiting reader prefetches
//! the announced chunk's lines while it polls the slot, and both arrive
//! together. On the machine this was measured on, this took 0.05-0.09 µs
//! off the bare data path's busy-polled round trip (the benchmark's
//! `reference` transport), which then cost about 1.2x the round trip of two
//! bare cache lines each way (its `floor2`). The announcement is only a
//! hint: a wrong or missing one costs a wasted prefetch, never correctness.
//!
//! An *inline* ring gives each slot a cache line of its own, and the words
//! after the descriptor's carry the payload itself when it is small (up to
//! [`INLINE_WORDS`] words in a plain ring, [`TAGGED_INLINE_WORDS`] in a
//! tagged one): the publisher copies it there from its chunk at send, the
//! subscriber copies it out at receive, before it gives the slot back, and
//! a message then moves one cache line each way instead of two (the slot's
//! and the chunk's). The chunk stays the sender's loan and the delivery's
//! return as before; only its lines no longer travel.
//!
//! A *tagged* ring (request/response) has two more words per slot, a tag
//! whose meaning the pattern gives (there: the request's id and the
//! message's flags), so that what says which request a message answers
//! travels in the descriptor's line too. Were it written into the chunk, a
//! 64-byte payload and its 16-byte header would be two lines to write and
//! to fetch instead of one.
//!
//! ```text
//!  slot (two u64, one cache line holds four slots; tagged: four u64, two
//!  slots per line)
//!  word 0:  63      54 53            32 31             0
//!          +----------+----------------+----------------+
//!          | lap stamp| return slot    |  chunk index   |
//!          +----------+----------------+----------------+
//!  word 1:  63          47 46                0
//!          +-------------+--------------------+
//!          | next + 1    |  length            |
//!          +-------------+--------------------+
//!  lap stamp of position p = (p / capacity) + 1, truncated to 10 bits;
//!  a zeroed slot (stamp 0) is empty for every position of lap 0.
//!  return slot: the connection's return word the subscriber releases
//!  this delivery through (see core::returns).
//!  next + 1: the chunk the publisher expects to loan next, plus one (0: none).
//!  word 2, word 3 (tagged rings only): the tag.
//!  inline rings: eight words per slot (one cache line); the payload's bytes
//!  fill the words after the tag (words 2-7, tagged 4-7), the rest of the
//!  last word and the unused words unspecified.
//!  Words 1-7 are written first and published by the Release store of word 0.
//! ```
//!
//! Ten bits of lap stamp are enough because a consumer only ever compares
//! a slot with the stamps of two neighbouring laps, and the producer cannot
//! write a slot's next lap before the consumer's position (`head`) has
//! passed it: with a sole consumer, only the consumer moves `head`; with
//! drop-oldest, a consumer acts on what it read only if its compare-and-
//! swap of `head` from that very position succeeds.
//!
//! * [`Submission`] (publisher → subscriber) has one producer and one consumer.
//!   Its consumer position `head` lives in shared memory so that a publisher
//!   with the drop-oldest policy can take the oldest entry back; both sides
//!   advance `head` with compare-and-swap, so exactly one of them owns each
//!   entry. The producer position is private to the publisher.
//! * [`Returns`](super::returns::Returns) (subscriber → publisher) hands
//!   released chunks back: a few words per connection (as many as it can
//!   have deliveries outstanding: its queue plus what the subscriber may
//!   borrow), into which the subscriber stores the *return stamp* of the
//!   delivery it releases (its submission position + 1), at the return slot
//!   the descriptor named. The publisher picks a free return slot for each
//!   delivery, so the words of a connection do not grow with the pool (which
//!   grows with the subscribers). Samples may be dropped on any thread of the
//!   subscriber's process, in any order, each with one plain store and
//!   nothing to reserve. The publisher looks only at the return slots it has
//!   outstanding on the connection and takes a delivery back when its word
//!   holds the stamp of that very delivery, so a subscriber cannot hand back
//!   what it was never given, and a stale word from an earlier delivery
//!   through the same slot never matches.
//!
//! Everything read from a slot is hostile input: the callers validate chunk
//! indices, and a stamp that cannot occur is reported as [`Corrupted`].

use super::sync::{AtomicU64, Ordering};

/// A slot or index held a value the protocol cannot produce: the peer on the
/// other end of the connection wrote garbage. Only this connection is affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupted;

/// Where the return slot sits in a descriptor, and its width.
const RET_SHIFT: u32 = 32;
const RET_BITS: u32 = 22;
/// Where the lap stamp sits (the bits above the return slot).
const STAMP_SHIFT: u32 = RET_SHIFT + RET_BITS;

/// Return slots a connection may have: one more than the highest a
/// descriptor can name.
pub const MAX_RETURN_SLOTS: u64 = 1 << RET_BITS;

#[inline]
fn stamp(pos: u64, log2: u32) -> u64 {
    // Truncation to 10 bits is intended: only neighbouring laps are
    // compared (see the module's docs).
    ((pos >> log2) + 1) << STAMP_SHIFT
}

#[inline]
fn encode(pos: u64, log2: u32, index: u32, ret: u32) -> u64 {
    debug_assert!(u64::from(ret) < MAX_RETURN_SLOTS);
    stamp(pos, log2) | (u64::from(ret) << RET_SHIFT) | u64::from(index)
}

#[inline]
fn stamp_of(value: u64) -> u64 {
    value & (u64::MAX << STAMP_SHIFT)
}

#[inline]
fn ret_of(value: u64) -> u32 {
    ((value >> RET_SHIFT) as u32) & ((1 << RET_BITS) - 1)
}

#[inline]
fn previous_stamp(pos: u64, log2: u32) -> u64 {
    // Stamp of position pos - capacity (0 for the first lap: zeroed memory).
    if pos >> log2 == 0 {
        0
    } else {
        stamp(pos - (1 << log2), log2)
    }
}

/// Bits of a slot's second word that hold the payload length (a length
/// never exceeds the 64 TiB a segment may have); the bits above hold the
/// announced next chunk.
const LEN_BITS: u32 = 47;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;

/// The highest chunk index a descriptor can announce as the next one; a
/// pool with more chunks announces only those up to this one.
pub const MAX_ANNOUNCED: u32 = (1 << (64 - LEN_BITS)) - 2;

#[inline]
fn encode_len(len: u64, next: Option<u32>) -> u64 {
    debug_assert!(len <= LEN_MASK, "payload length beyond a segment's size");
    let next = match next {
        Some(n) if n <= MAX_ANNOUNCED => u64::from(n) + 1,
        _ => 0,
    };
    (len & LEN_MASK) | (next << LEN_BITS)
}

/// Words per submission slot: the stamped descriptor, then the length of the
/// payload (elements) with the announced next chunk, so that a consumer
/// learns all of them from one cache line.
pub const SLOT_WORDS: usize = 2;

/// Words per slot of a tagged ring: those of [`SLOT_WORDS`], then the tag.
pub const TAGGED_SLOT_WORDS: usize = 4;

/// What a tagged ring's slot carries besides the descriptor (see the
/// module's drawing); as hostile as the rest of the slot. Plain rings carry
/// none and hand out [`NO_TAG`].
pub type Tag = [u64; 2];

/// The tag of an entry of a plain ring.
pub const NO_TAG: Tag = [0, 0];

/// Words per slot of an inline ring, plain or tagged: one cache line.
pub const INLINE_SLOT_WORDS: usize = 8;

/// Payload words of a plain inline ring's slot (48 bytes).
pub const INLINE_WORDS: usize = INLINE_SLOT_WORDS - SLOT_WORDS;

/// Payload words of a tagged inline ring's slot (32 bytes).
pub const TAGGED_INLINE_WORDS: usize = INLINE_SLOT_WORDS - TAGGED_SLOT_WORDS;

/// A payload that travels in its slot: its bytes in native order, padded
/// to whole words; as hostile as the rest of the slot when read.
pub type Inline = [u64; INLINE_WORDS];

/// The length an inline ring's sender announces for a payload it could
/// not read (its pool was truncated under it, see `os::sigbus`): beyond
/// every maximum, so receivers refuse it, and recognisable, so they can say
/// why.
pub const LOST_PAYLOAD: u64 = LEN_MASK;

/// Where a consumer keeps a payload it took out of an inline ring's slot:
/// words the consumer's own process owns, one cell per return slot (see
/// [`Submission::pop_with`]). Atomic, as a producer that reuses a return
/// slot too early makes the consumer write a cell that a sample still
/// reads.
pub type InlineCell = [AtomicU64; INLINE_WORDS];

/// The payload words of an entry that carries none.
pub const NO_INLINE: Inline = [0; INLINE_WORDS];

/// Result of [`Submission::pop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pop {
    /// Nothing new.
    Empty,
    /// The consumer now owns a chunk. Every field comes from shared memory
    /// and is unvalidated (`pos` is the shared consumer position; a peer that
    /// rewrites it only spoils this connection's return stamps).
    Item {
        /// The chunk's index in the publisher's pool.
        index: u32,
        /// The return slot to release it through.
        ret: u32,
        /// Where it was queued (its return stamp is `pos + 1`).
        pos: u64,
        /// The payload's length.
        len: u64,
        /// The chunk the publisher announced it will loan next, if any.
        next: Option<u32>,
        /// The slot's tag ([`NO_TAG`] in a plain ring).
        tag: Tag,
    },
}

/// Result of [`Submission::try_push`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push {
    /// The descriptor is visible to the consumer.
    Done,
    /// The ring holds its logical capacity of entries.
    Full,
}

/// Producer-private state of a submission ring.
#[derive(Debug, Default, Clone)]
pub struct Producer {
    /// Next position to write.
    pub tail: u64,
    /// Last value of the shared `head` seen; refreshed only when the ring looks full.
    pub cached_head: u64,
}

/// View of a submission ring in (shared) memory.
#[derive(Clone, Copy)]
pub struct Submission<'a> {
    slots: &'a [AtomicU64],
    head: &'a AtomicU64,
    /// log2 of the number of slots, and that number minus one.
    log2: u32,
    mask: u64,
    /// Four words per slot (a tag) instead of two.
    tagged: bool,
    /// log2 of the words per slot (1, 2, or 3 for an inline ring).
    shift: u32,
    /// Payload words per slot (0 but in an inline ring).
    inline_words: usize,
    capacity: u64,
    /// The producer never takes entries back (no drop-oldest), so the
    /// consumer may advance `head` with a plain store.
    sole_consumer: bool,
}

impl<'a> Submission<'a> {
    /// A plain ring: `slots` holds two words per slot (see [`SLOT_WORDS`]);
    /// the number of slots must be a power of two and
    /// `1 <= capacity <= slots`.
    pub fn new(slots: &'a [AtomicU64], head: &'a AtomicU64, capacity: u64) -> Self {
        Self::with_tags(slots, head, capacity, false)
    }

    /// A plain ring, or with `tagged` a tagged one ([`TAGGED_SLOT_WORDS`]
    /// words per slot); otherwise as [`new`](Self::new).
    pub fn with_tags(
        slots: &'a [AtomicU64],
        head: &'a AtomicU64,
        capacity: u64,
        tagged: bool,
    ) -> Self {
        Self::with_format(slots, head, capacity, tagged, false)
    }

    /// A plain or tagged ring, with `inline` an inline one
    /// ([`INLINE_SLOT_WORDS`] words per slot, the payload in those after
    /// the descriptor's and the tag's); otherwise as [`new`](Self::new).
    pub fn with_format(
        slots: &'a [AtomicU64],
        head: &'a AtomicU64,
        capacity: u64,
        tagged: bool,
        inline: bool,
    ) -> Self {
        let header = if tagged {
            TAGGED_SLOT_WORDS
        } else {
            SLOT_WORDS
        };
        let words = if inline { INLINE_SLOT_WORDS } else { header };
        let n = slots.len() / words;
        assert!(slots.len() % words == 0 && n.is_power_of_two());
        assert!(capacity >= 1 && capacity <= n as u64);
        Self {
            slots,
            head,
            log2: n.trailing_zeros(),
            mask: n as u64 - 1,
            tagged,
            shift: words.trailing_zeros(),
            inline_words: if inline { words - header } else { 0 },
            capacity,
            sole_consumer: false,
        }
    }

    /// Payload words a slot carries: 0 unless the ring is inline.
    #[inline]
    pub fn inline_words(&self) -> usize {
        self.inline_words
    }

    /// Index of the first word of slot `pos mod slots`.
    #[inline]
    fn first_word(&self, pos: u64) -> usize {
        let i = ((pos & self.mask) << self.shift) as usize;
        debug_assert!(i + (1 << self.shift) <= self.slots.len());
        i
    }

    /// The descriptor and length words of slot `pos mod slots`.
    #[inline]
    fn pair(&self, pos: u64) -> (&AtomicU64, &AtomicU64) {
        let i = self.first_word(pos);
        // SAFETY: the constructor asserts that slots.len() is the number of
        // slots, a power of two, times the words per slot, and mask is that
        // number minus one; so i is the first word of a slot in range, and
        // i + 1 (a slot has at least two words) is below slots.len().
        unsafe { (self.slots.get_unchecked(i), self.slots.get_unchecked(i + 1)) }
    }

    /// The tag words of slot `pos mod slots`; only for a tagged ring.
    #[inline]
    fn tag_words(&self, pos: u64) -> (&AtomicU64, &AtomicU64) {
        debug_assert!(self.tagged);
        let i = self.first_word(pos);
        // SAFETY: as in pair(); a tagged ring's slots have four words, so
        // i + 2 and i + 3 are below slots.len() (callers check `tagged`).
        unsafe {
            (
                self.slots.get_unchecked(i + 2),
                self.slots.get_unchecked(i + 3),
            )
        }
    }

    /// The tag of slot `pos`, read after the Acquire load of its descriptor
    /// ([`NO_TAG`] for a plain ring).
    #[inline]
    fn read_tag(&self, pos: u64) -> Tag {
        if !self.tagged {
            return NO_TAG;
        }
        let (t0, t1) = self.tag_words(pos);
        // Relaxed (both): ordered after the producer's stores by the
        // caller's Acquire load of the descriptor.
        [t0.load(Ordering::Relaxed), t1.load(Ordering::Relaxed)]
    }

    /// Copies the payload words of slot `pos`, whose descriptor is
    /// `value`, into the first [`inline_words`](Self::inline_words) of the
    /// cell of the return slot the descriptor names, if `cells` has it
    /// (nothing but in an inline ring); after the Acquire load of the
    /// descriptor and before the slot is given back.
    #[inline(always)]
    fn read_inline(&self, pos: u64, value: u64, cells: &[InlineCell]) {
        if self.inline_words == 0 {
            return;
        }
        let Some(out) = cells.get(ret_of(value) as usize) else {
            return;
        };
        let words = self.after_header(pos);
        // Relaxed (all): ordered after the producer's stores by the
        // caller's Acquire load of the descriptor; the cell is read by the
        // consumer's thread, or one a sample is handed to (which
        // synchronises with it on the way). Two loops of fixed length,
        // which the compiler unrolls.
        if self.tagged {
            for k in 0..TAGGED_INLINE_WORDS {
                out[k].store(
                    words[SLOT_WORDS + k].load(Ordering::Relaxed),
                    Ordering::Relaxed,
                );
            }
        } else {
            for k in 0..INLINE_WORDS {
                out[k].store(words[k].load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
    }

    /// The six words of an inline ring's slot `pos` after the descriptor
    /// and the length: a plain ring's payload, or a tagged ring's tag and
    /// then its payload.
    #[inline(always)]
    fn after_header(&self, pos: u64) -> &[AtomicU64; INLINE_WORDS] {
        debug_assert!(self.inline_words > 0);
        let i = self.first_word(pos) + SLOT_WORDS;
        debug_assert!(i + INLINE_WORDS <= self.slots.len());
        // SAFETY: an inline ring's slots have INLINE_SLOT_WORDS words (the
        // constructor checked the ring's size against them), so the six
        // words after the first two of slot `pos` are in range; an array
        // of atomics has their alignment.
        unsafe {
            &*self
                .slots
                .as_ptr()
                .add(i)
                .cast::<[AtomicU64; INLINE_WORDS]>()
        }
    }

    /// The same ring, for a consumer whose producer never calls
    /// [`reclaim_oldest`](Self::reclaim_oldest): `pop` then advances `head`
    /// with a store instead of a compare-and-swap. A producer that reclaims
    /// anyway only confuses its own connection.
    pub fn sole_consumer(mut self) -> Self {
        self.sole_consumer = true;
        self
    }

    #[inline]
    fn slot(&self, pos: u64) -> &AtomicU64 {
        self.pair(pos).0
    }

    /// Consumer: whether an entry is waiting (does not take it).
    pub fn has_item(&self) -> bool {
        // Relaxed: a hint only; pop() does the synchronising loads.
        let head = self.head.load(Ordering::Relaxed);
        stamp_of(self.slot(head).load(Ordering::Relaxed)) == stamp(head, self.log2)
    }

    /// Producer: resets the ring to empty. Only valid while no consumer is
    /// attached (before a connection is announced).
    pub fn reset(&self, p: &mut Producer) {
        for s in self.slots {
            // Relaxed: published by the Release store that announces the connection.
            s.store(0, Ordering::Relaxed);
        }
        // Relaxed: as above.
        self.head.store(0, Ordering::Relaxed);
        *p = Producer::default();
    }
}

// The producer's side of appending and taking back an entry, and the
// consumer's side of taking one, in files of their own beside this one.
#[path = "ring_consumer.rs"]
mod consumer;
#[path = "ring_producer.rs"]
mod producer;

// The unit tests, in a file of their own beside this one.
#[cfg(all(test, not(loom)))]
#[path = "ring_tests.rs"]
mod tests;
