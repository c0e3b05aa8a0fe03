//! Loans: a chunk of a sender's pool, owned by the user until it is sent
//! or dropped. Typed samples of every pattern wrap a [`RawLoan`].

use std::sync::Arc;

use super::inner::SenderInner;
use super::settings::{LoanError, Withdrawal};
use super::state::{SenderState, Sent};
use crate::core::ring::Tag;

/// A loaned chunk; returned to the pool if dropped unsent.
///
/// It points at the publisher's state without holding a reference count
/// (which would cost two atomic read-modify-writes per message): the state's
/// `loaned` counter, kept under the publisher's lock anyway, keeps it alive
/// instead. A `Publisher` dropped while loans are out leaves its reference
/// behind (`orphaned`), and the last loan to go releases it.
pub(crate) struct RawLoan {
    publisher: std::ptr::NonNull<SenderInner>,
    /// The chunk's payload, computed once.
    payload: *mut u8,
    idx: u32,
    /// Elements of the payload.
    pub(crate) len: usize,
}

// SAFETY: the pointer is used like an `Arc<SenderInner>` (which is Send
// and Sync: its mutable state sits behind its lock), and the loan keeps what
// it points to alive as described above, on whatever thread it is; the
// payload pointer points into that publisher's mapping, which lives as long,
// and the loan is its only user until it is sent.
unsafe impl Send for RawLoan {}
// SAFETY: as for Send; `&RawLoan` only reads its fields (the pointers, the
// index and the length), and writes through the payload pointer need `&mut`.
unsafe impl Sync for RawLoan {}

impl RawLoan {
    /// Loans a chunk of `inner`'s pool for a payload of `len` elements.
    #[inline(always)]
    pub(crate) fn new(inner: &Arc<SenderInner>, len: usize) -> Result<Self, LoanError> {
        Self::loan(inner, len, |_| Ok(()))
    }

    /// [`new`](Self::new), refused while `limit` chunks (fewer than the
    /// sender's own limit) are loaned already: what a user may hold, when
    /// the sender keeps chunks beyond it for itself (a server's ends of
    /// streams).
    #[inline]
    pub(crate) fn new_within(
        inner: &Arc<SenderInner>,
        len: usize,
        limit: usize,
    ) -> Result<Self, LoanError> {
        Self::loan(inner, len, |st| {
            if st.loaned >= limit {
                Err(LoanError::ExceedsMaxLoans(limit))
            } else {
                Ok(())
            }
        })
    }

    /// Loans a chunk for `len` elements once `check` passed on the state,
    /// under one lock.
    #[inline(always)]
    fn loan(
        inner: &Arc<SenderInner>,
        len: usize,
        check: impl FnOnce(&SenderState) -> Result<(), LoanError>,
    ) -> Result<Self, LoanError> {
        let p = &inner.params;
        if len > p.max_len {
            return Err(LoanError::SliceTooLong {
                requested: len,
                max: p.max_len,
            });
        }
        let mut st = inner.lock();
        check(&st)?;
        let idx = st.alloc(p)?;
        drop(st);
        Ok(Self {
            publisher: std::ptr::NonNull::from(&**inner),
            payload: p.payload_ptr(idx),
            idx,
            len,
        })
    }

    #[inline]
    fn inner(&self) -> &SenderInner {
        // SAFETY: alive while this loan is (see the type's documentation).
        unsafe { self.publisher.as_ref() }
    }

    /// The chunk's first payload byte.
    #[inline]
    pub(crate) fn payload(&self) -> *mut u8 {
        self.payload
    }

    /// Sends the chunk; returns how many receivers got it.
    #[inline(always)]
    pub(crate) fn send(self) -> usize {
        let me = std::mem::ManuallyDrop::new(self);
        let p = me.inner();
        let mut st = p.lock();
        let n = st.send(&p.params, me.idx, me.len as u64);
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: the dropped face (a Publisher) left this reference for us.
            unsafe { release_orphaned(me.publisher) };
        }
        n
    }
}

impl RawLoan {
    /// Sends the chunk, with `tag`, to the receiver `port` on connection `j` alone
    /// (the chunk goes back to the pool if it did not get it). A wait for
    /// room ends early once `until` says the receiver withdrew the message.
    #[inline(always)]
    pub(crate) fn send_to(self, j: usize, port: u64, tag: Tag, until: Option<Withdrawal>) -> Queued {
        let me = std::mem::ManuallyDrop::new(self);
        let p = me.inner();
        let mut st = p.lock();
        let got = if st.send_to(&p.params, (j, port), me.idx, me.len as u64, tag, until) {
            Queued::Yes
        } else if until.is_some_and(|w| st.withdrawn((j, port), w)) {
            Queued::Withdrawn
        } else {
            Queued::No
        };
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: as in send().
            unsafe { release_orphaned(me.publisher) };
        }
        got
    }
}

/// What [`RawLoan::send_to`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// The receiver got it.
    Yes,
    /// The receiver withdrew it while its queue was full: nobody misses it.
    Withdrawn,
    /// It did not: the receiver left or broke, or under a backpressure
    /// strategy that gives up its queue stayed full.
    No,
}

impl RawLoan {
    /// Sends the chunk to the next served receiver in turn, from `cursor`
    /// (see [`SenderState::send_next`]); `None` if none is served (the
    /// chunk goes back to the pool).
    #[inline(always)]
    pub(crate) fn send_next(self, cursor: usize, tag: Tag) -> Option<Sent> {
        let me = std::mem::ManuallyDrop::new(self);
        let p = me.inner();
        let mut st = p.lock();
        let sent = st.send_next(&p.params, cursor, me.idx, me.len as u64, tag);
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: as in send().
            unsafe { release_orphaned(me.publisher) };
        }
        sent
    }
}

impl Drop for RawLoan {
    fn drop(&mut self) {
        let mut st = self.inner().lock();
        st.give_back(self.idx);
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: as in send().
            unsafe { release_orphaned(self.publisher) };
        }
    }
}

/// Drops the reference a typed face (a `Publisher`) left behind when it was dropped while
/// samples were loaned.
///
/// # Safety
/// Only by the last loan of an orphaned publisher, once, with no reference
/// to the state left in use.
unsafe fn release_orphaned(p: std::ptr::NonNull<SenderInner>) {
    // SAFETY: the pointer is the one Arc::into_raw returned in
    // SenderInner::face_dropped (the same allocation as every loan's); the caller
    // guarantees this runs once.
    drop(unsafe { Arc::from_raw(p.as_ptr()) });
}
