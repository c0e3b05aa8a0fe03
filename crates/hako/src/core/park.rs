//! The park/notify protocol: sleep until data arrives, and wake only sleepers.
//!
//! A port that may sleep (a listener, a subscriber) owns a [`WakeBlock`] in
//! shared memory:
//!
//! ```text
//!  +0  epoch: AtomicU32       futex word; bumped only when a sleeper must wake
//!  +4  waiters: AtomicU32     threads parked on the futex
//!  +8  fd_waiters: AtomicU32  waitsets (epoll) waiting on the port's FIFO
//!  +12 notified: AtomicU32   1: a sender bumped the epoch since a sleeper
//!                             last registered; later senders need not
//! ```
//!
//! Receiver, before sleeping: read `epoch`, register in `waiters`, a SeqCst
//! fence and the sleeper's barrier, check for data once more, then sleep on
//! the futex with the epoch it read. Sender, after publishing data: the
//! publish barrier, then read `waiters`; only if someone is registered does
//! it bump `epoch` and make the wake system call. Either the sender sees the
//! registration, or the receiver's re-check sees the data (two full barriers
//! cannot both miss each other; where the sender's is a compiler barrier
//! alone, the sleeper's `membarrier` runs it in the sender's thread: see
//! `sync::publish_barrier`), and a bump between the receiver's read of `epoch` and
//! its futex call makes that call return at once. So no wake-up is lost, and
//! a send that finds nobody asleep costs a barrier and a load, no system call.
//!
//! A burst of sends to a sleeper makes one system call, not one per send:
//! the receiver clears `notified` before it registers, and only the sender
//! that sets it again bumps `epoch` and wakes. Each sender's swap of
//! `notified` comes after its fence and the receiver's clear before its
//! own, so a sender that finds `notified` set by an earlier round (and
//! skips the wake) has its data seen by the receiver's re-check.
//!
//! The kernel side is abstracted by [`Kernel`] so that loom can check the
//! protocol with a model of the futex.

pub(crate) use super::sync::publish_barrier;
use super::sync::{fence, AtomicU32, Ordering};

/// Longest sleep of a sleeper whose barrier failed (see
/// [`Kernel::sleeper_barrier`]): what a missed wake-up may cost.
pub const DEGRADED_SLICE: core::time::Duration = core::time::Duration::from_millis(1);

/// The wake block of one port, in shared memory.
#[repr(C)]
#[derive(Debug, Default)]
pub struct WakeBlock {
    /// Futex word.
    pub epoch: AtomicU32,
    /// Threads parked on the futex.
    pub waiters: AtomicU32,
    /// Waitsets waiting on the port's file descriptor.
    pub fd_waiters: AtomicU32,
    /// 1 while a sender's wake-up for the current sleepers is under way.
    pub notified: AtomicU32,
}

/// What the sender must do after [`WakeBlock::after_publish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wake {
    /// Call [`Kernel::futex_wake`] on the epoch.
    pub futex: bool,
    /// Write to the port's FIFO (a waitset sleeps in epoll on it).
    pub fd: bool,
}

/// The kernel services the protocol uses.
pub trait Kernel {
    /// Sleeps while `word == expected`, until woken or the timeout (if any)
    /// passes. Spurious returns are allowed.
    fn futex_wait(&self, word: &AtomicU32, expected: u32, timeout: Option<core::time::Duration>);
    /// Wakes every thread sleeping on `word`.
    fn futex_wake(&self, word: &AtomicU32);
    /// A sleeper, registered: puts a full barrier into every sender that
    /// publishes with the light barrier (see `sync::publish_barrier`).
    /// False if it could not (then a wake-up may be missed: sleep briefly).
    fn sleeper_barrier(&self) -> bool {
        true
    }
}

impl WakeBlock {
    /// Sender: call after the data is published (its Release store done).
    /// Bumps the epoch if a thread is parked; says which wake-ups to send.
    #[inline]
    pub fn after_publish(&self) -> Wake {
        // ORDERING: the publish barrier (a full barrier, or a compiler
        // barrier that the sleeper's membarrier completes); pairs with the
        // fence and sleeper's barrier in park() and register_fd(): either we
        // see the registration or the receiver's re-check sees our data.
        publish_barrier();
        self.sleepers_after_fence()
    }

    /// Sender: [`after_publish`](Self::after_publish) for a sender that
    /// published to several ports and issued one full barrier
    /// (`publish_barrier`) for all of them after its last data store.
    #[inline]
    pub fn sleepers_after_fence(&self) -> Wake {
        // Relaxed (all three): ordered by the caller's publish barrier; the
        // swap pairs with the clear in park() through the two barriers (see
        // the module doc): only the first sender after a sleeper registered
        // wakes it.
        let futex = self.waiters.load(Ordering::Relaxed) != 0
            && self.notified.swap(1, Ordering::Relaxed) == 0;
        let fd = self.fd_waiters.load(Ordering::Relaxed) != 0;
        if futex {
            // ORDERING: Release; pairs with the kernel's read of the word in
            // futex_wait (and the receiver's Acquire load of epoch).
            self.epoch.fetch_add(1, Ordering::Release);
        }
        Wake { futex, fd }
    }

