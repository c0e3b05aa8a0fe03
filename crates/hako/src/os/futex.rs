//! The futex: direct sleeping on a word in shared memory.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

use rustix::thread::futex;

use crate::core::park::Kernel;

/// The kernel's futex, shared between processes (no `FUTEX_PRIVATE_FLAG`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OsKernel;

impl Kernel for OsKernel {
    fn futex_wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| rustix::time::Timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: i64::from(d.subsec_nanos()),
        });
        // EAGAIN (the word changed), EINTR and ETIMEDOUT all mean "re-check".
        let _ = futex::wait(word, futex::Flags::empty(), expected, ts.as_ref());
    }

    fn futex_wake(&self, word: &AtomicU32) {
        let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
    }
}
