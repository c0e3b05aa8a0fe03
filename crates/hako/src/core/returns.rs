//! The subscriber → publisher side of a connection: the return words
//! through which a subscriber hands chunks back (see `core::ring` for the
//! connection as a whole), and the count that decides who frees a
//! connection whose samples outlive the subscriber's handle.

use super::sync::{prefetch_write, AtomicU64, Ordering};

/// The return words of one connection: word `i` is return slot `i`, which
/// the publisher names in each descriptor (a free one per delivery
/// outstanding; see `core::ring`).
#[derive(Clone, Copy)]
pub struct Returns<'a> {
    words: &'a [AtomicU64],
}

impl<'a> Returns<'a> {
    /// One word per return slot.
    pub fn new(words: &'a [AtomicU64]) -> Self {
        Self { words }
    }

    /// Subscriber (any thread): releases the delivery made through return
    /// slot `ret` with `stamp` ([`Pop::Item`]'s position + 1). A slot out of
    /// range (the publisher wrote garbage) is ignored: only its own chunk is
    /// lost.
    ///
    /// [`Pop::Item`]: super::ring::Pop::Item
    #[inline]
    pub fn release(&self, ret: u32, stamp: u64) {
        if let Some(w) = self.words.get(ret as usize) {
            // ORDERING: Release; pairs with the Acquire load in returned():
            // our reads of the chunk happen before the publisher reuses it.
            w.store(stamp, Ordering::Release);
        }
    }

    /// Subscriber: starts taking ownership of the line that
    /// [`release`](Self::release) through slot `ret` will write, so that
    /// store does not wait for the publisher's CPU to give the line up
    /// (it reads it in every take-back). A hint only.
    #[inline]
    pub fn prepare_release(&self, ret: u32) {
        if let Some(w) = self.words.get(ret as usize) {
            prefetch_write(std::ptr::from_ref(w).cast());
        }
    }

    /// The address of slot `ret`'s word, for prefetching only: never
    /// dereferenced, so it is not checked (for an out-of-range `ret`, from
    /// a hostile peer, it lies beyond the words, and a prefetch of any
    /// address is harmless: it never faults).
    #[inline]
    pub fn word_addr(&self, ret: u32) -> usize {
        let word = std::mem::size_of::<AtomicU64>();
        (self.words.as_ptr() as usize).wrapping_add((ret as usize).wrapping_mul(word))
    }

    /// Publisher: whether the delivery made through slot `ret` with
    /// `stamp` came back.
    #[inline]
    pub fn returned(&self, ret: u32, stamp: u64) -> bool {
        self.words
            .get(ret as usize)
            // ORDERING: Acquire; pairs with the Release store in release().
            .is_some_and(|w| w.load(Ordering::Acquire) == stamp)
    }

    /// Number of return slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// [`returned`](Self::returned) without the range check.
    ///
    /// # Safety
    /// `ret` is below [`len`](Self::len).
    #[inline]
    pub unsafe fn returned_unchecked(&self, ret: u32, stamp: u64) -> bool {
        // SAFETY: the caller's promise.
        let w = unsafe { self.words.get_unchecked(ret as usize) };
        // ORDERING: Acquire; pairs with the Release store in release().
        w.load(Ordering::Acquire) == stamp
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

    fn words(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn return_words_to_prefetch_are_computed_never_read() {
        let w = words(4);
        let r = Returns::new(&w);
        assert_eq!(r.word_addr(2), std::ptr::from_ref(&w[2]) as usize);
        // A garbage index (an announcement is unvalidated) gives an address
        // beyond the words, for a prefetch only (which cannot fault), and
        // nothing panics, however large it is.
        let base = std::ptr::from_ref(&w[0]) as usize;
        assert_eq!(r.word_addr(99), base + 99 * 8);
        let _ = r.word_addr(u32::MAX);
        let _ = Returns::new(&[]).word_addr(0);
        // A hint only: nothing changes.
        r.prepare_release(2);
        r.prepare_release(99);
        assert_eq!(w[2].load(Ordering::Relaxed), 0);
    }

    #[test]
    fn returns_match_only_their_delivery() {
        let w = words(4);
        let r = Returns::new(&w);
        assert!(!r.returned(2, 5));
        r.release(2, 5);
        assert!(r.returned(2, 5));
        // An earlier delivery through the same slot, another slot, or
        // garbage beyond the slots never match.
        assert!(!r.returned(2, 9));
        assert!(!r.returned(1, 5));
        r.release(99, 5);
        assert!(!r.returned(99, 5));
        r.reset();
        assert!(!r.returned(2, 5));
    }
}
