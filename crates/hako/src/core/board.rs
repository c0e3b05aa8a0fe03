//! A blackboard entry: one writer updates a value that many readers read,
//! without queues, without the writer ever waiting for a reader, and
//! without a reader ever seeing a value half written.
//!
//! Each entry has a header, its state word and a sequence word per buffer,
//! and `count` buffers that hold only values:
//!
//! ```text
//!  header (a multiple of LINE bytes)
//!  +0      state: AtomicU64       version << 8 | the buffer holding that version
//!  +8·(1+b) seq[b]: AtomicU64     2·v: buffer b holds version v whole;
//!                                 2·v + 1: v is being written there
//!
//!  buffer b (stride bytes, a multiple of LINE), for b in 0..count
//!  +0      value                  size bytes
//! ```
//!
//! A reader's look at the state brings it the sequence words in the same
//! line (up to 7 buffers), so a small value costs it two lines, the
//! header's and the value's, as a message's descriptor and payload do.
//! (Measured on the AMD EPYC VM with `hako bench --transports
//! hako-board,...`: with a sequence word in front of each value a 64 B
//! value took two value lines, and a round trip through two boards 0.96 µs
//! against 0.68 for publish/subscribe.)
//!
//! **Writing.** The writer picks a buffer that is neither the current one
//! nor pinned by a reader (see below), round-robin from the one after the
//! current, so the buffer it overwrites is the one published longest ago;
//! sets its sequence word to `2·v + 1` for the version `v` it writes,
//! writes the value, sets the word to `2·v`, and publishes it: the state's
//! version becomes `v` and names the buffer. A writer that dies anywhere in
//! this leaves the current buffer untouched: readers keep reading the old
//! value, and the next writer overwrites the half-written buffer's word
//! with its own version's.
//!
//! **Reading by copy.** A reader loads the state (version `v`, buffer
//! `b`), then `b`'s sequence word, which must be `2·v` (else the buffer was
//! reused since: try again), copies the value, and loads the word again:
//! still `2·v`, the copy is whole and is version `v` (a sequence lock per
//! buffer, whose word names the version, so that a reader that slept
//! between the two loads cannot take a later version's value for `v`'s).
//! The writer reuses the buffer a
//! reader copies only after it published every other one, so a copy fails
//! only when the writer updates faster than the copy takes, `count - 1`
//! times over; after a few failures the reader pins.
//!
//! **Reading in place.** A reader that wants the value where it lies
//! (large values, no copy) pins it: it stores the buffer's number in its
//! own pin word (one per reader and entry, in the reader's area), then
//! loads the state again; unchanged, the writer cannot choose that buffer
//! any more until the pin is cleared. The writer reads every live reader's
//! pin word before it chooses, and a full barrier stands between the
//! reader's pin store and its reload, and between the writer's publish and
//! its next loads of the pins: of the two, at least one sees the other's
//! store. With
//! `count = readers + 2` buffers the writer always finds one that is free:
//! each reader pins at most one per entry, and one is current.
//!
//! **Cost to the writer.** Memory: `count` copies of each value. Time per
//! update: one load of a pin word per live reader, the value's bytes, two
//! stores to the sequence word and one to the state.
//!
//! Everything read here is hostile: a state naming a buffer beyond `count`
//! is corruption, not an index.

use super::sync::{fence, full_barrier, AtomicU64, Ordering};

/// Bits of the state word that name the buffer.
pub const BUFFER_BITS: u32 = 8;
/// The most buffers an entry may have.
pub const MAX_BUFFERS: u64 = 1 << BUFFER_BITS;

/// The state word says a buffer that does not exist: the memory was
/// overwritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Where one entry lies: its state word and its buffers.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    state: &'a AtomicU64,
    seqs: &'a [AtomicU64],
    base: *mut u8,
    stride: u64,
    size: usize,
    count: u64,
}

/// A version and the buffer that holds it, as the state word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    /// Updates published so far.
    pub version: u64,
    /// The buffer holding that version.
    pub buffer: u64,
}

impl State {
    fn word(self) -> u64 {
        (self.version << BUFFER_BITS) | self.buffer
    }

