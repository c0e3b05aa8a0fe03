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
    /// Poll and never sleep (a PAUSE hint between looks): the lowest
    /// latency, one CPU fully busy while waiting.
    BusySpin,
    /// Poll for a short, adaptive while (at most 100 µs), yield a few times,
    /// then sleep in the kernel. As fast as busy-spinning when messages
    /// arrive back to back, and idle when they do not. The spin grows after
    /// a sleep that a longer spin would have saved, shrinks after longer
    /// quiet spells, and stops when the sender turns out to need this CPU
    /// (no spinning at all on a machine with one CPU). The default.
    #[default]
    SpinThenPark,
    /// Sleep in the kernel at once: the least CPU, a kernel wake-up per
    /// message.
    Park,
}

/// Longest spin before parking. A message that comes sooner than this after
/// the wait began is "back to back": spinning for it beats a kernel wake-up,
/// which costs tens of µs on a VM.
const MAX_SPIN: Duration = Duration::from_micros(100);
/// Shortest spin, however often spinning failed.
const MIN_SPIN: Duration = Duration::from_micros(2);
/// Spins between two looks at the clock (about 1-2 µs) while a budget runs.
const SPINS_PER_CLOCK: u32 = 64;
/// Spins between two looks at the clock when spinning until a deadline
/// (BusySpin): the clock is a system call on some VMs.
const SPINS_PER_CLOCK_UNBOUNDED: u32 = 4096;
/// While the budget is zero, every this many waits spin [`MIN_SPIN`].
const PROBE_EVERY: u32 = 64;
const YIELDS: u32 = 4;
/// Longest single sleep; waiters wake at least this often to check that
/// their peers are still there.
pub(crate) const PARK_SLICE: Duration = Duration::from_millis(100);

/// Longest a [`WaitStrategy::BusySpin`] wait spins in one poll of an
/// async task before it lets the runtime run its other tasks (and asks to
/// be polled again at once).
#[cfg(feature = "tokio")]
pub(crate) const ASYNC_BUSY_SLICE: Duration = Duration::from_micros(50);

/// Calls `poll` until it yields a value or `budget` has passed since the
/// call (`Ok(None)`), with a PAUSE hint between looks and a look at the
/// clock every [`SPINS_PER_CLOCK`]: the spin of an async wait, which has no
/// deadline or peers to check within one slice.
#[cfg(feature = "tokio")]
pub(crate) fn spin<R, E>(
    budget: Duration,
    mut poll: impl FnMut() -> Result<Option<R>, E>,
) -> Result<Option<R>, E> {
    if budget.is_zero() {
        return Ok(None);
    }
    let began = Instant::now();
    let mut i: u32 = 0;
    loop {
        if let Some(r) = poll()? {
            return Ok(Some(r));
        }
        std::hint::spin_loop();
        i = i.wrapping_add(1);
        if i % SPINS_PER_CLOCK == 0 && began.elapsed() >= budget {
            return Ok(None);
        }
    }
}

/// Per-port state of [`WaitStrategy::SpinThenPark`]: the current spin budget.
///
/// The budget doubles after a wait that spinning served, and after a sleep
/// from which the port woke within [`MAX_SPIN`] of starting to wait (a longer
/// spin would have caught that message). It halves after a longer sleep or a
/// timeout (the messages have stopped coming back to back), and towards zero
/// after a wait that only a yield served (the sender needed this CPU). At
/// zero, every [`PROBE_EVERY`]th wait spins [`MIN_SPIN`] anyway: a yield
/// also serves an answer that merely came just after the spin, from
/// another CPU, and a probe that spinning serves starts the budget again.
/// Judging a sleep by its length, not by the fact that it happened, matters
/// for two ports answering each other: once both sleep, each one's wait
/// includes the other's kernel wake-up, which spinning shorter can never
/// catch; halving then would keep both asleep for good.
#[derive(Debug)]
pub(crate) struct Adaptive {
    /// Budget in nanoseconds.
    spin_ns: AtomicU32,
    /// Waits begun with a budget of zero (for the probes).
    idle_waits: AtomicU32,
    /// The machine has one CPU online: never spin.
    one_cpu: bool,
}

