//! Atomics used by the lock-free core.
//!
//! Under `RUSTFLAGS="--cfg loom"` these are loom's model-checked atomics, so the
//! ring, pool and park/notify protocols can be explored exhaustively on the
//! heap; otherwise they are the standard atomics that live in shared memory.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
