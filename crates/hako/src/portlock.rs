//! The process-local lock that guards a publisher's private bookkeeping, and
//! the bias it is built on (also used by a subscriber's drop counters).
//!
//! A publisher may be used from several threads (it and its samples are
//! `Send` and `Sync`), but in the common case one thread does everything:
//! it loans, writes and sends, twice taking this lock per message. An atomic
//! read-modify-write for each would be most of what a lock costs, so the lock
//! is *biased* to the first thread that takes it:
//!
//! * The owner enters with plain stores and loads: it raises `busy`, and goes
//!   in unless `revoke` is raised. Only a compiler barrier separates the two;
//!   the store-load order that mutual exclusion needs is supplied by the other
//!   side.
//! * Any other thread takes the ordinary lock (a compare-and-swap on
//!   `locked`), raises `revoke`, and runs `membarrier(PRIVATE_EXPEDITED)`,
//!   which puts a full memory barrier into every running thread of the
//!   process. Afterwards either it sees the owner's `busy` (and waits for it
//!   to drop) or the owner sees `revoke` (and goes to the ordinary lock).
//!   `revoke` then stays raised: the bias is off for good, and from then on
//!   every thread uses the ordinary lock, with no further system call. This
//!   happens once per lock, at the first use from a second thread.
//!
//! The biased half alone is [`Bias`]: a subscriber connection counts the
//! drops of its samples with it (plain stores by the owner, an atomic
//! counter for everyone else), revoking it when the connection goes.
//!
//! Where `membarrier` is missing (kernels before 4.14, seccomp filters) the
//! lock is never biased. Under contention the ordinary lock spins briefly,
//! then yields. Nothing here lives in shared memory: a crashed process takes
//! its locks with it.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// `owner` before anyone took the lock.
const UNOWNED: u64 = 0;
/// `owner` once the bias is off.
const SHARED: u64 = u64::MAX;

/// The biased half of a [`PortLock`] (and of a subscriber connection's drop
/// counter): one thread, the owner, enters with plain stores and loads until
/// another party turns the bias off for good with [`Bias::revoke`] (see the
/// module documentation for the protocol).
pub(crate) struct Bias {
    /// The owner's token ([`thread_token`]), or UNOWNED / SHARED. Written
    /// only by parties that the user of the bias serialises (claimers and
    /// the revoker).
    owner: AtomicU64,
    /// The owner is inside, or about to enter.
    busy: AtomicBool,
    /// The bias is being (or has been) revoked.
    revoke: AtomicBool,
}

impl Bias {
    /// A bias nobody owns yet; [`Bias::claim`] takes it.
    pub(crate) fn unowned() -> Self {
        Self::with_owner(UNOWNED)
    }

    /// Where `membarrier` is missing the bias is off from the start.
    fn with_owner(owner: u64) -> Self {
        // Relaxed: a setting (see process_barrier).
        let biasable = membarrier_ready() && !BARRIER_FAILED.load(Ordering::Relaxed);
        Self {
            owner: AtomicU64::new(if biasable { owner } else { SHARED }),
            busy: AtomicBool::new(false),
            revoke: AtomicBool::new(!biasable),
        }
    }

    /// Whether the calling thread (token `me`) owns the bias; a hint, as
    /// only the owner itself can find its own token here (it was stored by
    /// this thread).
    #[inline]
    fn owned_by(&self, me: u64) -> bool {
        // Relaxed: see above.
        self.owner.load(Ordering::Relaxed) == me
    }

    /// Enters as the owner, with no read-modify-write: true if the calling
    /// thread owns the bias and it is not revoked. The caller then has what
    /// the bias guards to itself, and must call [`Bias::exit`] when done.
    #[inline]
    pub(crate) fn enter(&self) -> bool {
        if !self.owned_by(thread_token()) {
            return false;
        }
        self.busy.store(true, Ordering::Relaxed);
        // ORDERING: compiler fence only: the store above must not be
        // reordered with the load below by the compiler; the CPU's
        // store-load reordering is undone by the revoker's membarrier
        // (see the module documentation).
        compiler_fence(Ordering::SeqCst);
        // ORDERING: Acquire; the bias is revoked at most once, and `revoke`
        // never goes down again. Reading it down, the owner is the only
        // thread using what the bias guards since its last exit.
        if !self.revoke.load(Ordering::Acquire) {
            return true;
        }
        self.exit();
        false
    }

