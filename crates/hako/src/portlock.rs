//! The process-local lock that guards a publisher's private bookkeeping.
//!
//! A publisher may be used from several threads (it and its samples are
//! `Send` and `Sync`), but in the common case one thread does everything, so
//! the lock is almost never contended. `std::sync::Mutex` pays an atomic
//! read-modify-write both to lock and to unlock (it must learn whether
//! someone sleeps); this lock pays one to lock and a plain store to unlock,
//! and under contention spins briefly, then yields. Nothing here lives in
//! shared memory: a crashed process takes its locks with it.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A spin-then-yield lock around a `T`.
pub(crate) struct PortLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to the value to one thread at a time, so
// sharing the lock between threads is sound when the value may move between
// threads.
unsafe impl<T: Send> Sync for PortLock<T> {}

impl<T> PortLock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> PortGuard<'_, T> {
        // ORDERING: Acquire; pairs with the Release store in PortGuard::drop:
        // the previous holder's writes are visible to us.
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        PortGuard { lock: self }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            // Relaxed: only a hint to retry the compare-exchange below.
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 100 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            // ORDERING: Acquire; as in lock().
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Access to the locked value; unlocks on drop.
pub(crate) struct PortGuard<'a, T> {
    lock: &'a PortLock<T>,
}

impl<T> Deref for PortGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock, so no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for PortGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock, and &mut self makes this the only access.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for PortGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // ORDERING: Release; pairs with the Acquire compare-exchange in
        // lock(): our writes are visible to the next holder.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads() {
        let l = PortLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        *l.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*l.lock(), 40_000);
    }
}
