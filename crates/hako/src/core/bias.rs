//! Biased ownership: one thread works with plain stores and loads where
//! every other thread needs an atomic read-modify-write, until the bias is
//! revoked for good.
//!
//! * The owner enters with plain stores and loads: it raises `busy`, and goes
//!   in unless `revoke` is raised. Only a compiler barrier separates the two;
//!   the store-load order that mutual exclusion needs is supplied by the other
//!   side.
//! * A revoker raises `revoke`, then makes every running thread of the
//!   process execute a full memory barrier (`membarrier(PRIVATE_EXPEDITED)`,
//!   handed in by the OS layer: this module makes no system call). Afterwards
//!   either it sees the owner's `busy` (and waits for it to drop) or the owner
//!   sees `revoke` (and takes the atomic path). `revoke` then stays raised.
//!
//! Under loom the owner's compiler barrier is a `SeqCst` fence and a test
//! hands in a `SeqCst` fence as the barrier: the same guarantee (one side's
//! store is seen by the other side's load), which loom can check.
//!
//! Two users: the publisher's private lock (`PortLock`), and [`SampleCount`],
//! which counts the samples a subscriber connection handed out and got back
//! and decides who frees the connection.

use super::returns::DropCount;
use super::sync::{AtomicBool, AtomicU64, Ordering};

/// `owner` before anyone claimed the bias.
pub(crate) const UNOWNED: u64 = 0;
/// `owner` once the bias is off.
pub(crate) const SHARED: u64 = u64::MAX;

/// A thread's token before it asked for one: no bias's `owner` ever holds it
/// (it is neither UNOWNED, SHARED nor a token handed out, which count up
/// from 1), so [`current_token`] needs no check for a first use.
const NO_TOKEN: u64 = u64::MAX - 1;

#[cfg(not(loom))]
std::thread_local! {
    static TOKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(NO_TOKEN) };
}
#[cfg(loom)]
loom::thread_local! {
    static TOKEN: std::cell::Cell<u64> = std::cell::Cell::new(NO_TOKEN);
}

/// A token unique to the calling thread for the life of the process (never
/// reused, so a new thread never inherits a dead thread's bias): numbered
/// from 1 at a thread's first use. Neither UNOWNED nor SHARED.
#[inline]
pub(crate) fn thread_token() -> u64 {
    // Not a model-checked atomic: only uniqueness matters.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    TOKEN.with(|t| {
        let token = t.get();
        if token != NO_TOKEN {
            return token;
        }
        let token = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        t.set(token);
        token
    })
}

/// The calling thread's token, or, before its first [`thread_token`],
/// one that no owner holds: enough to ask "do I own it?" (a thread that
/// never asked for its token cannot have claimed anything).
#[inline]
fn current_token() -> u64 {
    TOKEN.with(std::cell::Cell::get)
}

