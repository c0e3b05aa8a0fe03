//! The consumer's side of a submission ring ([`Submission::pop`]): taking
//! the next entry, with a plain store of `head` for a sole consumer and a
//! compare-and-swap racing the producer's take-back otherwise. Part of
//! `core::ring`, whose drawing and ordering arguments hold here.

use crate::core::ring::{
    previous_stamp, ret_of, stamp, stamp_of, Corrupted, InlineCell, Pop, Submission, Tag, LEN_BITS,
    LEN_MASK,
};
use crate::core::sync::Ordering;

/// The words of a slot a consumer took, undecoded (see [`Submission::pop`]).
#[derive(Clone, Copy)]
pub(super) struct Taken {
    value: u64,
    word: u64,
    pos: u64,
    tag: Tag,
}

impl Submission<'_> {
    /// Consumer: takes the next entry (of an inline ring, without its
    /// payload: see [`pop_with`](Self::pop_with)).
    #[inline(always)]
    pub fn pop(&self) -> Result<Pop, Corrupted> {
        self.pop_as::<false>(&[])
    }

    /// Consumer: takes the next entry, and in an inline ring copies its
    /// payload words into the first [`inline_words`](Self::inline_words)
    /// of the cell of its return slot, `cells[ret]`, if there is one (read
    /// before the slot is given back; in the contended case possibly for
    /// an entry the producer then takes back, whose return slot no sample
    /// holds). Nothing is written when nothing is taken.
    #[inline(always)]
    pub fn pop_with(&self, cells: &[InlineCell]) -> Result<Pop, Corrupted> {
        self.pop_as::<true>(cells)
    }

    /// [`pop_with`](Self::pop_with), compiled without the payload's copy
    /// for rings that carry none (`INLINE` false).
    #[inline(always)]
    fn pop_as<const INLINE: bool>(&self, cells: &[InlineCell]) -> Result<Pop, Corrupted> {
        // The two kinds of consumer meet on the slot's raw words, and the
        // entry is decoded once after: decoding in each would make the
        // caller merge every field of the entry.
        let raw = if self.sole_consumer {
            self.pop_sole::<INLINE>(cells)
        } else {
            self.pop_contended::<INLINE>(cells)
        };
        Ok(match raw? {
            Some(Taken {
                value,
                word,
                pos,
                tag,
            }) => Pop::Item {
                index: value as u32,
                ret: ret_of(value),
                pos,
                len: word & LEN_MASK,
                next: ((word >> LEN_BITS) as u32).checked_sub(1),
                tag,
            },
            None => Pop::Empty,
        })
    }

    /// [`pop`](Self::pop) when the producer never takes entries back: the
    /// consumer alone moves `head`, so one look at one slot decides.
    #[inline(always)]
    fn pop_sole<const INLINE: bool>(
        &self,
        cells: &[InlineCell],
    ) -> Result<Option<Taken>, Corrupted> {
        // Relaxed: only this consumer writes head.
        let head = self.head.load(Ordering::Relaxed);
        let (desc, len_word) = self.pair(head);
        // ORDERING: Acquire; pairs with the Release store in write().
        let value = desc.load(Ordering::Acquire);
        let st = stamp_of(value);
        if st != stamp(head, self.log2) {
            return if st == previous_stamp(head, self.log2) {
                Ok(None)
            } else {
                Err(Corrupted)
            };
        }
        // Relaxed: ordered after the producer's store by the Acquire above.
        let word = len_word.load(Ordering::Relaxed);
        let tag = self.read_tag(head);
        if INLINE {
            self.read_inline(head, value, cells);
        }
        // ORDERING: Release; pairs with the Acquire loads of head in
        // try_push(): our read of the slot happens before its reuse.
        self.head.store(head.wrapping_add(1), Ordering::Release);
        Ok(Some(Taken {
            value,
            word,
            pos: head,
            tag,
        }))
    }

    /// [`pop`](Self::pop) racing the producer's
    /// [`reclaim_oldest`](Self::reclaim_oldest) for each entry. The common
    /// cases, an entry taken at the first try and an empty ring, inline; a
    /// lost race or anything odd in the cold loop.
    #[inline(always)]
    fn pop_contended<const INLINE: bool>(
        &self,
        cells: &[InlineCell],
    ) -> Result<Option<Taken>, Corrupted> {
        // Relaxed: the CAS below validates the position we act on.
        let head = self.head.load(Ordering::Relaxed);
        let (desc, len_word) = self.pair(head);
        // ORDERING: Acquire; pairs with the Release store in write().
        let value = desc.load(Ordering::Acquire);
        let st = stamp_of(value);
        if st != stamp(head, self.log2) {
            // Empty, the body of every busy-poll loop, inline too: as in
            // the loop of pop_contended_slow, the slot's previous lap with
            // head unmoved since.
            // ORDERING: Acquire; as in the loop of pop_contended_slow.
            if st == previous_stamp(head, self.log2) && self.head.load(Ordering::Acquire) == head {
                return Ok(None);
            }
        } else {
            // Relaxed: as in the loop of pop_contended_slow.
            let word = len_word.load(Ordering::Relaxed);
            let tag = self.read_tag(head);
            // Copied before the compare-and-swap: if the producer takes the
            // entry back first, what we copied is dropped with it.
            if INLINE {
                self.read_inline(head, value, cells);
            }
            // ORDERING: AcqRel; as in the loop of pop_contended_slow.
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
                return Ok(Some(Taken {
                    value,
                    word,
                    pos: head,
                    tag,
                }));
            }
        }
        self.pop_contended_slow::<INLINE>(cells)
    }

    /// [`pop_contended`](Self::pop_contended) from the start, in a loop
    /// that follows the producer's take-backs.
    #[cold]
    #[inline(never)]
    fn pop_contended_slow<const INLINE: bool>(
        &self,
        cells: &[InlineCell],
    ) -> Result<Option<Taken>, Corrupted> {
        // Relaxed: the CAS below validates the position we act on.
        let mut head = self.head.load(Ordering::Relaxed);
        // Each lost race means the producer reclaimed the entry we were
        // about to take; an honest one cannot win a thousand times in a row
        // (each reclaim needs a send), a peer rewriting head can forever.
        for _ in 0..1024 + self.slots.len() {
            let (desc, len_word) = self.pair(head);
            // ORDERING: Acquire; pairs with the Release store in write().
            let value = desc.load(Ordering::Acquire);
            let st = stamp_of(value);
            if st == stamp(head, self.log2) {
                // Relaxed: ordered after the producer's store by the Acquire
                // above. Read before we advance head: until then the producer
                // cannot reuse the slot (and if it takes the entry back, our
                // CAS below fails and the value is dropped).
                let taken = Taken {
                    value,
                    word: len_word.load(Ordering::Relaxed),
                    pos: head,
                    tag: self.read_tag(head),
                };
                if INLINE {
                    self.read_inline(head, value, cells);
                }
                // ORDERING: AcqRel; Release lets the producer reuse the slot after
                // our read; pairs with the Acquire loads of head in try_push and
                // with reclaim_oldest's CAS.
                match self.head.compare_exchange(
                    head,
                    head.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Ok(Some(taken)),
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
                return Ok(None);
            }
            return Err(Corrupted);
        }
        Err(Corrupted)
    }
}
