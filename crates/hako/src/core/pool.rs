//! Bookkeeping of a publisher's chunk pool.
//!
//! The chunks themselves live in the publisher's shared data segment; who may
//! use which chunk is decided here, in the publisher's private memory, so no
//! other process can corrupt it. A chunk is free, loaned to the user, or
//! referenced by one or more connections and the history; it returns to the
//! free list when its last reference goes.
//!
//! [`Outstanding`] records, per connection, which chunks the subscriber may
//! hold: for each delivery, the return slot it went out with, its chunk and
//! its return stamp. The publisher takes back only deliveries outstanding on
//! that connection whose return word holds that stamp (see
//! `returns::Returns`), so a subscriber that returns a chunk twice, or one it
//! never had, cannot make the publisher reuse memory a reader still sees.
//! When a subscriber goes away, all its outstanding chunks are released at
//! once.

use super::returns::Returns;

/// Reference counts and free list of a pool of `n` chunks.
///
/// The free list is a stack: the chunk freed last is loaned first, so a
/// publisher and its subscribers keep reusing the few chunks that are in
/// their caches (with 4 MiB payloads, cycling through three chunks instead
/// of two made a round trip that writes and reads the whole payload about
/// 40 % slower here).
#[derive(Debug, Clone)]
pub struct ChunkBook {
    refs: Vec<u32>,
    free: Vec<u32>,
}

impl ChunkBook {
    /// A pool of `n` free chunks.
    pub fn new(n: u32) -> Self {
        Self {
            refs: vec![0; n as usize],
            // Reversed so that chunk 0 is loaned first (nicer to read in tests).
            free: (0..n).rev().collect(),
        }
    }

    /// Number of chunks.
    pub fn len(&self) -> u32 {
        self.refs.len() as u32
    }

    /// Whether the pool has no chunks at all.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Number of free chunks.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Takes a free chunk with one reference (the loan): the one freed last.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        let idx = self.free.pop()?;
        debug_assert!((idx as usize) < self.refs.len());
        // SAFETY: the free stack holds only indices below the pool's size:
        // new() fills it with 0..n, and release() pushes an index only
        // after indexing `refs` with it succeeded.
        unsafe { *self.refs.get_unchecked_mut(idx as usize) = 1 };
        Some(idx)
    }

    /// The chunk the next [`alloc`](Self::alloc) returns if nothing is
    /// freed before it.
    #[inline]
    pub fn top(&self) -> Option<u32> {
        self.free.last().copied()
    }

    /// Adds a reference to a chunk in use.
    #[inline]
    pub fn add_ref(&mut self, idx: u32) {
        debug_assert!(self.refs[idx as usize] > 0, "add_ref on a free chunk");
        self.refs[idx as usize] += 1;
    }

    /// Drops a reference; returns true when the chunk became free.
    #[inline]
    pub fn release(&mut self, idx: u32) -> bool {
        let r = &mut self.refs[idx as usize];
        debug_assert!(*r > 0, "release of a free chunk");
        *r -= 1;
        if *r == 0 {
            self.free.push(idx);
            true
        } else {
            false
        }
    }

    /// Current reference count of a chunk (0 = free).
    pub fn refs(&self, idx: u32) -> u32 {
        self.refs[idx as usize]
    }
}

/// The deliveries outstanding on one connection, by return slot (see
/// `core::ring`): for each slot in use, the chunk delivered through it and
/// the return stamp of that delivery. Its size is the connection's return
/// slots (the most deliveries it may have outstanding), not the pool's.
#[derive(Debug, Clone)]
pub struct Outstanding {
    /// Slots in use, one bit each; the bits of the last word beyond the
    /// last slot are set too (never free), see `pad`.
    bits: Vec<u64>,
    /// Those bits beyond the last slot, in the last word.
    pad: u64,
    /// Per slot: the return stamp and the chunk of its delivery.
    entries: Vec<(u64, u32)>,
    /// Number of slots, and of those in use.
    count: u32,
    /// The word of `bits` where the last search for a free slot beyond
    /// the first word ended (a connection has more than 64 slots only when
    /// its queue or borrowing is that deep).
    hint: std::cell::Cell<u32>,
}

