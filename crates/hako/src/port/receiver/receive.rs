//! Receiving: taking the next descriptor from a connection's queue,
//! validating it and handing out the sample, with the prefetches that let a
//! payload travel with its descriptor.

use std::cell::RefMut;
use std::sync::atomic::Ordering;

use super::conn::ConnHandle;
use super::inner::Receiver;
use super::sample::RawSample;
use super::settings::{ReceiveError, GARBAGE_IN_QUEUE, TRUNCATED};
use super::state::{ConnEntry, SubState, Taken};
use crate::core::ring::{Corrupted, Pop, Tag, LOST_PAYLOAD};
use crate::core::sync::{prefetch_read, prefetch_write};

impl Receiver {
    /// Takes the next sample, if any; never blocks. Samples of one sender
    /// arrive in the order sent; senders are served round-robin.
    ///
    /// Generic over the typed face's sample (`wrap` makes it), so that the
    /// whole receive is compiled into the caller and the sample is built in
    /// place: a non-generic version returned through a temporary, which
    /// measured several ns slower per busy-polled round trip.
    #[inline(always)]
    pub(crate) fn receive<S>(&self, wrap: fn(RawSample) -> S) -> Result<Option<S>, ReceiveError> {
        self.receive_tagged(move |raw, _| wrap(raw))
    }

    /// [`receive`](Self::receive) for a port whose senders' rings are
    /// tagged: `wrap` gets the sample's tag too (unvalidated: the sender
    /// wrote it).
    #[inline(always)]
    pub(crate) fn receive_tagged<S>(
        &self,
        wrap: impl FnOnce(RawSample, Tag) -> S,
    ) -> Result<Option<S>, ReceiveError> {
        let mut st = self.lock();
        // ORDERING: Acquire; pairs with the Release bump of the generation
        // (DynSegment::bump): table changes before it are visible.
        if self.generation.load(Ordering::Acquire) != st.seen_generation {
            st.update(&self.reg);
            if let Some(e) = st.take_pending() {
                return Err(e);
            }
        }
        // The common case, one publisher: no round-robin, and only the
        // loads needed to find a sample or learn there is none (an empty
        // receive is the body of every busy-poll loop).
        if let [entry] = &mut st.conns[..] {
            let conn = &*entry.conn;
            if !entry.draining && conn.connected() {
                if !conn.holds_fewer_than(self.max_borrowed) {
                    return Err(ReceiveError::ExceedsMaxBorrowed(self.max_borrowed));
                }
                return match self.take(entry) {
                    Taken::Sample(sample, tag) => Ok(Some(wrap(sample, tag))),
                    Taken::Nothing => Ok(None),
                    Taken::Broken(e) => {
                        st.drop_broken(0);
                        Err(e)
                    }
                };
            }
        }
        self.receive_from_any(st, wrap)
    }

