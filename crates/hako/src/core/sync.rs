//! Atomics used by the lock-free core.
//!
//! Under `RUSTFLAGS="--cfg loom"` these are loom's model-checked atomics, so the
//! ring, pool and park/notify protocols can be explored exhaustively on the
//! heap; otherwise they are the standard atomics that live in shared memory.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A full memory barrier between a thread's earlier stores and its later
/// loads (the store-load order that `fence(SeqCst)` gives), used where a
/// sender publishes and then checks for sleepers.
///
/// On x86-64 a locked read-modify-write of a private stack word is such a
/// barrier (every locked instruction drains the store buffer and is totally
/// ordered with other locked instructions and fences) and costs a fraction of
/// `mfence`, which `fence(SeqCst)` compiles to: about 9 ns less per send on
/// the AMD EPYC this was measured on. Linux's `smp_mb()` on x86-64 uses the
/// same instruction for the same reason. Elsewhere, and under loom, it is
/// `fence(SeqCst)`.
#[inline(always)]
pub(crate) fn full_barrier() {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        let mut word = 0u32;
        // SAFETY: a locked OR of zero into a local word: it reads and writes
        // back the word's own value, touches nothing else, and has no effect
        // but the ordering (the asm block is not `nomem`, so the compiler does
        // not move memory accesses across it either).
        unsafe {
            core::arch::asm!(
                "lock or dword ptr [{w}], 0",
                w = in(reg) &mut word,
                options(nostack),
            );
        }
    }
    // ORDERING: SeqCst fence; the portable (and model-checked) form of the
    // same store-load barrier.
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    fence(Ordering::SeqCst);
}

/// Whether senders of this process may publish with [`publish_barrier`]'s
/// light form (see there). Set once at start-up by the kernel layer.
#[cfg(not(loom))]
static LIGHT_PUBLISH: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// A sleeper of this process could not put its barrier into the senders
/// (see [`publish_barrier`]): its waits must not last long.
#[cfg(not(loom))]
static SLEEPERS_DEGRADED: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Lets this process's senders use the light [`publish_barrier`]: called
/// once the process is registered for `membarrier(GLOBAL_EXPEDITED)`.
#[cfg(not(loom))]
pub(crate) fn allow_light_publish() {
    // Relaxed: a setting; a send that still sees the old value uses the
    // full barrier, which is always correct.
    LIGHT_PUBLISH.store(true, core::sync::atomic::Ordering::Relaxed);
}

/// Notes that a sleeper's barrier failed (see [`sleepers_degraded`]).
#[cfg(not(loom))]
pub(crate) fn mark_sleepers_degraded() {
    // Relaxed: a setting.
    SLEEPERS_DEGRADED.store(true, core::sync::atomic::Ordering::Relaxed);
}

/// Whether a sleeper of this process could not put its barrier into the
/// senders: then a wake-up may be missed, and waits are cut into short
/// slices (1 ms) so that a missed one costs at most that.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn sleepers_degraded() -> bool {
    #[cfg(not(loom))]
    {
        // Relaxed: a setting.
        SLEEPERS_DEGRADED.load(core::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(loom)]
    false
}

/// The barrier between a sender's publishing stores and its look at the
/// receiver's sleepers (the park protocol, `core::park`).
///
/// Symmetric, it is a [`full_barrier`] on each side. But on the sender's
/// side it waits for the publishing store itself to leave the store
/// buffer, and that store needs the receiver's cache line: the sender
/// stalls for a whole line transfer on every send. Measured with `hako
/// bench` (busy-poll ping-pong at 64 B, medians of 10 alternated runs):
/// 0.235 µs a round trip with it, 0.185 without; 0.97 and 0.72 in the
/// machine's slow-line state. So the barrier is made asymmetric, as `membarrier(2)` allows:
/// a process registered for `MEMBARRIER_CMD_GLOBAL_EXPEDITED` sends with a
/// compiler barrier alone, and every sleeper, after registering and
/// before its last look for data, runs `membarrier(GLOBAL_EXPEDITED)`,
/// which puts a full barrier into every running thread of every registered
/// process (a descheduled one passed one when it stopped). Either the
/// sender's store came before that barrier, and the sleeper's look sees
/// it, or its later load of the sleepers comes after it, and sees the
/// registration. A process that could not register keeps the full barrier
/// (`HAKO_PUBLISH_FENCE=1` asks for it too). Under loom, the SeqCst fence
/// of both sides.
#[inline(always)]
pub(crate) fn publish_barrier() {
    #[cfg(not(loom))]
    {
        // Relaxed: a setting made once (see allow_light_publish).
        if LIGHT_PUBLISH.load(core::sync::atomic::Ordering::Relaxed) {
            // ORDERING: compiler barrier only; the hardware's store-load
            // order comes from the sleeper's membarrier (see above).
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
            return;
        }
    }
    full_barrier();
}

/// Asks the CPU to start fetching the cache line holding `p` for reading,
/// without waiting for it. Never faults, whatever `p` is; a hint only (a
/// no-op where no prefetch instruction is wired up, and under loom).
#[inline(always)]
pub(crate) fn prefetch_read(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: PREFETCHT0 (SSE, part of the x86-64 baseline) reads nothing
    // architecturally and cannot fault on any address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(all(target_arch = "aarch64", not(loom)))]
    // SAFETY: PRFM is a hint: it cannot fault, and writes no register or memory.
    unsafe {
        core::arch::asm!("prfm pldl1keep, [{p}]", p = in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(any(loom, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    let _ = p;
}

/// Asks the CPU to start fetching the cache line holding `p` for writing
/// (in exclusive state, other caches' copies invalidated), without waiting
/// for it. Never faults, whatever `p` is; a hint only.
#[inline(always)]
pub(crate) fn prefetch_write(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: PREFETCHW reads and writes nothing architecturally and cannot
    // fault on any address; CPUs without it decode it as a no-op (its opcode
    // lies in the 0F 0D hint space).
    unsafe {
        core::arch::asm!("prefetchw byte ptr [{p}]", p = in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(all(target_arch = "aarch64", not(loom)))]
    // SAFETY: PRFM is a hint: it cannot fault, and writes no register or memory.
    unsafe {
        core::arch::asm!("prfm pstl1keep, [{p}]", p = in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(any(loom, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    let _ = p;
}
