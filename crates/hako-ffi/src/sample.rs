//! Samples, by value: a loan or a received sample is a small struct the
//! caller owns (on its stack, in its own structs), with the payload's
//! address and size as plain fields and hako's state in `_private`. A
//! message then costs the C API no allocation and no accessor call.
//!
//! The struct may be moved (copied bitwise) but only one copy may be used
//! afterwards: sending or dropping it marks that copy consumed (`data` NULL,
//! `_private` cleared), so a second send or drop of it is a reported error;
//! a stale copy is the caller's bug, as a double `free` is.

use std::ffi::c_void;
use std::mem::{align_of, size_of};
use std::time::Duration;

use hako::{Sample, SampleMutUninit};

use crate::error::{guard, hako_status, Failure, HAKO_ERROR_MISUSE};
use crate::handle::{get_mut, put};
use crate::node::HAKO_FOREVER;
use crate::pubsub::{hako_publisher, hako_subscriber};

/// Words of `_private` that hold the Rust value.
pub(crate) const VALUE_WORDS: usize = 6;
/// The word that marks a live sample, and its mark.
pub(crate) const TAG: usize = 7;
pub(crate) const LIVE: u64 = u64::from_le_bytes(*b"hakolive");
/// The word that names a loan's port.
pub(crate) const OWNER: usize = 6;

// The values fit their storage, aligned.
const _: () = {
    assert!(size_of::<SampleMutUninit<[u8]>>() <= VALUE_WORDS * 8);
    assert!(align_of::<SampleMutUninit<[u8]>>() <= 8);
    assert!(size_of::<Sample<[u8]>>() <= VALUE_WORDS * 8);
    assert!(align_of::<Sample<[u8]>>() <= 8);
};

/// A loaned sample, to fill and send: write `size` bytes at `data`, then
/// `hako_publisher_send` it through the publisher that loaned it (or
/// `hako_sample_mut_drop` it). Owned by the caller; may move between
/// threads and outlive its publisher. Do not use a copy of one after it
/// was sent or dropped.
#[repr(C)]
#[derive(Debug)]
pub struct hako_sample_mut {
    /// Where to write the payload, aligned for the payload type (NULL once
    /// sent or dropped). It holds what an earlier sample of the pool left
    /// there (zeros at first): write all of it that readers read.
    pub data: *mut c_void,
    /// Bytes at `data`: elements × element size.
    pub size: usize,
    /// Elements (1 unless the service carries slices).
    pub len: usize,
    /// hako's state of the loan; do not touch.
    pub _private: [u64; 8],
}

/// A received sample, read-only: `size` bytes at `data`, valid until
/// `hako_sample_drop`. Owned by the caller; may move between threads and
/// outlive its subscriber. Do not use a copy of one after it was dropped.
#[repr(C)]
#[derive(Debug)]
pub struct hako_sample {
    /// The payload, aligned for the payload type (NULL when none came, or
    /// once dropped).
    pub data: *const c_void,
    /// Bytes at `data`.
    pub size: usize,
    /// Elements.
    pub len: usize,
    /// The id of the publisher that sent it.
    pub publisher_id: u64,
    /// hako's state of the sample; do not touch.
    pub _private: [u64; 8],
}

/// Moves `value` into `words` and marks them live.
pub(crate) fn store<T>(words: &mut [u64; 8], value: T) {
    store_at(words, VALUE_WORDS, TAG, value);
}

/// Moves `value` into the first `value_words` of `words` and marks them
/// live in word `tag`.
pub(crate) fn store_at<T>(words: &mut [u64], value_words: usize, tag: usize, value: T) {
    assert!(size_of::<T>() <= value_words * 8 && align_of::<T>() <= 8);
    assert!(value_words <= tag && tag < words.len());
    // SAFETY: T fits the first value_words words (asserted above), which
    // are 8-aligned (u64s) and at least as aligned as T; whatever was
    // there is overwritten without being read (the caller checked it was
    // not live).
    unsafe { words.as_mut_ptr().cast::<T>().write(value) };
    words[tag] = LIVE;
}

/// Moves the live value out of `words` and marks them consumed; `None` if
/// they are not live.
///
/// # Safety
/// Live words hold a `T` put there by [`store`] (each struct holds one
/// type: loans `SampleMutUninit`, received samples `Sample`).
pub(crate) unsafe fn load<T>(words: &mut [u64; 8]) -> Option<T> {
    // SAFETY: the caller's promise, passed on.
    unsafe { load_at(words, VALUE_WORDS, TAG) }
}

/// [`load`] of words stored by [`store_at`] with the same layout.
///
/// # Safety
/// Live words hold a `T` put there by `store_at(words, value_words, tag, _)`.
pub(crate) unsafe fn load_at<T>(words: &mut [u64], value_words: usize, tag: usize) -> Option<T> {
    if words.get(tag) != Some(&LIVE) || value_words > tag {
        return None;
    }
    words[tag] = 0;
    // SAFETY: live: a T stored by `store_at`, read out once (the mark is
    // cleared first).
    let v = unsafe { words.as_ptr().cast::<T>().read() };
    words[..value_words].fill(0);
    Some(v)
}

fn busy(what: &str) -> Failure {
    Failure::new(
        HAKO_ERROR_MISUSE,
        format!("{what} holds a live sample: send or drop it first (it would leak)"),
    )
}

