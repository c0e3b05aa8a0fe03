//! The lock-free core: rings, chunk bookkeeping, blackboard entries and
//! segment layouts.
//!
//! Nothing in this module makes a system call; it runs on the heap under loom
//! (`RUSTFLAGS="--cfg loom"`) as well as in shared memory.

pub(crate) mod bias;
pub mod board;
pub mod layout;
pub mod park;
pub mod pool;
pub mod returns;
pub mod ring;
pub(crate) mod sync;

#[cfg(all(test, loom))]
mod loom_tests;
