//! Loaned requests and responses, in the states of their payload:
//! [`MessageMutUninit`] (not yet written) and [`MessageMut`] (written,
//! ready to send). Where a message goes is its [`Destination`]: a client's
//! request goes to a server and comes back as a pending response, a
//! server's response goes to the client that asked.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};

use crate::port::payload::{Payload, ShmSafe};
use crate::port::sender::loan::RawLoan;

mod sealed {
    pub trait Sealed {}
}

/// Where a loaned message goes when it is sent; implemented by hako for
/// requests and responses only (sealed).
// The chunk type of `send` is crate-private: nobody outside can make one,
// so the method cannot be called from outside either; it is on the public
// trait only so that `MessageMut::send` can return `Self::Sent`.
#[allow(private_interfaces)]
pub trait Destination: sealed::Sealed {
    /// What sending returns.
    type Sent;
    /// Sends the chunk, with the tag that says which request it is or
    /// answers.
    #[doc(hidden)]
    fn send(self, raw: RawLoan) -> Self::Sent;
}

pub(crate) use sealed::Sealed;

/// A loaned request or response whose payload is not yet initialised.
///
/// Write it with [`write_payload`](Self::write_payload) (or, for slices,
/// [`write_from_fn`](MessageMutUninit::write_from_fn) /
/// [`write_from_slice`](MessageMutUninit::write_from_slice)), or through
/// [`payload_mut`](Self::payload_mut) and [`assume_init`](Self::assume_init).
/// Dropping it unsent gives the chunk back.
pub struct MessageMutUninit<T: Payload + ?Sized, D: Destination> {
    raw: RawLoan,
    /// Payload elements.
    elems: usize,
    dest: D,
    _t: PhantomData<fn() -> Box<T>>,
}

/// A loaned, initialised request or response: write to it through
/// `DerefMut`, then [`send`](Self::send) it. Dropping it unsent gives the
/// chunk back.
pub struct MessageMut<T: Payload + ?Sized, D: Destination> {
    raw: RawLoan,
    elems: usize,
    dest: D,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized, D: Destination> MessageMutUninit<T, D> {
    /// A message of `elems` elements in the loaned chunk `raw` (from its
    /// first byte, see `envelope.rs`).
    pub(crate) fn new(raw: RawLoan, elems: usize, dest: D) -> Self {
        Self {
            raw,
            elems,
            dest,
            _t: PhantomData,
        }
    }

    fn payload(&self) -> *mut u8 {
        self.raw.payload()
    }

    fn init(self) -> MessageMut<T, D> {
        MessageMut {
            raw: self.raw,
            elems: self.elems,
            dest: self.dest,
            _t: PhantomData,
        }
    }
}

impl<T: ShmSafe, D: Destination> MessageMutUninit<T, D> {
    /// Writes the payload in place.
    pub fn write_payload(self, value: T) -> MessageMut<T, D> {
        // SAFETY: the chunk is ours (loaned), its payload aligned for T and
        // large enough (the segment was laid out for it).
        unsafe { self.payload().cast::<T>().write(value) };
        self.init()
    }

    /// The uninitialised payload, to be written field by field.
    pub fn payload_mut(&mut self) -> &mut MaybeUninit<T> {
        // SAFETY: as in write_payload; `&mut self` makes it unique.
        unsafe { &mut *self.payload().cast::<MaybeUninit<T>>() }
    }

    /// Declares the payload initialised.
    ///
    /// # Safety
    /// Every byte of the payload must have been written through
    /// [`payload_mut`](Self::payload_mut).
    pub unsafe fn assume_init(self) -> MessageMut<T, D> {
        self.init()
    }
}

impl<T: ShmSafe, D: Destination> MessageMutUninit<[T], D> {
    /// The first element, for code that writes through raw pointers
    /// (language bindings): `len` elements of the service's element size
    /// lie there (see `ReqResBuilder::payload_types`).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.payload().cast()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.elems
    }

    /// Whether the slice has no elements.
    pub fn is_empty(&self) -> bool {
        self.elems == 0
    }

    /// Initialises element `i` with `f(i)`.
    pub fn write_from_fn(self, mut f: impl FnMut(usize) -> T) -> MessageMut<[T], D> {
        let base = self.payload().cast::<T>();
        for i in 0..self.elems {
            // SAFETY: i < elems; the chunk holds that many elements of T.
            unsafe { base.add(i).write(f(i)) };
        }
        self.init()
    }

    /// Copies `data` (exactly `len()` elements) into the slice.
    ///
    /// # Panics
    /// If `data.len() != self.len()`.
    pub fn write_from_slice(self, data: &[T]) -> MessageMut<[T], D>
    where
        T: Copy,
    {
        assert_eq!(data.len(), self.elems, "write_from_slice: length mismatch");
        // SAFETY: the chunk holds `elems` elements of T and does not overlap
        // `data` (a Rust reference, not our loaned chunk).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.payload().cast::<T>(), data.len());
        }
        self.init()
    }

    /// The uninitialised elements.
    pub fn payload_mut(&mut self) -> &mut [MaybeUninit<T>] {
        // SAFETY: in range (elems fit the chunk), unique through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.payload().cast(), self.elems) }
    }

    /// Declares every element initialised.
    ///
    /// # Safety
    /// Every element must have been written through
    /// [`payload_mut`](Self::payload_mut), or `T` must have no padding bytes
    /// (a chunk holds zeros or earlier payloads, never uninitialised bytes).
    pub unsafe fn assume_init(self) -> MessageMut<[T], D> {
        self.init()
    }
}

impl<T: Payload + ?Sized, D: Destination> MessageMut<T, D> {
    /// Sends the message: a request to a server (returning its pending
    /// response), a response to the client that asked.
    #[inline(always)]
    pub fn send(self) -> D::Sent {
        self.dest.send(self.raw)
    }

    /// Where it goes, and its chunk.
    pub(crate) fn into_parts(self) -> (D, RawLoan) {
        (self.dest, self.raw)
    }

    fn payload(&self) -> *mut u8 {
        self.raw.payload()
    }
}

impl<T: Payload + ?Sized, D: Destination> Deref for MessageMut<T, D> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the payload was initialised (type state), lies in our
        // loaned chunk and is aligned for T.
        unsafe { &*T::make_ptr(self.payload(), self.elems) }
    }
}

impl<T: Payload + ?Sized, D: Destination> DerefMut for MessageMut<T, D> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; &mut self makes the reference unique.
        unsafe { &mut *T::make_ptr(self.payload(), self.elems) }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug, D: Destination> std::fmt::Debug for MessageMut<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MessageMut").field(&&**self).finish()
    }
}
