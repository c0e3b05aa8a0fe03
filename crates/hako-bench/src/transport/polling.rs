//! Busy-polling for a peer's message: [`poll`], with a time-out and
//! optionally yielding the CPU ([`set_yield_when_idle`]), and [`prefetch`]
//! for the lines a poller reads next.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::Result;

/// How long a side waits for its peer before it gives up on it.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether [`poll`] gives up the CPU after each empty look.
static YIELD_WHEN_IDLE: AtomicBool = AtomicBool::new(false);

/// Makes [`poll`] yield the CPU (`sched_yield`) after each empty look, or
/// stop doing so. Fan-out followers that share one CPU set it: a receiver
/// that only spins would keep the others (and, on a small machine, the
/// sender) off the CPU until the scheduler preempts it.
pub fn set_yield_when_idle(on: bool) {
    // Relaxed: read by the same process only; no data is published by it.
    YIELD_WHEN_IDLE.store(on, Ordering::Relaxed);
}

/// Asks the CPU to fetch the cache line holding `p` for reading, without
/// waiting for it: what a polling receiver does for the lines it expects to
/// read next.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    // SAFETY: a prefetch is a hint: it cannot fault on any address and
    // changes no memory.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
}

/// Busy-polls `f` until it yields a value; fails after [`PEER_TIMEOUT`]
/// without one (the peer died or lost a message). `what` names the wait in
/// the error. See [`set_yield_when_idle`].
#[inline]
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let mut spins: u32 = 0;
    let mut since: Option<Instant> = None;
    // Relaxed: a setting of this process, not shared data.
    let yield_when_idle = YIELD_WHEN_IDLE.load(Ordering::Relaxed);
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        if yield_when_idle {
            std::thread::yield_now();
        }
        spins = spins.wrapping_add(1);
        if spins & 0xffff == 0 {
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() > PEER_TIMEOUT {
                return Err(format!(
                    "gave up after {PEER_TIMEOUT:?} waiting for {what}; the peer died or a message was lost"
                )
                .into());
            }
        }
        std::hint::spin_loop();
    }
}