/// One step of a wait for another thread: spin a little, then yield.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    *spins += 1;
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    if *spins < 100 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The biased part: who owns it, and the two flags of the protocol (see the
/// module documentation).
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
    /// A bias nobody owns yet ([`Bias::claim_here`] takes it), or, if not
    /// `biasable` (no process-wide barrier in this process), one that is off
    /// from the start.
    pub(crate) fn unowned(biasable: bool) -> Self {
        Self {
            owner: AtomicU64::new(if biasable { UNOWNED } else { SHARED }),
            busy: AtomicBool::new(false),
            revoke: AtomicBool::new(!biasable),
        }
    }

    /// The owner's token, or UNOWNED / SHARED; exact for the serialised
    /// parties, a hint for others (only the owner itself can find its own
    /// token here: it was stored by this thread).
    #[inline]
    pub(crate) fn owner(&self) -> u64 {
        // Relaxed: see above.
        self.owner.load(Ordering::Relaxed)
    }

    /// Enters as the owner, with no read-modify-write: true if the calling
    /// thread owns the bias and it is not revoked. The caller then has what
    /// the bias guards to itself, and must call [`Bias::exit`] when done.
    #[inline]
    pub(crate) fn enter(&self) -> bool {
        if self.owner() != current_token() {
            return false;
        }
        self.busy.store(true, Ordering::Relaxed);
        // ORDERING: compiler fence only: the store above must not be
        // reordered with the load below by the compiler; the CPU's
        // store-load reordering is undone by the revoker's process-wide
        // barrier (see the module documentation). Under loom, the fence
        // that barrier amounts to.
        #[cfg(not(loom))]
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        #[cfg(loom)]
        super::sync::fence(Ordering::SeqCst);
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
    /// with each other and with revokers.
    #[inline]
    pub(crate) fn claim_here(&self) {
        if self.owner() == UNOWNED {
            // Relaxed: claimers are serialised; other threads only compare
            // it with their own token.
            self.owner.store(thread_token(), Ordering::Relaxed);
        }
    }

    /// Turns the bias off for good. On return no thread is inside, every
    /// later [`Bias::enter`] fails, and the owner's writes before its last
    /// exit are visible to the caller. Calls `barrier` (a process-wide
    /// memory barrier) only when another thread owns the bias. Callers are
    /// serialised with each other and with claimers, and are not inside
    /// themselves. False if `barrier` failed: then the owner may still be
    /// inside, and the caller must not rely on what the bias guarded.
    pub(crate) fn revoke(&self, barrier: impl FnOnce() -> bool) -> bool {
        let fenced = !self.raise() || barrier();
        self.finish();
        fenced
    }

    /// First half of [`Bias::revoke`], for revoking many at once with one
    /// barrier between the halves: raises `revoke`. True if the barrier is
    /// needed (another thread owns the bias).
    pub(crate) fn raise(&self) -> bool {
        let owner = self.owner();
        // Relaxed: ordered before the owner's next check by the barrier, or
        // not needed (below).
        self.revoke.store(true, Ordering::Relaxed);
        // SHARED: nothing to do; this thread, or nobody: nobody is inside,
        // later enters by this thread see `revoke` in program order, and
        // other threads never match the owner.
        !(owner == SHARED || owner == UNOWNED || owner == thread_token())
    }

    /// Second half of [`Bias::revoke`], after the barrier: waits for the
    /// owner to leave.
    pub(crate) fn finish(&self) {
        let mut spins = 0u32;
        // ORDERING: Acquire; pairs with the owner's Release store of `busy`
        // in exit(): its writes are visible to us.
        while self.busy.load(Ordering::Acquire) {
            backoff(&mut spins);
        }
        // Relaxed: written only by the serialised parties.
        self.owner.store(SHARED, Ordering::Relaxed);
    }
}

/// The samples one subscriber connection handed out and got back, and who
/// frees the connection once the subscriber let go.
///
/// Samples point at their connection without a reference count (that would
/// cost two atomic read-modify-writes per sample). A sample dropped on the
/// thread that owns the bias (claimed at the first receive: the
/// subscriber's thread, in the common case) counts itself with plain
/// stores; any other thread counts in the atomic [`DropCount`]. When the
/// subscriber lets go ([`SampleCount::let_go`]), it revokes the bias, after
/// which the plain count is final and every drop uses the atomic count,
/// which then tells whether the subscriber or the last sample frees the
/// connection. A sample makes its last access to the connection before it
/// counts itself, so the one that frees comes after every other's.
pub(crate) struct SampleCount {
    /// Samples received (written by the subscriber's thread only). When the
    /// subscriber lets go it becomes what is left for `shared` to count,
    /// which the last sample compares against.
    received: AtomicU64,
    /// Samples dropped by the owner of `bias`, with plain stores.
    local: AtomicU64,
    /// Who may count in `local`.
    pub(crate) bias: Bias,
    /// Samples dropped by other threads, or by any thread once the bias is
    /// revoked.
    shared: DropCount,
}

impl SampleCount {
    /// Nothing received; `biasable` as for [`Bias::unowned`].
    pub(crate) fn new(biasable: bool) -> Self {
        Self {
            received: AtomicU64::new(0),
            local: AtomicU64::new(0),
            bias: Bias::unowned(biasable),
            shared: DropCount::new(),
        }
    }

    /// The subscriber's thread received a sample: counts it, and claims the
    /// bias for this thread if nobody has it yet.
    #[inline]
    pub(crate) fn received_one(&self) {
        // Relaxed: only the subscriber's thread writes it; a count.
        let n = self.received.load(Ordering::Relaxed);
        self.received.store(n.wrapping_add(1), Ordering::Relaxed);
        self.bias.claim_here();
    }

    /// Samples received and not dropped yet. Read by the subscriber's
    /// thread; at worst too high for a moment (a drop racing with it).
    #[inline]
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn held(&self) -> u64 {
        // Relaxed (all): counters; a drop racing with this check at worst
        // counts one sample too many for a moment.
        let dropped = self
            .shared
            .dropped()
            .wrapping_add(self.local.load(Ordering::Relaxed));
        self.received.load(Ordering::Relaxed).wrapping_sub(dropped)
    }

    /// Whether fewer than `max` samples are held (see [`held`](Self::held)).
    /// Samples received less those dropped on the subscriber's thread bound
    /// the count from above, so the common case needs no look at the count
    /// of samples dropped elsewhere.
    #[inline]
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn holds_fewer_than(&self, max: u64) -> bool {
        // Relaxed (both): counters, as in held().
        let here = self
            .received
            .load(Ordering::Relaxed)
            .wrapping_sub(self.local.load(Ordering::Relaxed));
        here < max || self.held() < max
    }

    /// A sample was dropped, after its last access to the connection. True
    /// if the caller must free the connection (the subscriber let go and
    /// this was the last sample).
    #[inline]
    pub(crate) fn sample_dropped(&self) -> bool {
        if self.bias.enter() {
            // Relaxed (both): only the owner writes it; held() reads it as a
            // count, the revoker after our exit's Release.
            let n = self.local.load(Ordering::Relaxed);
            self.local.store(n.wrapping_add(1), Ordering::Relaxed);
            self.bias.exit();
            return false;
        }
        // Relaxed: read only once the subscriber let go, when it is final
        // and was published by DropCount::owner_gone.
        self.shared
            .sample_dropped(|| self.received.load(Ordering::Relaxed))
    }

    /// The subscriber lets go, on its thread (`barrier` as for
    /// [`Bias::revoke`]). True if the caller must free the connection
    /// (every sample is dropped). If the barrier failed the connection is
    /// never freed (it is safe to keep, not to free).
    pub(crate) fn let_go(&self, barrier: impl FnOnce() -> bool) -> bool {
        if !self.bias.revoke(barrier) {
            return false;
        }
        // Relaxed (all): `received` is written only by the subscriber's
        // thread, which is this one; `local` is final after the revoke,
        // whose Acquire wait made the owner's last count visible. What is
        // left goes to `received`; owner_gone's Release publishes it to the
        // sample that will see GONE.
        let left = self
            .received
            .load(Ordering::Relaxed)
            .wrapping_sub(self.local.load(Ordering::Relaxed));
        self.received.store(left, Ordering::Relaxed);
        self.shared.owner_gone(left)
    }
}
