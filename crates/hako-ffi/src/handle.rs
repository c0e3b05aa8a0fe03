//! Moving handles and strings across the boundary.

use std::ffi::{c_char, CStr};

use crate::error::Failure;

/// The string at `p`, which must be UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid
/// during the call.
pub(crate) unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-NULL, NUL-terminated and valid during the call (the
    // caller's promise).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not UTF-8")))
}

/// The string at `p`, or `None` for NULL.
///
/// # Safety
/// As [`text`].
pub(crate) unsafe fn opt_text<'a>(
    p: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: the caller's promise, passed on.
        unsafe { text(p, what) }.map(Some)
    }
}

/// The object behind a borrowed handle.
///
/// # Safety
/// `p` is NULL or a live handle of type `T` made by this library, not used
/// mutably elsewhere during the call.
pub(crate) unsafe fn get<'a, T>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's promise: NULL or live.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(what))
}

/// The object behind a borrowed handle, mutably.
///
/// # Safety
/// `p` is NULL or a live handle of type `T` made by this library, not used
/// elsewhere during the call.
pub(crate) unsafe fn get_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: the caller's promise: NULL or live and unshared.
    unsafe { p.as_mut() }.ok_or_else(|| Failure::null(what))
}

/// Hands `value` to the caller through `out` as a new owning handle.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn give<T>(out: *mut *mut T, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null("the out pointer"));
    }
    // SAFETY: non-NULL and writable (the caller's promise).
    unsafe { out.write(Box::into_raw(Box::new(value))) };
    Ok(())
}

/// Writes `value` through `out` when `out` is not NULL (an optional
/// result).
///
/// # Safety
/// `out` is NULL or valid for a write of a `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL and writable (the caller's promise).
        unsafe { out.write(value) };
    }
}

/// Takes the owning handle at `*slot` back, setting `*slot` to NULL, so a
/// second drop or send finds NULL and fails cleanly.
///
/// # Safety
/// `slot` is NULL or valid for a read and a write of a pointer, and
/// `*slot` is NULL or an owning handle of type `T` made by this library.
pub(crate) unsafe fn take<T>(slot: *mut *mut T, what: &str) -> Result<Box<T>, Failure> {
    if slot.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: readable and writable (the caller's promise).
    let p = unsafe { slot.replace(std::ptr::null_mut()) };
    if p.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: an owning handle made by Box::into_raw in `give`, taken once
    // (the slot is NULL now).
    Ok(unsafe { Box::from_raw(p) })
}

/// [`take`] of a port that a waitset may have attached: refused
/// (`HAKO_ERROR_MISUSE`, the handle stays) while `attached` of it is not 0.
///
/// # Safety
/// As [`take`].
pub(crate) unsafe fn take_port<T>(
    slot: *mut *mut T,
    what: &str,
    attached: impl Fn(&T) -> usize,
) -> Result<Box<T>, Failure> {
    // SAFETY: NULL or a readable slot holding NULL or a live handle (the
    // caller's promise).
    if let Some(p) = unsafe { slot.as_ref().and_then(|p| p.as_ref()) } {
        let n = attached(p);
        if n > 0 {
            return Err(Failure::new(
                crate::error::hako_status::HAKO_ERROR_MISUSE,
                format!("{what} is attached to {n} waitset(s) or has {n} live requests: drop those first"),
            ));
        }
    }
    // SAFETY: the caller's promise, passed on.
    unsafe { take(slot, what) }
}