impl Default for Adaptive {
    fn default() -> Self {
        // On a machine with one CPU spinning can only lose: the sender needs
        // that CPU to send. A process merely pinned to one CPU may well be
        // waiting for one on another CPU, so that is left to the budget: a
        // wait that only a yield serves shrinks it towards zero.
        let one_cpu = crate::os::cpus_online()
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .is_some_and(|n| n == 1);
        Self {
            spin_ns: AtomicU32::new(if one_cpu { 0 } else { nanos(MAX_SPIN) / 4 }),
            idle_waits: AtomicU32::new(0),
            one_cpu,
        }
    }
}

fn nanos(d: Duration) -> u32 {
    u32::try_from(d.as_nanos()).unwrap_or(u32::MAX)
}

impl Adaptive {
    fn budget(&self) -> Duration {
        // Relaxed: a tuning hint of this process only.
        Duration::from_nanos(self.spin_ns.load(Ordering::Relaxed).into())
    }

    /// How long the wait starting now spins: the budget, or a probe of
    /// [`MIN_SPIN`] every [`PROBE_EVERY`]th wait while the budget is zero.
    pub(crate) fn spin_for(&self) -> Duration {
        let budget = self.budget();
        if !budget.is_zero() || self.one_cpu {
            return budget;
        }
        // Relaxed (both): a count of this port's waits, a hint; a lost
        // update between threads only moves a probe.
        let n = self.idle_waits.load(Ordering::Relaxed).wrapping_add(1);
        self.idle_waits.store(n, Ordering::Relaxed);
        if n % PROBE_EVERY == 0 {
            MIN_SPIN
        } else {
            Duration::ZERO
        }
    }

    fn set(&self, budget: Duration) {
        let budget = if self.one_cpu {
            Duration::ZERO
        } else {
            budget.min(MAX_SPIN)
        };
        // Relaxed: as above.
        self.spin_ns.store(nanos(budget), Ordering::Relaxed);
    }

    /// A wait that spinning served: doubles the budget, up to [`MAX_SPIN`].
    /// This runs between finding a message and handing it over, so it is
    /// integer arithmetic on nanoseconds, and only a load once the budget is
    /// at its most (where a stream of back-to-back answers keeps it).
    #[inline]
    pub(crate) fn spun_ok(&self) {
        if self.one_cpu {
            return;
        }
        // Relaxed (both): as in budget().
        let ns = self.spin_ns.load(Ordering::Relaxed);
        let grown = ns.saturating_mul(2).clamp(nanos(MIN_SPIN), nanos(MAX_SPIN));
        if grown != ns {
            self.spin_ns.store(grown, Ordering::Relaxed);
        }
    }

    /// A wait that began `waited` ago ended after a sleep.
    pub(crate) fn slept(&self, waited: Duration) {
        if waited <= MAX_SPIN {
            self.set((self.budget() * 2).max(waited).max(MIN_SPIN));
        } else {
            self.shrink();
        }
    }

    /// Halves the budget, down to [`MIN_SPIN`].
    fn shrink(&self) {
        self.set((self.budget() / 2).max(MIN_SPIN));
    }

    /// A yield served the wait: the sender needed this CPU, so spinning
    /// delays it. Halves the budget, down to zero.
    fn yielded(&self) {
        let half = self.budget() / 2;
        self.set(if half < MIN_SPIN {
            Duration::ZERO
        } else {
            half
        });
    }
}

/// What a blocking wait needs from its port.
pub(crate) struct Waiter<'a> {
    pub strategy: WaitStrategy,
    pub adaptive: &'a Adaptive,
    pub block: &'a WakeBlock,
    /// The port's node handles SIGINT and SIGTERM: a wait that sleeps
    /// installs hako's handlers, and a termination request ends the wait
    /// ([`Terminated`]).
    pub signals: bool,
}

/// A blocking wait ended by SIGINT or SIGTERM; each port's error type has
/// a `TerminationRequest` made from it.
pub(crate) struct Terminated;