impl Outstanding {
    /// An empty set of `slots` return slots.
    pub fn new(slots: u32) -> Self {
        let words = (slots as usize).div_ceil(64).max(1);
        let pad = match slots % 64 {
            0 if slots > 0 => 0,
            k => !0 << k,
        };
        let mut bits = vec![0; words];
        bits[words - 1] = pad;
        Self {
            bits,
            pad,
            entries: vec![(0, 0); slots as usize],

            count: 0,
            hint: std::cell::Cell::new(0),
        }
    }

    /// Number of deliveries outstanding.
    #[inline]
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// The return slot the next [`insert`](Self::insert) will use (the
    /// lowest free one in the word where one was last found, else the
    /// first free one after it), if one is free.
    #[inline(always)]
    pub fn free_slot(&self) -> Option<u32> {
        let w = self.hint.get() as usize;
        // SAFETY: `hint` is 0 (and `bits` has at least one word) or a word
        // index below `bits.len()` (see free_slot_elsewhere).
        let free = !unsafe { *self.bits.get_unchecked(w) };
        if free != 0 {
            // A clear bit is a slot: those beyond the last are set.
            return Some((w as u32) * 64 + free.trailing_zeros());
        }
        self.free_slot_elsewhere()
    }

    /// [`free_slot`](Self::free_slot) when the hinted word has none: a lap
    /// over the words, from the next one, finds one if any is free.
    #[cold]
    fn free_slot_elsewhere(&self) -> Option<u32> {
        let n = self.bits.len();
        let from = self.hint.get() as usize + 1;
        (0..n).find_map(|k| {
            let w = (from + k) % n;
            let free = !self.bits[w];
            (free != 0).then(|| {
                self.hint.set(w as u32);
                (w as u32) * 64 + free.trailing_zeros()
            })
        })
    }

    /// Records the delivery of chunk `idx` with return stamp `stamp`
    /// through the lowest free slot of the word where one was last found,
    /// and returns that slot; `None` if that word has none (then
    /// [`free_slot`](Self::free_slot) looks further). The common case,
    /// without a search.
    #[inline(always)]
    pub fn insert_hinted(&mut self, idx: u32, stamp: u64) -> Option<u32> {
        let w = self.hint.get() as usize;
        // SAFETY: as in free_slot().
        let word = unsafe { self.bits.get_unchecked_mut(w) };
        let free = !*word;
        if free == 0 {
            return None;
        }
        let b = free.trailing_zeros();
        *word |= 1 << b;
        let r = w * 64 + b as usize;
        // SAFETY: a clear bit of `bits` is a slot below `slots` (the bits
        // beyond are set), the length of `entries`.
        unsafe { *self.entries.get_unchecked_mut(r) = (stamp, idx) };
        self.count += 1;
        Some(r as u32)
    }

    /// Records the delivery of chunk `idx` with return stamp `stamp`
    /// through slot `ret`, which [`free_slot`](Self::free_slot) named.
    /// Anything else (a slot in use or out of range) changes nothing.
    #[inline]
    pub fn insert(&mut self, ret: u32, idx: u32, stamp: u64) {
        let r = ret as usize;
        let bit = 1 << (r % 64);
        if let (Some(word), Some(entry)) = (self.bits.get_mut(r / 64), self.entries.get_mut(r)) {
            if *word & bit == 0 {
                *word |= bit;
                *entry = (stamp, idx);
                self.count += 1;
            }
        }
    }

    /// The return slot and stamp of an outstanding delivery of chunk `idx`
    /// (of the latest one, as a chunk goes to a connection once at a time),
    /// by a search: for the rare callers.
    pub fn find(&self, idx: u32) -> Option<(u32, u64)> {
        self.entries
            .iter()
            .enumerate()
            .find_map(|(r, &(stamp, c))| {
                let used = self.bits[r / 64] & (1 << (r % 64)) != 0;
                (used && c == idx).then_some((r as u32, stamp))
            })
    }

