//! The clocks: `CLOCK_MONOTONIC`, shared by every process of the machine,
//! and the cheaper clock round trips are timed with ([`Ticks`]).

use std::time::Instant;

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every process of the
/// machine (and the one `Instant` reads).
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// The clock round trips are timed with: the CPU's time-stamp counter
/// where it ticks at a constant rate whatever the CPU's frequency and power
/// state (x86-64 with the `constant_tsc` and `nonstop_tsc` flags; reading it
/// costs about 10 ns here), else `CLOCK_MONOTONIC` (about 27 ns here, through
/// the vDSO). [`measure`](crate::transport::timed::measure) converts ticks to nanoseconds with the
/// monotonic clock read at both ends of the timed round trips.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    tsc: bool,
}

impl Ticks {
    /// The clock of this machine.
    pub fn get() -> Self {
        static TSC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let tsc = *TSC.get_or_init(|| {
            cfg!(target_arch = "x86_64")
                && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
                    info.lines()
                        .find(|l| l.starts_with("flags"))
                        .is_some_and(|l| {
                            let has = |f: &str| l.split_whitespace().any(|x| x == f);
                            has("constant_tsc") && has("nonstop_tsc")
                        })
                })
        });
        Self { tsc }
    }

    /// The current count of ticks.
    #[inline(always)]
    pub fn now(self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc {
            // SAFETY: RDTSC reads the time-stamp counter and has no other
            // effect; every x86-64 CPU has it.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
        monotonic_ns()
    }
}

/// Average cost of one read of the clock round trips are timed with
/// ([`Ticks`]), in nanoseconds. Every timed round trip reads it once, while
/// its message travels (see [`measure`](crate::transport::timed::measure)).
pub fn clock_cost_ns() -> f64 {
    const N: u32 = 200_000;
    let clock = Ticks::get();
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(clock.now());
    }
    start.elapsed().as_nanos() as f64 / f64::from(N)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_advances() {
        let clock = Ticks::get();
        let t0 = clock.now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(clock.now() > t0);
        assert!(clock_cost_ns() > 0.0);
    }
}
