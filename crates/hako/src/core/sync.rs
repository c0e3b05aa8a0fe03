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
