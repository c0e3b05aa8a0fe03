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
//! ```text
//!  slot (two u64, one cache line holds four slots)
//!  word 0:  63            32 31             0
//!          +----------------+----------------+
//!          |  lap stamp     |  chunk index   |
//!          +----------------+----------------+
//!  word 1:  63          47 46                0
//!          +-------------+--------------------+
//!          | next + 1    |  length            |
//!          +-------------+--------------------+
//!  lap stamp of position p = (p / capacity) + 1, truncated to 32 bits;
//!  a zeroed slot (stamp 0) is empty for every position of lap 0.
//!  next + 1: the chunk the publisher expects to loan next, plus one (0: none).
//!  Word 1 is written first and published by the Release store of word 0.
//! ```
//!
//! * [`Submission`] (publisher → subscriber) has one producer and one consumer.
//!   Its consumer position `head` lives in shared memory so that a publisher
//!   with the drop-oldest policy can take the oldest entry back; both sides
//!   advance `head` with compare-and-swap, so exactly one of them owns each
//!   entry. The producer position is private to the publisher.
//! * [`Returns`] (subscriber → publisher) hands released chunks back: one
//!   word per chunk of the pool, into which the subscriber stores the
//!   *return stamp* of the delivery it releases (its submission position + 1).
//!   Samples may be dropped on any thread of the subscriber's process, in any
//!   order, each with one plain store and nothing to reserve. The publisher
//!   looks only at the chunks it has outstanding on the connection and takes
//!   one back when its word holds the stamp of that very delivery, so a
//!   subscriber cannot hand back what it was never given, and a stale word
//!   from an earlier delivery of the same chunk never matches.
//!
//! Everything read from a slot is hostile input: the callers validate chunk
//! indices, and a stamp that cannot occur is reported as [`Corrupted`].

use super::sync::{prefetch_write, AtomicU64, Ordering};

/// A slot or index held a value the protocol cannot produce: the peer on the
/// other end of the connection wrote garbage. Only this connection is affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupted;

/// The two words of slot `pos mod (words.len() / 2)`: the stamped
/// descriptor and the payload length.
#[inline]
fn masked_pair(words: &[AtomicU64], pos: u64) -> (&AtomicU64, &AtomicU64) {
    let i = 2 * (pos & (words.len() as u64 / 2 - 1)) as usize;
    debug_assert!(i + 1 < words.len());
    // SAFETY: the constructor asserts that words.len() / 2 is a power of two
    // (and at least 1), so masking with it minus 1 and doubling yields an
    // even index whose successor is still below words.len().
    unsafe { (words.get_unchecked(i), words.get_unchecked(i + 1)) }
}

#[inline]
fn stamp(pos: u64, log2: u32) -> u64 {
    // Truncation to 32 bits is intended: only neighbouring laps are compared.
    (((pos >> log2) + 1) & 0xffff_ffff) << 32
}

#[inline]
fn encode(pos: u64, log2: u32, index: u32) -> u64 {
    stamp(pos, log2) | u64::from(index)
}

#[inline]
fn stamp_of(value: u64) -> u64 {
    value & 0xffff_ffff_0000_0000
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
        /// Where it was queued (its return stamp is `pos + 1`).
        pos: u64,
        /// The payload's length.
        len: u64,
        /// The chunk the publisher announced it will loan next, if any.
        next: Option<u32>,
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
    log2: u32,
    capacity: u64,
    /// The producer never takes entries back (no drop-oldest), so the
    /// consumer may advance `head` with a plain store.
    sole_consumer: bool,
}