/// Loans a sample of `len` elements (1 for a service that is not a slice)
/// in shared memory, into `*out`, which must not hold a live sample.
///
/// # Safety
/// `publisher` is a publisher handle; `out` is writable (its contents may
/// be uninitialised).
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_loan(
    publisher: *mut hako_publisher,
    len: usize,
    out: *mut hako_sample_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get_mut(publisher, "the publisher") }?;
        // SAFETY: writable (the caller's promise). The struct is plain
        // integers and pointers, and memory a C caller hands over holds
        // some bits even where C calls its value indeterminate.
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[TAG] == LIVE {
            return Err(busy("the out sample"));
        }
        let mut loan = p.publisher.loan_slice_uninit(len)?;
        out.data = loan.as_mut_ptr().cast();
        out.size = len * p.elem_size;
        out.len = len;
        out._private[OWNER] = p.publisher.id();
        store(&mut out._private, loan);
        Ok(())
    })
}

/// Sends a loaned sample through the publisher that loaned it, and marks
/// it consumed. `reached` (may be NULL) gets the number of subscribers it
/// reached. A sample of another publisher is refused (`HAKO_ERROR_MISUSE`)
/// and stays the caller's; a consumed one is `HAKO_ERROR_NULL_ARGUMENT`.
///
/// # Safety
/// `publisher` is a publisher handle; `sample` points to a sample filled
/// by `hako_publisher_loan` (live or consumed); `reached` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_send(
    publisher: *mut hako_publisher,
    sample: *mut hako_sample_mut,
    reached: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get_mut(publisher, "the publisher") }?;
        // SAFETY: as above.
        let s = unsafe { get_mut(sample, "the sample") }?;
        if s._private[TAG] != LIVE {
            return Err(Failure::null("the sample"));
        }
        if s._private[OWNER] != p.publisher.id() {
            return Err(Failure::new(
                HAKO_ERROR_MISUSE,
                "the sample was loaned by another publisher; send it through that one",
            ));
        }
        // SAFETY: live loan words hold a SampleMutUninit (hako_publisher_loan).
        let loan = unsafe { load::<SampleMutUninit<[u8]>>(&mut s._private) }
            .ok_or_else(|| Failure::null("the sample"))?;
        s.data = std::ptr::null_mut();
        // SAFETY: a chunk is never uninitialised at the byte level (zeros
        // or an earlier payload of this service), and the bytes are plain
        // data: what the caller did not write is old contents, not
        // undefined memory (see SampleMutUninit::assume_init).
        let n = unsafe { loan.assume_init() }.send();
        // SAFETY: NULL or writable.
        unsafe { put(reached, n) };
        Ok(())
    })
}

/// Gives a loaned sample back unsent and marks it consumed.
///
/// # Safety
/// `sample` is NULL or points to a sample filled by `hako_publisher_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_sample_mut_drop(sample: *mut hako_sample_mut) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get_mut(sample, "the sample") }?;
        // SAFETY: live loan words hold a SampleMutUninit.
        let loan = unsafe { load::<SampleMutUninit<[u8]>>(&mut s._private) }
            .ok_or_else(|| Failure::null("the sample"))?;
        s.data = std::ptr::null_mut();
        drop(loan);
        Ok(())
    })
}

/// Takes the next sample into `*out` (which must not hold a live one): at
/// once (`timeout_us` 0), waiting up to `timeout_us` microseconds, or until
/// one comes (`HAKO_FOREVER`). `out->data` is NULL if none came in time.
/// Publishers that leave or restart meanwhile do not end the wait, unless
/// the subscriber was made with `end_when_publishers_gone`: then
/// `HAKO_ERROR_PEER_GONE` when a wait's publishers all left and nothing is
/// queued. `HAKO_ERROR_TERMINATED` on SIGINT/SIGTERM (unless the node was
/// made with `no_signal_handling`).
///
/// # Safety
/// `subscriber` is a subscriber handle; `out` is writable (its contents
/// may be uninitialised).
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_receive(
    subscriber: *mut hako_subscriber,
    timeout_us: u64,
    out: *mut hako_sample,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get_mut(subscriber, "the subscriber") }?;
        // SAFETY: as in hako_publisher_loan.
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[TAG] == LIVE {
            return Err(busy("the out sample"));
        }
        let got = match timeout_us {
            0 => s.sub.receive()?,
            HAKO_FOREVER => Some(s.sub.blocking_receive()?),
            us => s.sub.receive_timeout(Duration::from_micros(us))?,
        };
        match got {
            Some(sample) => {
                out.data = sample.as_ptr().cast();
                out.len = sample.len();
                out.size = out.len * s.elem_size;
                out.publisher_id = sample.publisher_id();
                store(&mut out._private, sample);
            }
            None => {
                out.data = std::ptr::null();
                out.size = 0;
                out.len = 0;
                out.publisher_id = 0;
                out._private[TAG] = 0;
            }
        }
        Ok(())
    })
}

/// Gives a received sample back to its publisher and marks it consumed.
///
/// # Safety
/// `sample` is NULL or points to a sample filled by
/// `hako_subscriber_receive`.
#[no_mangle]
pub unsafe extern "C" fn hako_sample_drop(sample: *mut hako_sample) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get_mut(sample, "the sample") }?;
        // SAFETY: live sample words hold a Sample (hako_subscriber_receive).
        let sample = unsafe { load::<Sample<[u8]>>(&mut s._private) }
            .ok_or_else(|| Failure::null("the sample"))?;
        s.data = std::ptr::null();
        drop(sample);
        Ok(())
    })
}