impl Waiter<'_> {
    /// Fails when a termination request arrived (and the node handles
    /// signals); a load of the flag, no system call.
    fn check_signals<E: From<Terminated>>(&self) -> Result<(), E> {
        if self.signals && crate::os::signal::requested_if_installed() {
            return Err(Terminated.into());
        }
        Ok(())
    }
}

impl Waiter<'_> {
    /// Calls `poll` until it yields a value, the deadline passes (`Ok(None)`)
    /// or `abort` (checked at least every [`PARK_SLICE`] while sleeping)
    /// returns an error. `ready` tells, without consuming, whether `poll`
    /// would succeed; the sleeper checks it after registering. The spin
    /// calls `poll` itself: finding nothing must cost it no more than a
    /// look (it does for subscribers and listeners), and a hit then costs
    /// one look instead of two.
    pub fn wait<R, E: From<Terminated>>(
        &self,
        deadline: Option<Instant>,
        mut poll: impl FnMut() -> Result<Option<R>, E>,
        ready: impl Fn() -> bool,
        mut abort: impl FnMut() -> Result<(), E>,
    ) -> Result<Option<R>, E> {
        if let Some(r) = poll()? {
            return Ok(Some(r));
        }
        // It will wait: from now on SIGINT and SIGTERM end the wait (a
        // signal that came while it spun, before the handlers were there,
        // would have ended the process instead of the wait).
        if self.signals {
            let _ = crate::os::signal::install();
        }
        // None: spin until the deadline.
        let (spin, yields) = match self.strategy {
            WaitStrategy::BusySpin => (None, 0),
            WaitStrategy::SpinThenPark => (Some(self.adaptive.spin_for()), YIELDS),
            WaitStrategy::Park => (Some(Duration::ZERO), 0),
        };
        let adapt = self.strategy == WaitStrategy::SpinThenPark;
        let began = Instant::now();
        if spin != Some(Duration::ZERO) {
            let mut last_abort_check = began;
            let mut i: u32 = 0;
            let per_clock = if spin.is_some() {
                SPINS_PER_CLOCK
            } else {
                SPINS_PER_CLOCK_UNBOUNDED
            };
            loop {
                if let Some(r) = poll()? {
                    if adapt {
                        self.adaptive.spun_ok();
                    }
                    return Ok(Some(r));
                }
                std::hint::spin_loop();
                i = i.wrapping_add(1);
                if i % per_clock == 0 {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now >= d) {
                        return Ok(None);
                    }
                    self.check_signals()?;
                    if spin.is_some_and(|s| now - began >= s) {
                        break;
                    }
                    // A busy-spinning waiter checks on its peers as often as
                    // a sleeping one does.
                    if now - last_abort_check >= PARK_SLICE {
                        last_abort_check = now;
                        abort()?;
                    }
                }
            }
        }
        for _ in 0..yields {
            std::thread::yield_now();
            if let Some(r) = poll()? {
                // Found after yielding: the peer needed our CPU (one CPU, or
                // an overloaded machine), so spinning longer would not help.
                self.adaptive.yielded();
                return Ok(Some(r));
            }
        }
        let r = self.sleep(deadline, &mut poll, &ready, &mut abort);
        if adapt {
            match r {
                Ok(Some(_)) => self.adaptive.slept(began.elapsed()),
                // Timed out asleep: nothing came back to back.
                Ok(None) => self.adaptive.shrink(),
                Err(_) => {}
            }
        }
        r
    }

    /// The sleeping part of [`wait`](Self::wait).
    fn sleep<R, E: From<Terminated>>(
        &self,
        deadline: Option<Instant>,
        poll: &mut impl FnMut() -> Result<Option<R>, E>,
        ready: &impl Fn() -> bool,
        abort: &mut impl FnMut() -> Result<(), E>,
    ) -> Result<Option<R>, E> {
        if self.signals {
            // A handler that cannot be installed leaves the signals their
            // default effect (the process ends): the wait goes on.
            let _ = crate::os::signal::install();
        }
        loop {
            // After each wake-up too: a signal cuts the park short.
            self.check_signals()?;
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
            self.block.park(&OsKernel, ready, Some(slice));
            if before.elapsed() >= slice {
                abort()?;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use rustix::thread::CpuSet;

    fn at(budget: Duration) -> Adaptive {
        let a = Adaptive {
            spin_ns: AtomicU32::new(0),
            idle_waits: AtomicU32::new(0),
            one_cpu: false,
        };
        a.set(budget);
        a
    }

    #[test]
    fn spinning_that_serves_doubles_the_budget_up_to_the_most() {
        let a = at(MIN_SPIN);
        a.spun_ok();
        assert_eq!(a.budget(), MIN_SPIN * 2);
        for _ in 0..20 {
            a.spun_ok();
        }
        assert_eq!(a.budget(), MAX_SPIN);
    }

    #[test]
    fn a_sleep_that_a_longer_spin_would_have_caught_grows_the_budget_to_cover_it() {
        // Two ports answering each other, both asleep: each one's wait is the
        // other's kernel wake-up, here 40 µs. Halving would keep both asleep.
        let a = at(MIN_SPIN);
        a.slept(Duration::from_micros(40));
        assert!(a.budget() >= Duration::from_micros(40), "{:?}", a.budget());
    }

    #[test]
    fn a_long_sleep_or_a_timeout_halves_the_budget_down_to_the_least() {
        let a = at(Duration::from_micros(40));
        a.slept(MAX_SPIN * 10);
        assert_eq!(a.budget(), Duration::from_micros(20));
        a.shrink();
        assert_eq!(a.budget(), Duration::from_micros(10));
        for _ in 0..20 {
            a.shrink();
        }
        assert_eq!(a.budget(), MIN_SPIN);
    }

    #[test]
    fn waits_served_by_yields_stop_the_spinning_and_a_short_sleep_restarts_it() {
        let a = at(Duration::from_micros(40));
        for _ in 0..10 {
            a.yielded();
        }
        assert_eq!(a.budget(), Duration::ZERO);
        a.spun_ok();
        assert_eq!(a.budget(), MIN_SPIN);
        a.yielded();
        assert_eq!(a.budget(), Duration::ZERO);
        a.slept(Duration::from_micros(30));
        assert_eq!(a.budget(), Duration::from_micros(30));
    }

    #[test]
    fn at_zero_every_64th_wait_probes_with_a_short_spin() {
        let a = at(Duration::ZERO);
        let spins: Vec<Duration> = (0..2 * PROBE_EVERY).map(|_| a.spin_for()).collect();
        let probes: Vec<usize> = (0..spins.len()).filter(|&i| !spins[i].is_zero()).collect();
        assert_eq!(
            probes,
            [PROBE_EVERY as usize - 1, 2 * PROBE_EVERY as usize - 1]
        );
        assert!(probes.iter().all(|&i| spins[i] == MIN_SPIN));
        // A probe that spinning served starts the budget again.
        a.spun_ok();
        assert_eq!(a.spin_for(), MIN_SPIN);
    }

    #[test]
    fn one_cpu_never_spins() {
        let a = Adaptive {
            spin_ns: AtomicU32::new(0),
            idle_waits: AtomicU32::new(0),
            one_cpu: true,
        };
        a.spun_ok();
        a.slept(Duration::from_micros(30));
        assert_eq!(a.budget(), Duration::ZERO);
        assert!((0..2 * PROBE_EVERY).all(|_| a.spin_for().is_zero()));
    }

    #[test]
    fn a_thread_pinned_to_one_cpu_of_several_still_spins() {
        // The sender may be on another CPU; only a machine with one CPU
        // online rules spinning out from the start.
        if crate::os::cpus_online().is_none_or(|n| n < 2) {
            return;
        }
        std::thread::spawn(|| {
            let mine = rustix::thread::sched_getaffinity(None).unwrap();
            let cpu = (0..CpuSet::MAX_CPU).find(|&c| mine.is_set(c)).unwrap();
            let mut one = CpuSet::new();
            one.set(cpu);
            rustix::thread::sched_setaffinity(None, &one).unwrap();
            assert_eq!(std::thread::available_parallelism().unwrap().get(), 1);
            assert!(Adaptive::default().budget() > Duration::ZERO);
        })
        .join()
        .unwrap();
    }
}
