//! The process-local lock that guards a publisher's private bookkeeping, and
//! the process-wide barrier that biases ([`crate::core::bias`]) are revoked
//! with.
//!
//! A publisher may be used from several threads (it and its samples are
//! `Send` and `Sync`), but in the common case one thread does everything:
//! it loans, writes and sends, twice taking this lock per message. An atomic
//! read-modify-write for each would be most of what a lock costs, so the lock
//! is *biased* ([`Bias`], whose protocol `core::bias` describes) to the first
//! thread that takes it: that thread enters with plain stores and loads.
//! Any other thread takes the ordinary lock (a compare-and-swap on
//! `locked`) and revokes the bias, with one `membarrier(PRIVATE_EXPEDITED)`
//! ([`process_barrier`]); from then on every thread uses the ordinary lock,
//! with no further system call. This happens once per lock, at the first use
//! from a second thread. A subscriber connection's count of dropped samples
//! uses the same bias and barrier.
//!
//! Where `membarrier` is missing (kernels before 4.14, seccomp filters) the
//! lock is never biased. Under contention the ordinary lock spins briefly,
//! then yields. Nothing here lives in shared memory: a crashed process takes
//! its locks with it.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::core::bias::{backoff, thread_token, Bias, SHARED, UNOWNED};

/// Biases made from now on start revoked (see [`process_barrier`]).
static BARRIER_FAILED: AtomicBool = AtomicBool::new(false);

/// Puts a full memory barrier into every running thread of the process
/// (`membarrier(PRIVATE_EXPEDITED)`, registered when the first bias was
/// made). False if the call failed; biases made afterwards are never
/// biased.
pub(crate) fn process_barrier() -> bool {
    let ok =
        rustix::thread::membarrier(rustix::thread::MembarrierCommand::PrivateExpedited).is_ok();
    if !ok {
        // Relaxed: a setting read when biases are made.
        BARRIER_FAILED.store(true, Ordering::Relaxed);
    }
    ok
}

/// A lock around a `T`, biased to the first thread that takes it.
pub(crate) struct PortLock<T> {
    /// The ordinary lock, for every thread but the owner.
    locked: AtomicBool,
    /// The owner's fast path; claimed and revoked under `locked`.
    bias: Bias,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to the value to one thread at a time, so
// sharing the lock between threads is sound when the value may move between
// threads.
unsafe impl<T: Send> Sync for PortLock<T> {}

/// Whether biases made now can be biased: `membarrier` works in this
/// process and has not failed since.
pub(crate) fn biasable() -> bool {
    // Relaxed: a setting (see process_barrier).
    membarrier_ready() && !BARRIER_FAILED.load(Ordering::Relaxed)
}

/// Registers `membarrier` for this process now, if it is available, so
/// that the first bias made later does not pay for it.
pub(crate) fn prepare() {
    membarrier_ready();
}

/// Whether `membarrier(PRIVATE_EXPEDITED)` works in this process (it must be
/// registered once before use).
fn membarrier_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        use rustix::thread::{membarrier, membarrier_query, MembarrierCommand, MembarrierQuery};
        membarrier_query().contains(MembarrierQuery::PRIVATE_EXPEDITED)
            && membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
    })
}

impl<T> PortLock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            bias: Bias::unowned(biasable()),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> PortGuard<'_, T> {
        if self.bias.enter() {
            return PortGuard {
                lock: self,
                fast: true,
            };
        }
        self.lock_slow(true)
    }

    /// Takes the lock without claiming the bias if nobody holds it yet: for
    /// set-up and occasional calls, which should not tie the lock to a
    /// thread that may never use it again (a publisher created on one thread
    /// and then moved to another).
    pub(crate) fn lock_unclaimed(&self) -> PortGuard<'_, T> {
        if self.bias.owner() == thread_token() {
            return self.lock();
        }
        self.lock_slow(false)
    }

    #[cold]
    fn lock_slow(&self, claim: bool) -> PortGuard<'_, T> {
        let mut spins = 0u32;
        // ORDERING: Acquire; pairs with the Release store in PortGuard::drop:
        // the previous holder's writes are visible to us.
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Relaxed: only a hint to retry the compare-exchange.
            while self.locked.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
        }
        let me = thread_token();
        // `owner` changes only under `locked`, which we hold.
        match self.bias.owner() {
            UNOWNED if claim => self.bias.claim_here(),
            UNOWNED | SHARED => {}
            owner if owner == me => {}
            _ => {
                if !self.bias.revoke(process_barrier) {
                    // The owner may still be inside: mutual exclusion is
                    // gone, and going on would race on the value.
                    eprintln!(
                        "hako: membarrier() failed while handing a publisher's lock to a second \
                         thread (was it blocked by a seccomp filter after start-up?); aborting"
                    );
                    std::process::abort();
                }
            }
        }
        PortGuard {
            lock: self,
            fast: false,
        }
    }
}

/// Access to the locked value; unlocks on drop.
pub(crate) struct PortGuard<'a, T> {
    lock: &'a PortLock<T>,
    /// Entered by the owner's fast path (else through `locked`).
    fast: bool,
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
        if self.fast {
            self.lock.bias.exit();
        } else {
            // ORDERING: Release; pairs with the Acquire compare-exchange in
            // lock_slow(): our writes are visible to the next holder. The
            // owner's fast path synchronises with it through `revoke`
            // (raised before, never lowered) and the membarrier.
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn counts_from_many_threads() {
        let l = PortLock::new(0u64);
        // The main thread takes the bias first; the others revoke it.
        for _ in 0..1000 {
            *l.lock() += 1;
        }
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        *l.lock() += 1;
                    }
                });
            }
            for _ in 0..10_000 {
                *l.lock() += 1;
            }
        });
        assert_eq!(*l.lock(), 51_000);
    }

    #[test]
    fn a_revoked_bias_takes_no_count_after_the_revoke() {
        for _ in 0..200 {
            let bias = Bias::unowned(biasable());
            bias.claim_here();
            let (local, shared) = (AtomicU64::new(0), AtomicU64::new(0));
            let go = std::sync::Barrier::new(2);
            let seen = std::thread::scope(|s| {
                let revoker = s.spawn(|| {
                    go.wait();
                    assert!(bias.revoke(process_barrier));
                    local.load(Ordering::Relaxed)
                });
                go.wait();
                for _ in 0..1000 {
                    if bias.enter() {
                        let n = local.load(Ordering::Relaxed);
                        // Widen the window a revoke must not cut into.
                        for _ in 0..50 {
                            std::hint::spin_loop();
                        }
                        local.store(n + 1, Ordering::Relaxed);
                        bias.exit();
                    } else {
                        shared.fetch_add(1, Ordering::Relaxed);
                    }
                }
                revoker.join().unwrap()
            });
            let local = local.load(Ordering::Relaxed);
            assert_eq!(seen, local, "a plain count landed after the revoke");
            assert_eq!(local + shared.load(Ordering::Relaxed), 1000);
            assert!(!bias.enter());
        }
    }

    #[test]
    fn the_owner_uses_the_fast_path_until_another_thread_comes() {
        let l = PortLock::new(0u64);
        *l.lock() += 1;
        let biased = l.bias.owner() == thread_token();
        assert_eq!(biased, membarrier_ready());
        if biased {
            assert!(l.lock().fast);
        }
        std::thread::scope(|s| {
            s.spawn(|| *l.lock() += 1);
        });
        assert_eq!(l.bias.owner(), SHARED);
        let g = l.lock();
        assert!(!g.fast);
        assert_eq!(*g, 2);
    }
}
