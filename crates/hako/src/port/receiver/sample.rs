//! A received sample, untyped: the chunk a receiver took from a sender's
//! pool, held until dropped. Typed samples of every pattern wrap a
//! [`RawSample`].

use std::ptr::NonNull;

use super::conn::{free_conn, SubConn};

/// A received chunk. Dropping it hands the chunk back to its sender.
pub(crate) struct RawSample {
    /// Kept alive by the connection's drop counter (see `ConnHandle`).
    pub(super) conn: NonNull<SubConn>,
    /// The payload, in the connection's pool mapping (computed once, at
    /// receive, from the validated chunk index).
    pub(super) payload: *const u8,
    /// The return slot of this delivery, and its return stamp.
    pub(super) ret: u32,
    pub(super) stamp: u64,
    pub(super) len: usize,
}

// SAFETY: the connection is Send and Sync and stays alive while the sample
// does, on whatever thread (see ConnHandle); the payload is plain data that
// nobody writes while the sample holds it.
unsafe impl Send for RawSample {}
// SAFETY: as for Send; `&RawSample` only reads.
unsafe impl Sync for RawSample {}

impl RawSample {
    #[inline]
    fn conn(&self) -> &SubConn {
        // SAFETY: alive while the sample is (see ConnHandle).
        unsafe { self.conn.as_ref() }
    }

    /// The id of the sender that sent it.
    pub(crate) fn sender_id(&self) -> u64 {
        self.conn().publisher
    }

    /// The sender's entry in its table.
    pub(crate) fn sender_slot(&self) -> usize {
        self.conn().slot
    }

    /// The payload's first byte. Its chunk index and length were validated
    /// at receive: `len` elements of the payload type lie inside the pool
    /// mapping, which stays mapped while the sample lives, aligned for the
    /// type (chunk size and payload offset are multiples of its alignment),
    /// and the sender does not write the chunk while the sample holds it.
    #[inline]
    pub(crate) fn payload(&self) -> *const u8 {
        self.payload
    }

    /// Elements of the payload.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the payload, read as `elems` elements of `T`, is a value of
    /// `T`: always for the types every bit pattern of which is one (no
    /// check at all), else [`ShmSafe::is_valid`](crate::ShmSafe::is_valid).
    ///
    /// # Safety
    /// `elems` elements of `T` fit the payload (its sender's length was
    /// validated against the chunk).
    pub(crate) unsafe fn holds_valid<T: crate::port::payload::Payload + ?Sized>(
        &self,
        elems: usize,
    ) -> bool {
        // SAFETY: the caller's promise; the chunk is mapped while `self` lives.
        !T::CHECKED || unsafe { T::is_valid(T::make_ptr(self.payload().cast_mut(), elems)) }
    }
}

impl Drop for RawSample {
    #[inline]
    fn drop(&mut self) {
        let conn = self.conn();
        conn.returns.release(self.ret, self.stamp);
        if conn.count.sample_dropped() {
            // SAFETY: the receiver let go and we were the last sample.
            unsafe { free_conn(self.conn) };
        }
    }
}
