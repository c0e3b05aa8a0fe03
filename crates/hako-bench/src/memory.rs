//! The memory figure: what writing a payload once and reading it once costs
//! in one process, with no other CPU and no transport involved.
//!
//! In `full` payload mode a round trip writes and reads the payload twice
//! (the ping, then the pong): [`write_read_ns`] × 2 is what a transport that
//! copies nothing cannot beat, so large-payload `full` rows are quoted
//! against it. The write and the read are the very functions the transports
//! use ([`PayloadMode::write`], [`PayloadMode::check`]).

use std::time::Instant;

use crate::transport::{tag, PayloadMode};
use crate::Result;

/// Nanoseconds to write `size` bytes and read them back into a checksum,
/// the median of `reps` repetitions (after one untimed).
pub fn write_read_ns(size: usize, reps: u32) -> Result<f64> {
    if size == 0 {
        return Err("message size must be at least 1 byte".into());
    }
    let mut buf = vec![0u8; size];
    let mut times = Vec::with_capacity(reps as usize);
    for seq in 0..=u64::from(reps.max(1)) {
        let t = tag(seq);
        let start = Instant::now();
        PayloadMode::Full.write(std::hint::black_box(&mut buf), t);
        PayloadMode::Full.check(std::hint::black_box(&buf), size, t, "memory")?;
        let ns = start.elapsed().as_nanos() as f64;
        if seq > 0 {
            times.push(ns);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Repetitions that fit about `budget_ns` for `size` bytes (at least 5, at
/// most 10 000), assuming some 5 GB/s.
pub fn reps_for(size: usize, budget_ns: u64) -> u32 {
    let per = (size as u64 / 5).max(50);
    (budget_ns / per).clamp(5, 10_000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_figure_is_positive() {
        assert!(write_read_ns(4096, 5).unwrap() > 0.0);
        assert!(write_read_ns(0, 5).is_err());
        assert_eq!(reps_for(4 << 20, 0), 5);
        assert_eq!(reps_for(64, u64::MAX), 10_000);
    }
}
