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

    fn sleeper_barrier(&self) -> bool {
        use rustix::thread::{membarrier, MembarrierCommand};
        // A kernel without the command has no light sender either (none
        // could register): nothing to do.
        if !global_expedited() {
            return true;
        }
        if membarrier(MembarrierCommand::GlobalExpedited).is_ok() {
            return true;
        }
        if !crate::core::sync::sleepers_degraded() {
            tracing::warn!(
                "membarrier(GLOBAL_EXPEDITED) failed in a sleeper (a seccomp filter?): \
                 waits are cut into 1 ms slices so that no wake-up is missed for longer"
            );
        }
        crate::core::sync::mark_sleepers_degraded();
        false
    }
}

/// Whether the kernel has `membarrier(GLOBAL_EXPEDITED)`.
fn global_expedited() -> bool {
    use rustix::thread::{membarrier_query, MembarrierQuery};
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        membarrier_query().contains(MembarrierQuery::GLOBAL_EXPEDITED)
    })
}

/// Lets this process's senders publish with the light barrier
/// (`core::sync::publish_barrier`): registers the process for
/// `membarrier(GLOBAL_EXPEDITED)`, so that sleepers can put their barrier
/// into its threads. Once per process; nothing if the kernel or a filter
/// refuses, or `HAKO_PUBLISH_FENCE` is set (then every send keeps its full
/// barrier, and this process takes no barriers from other processes'
/// sleepers either). A child made by fork(2) inherits the registration
/// with the flag (checked: a child's PRIVATE_EXPEDITED works after its
/// parent registered); execve(2) clears both.
pub(crate) fn register_light_publish() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        use rustix::thread::{membarrier, MembarrierCommand};
        if std::env::var_os("HAKO_PUBLISH_FENCE").is_some() || !global_expedited() {
            return;
        }
        if membarrier(MembarrierCommand::RegisterGlobalExpedited).is_ok() {
            crate::core::sync::allow_light_publish();
        }
    });
}
