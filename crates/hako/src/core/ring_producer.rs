//! The producer's side of a submission ring: appending an entry (with its
//! payload, in an inline ring), whether there is room, and taking the
//! oldest entry back under drop-oldest. Part of `core::ring`, whose drawing
//! and ordering arguments hold here.

use crate::core::ring::{
    encode, encode_len, ret_of, stamp, stamp_of, Corrupted, Inline, Producer, Push, Submission,
    Tag, INLINE_WORDS, NO_INLINE, SLOT_WORDS, TAGGED_INLINE_WORDS,
};
use crate::core::sync::Ordering;

impl Submission<'_> {
    /// Producer: appends `index`, to be returned through return slot `ret`
    /// (below [`MAX_RETURN_SLOTS`]; a payload of `len` elements, announcing
    /// `next` as the chunk of the next loan, with `tag` in a tagged ring
    /// and in an inline one the first [`inline_words`](Self::inline_words)
    /// of `inline`, the payload, if given) unless the ring is full.
    #[allow(clippy::too_many_arguments)]
    pub fn try_push(
        &self,
        p: &mut Producer,
        index: u32,
        ret: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        inline: Option<&Inline>,
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
        self.write_any(p, index, ret, len, next, tag, inline);
        Ok(Push::Done)
    }

    /// Producer: whether a push now would find room. Reads the consumer's
    /// position only when the cached one says the ring is full. A position
    /// that cannot be (more queued than the ring holds) counts as room: the
    /// push then reports the corruption.
    pub fn has_room(&self, p: &mut Producer) -> bool {
        if p.tail.wrapping_sub(p.cached_head) < self.capacity {
            return true;
        }
        // ORDERING: Acquire; as in try_push (the consumer's read of the slot
        // a push would reuse happened before).
        let head = self.head.load(Ordering::Acquire);
        let used = p.tail.wrapping_sub(head);
        if used > self.capacity {
            return true;
        }
        p.cached_head = head;
        used < self.capacity
    }

    /// [`write`](Self::write) of an entry with or without its payload.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn write_any(
        &self,
        p: &mut Producer,
        index: u32,
        ret: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        inline: Option<&Inline>,
    ) {
        match inline {
            Some(words) if self.inline_words > 0 => {
                self.write::<true>(p, index, ret, len, next, tag, words)
            }
            _ => self.write::<false>(p, index, ret, len, next, tag, &NO_INLINE),
        }
    }

    /// Writes the entry at the producer's position; with `INLINE`, the
    /// payload `inline` too (only in an inline ring).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn write<const INLINE: bool>(
        &self,
        p: &mut Producer,
        index: u32,
        ret: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        inline: &Inline,
    ) {
        let (desc, len_word) = self.pair(p.tail);
        // Relaxed (all): published by the Release store of the descriptor
        // below.
        len_word.store(encode_len(len, next), Ordering::Relaxed);
        if self.tagged {
            let (t0, t1) = self.tag_words(p.tail);
            t0.store(tag[0], Ordering::Relaxed);
            t1.store(tag[1], Ordering::Relaxed);
        }
        if INLINE {
            let words = self.after_header(p.tail);
            // Relaxed (all): as above.
            if self.tagged {
                for k in 0..TAGGED_INLINE_WORDS {
                    words[SLOT_WORDS + k].store(inline[k], Ordering::Relaxed);
                }
            } else {
                for k in 0..INLINE_WORDS {
                    words[k].store(inline[k], Ordering::Relaxed);
                }
            }
        }
        // ORDERING: Release; pairs with the Acquire load in pop(): publishes the
        // length above and the chunk's contents, written before, to the consumer.
        desc.store(encode(p.tail, self.log2, index, ret), Ordering::Release);
        p.tail += 1;
    }

    /// Producer: appends `index` without looking at the consumer's position.
    /// The caller must know that fewer than `capacity` entries are queued
    /// (for instance because fewer chunks than that are outstanding on the
    /// connection at all); this saves reading the consumer's cache line.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn push_known_room(
        &self,
        p: &mut Producer,
        index: u32,
        ret: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        inline: Option<&Inline>,
    ) {
        self.write_any(p, index, ret, len, next, tag, inline);
    }

    /// Producer: takes the oldest unconsumed entry back (drop-oldest
    /// overflow): its chunk index and return slot. Returns `None` when the
    /// consumer emptied the ring meanwhile.
    pub fn reclaim_oldest(&self, p: &mut Producer) -> Result<Option<(u32, u32)>, Corrupted> {
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
                return Ok(Some((value as u32, ret_of(value))));
            }
        }
        Err(Corrupted)
    }
}