    /// The version after this one (versions count modulo 2^56).
    pub fn next_version(self) -> u64 {
        self.version.wrapping_add(1) & (u64::MAX >> BUFFER_BITS)
    }
}

impl<'a> Entry<'a> {
    /// The entry of state word `state` and sequence words `seqs` (one per
    /// buffer) whose `seqs.len()` buffers of `stride` bytes start at
    /// `base`, each holding a value of `size` bytes.
    ///
    /// # Safety
    /// `base` points to `seqs.len() * stride` bytes that stay mapped for
    /// `'a`; `size <= stride`.
    pub unsafe fn new(
        state: &'a AtomicU64,
        seqs: &'a [AtomicU64],
        base: *mut u8,
        stride: u64,
        size: usize,
    ) -> Self {
        Self {
            state,
            seqs,
            base,
            stride,
            size,
            count: seqs.len() as u64,
        }
    }

    /// The sequence word of buffer `b` (`b < count`).
    fn seq(&self, b: u64) -> &'a AtomicU64 {
        &self.seqs[b as usize]
    }

    /// The value of buffer `b` (`b < count`).
    fn value(&self, b: u64) -> *mut u8 {
        assert!(b < self.count);
        // SAFETY: b < count, so the value lies in the buffers (the
        // constructor's promise).
        unsafe { self.base.add((b * self.stride) as usize) }
    }

    /// The current state, its buffer checked.
    pub fn state(&self, order: Ordering) -> Result<State, Corrupt> {
        let w = self.state.load(order);
        let s = State {
            version: w >> BUFFER_BITS,
            buffer: w & (MAX_BUFFERS - 1),
        };
        if s.buffer < self.count {
            Ok(s)
        } else {
            Err(Corrupt)
        }
    }

    /// Copies the current value into `out` (`size` bytes) if no update
    /// overtakes the copy; the version copied, or `None` if one did.
    ///
    /// # Safety
    /// `out` is valid for `size` bytes of writes.
    pub unsafe fn try_copy(&self, out: *mut u8) -> Result<Option<u64>, Corrupt> {
        let size = self.size;
        // SAFETY: the value lies in the buffer (constructor's promise), `out`
        // is the caller's. The bytes may change under the copy (another
        // process writes them, outside this program); the copy is only
        // trusted once try_read's second look at the sequence word says it
        // did not.
        self.try_read(|src| unsafe { core::ptr::copy_nonoverlapping(src, out, size) })
    }

    /// [`try_copy`](Self::try_copy) with the copy done by `read`, given the
    /// value's first byte: the version read, or `None` if an update
    /// overtook the read (what `read` read is then not to be used).
    pub fn try_read(&self, read: impl FnOnce(*const u8)) -> Result<Option<u64>, Corrupt> {
        // ORDERING: Acquire; pairs with the Release store in
        // publish(): the buffer's value and sequence word are visible.
        let s = self.state(Ordering::Acquire)?;
        let seq = self.seq(s.buffer);
        let whole = s.version.wrapping_mul(2);
        // ORDERING: Acquire; pairs with the Release store in end_write(): the
        // buffer holds the state's version, whole, or the writer has moved
        // on to another version there (another word).
        if seq.load(Ordering::Acquire) != whole {
            return Ok(None);
        }
        read(self.value(s.buffer).cast_const());
        // ORDERING: Acquire fence; pairs with the writer's Release fence after
        // it marks the buffer odd: a read that saw any byte of a reuse sees
        // that word (or a later one) below.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        let after = seq.load(Ordering::Relaxed);
        Ok((after == whole).then_some(s.version))
    }

    /// Pins the current value for reading in place: stores its buffer
    /// (plus one) in `pin`, the reader's pin word of this entry, and checks
    /// the state did not move meanwhile. Returns the state pinned; the
    /// buffer is the reader's until [`unpin`](Self::unpin).
    pub fn pin(&self, pin: &AtomicU64) -> Result<State, Corrupt> {
        loop {
            // ORDERING: Acquire; pairs with the Release of publish(): the
            // buffer's value is visible.
            let s = self.state(Ordering::Acquire)?;
            // Relaxed store, then a full barrier: pairs with the barrier the
            // writer makes between its publish and its loads of the pins
            // (free_buffer()): either the writer's next choice sees this pin,
            // or the load below sees its publish (store, barrier, load on both
            // sides; see the module documentation).
            pin.store(s.buffer + 1, Ordering::Relaxed);
            full_barrier();
            // ORDERING: Acquire; as the first load. Unchanged, no publish came
            // between the first load and the pin, so the writer's next choice
            // sees the pin.
            if self.state.load(Ordering::Acquire) == s.word() {
                return Ok(s);
            }
        }
    }

    /// Ends a pin.
    pub fn unpin(pin: &AtomicU64) {
        // ORDERING: Release; pairs with the writer's Acquire loads of the
        // pins: the reader's reads of the value happen before the writer may
        // reuse the buffer.
        pin.store(0, Ordering::Release);
    }

    /// The value of buffer `b` (for a pinned or a writer's buffer).
    pub fn value_ptr(&self, b: u64) -> *mut u8 {
        self.value(b)
    }

    /// The writer's choice of a buffer to write: neither `current` nor
    /// pinned (`pinned(b)` says whether a reader pins `b`; it loads the
    /// readers' pin words with Acquire), the first from `current + 1` round
    /// the ring. `None` if every one is taken, which `count = readers + 2`
    /// rules out unless pins are corrupt.
    pub fn free_buffer(&self, current: u64, pinned: impl Fn(u64) -> bool) -> Option<u64> {
        // Between the last publish and the loads of the pins: pairs with the
        // barrier in pin().
        full_barrier();
        (1..self.count)
            .map(|k| (current + k) % self.count)
            .find(|&b| !pinned(b))
    }

    /// Starts writing `version` into buffer `b` (chosen by
    /// [`free_buffer`](Self::free_buffer)): its sequence word becomes
    /// `2·version + 1`, odd.
    pub fn begin_write(&self, b: u64, version: u64) {
        // ORDERING: a Relaxed store, then a Release fence; pairs with the
        // readers' Acquire fence in try_copy(): no byte of the new value is
        // seen before the odd word.
        self.seq(b)
            .store(version.wrapping_mul(2).wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Ends writing `version` into buffer `b`: its sequence word becomes
    /// `2·version`, which says the buffer holds that version whole.
    pub fn end_write(&self, b: u64, version: u64) {
        // ORDERING: Release; pairs with the readers' Acquire load of seq:
        // the whole value is visible with the word.
        self.seq(b)
            .store(version.wrapping_mul(2), Ordering::Release);
    }

    /// Writes buffer `b` whole: [`begin_write`](Self::begin_write), `fill`
    /// on its value, [`end_write`](Self::end_write).
    #[cfg(any(test, loom))]
    pub fn write(&self, b: u64, version: u64, fill: impl FnOnce(*mut u8)) {
        self.begin_write(b, version);
        fill(self.value(b));
        self.end_write(b, version);
    }

    /// Publishes buffer `b`, written with version `current.next_version()`,
    /// as that version; returns it.
    pub fn publish(&self, current: State, b: u64) -> u64 {
        let next = State {
            version: current.next_version(),
            buffer: b,
        };
        // ORDERING: Release; pairs with the readers' Acquire loads of the
        // state: the value is visible with it. (The barrier of the next
        // free_buffer() orders it before the next loads of the pins.)
        self.state.store(next.word(), Ordering::Release);
        next.version
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// An entry of `count` buffers of 8-byte values on the heap.
    struct Heap {
        state: AtomicU64,
        seqs: Vec<AtomicU64>,
        bufs: Vec<u64>,
    }

    const STRIDE_WORDS: usize = 16; // 128 bytes

    impl Heap {
        fn new(count: usize) -> Self {
            Self {
                state: AtomicU64::new(0),
                seqs: (0..count).map(|_| AtomicU64::new(0)).collect(),
                bufs: vec![0; count * STRIDE_WORDS],
            }
        }
        fn entry(&mut self) -> Entry<'_> {
            let base = self.bufs.as_mut_ptr().cast::<u8>();
            // SAFETY: count buffers of 128 bytes holding 8-byte values.
            unsafe { Entry::new(&self.state, &self.seqs, base, 128, 8) }
        }
    }

    fn read(e: &Entry<'_>) -> (u64, u64) {
        let mut v = 0u64;
        // SAFETY: 8 bytes into a u64.
        let version = unsafe { e.try_copy((&raw mut v).cast()) }.unwrap().unwrap();
        (v, version)
    }

    fn update(e: &Entry<'_>, pins: &[u64], v: u64) -> u64 {
        let s = e.state(Ordering::Relaxed).unwrap();
        let b = e
            .free_buffer(s.buffer, |b| pins.contains(&(b + 1)))
            .unwrap();
        // SAFETY: 8 bytes of the chosen buffer.
        e.write(b, s.next_version(), |p| unsafe { p.cast::<u64>().write(v) });
        e.publish(s, b)
    }

    #[test]
    fn updates_are_read_with_their_version() {
        let mut h = Heap::new(3);
        let e = h.entry();
        assert_eq!(read(&e), (0, 0));
        for v in 1..=10 {
            assert_eq!(update(&e, &[], v * 7), v);
            assert_eq!(read(&e), (v * 7, v));
        }
    }

    #[test]
    fn a_pinned_buffer_is_never_chosen() {
        let mut h = Heap::new(3);
        let e = h.entry();
        update(&e, &[], 5);
        let pin = AtomicU64::new(0);
        let s = e.pin(&pin).unwrap();
        let pins = [pin.load(Ordering::Relaxed)];
        for v in 0..20 {
            update(&e, &pins, v);
            // SAFETY: the pinned buffer's 8 bytes.
            let held = unsafe { e.value_ptr(s.buffer).cast::<u64>().read() };
            assert_eq!(held, 5, "the pinned value changed");
        }
        Entry::unpin(&pin);
        assert_eq!(pin.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_copy_overtaken_by_a_reuse_is_refused() {
        let mut h = Heap::new(2);
        let e = h.entry();
        // Buffer 0 is current (version 0); a writer starts reusing it.
        e.begin_write(0, 5);
        let mut v = 0u64;
        // SAFETY: 8 bytes into a u64.
        assert_eq!(unsafe { e.try_copy((&raw mut v).cast()) }, Ok(None));
        // Done, it holds version 5 whole, which is not the state's version 0:
        // still refused (a reader that slept between its loads).
        e.end_write(0, 5);
        // SAFETY: as above.
        assert_eq!(unsafe { e.try_copy((&raw mut v).cast()) }, Ok(None));
    }

    #[test]
    fn a_dead_writers_buffer_is_written_again() {
        let mut h = Heap::new(3);
        let e = h.entry();
        // A writer died while it wrote version 1 into buffer 1.
        e.begin_write(1, 1);
        assert_eq!(read(&e), (0, 0), "the current value is untouched");
        assert_eq!(update(&e, &[], 9), 1);
        assert_eq!(read(&e), (9, 1));
        assert_eq!(e.seq(1).load(Ordering::Relaxed), 2, "version 1, whole");
    }

    #[test]
    fn a_state_naming_no_buffer_is_corruption() {
        let mut h = Heap::new(3);
        let e = h.entry();
        e.state.store((4 << BUFFER_BITS) | 7, Ordering::Relaxed);
        assert_eq!(e.state(Ordering::Relaxed), Err(Corrupt));
        let mut v = 0u64;
        // SAFETY: 8 bytes into a u64.
        assert_eq!(unsafe { e.try_copy((&raw mut v).cast()) }, Err(Corrupt));
        assert_eq!(e.pin(&AtomicU64::new(0)), Err(Corrupt));
    }

    #[test]
    fn every_buffer_taken_leaves_no_choice() {
        let mut h = Heap::new(3);
        let e = h.entry();
        assert_eq!(e.free_buffer(0, |_| true), None);
        assert_eq!(e.free_buffer(2, |b| b == 0), Some(1));
    }
}
