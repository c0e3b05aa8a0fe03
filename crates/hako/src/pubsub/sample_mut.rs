//! Loaned samples of a publisher, in the states of their payload:
//! [`SampleMutUninit`] (not yet written) and [`SampleMut`] (written, ready
//! to send).

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};

use crate::port::payload::{Payload, ShmSafe};
use crate::port::sender::loan::RawLoan;

/// A loaned sample whose payload is not yet initialised.
///
/// Write it with [`write_payload`](Self::write_payload) (or, for slices,
/// [`write_from_fn`](SampleMutUninit::write_from_fn) /
/// [`write_from_slice`](SampleMutUninit::write_from_slice)), or initialise it
/// through [`payload_mut`](Self::payload_mut) and call
/// [`assume_init`](Self::assume_init).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-sample-mut-uninit", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Uninit".try_into()?)
///     .publish_subscribe::<[u64; 2]>()
///     .open_or_create()?;
/// let publisher = service.publisher_builder().create()?;
/// // Written whole...
/// publisher.loan_uninit()?.write_payload([1, 2]).send();
/// // ...or through `MaybeUninit`, then declared written.
/// let mut sample = publisher.loan_uninit()?;
/// sample.payload_mut().write([3, 4]);
/// // SAFETY: every byte of the payload was written just above.
/// let sample = unsafe { sample.assume_init() };
/// sample.send();
/// # Ok(()) }
/// ```
pub struct SampleMutUninit<T: Payload + ?Sized> {
    pub(super) raw: RawLoan,
    pub(super) _t: PhantomData<fn() -> Box<T>>,
}

impl<T: ShmSafe> SampleMutUninit<T> {
    /// Writes the payload in place.
    pub fn write_payload(self, value: T) -> SampleMut<T> {
        // SAFETY: the chunk is ours (loaned), aligned for T and large enough
        // (the segment geometry was computed from T's layout).
        unsafe { self.raw.payload().cast::<T>().write(value) };
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// The uninitialised payload, to be written field by field.
    pub fn payload_mut(&mut self) -> &mut MaybeUninit<T> {
        // SAFETY: as in write_payload; MaybeUninit needs no initialisation,
        // and `&mut self` makes the reference unique.
        unsafe { &mut *self.raw.payload().cast::<MaybeUninit<T>>() }
    }

    /// Declares the payload initialised.
    ///
    /// # Safety
    /// Every byte of the payload must have been written through
    /// [`payload_mut`](Self::payload_mut).
    pub unsafe fn assume_init(self) -> SampleMut<T> {
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }
}

impl<T: ShmSafe> SampleMutUninit<[T]> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Whether the slice has no elements.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Initialises element `i` with `f(i)`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-write-from-fn", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Ramp".try_into()?)
    ///     .publish_subscribe::<[u32]>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().max_slice_len(16).create()?;
    /// let sample = publisher.loan_slice_uninit(16)?.write_from_fn(|i| i as u32 * 10);
    /// assert_eq!(sample[15], 150);
    /// sample.send();
    /// # Ok(()) }
    /// ```
    pub fn write_from_fn(self, mut f: impl FnMut(usize) -> T) -> SampleMut<[T]> {
        let base = self.raw.payload().cast::<T>();
        for i in 0..self.raw.len {
            // SAFETY: i < len <= max_len; the chunk holds max_len elements.
            unsafe { base.add(i).write(f(i)) };
        }
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// Copies `data` (which must have exactly `len()` elements) into the slice.
    ///
    /// # Panics
    /// If `data.len() != self.len()`.
    pub fn write_from_slice(self, data: &[T]) -> SampleMut<[T]>
    where
        T: Copy,
    {
        assert_eq!(
            data.len(),
            self.raw.len,
            "write_from_slice: length mismatch"
        );
        // SAFETY: the chunk holds at least len elements of T and does not
        // overlap `data` (which is a Rust reference, not our loaned chunk).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.raw.payload().cast::<T>(),
                data.len(),
            );
        }
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// The first element, for code that writes through raw pointers
    /// (language bindings): `len` elements of the service's element size
    /// lie there (see [`PubSubBuilder::payload_type`](crate::PubSubBuilder::payload_type)).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.raw.payload().cast()
    }

    /// The uninitialised elements.
    pub fn payload_mut(&mut self) -> &mut [MaybeUninit<T>] {
        // SAFETY: in range (len <= max_len), unique through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.raw.payload().cast(), self.raw.len) }
    }

    /// Declares every element initialised.
    ///
    /// A chunk is never handed out uninitialised at the byte level: it holds
    /// zeros when the pool is new and earlier payloads of the same element
    /// type afterwards. So when `T` has no padding bytes (integers, arrays of
    /// them), writing only some elements and calling this is sound; the
    /// others keep old contents. A sender that touches only the first and
    /// last byte of a large `[u8]` uses exactly that.
    ///
    /// # Safety
    /// Every element must have been written through
    /// [`payload_mut`](Self::payload_mut), or `T` must have no padding bytes
    /// (see above).
    pub unsafe fn assume_init(self) -> SampleMut<[T]> {
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }
}

/// A loaned, initialised sample: write to it through `DerefMut`, then
/// [`send`](Self::send) it. Dropping it unsent returns the chunk.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-sample-mut", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/SampleMut".try_into()?)
///     .publish_subscribe::<[u8; 8]>()
///     .open_or_create()?;
/// let subscriber = service.subscriber_builder().create()?;
/// let publisher = service.publisher_builder().create()?;
/// let mut sample = publisher.loan()?; // [0; 8]
/// sample[0] = 0xff; // written in place, through DerefMut
/// let delivered = sample.send();
/// assert_eq!(delivered, 1);
/// assert_eq!(subscriber.receive()?.map(|s| s[0]), Some(0xff));
/// # Ok(()) }
/// ```
pub struct SampleMut<T: Payload + ?Sized> {
    pub(super) raw: RawLoan,
    pub(super) _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> SampleMut<T> {
    /// Sends the sample; returns how many subscribers received it.
    #[inline(always)]
    pub fn send(self) -> usize {
        self.raw.send()
    }
}

impl<T: Payload + ?Sized> Deref for SampleMut<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the payload was initialised (type state) and the chunk is
        // ours until sent.
        unsafe { &*T::make_ptr(self.raw.payload(), self.raw.len) }
    }
}

impl<T: Payload + ?Sized> DerefMut for SampleMut<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; &mut self makes the reference unique.
        unsafe { &mut *T::make_ptr(self.raw.payload(), self.raw.len) }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug> std::fmt::Debug for SampleMut<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SampleMut").field(&&**self).finish()
    }
}