    /// Leaves after a successful [`Bias::enter`].
    #[inline]
    pub(crate) fn exit(&self) {
        // ORDERING: Release; pairs with a revoker's Acquire wait on `busy`:
        // the owner's writes are visible to it.
        self.busy.store(false, Ordering::Release);
    }

    /// Gives an unowned bias to the calling thread. Callers are serialised
    /// with each other and with [`Bias::revoke`].
    #[inline]
    pub(crate) fn claim_here(&self) {
        // Relaxed: as in claim().
        if self.owner.load(Ordering::Relaxed) == UNOWNED {
            self.claim(thread_token());
        }
    }

    /// Gives an unowned bias to `me`. Callers are serialised with each
    /// other and with [`Bias::revoke`].
    fn claim(&self, me: u64) {
        // Relaxed: as in owned_by(); claimers are serialised.
        if self.owner.load(Ordering::Relaxed) == UNOWNED {
            self.owner.store(me, Ordering::Relaxed);
        }
    }

    /// Turns the bias off for good. On return no thread is inside, every
    /// later [`Bias::enter`] fails, and the owner's writes before its last
    /// exit are visible to the caller. Costs a `membarrier` system call when
    /// another thread owns the bias, nothing otherwise. Callers are
    /// serialised with each other and with claimers, and are not inside
    /// themselves. False if the system call failed (a seccomp filter
    /// installed after start-up): then the owner may still be inside, and
    /// the caller must not rely on what the bias guarded.
    pub(crate) fn revoke(&self) -> bool {
        let fenced = !self.raise() || process_barrier();
        self.finish();
        fenced
    }

    /// First half of [`Bias::revoke`], for revoking many at once with one
    /// [`process_barrier`] between the halves: raises `revoke`. True if the
    /// barrier is needed (another thread owns the bias).
    pub(crate) fn raise(&self) -> bool {
        let me = thread_token();
        // Relaxed: written only by the serialised parties.
        let owner = self.owner.load(Ordering::Relaxed);
        // Relaxed: ordered before the owner's next check by the barrier, or
        // not needed (below).
        self.revoke.store(true, Ordering::Relaxed);
        // SHARED: nothing to do; this thread, or nobody: nobody is inside,
        // later enters by this thread see `revoke` in program order, and
        // other threads never match the owner.
        !(owner == SHARED || owner == me || owner == UNOWNED)
    }

    /// Second half of [`Bias::revoke`], after the barrier: waits for the
    /// owner to leave.
    pub(crate) fn finish(&self) {
        let mut spins = 0u32;
        // ORDERING: Acquire; pairs with the owner's Release store of `busy`
        // in exit(): its writes are visible to us.
        while self.busy.load(Ordering::Acquire) {
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        // Relaxed: written only by the serialised parties.
        self.owner.store(SHARED, Ordering::Relaxed);
    }
}

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

/// A token unique to the calling thread for the life of the process (never
/// reused, so a new thread never inherits a dead thread's bias): numbered
/// from 1 at a thread's first use. Neither UNOWNED nor SHARED.
#[inline]
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(UNOWNED) };
    }
    TOKEN.with(|t| {
        let token = t.get();
        if token != UNOWNED {
            return token;
        }
        // Relaxed: only uniqueness matters.
        let token = NEXT.fetch_add(1, Ordering::Relaxed);
        t.set(token);
        token
    })
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
            bias: Bias::unowned(),
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
        if self.bias.owned_by(thread_token()) {
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
                spins += 1;
                if spins < 100 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        let me = thread_token();
        // Relaxed: `owner` changes only under `locked`, which we hold.
        match self.bias.owner.load(Ordering::Relaxed) {
            UNOWNED if claim => self.bias.claim(me),
            UNOWNED | SHARED => {}
            owner if owner == me => {}
            _ => {
                if !self.bias.revoke() {
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
            let bias = Bias::unowned();
            bias.claim_here();
            let (local, shared) = (AtomicU64::new(0), AtomicU64::new(0));
            let go = std::sync::Barrier::new(2);
            let seen = std::thread::scope(|s| {
                let revoker = s.spawn(|| {
                    go.wait();
                    assert!(bias.revoke());
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
        let biased = l.bias.owner.load(Ordering::Relaxed) == thread_token();
        assert_eq!(biased, membarrier_ready());
        if biased {
            assert!(l.lock().fast);
        }
        std::thread::scope(|s| {
            s.spawn(|| *l.lock() += 1);
        });
        assert_eq!(l.bias.owner.load(Ordering::Relaxed), SHARED);
        let g = l.lock();
        assert!(!g.fast);
        assert_eq!(*g, 2);
    }
}