impl<'a> Submission<'a> {
    /// `slots` holds two words per slot (see [`SLOT_WORDS`]); the number of
    /// slots must be a power of two and `1 <= capacity <= slots`.
    pub fn new(slots: &'a [AtomicU64], head: &'a AtomicU64, capacity: u64) -> Self {
        let n = slots.len() / SLOT_WORDS;
        assert!(slots.len() % SLOT_WORDS == 0 && n.is_power_of_two());
        assert!(capacity >= 1 && capacity <= n as u64);
        Self {
            slots,
            head,
            log2: n.trailing_zeros(),
            capacity,
            sole_consumer: false,
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
        masked_pair(self.slots, pos).0
    }

    /// Producer: appends `index` (a payload of `len` elements, announcing
    /// `next` as the chunk of the next loan) unless the ring is full.
    pub fn try_push(
        &self,
        p: &mut Producer,
        index: u32,
        len: u64,
        next: Option<u32>,
    ) -> Result<Push, Corrupted> {
        if p.tail.wrapping_sub(p.cached_head) >= self.capacity {
            // ORDERING: Acquire; pairs with the AcqRel CAS of head in pop(): the
            // consumer's read of the slot we are about to reuse happened before.
            let head = self.head.load(Ordering::Acquire);
            let used = p.tail.wrapping_sub(head);
            if used > self.capacity {
                return Err(Corrupted);
            }
            p.cached_head = head;
            if used == self.capacity {
                return Ok(Push::Full);
            }
        }
        self.write(p, index, len, next);
        Ok(Push::Done)
    }

    #[inline]
    fn write(&self, p: &mut Producer, index: u32, len: u64, next: Option<u32>) {
        let (desc, len_word) = masked_pair(self.slots, p.tail);
        // Relaxed: published by the Release store of the descriptor below.
        len_word.store(encode_len(len, next), Ordering::Relaxed);
        // ORDERING: Release; pairs with the Acquire load in pop(): publishes the
        // length above and the chunk's contents, written before, to the consumer.
        desc.store(encode(p.tail, self.log2, index), Ordering::Release);
        p.tail += 1;
    }

    /// Producer: appends `index` without looking at the consumer's position.
    /// The caller must know that fewer than `capacity` entries are queued
    /// (for instance because fewer chunks than that are outstanding on the
    /// connection at all); this saves reading the consumer's cache line.
    #[inline]
    pub fn push_known_room(&self, p: &mut Producer, index: u32, len: u64, next: Option<u32>) {
        self.write(p, index, len, next);
    }

    /// Producer: takes the oldest unconsumed entry back (drop-oldest overflow).
    /// Returns `None` when the consumer emptied the ring meanwhile.
    pub fn reclaim_oldest(&self, p: &mut Producer) -> Result<Option<u32>, Corrupted> {
        // An honest consumer moves head at most `capacity` times before the
        // ring is empty; more lost races mean it is rewinding head.
        for _ in 0..=self.capacity {
            // ORDERING: Acquire; pairs with the consumer's AcqRel CAS of head.
            let head = self.head.load(Ordering::Acquire);
            let used = p.tail.wrapping_sub(head);
            if used > self.capacity {
                return Err(Corrupted);
            }
            p.cached_head = head;
            if used == 0 {
                return Ok(None);
            }
            // Relaxed: we wrote this slot ourselves; the CAS below decides ownership.
            let value = self.slot(head).load(Ordering::Relaxed);
            if stamp_of(value) != stamp(head, self.log2) {
                return Err(Corrupted);
            }
            // ORDERING: AcqRel; pairs with the consumer's CAS of head: exactly one
            // side advances past `head` and so owns the entry.
            if self
                .head
                .compare_exchange(
                    head,
                    head.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                p.cached_head = head.wrapping_add(1);
                return Ok(Some(value as u32));
            }
        }
        Err(Corrupted)
    }

    /// Consumer: takes the next entry.
    #[inline]
    pub fn pop(&self) -> Result<Pop, Corrupted> {
        if self.sole_consumer {
            self.pop_sole()
        } else {
            self.pop_contended()
        }
    }

    /// [`pop`](Self::pop) when the producer never takes entries back: the
    /// consumer alone moves `head`, so one look at one slot decides.
    #[inline]
    fn pop_sole(&self) -> Result<Pop, Corrupted> {
        // Relaxed: only this consumer writes head.
        let head = self.head.load(Ordering::Relaxed);
        let (desc, len_word) = masked_pair(self.slots, head);
        // ORDERING: Acquire; pairs with the Release store in write().
        let value = desc.load(Ordering::Acquire);
        let st = stamp_of(value);
        if st != stamp(head, self.log2) {
            return if st == previous_stamp(head, self.log2) {
                Ok(Pop::Empty)
            } else {
                Err(Corrupted)
            };
        }
        // Relaxed: ordered after the producer's store by the Acquire above.
        let word = len_word.load(Ordering::Relaxed);
        // ORDERING: Release; pairs with the Acquire loads of head in
        // try_push(): our read of the slot happens before its reuse.
        self.head.store(head.wrapping_add(1), Ordering::Release);
        Ok(Pop::Item {
            index: value as u32,
            pos: head,
            len: word & LEN_MASK,
            next: ((word >> LEN_BITS) as u32).checked_sub(1),
        })
    }

    /// [`pop`](Self::pop) racing the producer's
    /// [`reclaim_oldest`](Self::reclaim_oldest) for each entry.
    fn pop_contended(&self) -> Result<Pop, Corrupted> {
        // Relaxed: the CAS below validates the position we act on.
        let mut head = self.head.load(Ordering::Relaxed);
        // Each lost race means the producer reclaimed the entry we were
        // about to take; an honest one cannot win a thousand times in a row
        // (each reclaim needs a send), a peer rewriting head can forever.
        for _ in 0..1024 + self.slots.len() {
            let (desc, len_word) = masked_pair(self.slots, head);
            // ORDERING: Acquire; pairs with the Release store in write().
            let value = desc.load(Ordering::Acquire);
            let st = stamp_of(value);
            if st == stamp(head, self.log2) {
                // Relaxed: ordered after the producer's store by the Acquire
                // above. Read before we advance head: until then the producer
                // cannot reuse the slot (and if it takes the entry back, our
                // CAS below fails and the value is dropped).
                let word = len_word.load(Ordering::Relaxed);
                let item = Pop::Item {
                    index: value as u32,
                    pos: head,
                    len: word & LEN_MASK,
                    next: ((word >> LEN_BITS) as u32).checked_sub(1),
                };
                // ORDERING: AcqRel; Release lets the producer reuse the slot after
                // our read; pairs with the Acquire loads of head in try_push and
                // with reclaim_oldest's CAS.
                match self.head.compare_exchange(
                    head,
                    head.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Ok(item),
                    Err(now) => {
                        head = now;
                        continue;
                    }
                }
            }
            // ORDERING: Acquire; pairs with the producer's CAS in reclaim_oldest:
            // if it moved head on, the slot we read may belong to a newer lap.
            let now = self.head.load(Ordering::Acquire);
            if now != head {
                head = now;
                continue;
            }
            if st == previous_stamp(head, self.log2) {
                return Ok(Pop::Empty);
            }
            return Err(Corrupted);
        }
        Err(Corrupted)
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

/// The return words of one connection: word `i` belongs to chunk `i`.
#[derive(Clone, Copy)]
pub struct Returns<'a> {
    words: &'a [AtomicU64],
}

impl<'a> Returns<'a> {
    /// One word per chunk of the pool.
    pub fn new(words: &'a [AtomicU64]) -> Self {
        Self { words }
    }

    /// Subscriber (any thread): releases chunk `index`, delivered with
    /// `stamp` ([`Pop::Item`]'s position + 1). An index out of range is
    /// ignored (the caller validated it when the chunk was received).
    #[inline]
    pub fn release(&self, index: u32, stamp: u64) {
        if let Some(w) = self.words.get(index as usize) {
            // ORDERING: Release; pairs with the Acquire load in returned():
            // our reads of the chunk happen before the publisher reuses it.
            w.store(stamp, Ordering::Release);
        }
    }

    /// Subscriber: starts taking ownership of the line that
    /// [`release`](Self::release) of chunk `index` will write, so that
    /// store does not wait for the publisher's CPU to give the line up
    /// (it reads it in every take-back). A hint only.
    #[inline]
    pub fn prepare_release(&self, index: u32) {
        if let Some(w) = self.words.get(index as usize) {
            prefetch_write(std::ptr::from_ref(w).cast());
        }
    }

    /// The address of chunk `index`'s word (of the first word if `index` is
    /// out of range; 0 if there are none), for prefetching.
    #[inline]
    pub fn word_addr(&self, index: u32) -> usize {
        self.words
            .get(index as usize)
            .or(self.words.first())
            .map_or(0, |w| std::ptr::from_ref(w) as usize)
    }

    /// Publisher: whether chunk `index`, delivered with `stamp`, came back.
    #[inline]
    pub fn returned(&self, index: u32, stamp: u64) -> bool {
        self.words
            .get(index as usize)
            // ORDERING: Acquire; pairs with the Release store in release().
            .is_some_and(|w| w.load(Ordering::Acquire) == stamp)
    }

    /// Publisher, before a subscriber connects: clears every word.
    pub fn reset(&self) {
        for w in self.words {
            // Relaxed: published by the Release store of the connected word.
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// Bit of a [`DropCount`] raised when the owner lets go.
const GONE: u64 = 1 << 63;

/// Counts the samples of a connection dropped in a subscriber's process (on
/// any thread) and decides who frees the connection: the subscriber's handle
/// when it lets go, if every sample it received is dropped by then, else the
/// last sample to drop. One atomic read-modify-write per sample, none per
/// receive.
#[derive(Debug)]
pub struct DropCount(AtomicU64);

impl Default for DropCount {
    fn default() -> Self {
        Self::new()
    }
}

impl DropCount {
    /// Nothing dropped, owner present.
    pub fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Samples dropped so far.
    #[inline]
    pub fn dropped(&self) -> u64 {
        // Relaxed: a count for limits; nothing is published through it here.
        self.0.load(Ordering::Relaxed) & !GONE
    }

    /// A sample was dropped, after its last access to the connection (its
    /// return store). True if the caller must free the connection: the owner
    /// is gone and this was the last of `received()` samples. `received` is
    /// read only in that case, when it is final.
    #[inline]
    pub fn sample_dropped(&self, received: impl FnOnce() -> u64) -> bool {
        // ORDERING: AcqRel; Release orders our earlier accesses before the
        // count that may let another party free the connection; Acquire,
        // when we free it, orders every other party's accesses before that.
        let old = self.0.fetch_add(1, Ordering::AcqRel);
        old & GONE != 0 && (old & !GONE) + 1 == received()
    }

    /// The owner lets go, having received `received` samples in all. True if
    /// the caller must free the connection (every sample is dropped).
    #[inline]
    pub fn owner_gone(&self, received: u64) -> bool {
        // ORDERING: AcqRel; Release publishes the final `received` to the
        // sample that sees GONE; Acquire orders every earlier drop before
        // the free.
        let old = self.0.fetch_or(GONE, Ordering::AcqRel);
        old & !GONE == received
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A popped entry with no announcement.
    fn item(index: u32, pos: u64, len: u64) -> Pop {
        Pop::Item {
            index,
            pos,
            len,
            next: None,
        }
    }

    /// The words of a submission ring of `n` slots (or `n * SLOT_WORDS`
    /// return words).
    fn slots(n: usize) -> Vec<AtomicU64> {
        (0..n * SLOT_WORDS).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn submission_fifo_and_full() {
        let s = slots(4);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 3);
        let mut p = Producer::default();
        assert_eq!(ring.pop(), Ok(Pop::Empty));
        for i in 0..3 {
            assert_eq!(ring.try_push(&mut p, i, 1, None), Ok(Push::Done));
        }
        assert_eq!(ring.try_push(&mut p, 9, 1, None), Ok(Push::Full));
        assert!(ring.has_item());
        for i in 0..3 {
            assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
        }
        assert_eq!(ring.pop(), Ok(Pop::Empty));
        assert!(!ring.has_item());
    }

    #[test]
    fn submission_wraps_many_laps() {
        let s = slots(2);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 2);
        let mut p = Producer::default();
        for i in 0..10_000u32 {
            assert_eq!(ring.try_push(&mut p, i, 1, None), Ok(Push::Done));
            if i % 2 == 1 {
                assert_eq!(ring.pop(), Ok(item(i - 1, u64::from(i - 1), 1)));
                assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
                assert_eq!(ring.pop(), Ok(Pop::Empty));
            }
        }
    }

    #[test]
    fn sole_consumer_pops_in_order() {
        let s = slots(4);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 4);
        let consumer = ring.sole_consumer();
        let mut p = Producer::default();
        for round in 0..10u32 {
            for i in 0..4 {
                assert_eq!(
                    ring.try_push(&mut p, round * 4 + i, 1, None),
                    Ok(Push::Done)
                );
            }
            for i in 0..4 {
                assert_eq!(
                    consumer.pop(),
                    Ok(item(round * 4 + i, u64::from(round * 4 + i), 1))
                );
            }
            assert_eq!(consumer.pop(), Ok(Pop::Empty));
        }
    }

    #[test]
    fn reclaim_oldest_keeps_order() {
        let s = slots(4);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 4);
        let mut p = Producer::default();
        for i in 0..4 {
            ring.try_push(&mut p, i, 1, None).unwrap();
        }
        assert_eq!(ring.try_push(&mut p, 4, 1, None), Ok(Push::Full));
        assert_eq!(ring.reclaim_oldest(&mut p), Ok(Some(0)));
        assert_eq!(ring.try_push(&mut p, 4, 1, None), Ok(Push::Done));
        for i in 1..5 {
            assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
        }
        assert_eq!(ring.reclaim_oldest(&mut p), Ok(None));
    }

    #[test]
    fn garbage_is_reported() {
        let s = slots(4);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 4);
        s[0].store(0xdead_beef_0000_0001, Ordering::Relaxed); // slot 0's descriptor
        assert_eq!(ring.pop(), Err(Corrupted));
        // A head far beyond the producer's tail.
        let s2 = slots(4);
        let head2 = AtomicU64::new(1000);
        let ring2 = Submission::new(&s2, &head2, 4);
        let mut p = Producer {
            tail: 4,
            cached_head: 0,
        };
        assert_eq!(ring2.try_push(&mut p, 1, 1, None), Err(Corrupted));
    }

    #[test]
    fn positions_at_the_end_of_the_range_wrap() {
        // Found by fuzzing: a peer that sets head to u64::MAX must not make
        // either side overflow (a panic in debug builds).
        let s = slots(4);
        let head = AtomicU64::new(u64::MAX);
        let ring = Submission::new(&s, &head, 4);
        s[3 * SLOT_WORDS].store(encode(u64::MAX, 2, 1), Ordering::Relaxed);
        assert_eq!(ring.pop(), Ok(item(1, u64::MAX, 0)));
        assert_eq!(head.load(Ordering::Relaxed), 0);
        head.store(u64::MAX, Ordering::Relaxed);
        let mut p = Producer {
            tail: 0,
            cached_head: 0,
        };
        assert!(ring.reclaim_oldest(&mut p).is_ok());
    }

    #[test]
    fn the_next_chunk_travels_with_the_length() {
        let s = slots(4);
        let head = AtomicU64::new(0);
        let ring = Submission::new(&s, &head, 4);
        let mut p = Producer::default();
        let max_len = 1u64 << 46; // a segment's limit
        for (len, next) in [
            (1, Some(0)),
            (max_len, Some(7)),
            (12, Some(MAX_ANNOUNCED)),
            (5, None),
        ] {
            ring.try_push(&mut p, 3, len, next).unwrap();
            let want = Pop::Item {
                index: 3,
                pos: p.tail - 1,
                len,
                next,
            };
            assert_eq!(ring.pop(), Ok(want));
        }
        // Beyond what fits, the announcement is left out, never garbled.
        ring.push_known_room(&mut p, 3, 9, Some(MAX_ANNOUNCED + 1));
        assert_eq!(ring.pop(), Ok(item(3, p.tail - 1, 9)));
        ring.push_known_room(&mut p, 3, 9, Some(u32::MAX));
        assert_eq!(ring.pop(), Ok(item(3, p.tail - 1, 9)));
    }

    #[test]
    fn return_words_to_prefetch_stay_inside_the_pool() {
        let w = slots(4);
        let r = Returns::new(&w);
        assert_eq!(r.word_addr(2), std::ptr::from_ref(&w[2]) as usize);
        // A garbage index (an announcement is unvalidated) names the first.
        assert_eq!(r.word_addr(99), std::ptr::from_ref(&w[0]) as usize);
        assert_eq!(Returns::new(&[]).word_addr(0), 0);
        // A hint only: nothing changes.
        r.prepare_release(2);
        r.prepare_release(99);
        assert_eq!(w[2].load(Ordering::Relaxed), 0);
    }

    #[test]
    fn returns_match_only_their_delivery() {
        let w = slots(4);
        let r = Returns::new(&w);
        assert!(!r.returned(2, 5));
        r.release(2, 5);
        assert!(r.returned(2, 5));
        // An earlier delivery of the same chunk, another chunk, or garbage
        // beyond the pool never match.
        assert!(!r.returned(2, 9));
        assert!(!r.returned(1, 5));
        r.release(99, 5);
        assert!(!r.returned(99, 5));
        r.reset();
        assert!(!r.returned(2, 5));
    }
}
