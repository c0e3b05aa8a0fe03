//! The OS layer: shared-memory files, mappings and locks.
//!
//! This is the only part of hako that calls the kernel (through `rustix`).

pub mod fifo;
pub mod futex;
pub mod lock;
pub mod shm;
pub mod signal;
