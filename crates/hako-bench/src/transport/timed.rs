//! The loop that times round trips: the clock read once per round trip,
//! while the message travels.

use std::time::Instant;

use crate::error::Result;
use crate::sys::clock::Ticks;
use crate::sys::cpu::CpuTime;

/// Runs `warmup` untimed, then `iterations` timed round trips; returns the
/// time of each in nanoseconds and the CPU time this process used for the
/// timed ones.
///
/// The clock ([`Ticks`]) is read once per round trip, just after the
/// message is sent (the `sent` that `round_trip` calls, as
/// [`Leader::round_trip`](super::Leader::round_trip) does), while it travels to
/// the follower and the answer comes back, so the clock read is not part
/// of the time measured, as long as it and whatever else the sender does
/// after sending take less time than the way there and back. Each interval
/// runs from just after one message was sent to just after the next one
/// was: waiting for one answer and sending the next message, one full
/// round trip. The last warm-up round trip (there is at least one) starts
/// the first interval.
pub fn measure(
    warmup: u64,
    iterations: u64,
    mut round_trip: impl FnMut(u64, &mut dyn FnMut()) -> Result<()>,
) -> Result<(Vec<u64>, CpuTime)> {
    let warmup = warmup.max(1);
    for seq in 1..warmup {
        round_trip(seq, &mut || ())?;
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
    round_trip(warmup, &mut || t0 = clock.now())?;
    let mut seq = warmup;
    for s in samples.iter_mut() {
        seq += 1;
        round_trip(seq, &mut || {
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
    use crate::transport::Leader;

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
    fn measure_times_whole_cycles_from_send_to_send() {
        let ms = std::time::Duration::from_millis(1);
        for (warmup, before, after) in [(3, ms, ms), (0, 2 * ms, std::time::Duration::ZERO)] {
            let mut leader = Scripted {
                before,
                after,
                seqs: Vec::new(),
                sent_calls: 0,
            };
            let (samples, _) =
                measure(warmup, 5, |seq, sent| leader.round_trip(seq, sent)).unwrap();
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
}
