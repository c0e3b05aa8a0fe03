//! Wait strategies: how a port waits for data without (or with) burning a CPU.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::core::park::WakeBlock;
use crate::os::futex::OsKernel;

/// How a subscriber or listener waits in its blocking calls.
///
/// Figures from a 2-vCPU VM (see the README's benchmark section): a wake-up
/// through the kernel across CPUs costs tens of µs there, a busy-polled
/// hand-over well under one µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitStrategy {
    /// Poll without pause: the lowest latency, one CPU fully busy while
    /// waiting.
    BusySpin,
    /// Poll for a short, adaptive while, yield a few times, then sleep in
    /// the kernel. As fast as busy-spinning when messages arrive back to
    /// back, and idle when they do not. The default.
    #[default]
    SpinThenPark,
    /// Sleep in the kernel at once: the least CPU, a kernel wake-up per
    /// message.
    Park,
}

const MAX_SPINS: u32 = 1 << 14;
const MIN_SPINS: u32 = 64;
const YIELDS: u32 = 4;
/// Longest single sleep; waiters wake at least this often to check that
/// their peers are still there.
pub(crate) const PARK_SLICE: Duration = Duration::from_millis(100);

/// Per-port state of [`WaitStrategy::SpinThenPark`]: the current spin budget.
#[derive(Debug)]
pub(crate) struct Adaptive {
    spins: AtomicU32,
    /// Confined to one CPU when the port was created: never spin.
    one_cpu: bool,
}

impl Default for Adaptive {
    fn default() -> Self {
        // A process confined to one CPU (by affinity or by the machine) can
        // only lose by spinning: the sender needs that CPU to send.
        let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
        Self {
            spins: AtomicU32::new(if one_cpu { 0 } else { MAX_SPINS / 4 }),
            one_cpu,
        }
    }
}

impl Adaptive {
    fn budget(&self) -> u32 {
        // Relaxed: a tuning hint of this process only.
        self.spins.load(Ordering::Relaxed)
    }

    fn spun_ok(&self) {
        if self.one_cpu {
            return;
        }
        let s = self.budget();
        // Relaxed: as above.
        self.spins.store((s * 2).min(MAX_SPINS), Ordering::Relaxed);
    }

    fn had_to_park(&self) {
        let s = self.budget();
        let floor = if self.one_cpu { 0 } else { MIN_SPINS };
        // Relaxed: as above.
        self.spins.store((s / 2).max(floor), Ordering::Relaxed);
    }
}

/// What a blocking wait needs from its port.
pub(crate) struct Waiter<'a> {
    pub strategy: WaitStrategy,
    pub adaptive: &'a Adaptive,
    pub block: &'a WakeBlock,
}

impl Waiter<'_> {
    /// Calls `poll` until it yields a value, the deadline passes (`Ok(None)`)
    /// or `abort` (checked at least every [`PARK_SLICE`] while sleeping)
    /// returns an error. `ready` tells, without consuming, whether `poll`
    /// would succeed.
    pub fn wait<R, E>(
        &self,
        deadline: Option<Instant>,
        mut poll: impl FnMut() -> Result<Option<R>, E>,
        ready: impl Fn() -> bool,
        mut abort: impl FnMut() -> Result<(), E>,
    ) -> Result<Option<R>, E> {
        if let Some(r) = poll()? {
            return Ok(Some(r));
        }
        let (spins, yields) = match self.strategy {
            WaitStrategy::BusySpin => (u32::MAX, 0),
            WaitStrategy::SpinThenPark => (self.adaptive.budget(), YIELDS),
            WaitStrategy::Park => (0, 0),
        };
        let mut i: u32 = 0;
        let mut last_abort_check = Instant::now();
        while i < spins {
            if ready() {
                if let Some(r) = poll()? {
                    self.adaptive.spun_ok();
                    return Ok(Some(r));
                }
            }
            std::hint::spin_loop();
            i += 1;
            if i % 4096 == 0 {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Ok(None);
                }
                // A busy-spinning waiter checks on its peers as often as a
                // sleeping one does.
                if now.duration_since(last_abort_check) >= PARK_SLICE {
                    last_abort_check = now;
                    abort()?;
                }
                if spins == u32::MAX {
                    i = 0;
                }
            }
        }
        for _ in 0..yields {
            std::thread::yield_now();
            if let Some(r) = poll()? {
                // Found after yielding: the peer needed our CPU (one CPU, or
                // an overloaded machine), so spinning longer would not help.
                self.adaptive.had_to_park();
                return Ok(Some(r));
            }
        }
        if self.strategy == WaitStrategy::SpinThenPark {
            self.adaptive.had_to_park();
        }
        loop {
            if let Some(r) = poll()? {
                return Ok(Some(r));
            }
            let slice = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    (d - now).min(PARK_SLICE)
                }
                None => PARK_SLICE,
            };
            let before = Instant::now();
            self.block.park(&OsKernel, &ready, Some(slice));
            if before.elapsed() >= slice {
                abort()?;
            }
        }
    }
}