    /// [`receive`](Self::receive) with several publishers, or one that
    /// left or broke.
    #[cold]
    fn receive_from_any<S>(
        &self,
        mut st: RefMut<'_, SubState>,
        wrap: impl FnOnce(RawSample, Tag) -> S,
    ) -> Result<Option<S>, ReceiveError> {
        if st.borrowed() >= self.max_borrowed {
            return Err(ReceiveError::ExceedsMaxBorrowed(self.max_borrowed));
        }
        let n = st.conns.len();
        let mut i = if st.next < n { st.next } else { 0 };
        let mut result = Ok(None);
        let mut remove = None;
        for _ in 0..n {
            let entry = &mut st.conns[i];
            if !entry.conn.connected() {
                if entry.draining && entry.conn.held() == 0 {
                    remove = Some(i);
                }
            } else {
                match self.take(entry) {
                    Taken::Sample(sample, tag) => {
                        result = Ok(Some(wrap(sample, tag)));
                        st.next = i + 1;
                        break;
                    }
                    Taken::Nothing => {
                        if entry.draining && entry.conn.held() == 0 {
                            remove = Some(i);
                        }
                    }
                    Taken::Broken(e) => {
                        result = Err(e);
                        remove = Some(i);
                        break;
                    }
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        if let Some(i) = remove {
            if result.is_err() {
                st.drop_broken(i);
            } else {
                st.conns.swap_remove(i);
            }
        }
        // Where a lost mapping (a file truncated under this process) is
        // noticed: a lost connection reads as not connected (its segment's
        // mappings all read zeros, see `os::sigbus`), which leads here.
        match result {
            Ok(None) if crate::os::sigbus::lost_count() != self.seen_lost.get() => {
                self.lost(&mut st)
            }
            r => r,
        }
    }

    /// Nothing to take, and a mapping of this process was lost to a
    /// truncated file since the last look: the error, if it was one of
    /// ours.
    #[cold]
    #[inline(never)]
    fn lost<S>(&self, st: &mut SubState) -> Result<Option<S>, ReceiveError> {
        self.seen_lost.set(crate::os::sigbus::lost_count());
        match st.take_lost(&self.reg) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Takes the next sample of one connection, if any, prefetching the
    /// chunk its publisher announced with the load of the slot, so that
    /// both travel at once when the publisher has written them (see
    /// core::ring); notes in `entry` what to prefetch at the next take.
    #[inline(always)]
    fn take(&self, entry: &mut ConnEntry) -> Taken {
        if entry.conn.geo.inline {
            return self.take_inline(entry);
        }
        let conn = &entry.conn;
        prefetch_read(entry.ahead[0] as *const u8);
        prefetch_read(entry.ahead[1] as *const u8);
        prefetch_write(entry.ahead[2] as *const u8);
        match conn.sub.pop() {
            Ok(Pop::Item {
                index,
                ret,
                pos,
                len,
                next,
                tag,
            }) => {
                match self.accept(conn, index, ret, pos.wrapping_add(1), len) {
                    Ok(sample) => {
                        entry.ahead = conn.ahead(index, ret, len, next);
                        Taken::Sample(sample, tag)
                    }
                    Err(e) => Taken::Broken(e),
                }
            }
            Ok(Pop::Empty) => Taken::Nothing,
            Err(Corrupted) => Taken::Broken(ReceiveError::CorruptedPublisher {
                publisher: conn.publisher,
                what: GARBAGE_IN_QUEUE,
            }),
        }
    }

    /// [`take`](Self::take) from an inline connection: the payload comes in
    /// the slot, so there is no chunk to prefetch (its lines are the
    /// publisher's alone: fetching them would only make its next write wait
    /// for them to come back), only the return word to write. Its error
    /// arms repeat take()'s on purpose: a helper shared by both changed the
    /// compiler's inlining of the whole receive, 28 instructions more per
    /// message in `scripts/hotpath`.
    #[inline(always)]
    fn take_inline(&self, entry: &mut ConnEntry) -> Taken {
        let conn = &entry.conn;
        prefetch_write(entry.ahead[2] as *const u8);
        match conn.sub.pop_with(&conn.cells) {
            Ok(Pop::Item {
                index,
                ret,
                pos,
                len,
                tag,
                ..
            }) => match self.accept_inline(conn, index, ret, pos.wrapping_add(1), len) {
                Ok(sample) => {
                    entry.ahead[2] = conn.returns.word_addr(ret);
                    Taken::Sample(sample, tag)
                }
                Err(e) => Taken::Broken(e),
            },
            Ok(Pop::Empty) => Taken::Nothing,
            Err(Corrupted) => Taken::Broken(ReceiveError::CorruptedPublisher {
                publisher: conn.publisher,
                what: GARBAGE_IN_QUEUE,
            }),
        }
    }

    /// Validates a delivery's chunk index and length (both from the slot);
    /// on a bad length gives the chunk back, so the publisher does not
    /// lose it.
    #[inline(always)]
    fn check(conn: &ConnHandle, idx: u32, ret: u32, stamp: u64, len: u64) -> Result<(), ReceiveError> {
        if idx >= conn.chunk_count {
            return Err(bad(conn, "chunk index out of range"));
        }
        if len > conn.max_len || (!conn.slice && len != 1) {
            conn.returns.release(ret, stamp);
            return Err(bad(conn, "payload length out of range"));
        }
        Ok(())
    }

    /// Counts a sample taken, for the connection and for inspectors.
    #[inline(always)]
    fn count(&self, conn: &ConnHandle) {
        conn.count.received_one();
        // Relaxed (both): only this thread writes the total (a counter for
        // inspectors, on a line of this subscriber's own).
        let total = self.reg.received_total;
        total.store(total.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// [`accept`](Self::accept) for an inline connection: the payload came
    /// in the slot's words, which the pop copied (before it gave the slot
    /// back) into the cell of the delivery's return slot, where the sample
    /// reads it until it drops. The chunk is not read at all: its lines
    /// stay with the publisher.
    #[inline(always)]
    fn accept_inline(
        &self,
        conn: &ConnHandle,
        idx: u32,
        ret: u32,
        stamp: u64,
        len: u64,
    ) -> Result<RawSample, ReceiveError> {
        if len == LOST_PAYLOAD {
            conn.returns.release(ret, stamp);
            return Err(truncated(conn.publisher));
        }
        Self::check(conn, idx, ret, stamp, len)?;
        // The geometry let the rings be inline only if the longest payload
        // fits the words, and `len` is at most that long.
        let Some(payload) = conn.inline_payload(ret) else {
            return Err(bad(conn, "return slot out of range"));
        };
        self.count(conn);
        Ok(RawSample {
            conn: conn.0,
            payload,
            ret,
            stamp,
            len: len as usize,
        })
    }

    #[inline(always)]
    fn accept(
        &self,
        conn: &ConnHandle,
        idx: u32,
        ret: u32,
        stamp: u64,
        len: u64,
    ) -> Result<RawSample, ReceiveError> {
        // The length came with the descriptor (same cache line), so the
        // payload's lines can be fetched without reading the chunk first.
        Self::check(conn, idx, ret, stamp, len)?;
        let payload = conn.payload_addr(idx);
        // A payload the file no longer holds (truncated under the mapping)
        // must not reach the application as a sample of zeros. Truncation
        // cuts a file's tail, so the payload is whole if its last byte is
        // there: reading it (a line the previous take prefetched; the
        // first byte of an empty payload, a chunk has 64 at least) faults
        // if not, the SIGBUS handler maps zeros and marks the mapping
        // lost, and its flag tells.
        // SAFETY: in the pool mapping, which `conn` keeps alive: the chunk
        // index and the length were checked against its geometry.
        let lost = unsafe {
            crate::os::sigbus::touch_then_lost(
                (payload + (len * conn.elem_size).saturating_sub(1) as usize) as *const u8,
                conn.pool_lost,
            )
        };
        if lost {
            return Err(truncated(conn.publisher));
        }
        self.count(conn);
        let payload = conn.payload_addr(idx);
        // A payload the file no longer holds (truncated under the mapping)
        // must not reach the application as a sample of zeros. Truncation
        // cuts a file's tail, so the payload is whole if its last byte is
        // there: reading it (a line the previous take prefetched) faults
        // if not, the SIGBUS handler maps zeros and counts the loss, and
        // its count, one load of a line nobody writes, tells (see
        // `receive_tagged`; once any mapping of the process was lost, the
        // connection's own say, in `lost_sample`).
        let bytes = len * conn.elem_size;
        if bytes > 0 {
            // SAFETY: in the pool mapping, which `conn` keeps alive: the
            // chunk index and the length were checked against the geometry
            // it was made from. A volatile read of a byte, which any value
            // may have.
            unsafe { std::ptr::read_volatile((payload + bytes as usize - 1) as *const u8) };
        }
        Ok(RawSample {
            conn: conn.0,
            payload: payload as *const u8,
            ret,
            stamp,
            len: len as usize,
        })
    }
}

/// The error of a publisher that wrote `what` into a slot.
#[cold]
fn bad(conn: &ConnHandle, what: &'static str) -> ReceiveError {
    ReceiveError::CorruptedPublisher {
        publisher: conn.publisher,
        what,
    }
}

/// The error of a sample whose payload the file no longer holds (cold: a
/// hint to keep its branch out of the hot path's way).
#[cold]
#[inline(never)]
fn truncated(publisher: u64) -> ReceiveError {
    ReceiveError::CorruptedPublisher {
        publisher,
        what: TRUNCATED,
    }
}