    /// Clears slot `ret` if it holds a delivery of chunk `idx`; false if it
    /// does not (garbage from the peer).
    pub fn remove(&mut self, ret: u32, idx: u32) -> bool {
        let r = ret as usize;
        match (self.bits.get_mut(r / 64), self.entries.get(r)) {
            (Some(word), Some(&(_, c))) if *word & (1 << (r % 64)) != 0 && c == idx => {
                *word &= !(1 << (r % 64));
                self.count -= 1;
                true
            }
            _ => false,
        }
    }

    /// Clears every slot whose delivery came back (its word in `returns`
    /// holds the delivery's stamp) and calls `release` with the chunk it
    /// held.
    #[inline]
    pub fn take_returned(&mut self, returns: &Returns<'_>, mut release: impl FnMut(u32)) {
        // One check for the whole walk: every slot has its word.
        if returns.len() < self.entries.len() {
            return;
        }
        let last = self.bits.len() - 1;
        let entries = &self.entries[..];
        let mut back = 0;
        for (w, word) in self.bits.iter_mut().enumerate() {
            let mut bits = if w == last { *word & !self.pad } else { *word };
            let mut cleared = 0u64;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let r = w * 64 + b as usize;
                // SAFETY: a set bit outside the padding is a slot below the
                // length of `entries`, which `returns` is not shorter than.
                let ((_, idx), returned) = unsafe {
                    let entry = *entries.get_unchecked(r);
                    (entry, returns.returned_unchecked(r as u32, entry.0))
                };
                if returned {
                    cleared |= 1 << b;
                    release(idx);
                }
            }
            *word &= !cleared;
            back += cleared.count_ones();
        }
        self.count -= back;
    }

    /// Empties the set, calling `f` for the chunk of every delivery that was
    /// outstanding.
    pub fn drain(&mut self, mut f: impl FnMut(u32)) {
        let last = self.bits.len() - 1;
        for (w, word) in self.bits.iter_mut().enumerate() {
            let pad = if w == last { self.pad } else { 0 };
            let mut bits = *word & !pad;
            while bits != 0 {
                let b = bits.trailing_zeros();
                if let Some(&(_, idx)) = self.entries.get(w * 64 + b as usize) {
                    f(idx);
                }
                bits &= bits - 1;
            }
            *word = pad;
        }
        self.count = 0;
        self.hint.set(0);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn alloc_release_cycle() {
        let mut book = ChunkBook::new(3);
        let a = book.alloc().unwrap();
        let b = book.alloc().unwrap();
        let c = book.alloc().unwrap();
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(book.alloc(), None);
        book.add_ref(b);
        assert!(!book.release(b));
        assert!(book.release(b));
        assert_eq!(book.free_count(), 1);
        assert_eq!(book.alloc(), Some(b));
        assert_eq!(book.refs(b), 1);
    }

    #[test]
    fn the_chunk_freed_last_is_loaned_first() {
        let mut book = ChunkBook::new(4);
        let loaned: Vec<u32> = (0..4).map(|_| book.alloc().unwrap()).collect();
        assert_eq!((book.top(), book.alloc()), (None, None));
        for &i in &[loaned[2], loaned[0], loaned[3]] {
            assert!(book.release(i));
            assert_eq!(book.top(), Some(i));
        }
        assert_eq!(book.alloc(), Some(loaned[3]));
        assert_eq!(book.top(), Some(loaned[0]));
        assert_eq!(book.alloc(), Some(loaned[0]));
        assert_eq!(book.alloc(), Some(loaned[2]));
        assert_eq!((book.top(), book.free_count()), (None, 0));
    }

    fn add(o: &mut Outstanding, idx: u32, stamp: u64) -> u32 {
        let ret = o.free_slot().unwrap();
        o.insert(ret, idx, stamp);
        ret
    }

    #[test]
    fn outstanding_rejects_garbage() {
        let mut o = Outstanding::new(70);
        assert_eq!(add(&mut o, 3, 1), 0);
        assert_eq!(add(&mut o, 3, 2), 1);
        assert_eq!(o.find(3), Some((0, 1)));
        assert_eq!(o.find(4), None);
        assert_eq!(add(&mut o, 69, 5), 2);
        // A slot in use or out of range is not inserted again.
        o.insert(2, 8, 8);
        o.insert(70, 8, 8);
        assert_eq!(o.count(), 3);
        // Wrong chunk, slot not in use, out of range.
        assert!(!o.remove(0, 4));
        assert!(!o.remove(5, 3));
        assert!(!o.remove(u32::MAX, 3));
        assert!(o.remove(1, 3));
        assert!(!o.remove(1, 3));
        assert_eq!(o.find(69), Some((2, 5)));
        // The lowest free slot is used next.
        assert_eq!(o.free_slot(), Some(1));
        let mut seen = Vec::new();
        o.drain(|i| seen.push(i));
        assert_eq!(seen, vec![3, 69]);
        assert_eq!((o.count(), o.free_slot()), (0, Some(0)));
        assert_eq!(o.find(69), None);
    }

    #[test]
    fn every_slot_is_used_before_none_is_free() {
        // Over more than one word of bits, freed in the middle of a full set.
        let mut o = Outstanding::new(130);
        for i in 0..130 {
            assert_eq!(add(&mut o, 1000 + i, 1 + u64::from(i)), i);
        }
        assert_eq!((o.free_slot(), o.count()), (None, 130));
        assert!(o.remove(5, 1005) && o.remove(129, 1129));
        assert_eq!(add(&mut o, 7, 7), 129);
        assert_eq!(add(&mut o, 8, 8), 5);
        assert_eq!(o.free_slot(), None);
        assert_eq!(o.find(8), Some((5, 8)));
    }

    #[test]
    fn the_hinted_insert_looks_only_in_the_word_used_last() {
        let mut o = Outstanding::new(100);
        for i in 0..64 {
            assert_eq!(o.insert_hinted(i, 1), Some(i));
        }
        // The first word is full: the hinted insert gives up, the search
        // moves the hint to the next word, where it goes on.
        assert_eq!(o.insert_hinted(64, 1), None);
        assert_eq!(o.count(), 64);
        assert_eq!(o.free_slot(), Some(64));
        for i in 64..100 {
            assert_eq!(o.insert_hinted(i, 1), Some(i));
        }
        // The padding beyond the last slot is never handed out.
        assert_eq!(o.insert_hinted(100, 1), None);
        assert_eq!((o.free_slot(), o.count()), (None, 100));
        assert!(o.remove(3, 3));
        assert_eq!(o.free_slot(), Some(3));
        assert_eq!(o.insert_hinted(7, 2), Some(3));
        assert_eq!(o.find(7), Some((3, 2)));
    }

    #[test]
    fn only_returned_deliveries_come_back() {
        use super::super::sync::AtomicU64;
        let words: Vec<AtomicU64> = (0..10).map(|_| AtomicU64::new(0)).collect();
        let returns = Returns::new(&words);
        let mut o = Outstanding::new(10);
        add(&mut o, 1, 7);
        add(&mut o, 4, 8);
        add(&mut o, 9, 9);
        // Slot 1 came back with its stamp; slot 2 with a wrong one.
        returns.release(1, 8);
        returns.release(2, 1);
        let mut back = Vec::new();
        o.take_returned(&returns, |i| back.push(i));
        assert_eq!(back, vec![4]);
        assert_eq!(o.count(), 2);
        assert_eq!(o.free_slot(), Some(1));
        assert!(!o.remove(1, 4));
        // Return words fewer than the slots: nothing is taken back.
        returns.release(0, 7);
        o.take_returned(&Returns::new(&words[..5]), |i| back.push(i));
        assert_eq!(back, vec![4]);
        assert!(o.remove(0, 1) && o.remove(2, 9));
    }
}
