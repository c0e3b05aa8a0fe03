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

/// Handles made and freed once per message (samples) come from a small
/// per-thread cache of allocations instead of the allocator: a message
/// then costs no `malloc` and no `free`. Each handle is still its own
/// allocation, so it may move to another thread and be freed there (it
/// joins that thread's cache).
pub(crate) trait Recycled: Sized + 'static {
    /// This type's cache on the current thread.
    fn with_cache<R>(f: impl FnOnce(&mut Vec<Box<MaybeUninit<Self>>>) -> R) -> R;
}

/// Allocations kept per thread and type, at most.
const CACHED: usize = 64;

macro_rules! recycled {
    ($t:ty) => {
        impl $crate::handle::Recycled for $t {
            fn with_cache<R>(f: impl FnOnce(&mut Vec<Box<std::mem::MaybeUninit<Self>>>) -> R) -> R {
                thread_local! {
                    static CACHE: std::cell::RefCell<Vec<Box<std::mem::MaybeUninit<$t>>>> =
                        const { std::cell::RefCell::new(Vec::new()) };
                }
                CACHE.with(|c| f(&mut c.borrow_mut()))
            }
        }
    };
}
pub(crate) use recycled;

use std::mem::MaybeUninit;

/// [`give`] from the thread's cache.
///
/// # Safety
/// As [`give`].
pub(crate) unsafe fn give_recycled<T: Recycled>(out: *mut *mut T, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null("the out pointer"));
    }
    let slot = T::with_cache(|c| c.pop()).unwrap_or_else(Box::new_uninit);
    let p = Box::into_raw(slot).cast::<T>();
    // SAFETY: an allocation for one T (fresh, or recycled empty), written
    // once here, owned by the handle from now on.
    unsafe { p.write(value) };
    // SAFETY: non-NULL and writable (the caller's promise).
    unsafe { out.write(p) };
    Ok(())
}

/// [`take`] of a handle made by [`give_recycled`]: drops the value and
/// keeps its allocation in the thread's cache.
///
/// # Safety
/// As [`take`], for a handle made by [`give_recycled`].
pub(crate) unsafe fn drop_recycled<T: Recycled>(
    slot: *mut *mut T,
    what: &str,
) -> Result<(), Failure> {
    // SAFETY: the caller's promise, passed on.
    let b = unsafe { take(slot, what) }?;
    drop(recycle(b));
    Ok(())
}

/// Takes the value of a handle made by [`give_recycled`] back, setting
/// `*slot` to NULL, and keeps its allocation in the thread's cache.
///
/// # Safety
/// As [`take`], for a handle made by [`give_recycled`].
pub(crate) unsafe fn take_recycled<T: Recycled>(
    slot: *mut *mut T,
    what: &str,
) -> Result<T, Failure> {
    // SAFETY: the caller's promise, passed on.
    let b = unsafe { take(slot, what) }?;
    Ok(recycle(b))
}

/// The value of an owning box; its allocation goes to the thread's cache.
fn recycle<T: Recycled>(b: Box<T>) -> T {
    let raw = Box::into_raw(b);
    // SAFETY: `raw` is a live, initialised T from Box::into_raw; it is read
    // out once, and its memory is then only kept as uninitialised.
    let (value, empty) = unsafe { (raw.read(), Box::from_raw(raw.cast::<MaybeUninit<T>>())) };
    T::with_cache(|c| {
        if c.len() < CACHED {
            c.push(empty);
        }
    });
    value
}