    /// Sender: [`after_publish`](Self::after_publish) plus the futex wake.
    /// Returns whether the port's FIFO must be written too.
    pub fn notify(&self, kernel: &impl Kernel) -> bool {
        let w = self.after_publish();
        if w.futex {
            kernel.futex_wake(&self.epoch);
        }
        w.fd
    }

    /// Receiver: sleeps once on the futex unless `ready()` holds. Returns
    /// after a wake-up, a timeout or spuriously; the caller re-checks.
    pub fn park(
        &self,
        kernel: &impl Kernel,
        ready: impl Fn() -> bool,
        timeout: Option<core::time::Duration>,
    ) {
        // ORDERING: Acquire; pairs with the Release bump in after_publish().
        let epoch = self.epoch.load(Ordering::Acquire);
        // Relaxed (both): ordered by the fence below; from here on the next
        // sender wakes us again.
        self.notified.store(0, Ordering::Relaxed);
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // ORDERING: SeqCst fence, then the sleeper's barrier in every light
        // sender; pairs with the barrier in after_publish() (a SeqCst fence,
        // or a compiler barrier in a process the sleeper's barrier covers):
        // the registration above and the sender's data store cannot both be
        // missed by the other side.
        fence(Ordering::SeqCst);
        let covered = kernel.sleeper_barrier();
        if !ready() {
            let timeout = if covered {
                timeout
            } else {
                Some(timeout.map_or(DEGRADED_SLICE, |t| t.min(DEGRADED_SLICE)))
            };
            kernel.futex_wait(&self.epoch, epoch, timeout);
        }
        // Relaxed: only the count matters; a stale extra waiter costs the
        // sender one unneeded wake.
        self.waiters.fetch_sub(1, Ordering::Relaxed);
    }

    /// Receiver (waitset): registers interest in the FIFO; returns whether
    /// data is already there (then no sleep is needed). If the sleeper's
    /// barrier failed, the waitset sleeps in short slices (see
    /// `sync::sleepers_degraded`).
    pub fn register_fd(&self, kernel: &impl Kernel, ready: impl Fn() -> bool) -> bool {
        // Relaxed: ordered by the fence below.
        self.fd_waiters.fetch_add(1, Ordering::Relaxed);
        // ORDERING: SeqCst fence and the sleeper's barrier; as in park().
        fence(Ordering::SeqCst);
        kernel.sleeper_barrier();
        ready()
    }

    /// Receiver (waitset): withdraws the interest registered by
    /// [`register_fd`](Self::register_fd).
    pub fn unregister_fd(&self) {
        // Relaxed: a stale registration costs one unneeded FIFO write.
        self.fd_waiters.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Counting(std::cell::Cell<u32>);
    impl Kernel for Counting {
        fn futex_wait(&self, _: &AtomicU32, _: u32, _: Option<core::time::Duration>) {}
        fn futex_wake(&self, _: &AtomicU32) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn no_wake_without_sleepers() {
        let b = WakeBlock::default();
        let k = Counting(Default::default());
        assert!(!b.notify(&k));
        assert_eq!(k.0.get(), 0);
        assert_eq!(b.epoch.load(Ordering::Relaxed), 0);
        b.waiters.store(1, Ordering::Relaxed);
        assert!(!b.notify(&k));
        assert_eq!(k.0.get(), 1);
        assert_eq!(b.epoch.load(Ordering::Relaxed), 1);
        assert!(!b.register_fd(&k, || false));
        assert!(b.notify(&k));
        b.unregister_fd();
    }

    #[test]
    fn a_burst_to_a_sleeper_wakes_it_once() {
        let b = WakeBlock::default();
        let k = Counting(Default::default());
        // A sleeper registers (its futex_wait returns at once here).
        b.park(&k, || false, None);
        b.waiters.store(1, Ordering::Relaxed); // as if it still slept
        for _ in 0..5 {
            b.notify(&k);
        }
        assert_eq!(k.0.get(), 1, "one system call for the burst");
        assert_eq!(b.epoch.load(Ordering::Relaxed), 1);
        // It wakes, drains, sleeps again: the next send wakes it again.
        b.waiters.store(0, Ordering::Relaxed);
        b.park(&k, || false, None);
        b.waiters.store(1, Ordering::Relaxed);
        b.notify(&k);
        b.notify(&k);
        assert_eq!(k.0.get(), 2);
    }
}
