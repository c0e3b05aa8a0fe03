//! Timing round trips: the clock, the loop that times them, and the
//! statistics of a row.

use std::time::Instant;

use hdrhistogram::Histogram;

use crate::cpu::CpuTime;
use crate::transport::Leader;
use crate::Result;

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every process of the
/// machine (and the one `Instant` reads).
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Round-trip times of one row, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Timed round trips.
    pub count: u64,
    /// Fastest.
    pub min: u64,
    /// Median.
    pub median: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Slowest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Interquartile mean: the mean of the middle half of the round trips
    /// (from the 25th to the 75th percentile). Robust to outliers like the
    /// median, but not bound to the clock's resolution (10 ns on the VM this
    /// was written on, 6 % of a busy-polled round trip there): ratios between
    /// transports are taken of it.
    pub iqm: f64,
}

impl Stats {
    /// `count` round trips that all took `ns` (for tests of what reads
    /// the figures).
    pub fn uniform(count: u64, ns: u64) -> Self {
        Self {
            count,
            min: ns,
            median: ns,
            p99: ns,
            p999: ns,
            max: ns,
            mean: ns as f64,
            iqm: ns as f64,
        }
    }

    /// Summarises round-trip times (nanoseconds) through an HDR histogram
    /// with three significant digits (the interquartile mean from the
    /// samples themselves).
    pub fn from_samples(samples: &[u64]) -> Result<Self> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)?;
        for &s in samples {
            h.record(s.max(1))?;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let quarter = sorted.len() / 4;
        let middle = &sorted[quarter..sorted.len() - quarter];
        let iqm = if middle.is_empty() {
            0.0
        } else {
            middle.iter().map(|&s| s as f64).sum::<f64>() / middle.len() as f64
        };
        Ok(Self {
            count: h.len(),
            min: h.min(),
            median: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            iqm,
        })
    }
}

/// The clock round trips are timed with: the CPU's time-stamp counter
/// where it ticks at a constant rate whatever the CPU's frequency and power
/// state (x86-64 with the `constant_tsc` and `nonstop_tsc` flags; reading it
/// costs about 10 ns here), else `CLOCK_MONOTONIC` (about 27 ns here, through
/// the vDSO). [`measure`] converts ticks to nanoseconds with the
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
/// its message travels (see [`measure`]).
pub fn clock_cost_ns() -> f64 {
    const N: u32 = 200_000;
    let clock = Ticks::get();
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(clock.now());
    }
    start.elapsed().as_nanos() as f64 / f64::from(N)
}

/// Runs `warmup` untimed, then `iterations` timed round trips; returns the
/// time of each in nanoseconds and the CPU time this process used for the
/// timed ones.
///
/// The clock ([`Ticks`]) is read once per round trip, just after the
/// message is sent ([`Leader::round_trip`]'s `sent`), while it travels to
/// the follower and the answer comes back, so the clock read is not part
/// of the time measured, as long as it and whatever else the sender does
/// after sending take less time than the way there and back. Each interval
/// runs from just after one message was sent to just after the next one
/// was: waiting for one answer and sending the next message, one full
/// round trip. The last warm-up round trip (there is at least one) starts
/// the first interval.
pub fn measure<L: Leader>(
    leader: &mut L,
    warmup: u64,
    iterations: u64,
) -> Result<(Vec<u64>, CpuTime)> {
    let warmup = warmup.max(1);
    for seq in 1..warmup {
        leader.round_trip(seq, || ())?;
    }
    // Written (not just reserved) now, so no page fault lands in the timing.
    let mut samples = vec![0u64; usize::try_from(iterations)?];
    let clock = Ticks::get();
    // Before the round trip that starts the clock: a system call in an
    // interval would be timed. The CPU time so covers one round trip more
    // than the timed ones; it is scaled down below.
    let cpu_before = CpuTime::now()?;
    let (start, start_ticks) = (Instant::now(), clock.now());
    let mut t0 = 0;
    leader.round_trip(warmup, || t0 = clock.now())?;
    let mut seq = warmup;
    for s in samples.iter_mut() {
        seq += 1;
        leader.round_trip(seq, || {
            let t1 = clock.now();
            // Saturating: counters of different CPUs may disagree a little
            // if the leader is not pinned and moves.
            *s = t1.saturating_sub(t0);
            t0 = t1;
        })?;
    }
    let (elapsed, ticks) = (start.elapsed(), clock.now().saturating_sub(start_ticks));
    let cpu = CpuTime::now()?
        .since(cpu_before)
        .scaled(iterations, iterations + 1);
    // Ticks to nanoseconds, at the rate seen over the whole run.
    let ns_per_tick = elapsed.as_nanos() as f64 / ticks.max(1) as f64;
    for s in &mut samples {
        *s = (*s as f64 * ns_per_tick).round() as u64;
    }
    Ok((samples, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leader that waits `before` before its message is "sent" and
    /// `after` after it, and counts what the harness asked of it.
    struct Scripted {
        before: std::time::Duration,
        after: std::time::Duration,
        seqs: Vec<u64>,
        sent_calls: u64,
    }

    impl Leader for Scripted {
        fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
            self.seqs.push(seq);
            std::thread::sleep(self.before);
            sent();
            self.sent_calls += 1;
            std::thread::sleep(self.after);
            Ok(())
        }
    }

    #[test]
    fn the_clock_advances() {
        let clock = Ticks::get();
        let t0 = clock.now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(clock.now() > t0);
        assert!(clock_cost_ns() > 0.0);
    }

    #[test]
    fn measure_times_whole_cycles_from_send_to_send() {
        let ms = std::time::Duration::from_millis(1);
        for (warmup, before, after) in [(3, ms, ms), (0, 2 * ms, std::time::Duration::ZERO)] {
            let mut leader = Scripted {
                before,
                after,
                seqs: Vec::new(),
                sent_calls: 0,
            };
            let (samples, _) = measure(&mut leader, warmup, 5).unwrap();
            assert_eq!(samples.len(), 5);
            // Messages 1, 2, ... in order, at least one of them warm-up;
            // `sent` once per round trip.
            let total = warmup.max(1) + 5;
            assert_eq!(leader.seqs, (1..=total).collect::<Vec<_>>());
            assert_eq!(leader.sent_calls, total);
            // An interval runs from one send to the next, so it holds the
            // time after one send and the time before the next: both.
            for s in samples {
                assert!(s >= (before + after).as_nanos() as u64, "{s} ns");
            }
        }
    }

    #[test]
    fn stats_of_known_samples() {
        let samples: Vec<u64> = (1..=1000).collect();
        let s = Stats::from_samples(&samples).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1);
        assert_eq!(s.median, 500);
        assert_eq!(s.p99, 990);
        assert_eq!(s.max, 1000);
        // The middle half, 251..=750, and its mean.
        assert_eq!(s.iqm, 500.5);
        // Outliers do not move it; the clock's steps do not bind it.
        let mut steps = vec![100u64; 6];
        steps.extend([110, 110, 110, 1_000_000]);
        let s = Stats::from_samples(&steps).unwrap();
        assert_eq!(s.median, 100);
        assert!((s.iqm - 620.0 / 6.0).abs() < 1e-9, "{}", s.iqm);
        assert_eq!(Stats::from_samples(&[]).unwrap().iqm, 0.0);
        assert_eq!(Stats::from_samples(&[7]).unwrap().iqm, 7.0);
    }
}
