//! Bookkeeping of a publisher's chunk pool.
//!
//! The chunks themselves live in the publisher's shared data segment; who may
//! use which chunk is decided here, in the publisher's private memory, so no
//! other process can corrupt it. A chunk is free, loaned to the user, or
//! referenced by one or more connections and the history; it returns to the
//! free list when its last reference goes.
//!
//! [`Outstanding`] records, per connection, which chunks the subscriber may
//! hold and the return stamp of each delivery. The publisher takes back only
//! chunks outstanding on that connection whose return word holds that stamp
//! (see `returns::Returns`), so a subscriber that returns a chunk twice, or one
//! it never had, cannot make the publisher reuse memory a reader still sees.
//! When a subscriber goes away, all its outstanding chunks are released at
//! once.

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
        self.refs[idx as usize] = 1;
        Some(idx)
    }

    /// The chunk the next [`alloc`](Self::alloc) returns if nothing is
    /// freed before it.
    #[inline]
    pub fn top(&self) -> Option<u32> {
        self.free.last().copied()
    }

    /// Moves chunk `idx` to the top of the free list if it is among the
    /// entries from position `from` on (those freed since the list had
    /// `from` entries), so that the next alloc returns it.
    pub fn lift(&mut self, idx: u32, from: usize) {
        let Some(recent) = self.free.get(from..) else {
            return;
        };
        if let Some(pos) = recent.iter().position(|&c| c == idx) {
            let last = self.free.len() - 1;
            self.free.swap(from + pos, last);
        }
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

/// Set of chunk indices outstanding on one connection, each with the return
/// stamp of its delivery.
#[derive(Debug, Clone)]
pub struct Outstanding {
    bits: Vec<u64>,
    stamps: Vec<u64>,
    count: usize,
}

impl Outstanding {
    /// An empty set for a pool of `n` chunks.
    pub fn new(n: u32) -> Self {
        Self {
            bits: vec![0; (n as usize).div_ceil(64)],
            stamps: vec![0; n as usize],
            count: 0,
        }
    }

    /// Number of chunks outstanding.
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The return stamp `idx` was delivered with, if it is outstanding.
    #[inline]
    pub fn stamp(&self, idx: u32) -> Option<u64> {
        if self.contains(idx) {
            self.stamps.get(idx as usize).copied()
        } else {
            None
        }
    }

    /// Whether `idx` is outstanding.
    pub fn contains(&self, idx: u32) -> bool {
        let (w, b) = ((idx / 64) as usize, idx % 64);
        self.bits.get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    /// Marks `idx` outstanding, delivered with return stamp `stamp`; false
    /// if it already was or is out of range.
    #[inline]
    pub fn insert(&mut self, idx: u32, stamp: u64) -> bool {
        let (w, b) = ((idx / 64) as usize, idx % 64);
        match (self.bits.get_mut(w), self.stamps.get_mut(idx as usize)) {
            (Some(word), Some(st)) if *word & (1 << b) == 0 => {
                *word |= 1 << b;
                *st = stamp;
                self.count += 1;
                true
            }
            _ => false,
        }
    }

    /// Clears `idx`; false if it was not outstanding (garbage from the peer).
    pub fn remove(&mut self, idx: u32) -> bool {
        let (w, b) = ((idx / 64) as usize, idx % 64);
        match self.bits.get_mut(w) {
            Some(word) if *word & (1 << b) != 0 => {
                *word &= !(1 << b);
                self.count -= 1;
                true
            }
            _ => false,
        }
    }

    /// Removes every index for which `returned(index, stamp)` holds and
    /// calls `release` for it.
    pub fn take_returned(
        &mut self,
        mut returned: impl FnMut(u32, u64) -> bool,
        mut release: impl FnMut(u32),
    ) {
        for (w, word) in self.bits.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let idx = w as u32 * 64 + b;
                if returned(idx, self.stamps[idx as usize]) {
                    *word &= !(1 << b);
                    self.count -= 1;
                    release(idx);
                }
            }
        }
    }

    /// Empties the set, calling `f` for every index that was outstanding.
    pub fn drain(&mut self, mut f: impl FnMut(u32)) {
        for (w, word) in self.bits.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let b = bits.trailing_zeros();
                f(w as u32 * 64 + b);
                bits &= bits - 1;
            }
            *word = 0;
        }
        self.count = 0;
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

    #[test]
    fn a_chunk_freed_recently_can_be_lifted_to_the_top() {
        let mut book = ChunkBook::new(5);
        let loaned: Vec<u32> = (0..5).map(|_| book.alloc().unwrap()).collect();
        book.release(loaned[4]);
        let from = book.free_count();
        for &i in &loaned[..3] {
            book.release(i);
        }
        // Only what was freed since `from` is looked at.
        book.lift(loaned[4], from);
        assert_eq!(book.top(), Some(loaned[2]));
        book.lift(loaned[0], from);
        assert_eq!(book.top(), Some(loaned[0]));
        book.lift(loaned[3], from); // not free: nothing happens
        book.lift(loaned[1], 99); // out of range: nothing happens
        assert_eq!(book.top(), Some(loaned[0]));
        let mut rest: Vec<u32> = (0..4).map(|_| book.alloc().unwrap()).collect();
        rest.sort_unstable();
        assert_eq!(rest, vec![0, 1, 2, 4]);
    }

    #[test]
    fn outstanding_rejects_garbage() {
        let mut o = Outstanding::new(70);
        assert!(o.insert(3, 1));
        assert!(!o.insert(3, 2));
        assert!(o.insert(69, 2));
        assert!(!o.insert(70, 3));
        assert!(!o.insert(70_000, 3));
        assert!(!o.remove(4));
        assert!(!o.remove(u32::MAX));
        assert!(o.contains(69));
        assert_eq!(
            (o.stamp(69), o.stamp(3), o.stamp(4)),
            (Some(2), Some(1), None)
        );
        assert_eq!(o.stamp(70_000), None);
        assert_eq!(o.count(), 2);
        let mut seen = Vec::new();
        o.drain(|i| seen.push(i));
        assert_eq!(seen, vec![3, 69]);
        assert_eq!(o.count(), 0);
        assert!(!o.remove(3));
    }

    #[test]
    fn only_returned_deliveries_come_back() {
        let mut o = Outstanding::new(10);
        o.insert(1, 7);
        o.insert(4, 8);
        o.insert(9, 9);
        let mut back = Vec::new();
        o.take_returned(
            |idx, stamp| idx == 4 && stamp == 8 || idx == 9 && stamp == 1,
            |i| back.push(i),
        );
        assert_eq!(back, vec![4]);
        assert_eq!(o.count(), 2);
        assert!(o.contains(1) && o.contains(9) && !o.contains(4));
    }
}
