//! The memory figures: what writing a payload once and reading it once
//! costs with no transport involved, on one CPU ([`write_read_ns`]) and with
//! the writer on one CPU and the reader on another ([`write_read_across_ns`]).
//!
//! In `full` payload mode a round trip writes and reads the payload twice
//! (the ping, then the pong), each time written on one CPU and read on the
//! other: twice the cross-CPU figure is what a transport that copies nothing
//! cannot beat, so large-payload `full` rows are quoted against it. The
//! one-CPU figure is usually lower (the reader finds the bytes in its own
//! caches), though not always on this VM, and is shown for comparison. The write and the read are the very
//! functions the transports use ([`PayloadMode::write`],
//! [`PayloadMode::check`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::error::Result;
use crate::transport::{tag, PayloadMode};

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

/// Nanoseconds to write `size` bytes on CPU `writer` and read them back
/// into a checksum on CPU `reader` (threads of this process, pinned where a
/// CPU is given), the median of `reps` repetitions (after one untimed). Each
/// repetition hands the buffer over and back through a cache line, which
/// costs a fraction of a microsecond, nothing next to the sizes this is
/// quoted for.
pub fn write_read_across_ns(
    size: usize,
    reps: u32,
    writer: Option<usize>,
    reader: Option<usize>,
) -> Result<f64> {
    if size == 0 {
        return Err("message size must be at least 1 byte".into());
    }
    let buf = Mutex::new(vec![0u8; size]);
    // Repetition `seq` is written when `turn` is 2 * seq + 1 and read when it
    // is 2 * seq + 2.
    let turn = AtomicU64::new(0);
    let reps = u64::from(reps.max(1));
    let wait_for = |want: u64| {
        // ORDERING: Acquire; pairs with the Release store of the other
        // thread (the mutex orders the buffer itself).
        while turn.load(Ordering::Acquire) < want {
            std::hint::spin_loop();
        }
    };
    std::thread::scope(|s| -> Result<f64> {
        let read = s.spawn(|| -> Result<()> {
            if let Some(cpu) = reader {
                crate::sys::cpu::pin_to(cpu)?;
            }
            for seq in 0..=reps {
                wait_for(2 * seq + 1);
                {
                    let b = buf.lock().map_err(|_| "memory figure: writer panicked")?;
                    PayloadMode::Full.check(
                        std::hint::black_box(&b[..]),
                        size,
                        tag(seq),
                        "memory",
                    )?;
                }
                // ORDERING: Release; pairs with the writer's Acquire wait.
                turn.store(2 * seq + 2, Ordering::Release);
            }
            Ok(())
        });
        let write = s.spawn(|| -> Result<f64> {
            if let Some(cpu) = writer {
                crate::sys::cpu::pin_to(cpu)?;
            }
            let mut times = Vec::with_capacity(reps as usize);
            for seq in 0..=reps {
                let start = Instant::now();
                {
                    let mut b = buf.lock().map_err(|_| "memory figure: reader panicked")?;
                    PayloadMode::Full.write(std::hint::black_box(&mut b[..]), tag(seq));
                }
                // ORDERING: Release; pairs with the reader's Acquire wait.
                turn.store(2 * seq + 1, Ordering::Release);
                wait_for(2 * seq + 2);
                if seq > 0 {
                    times.push(start.elapsed().as_nanos() as f64);
                }
            }
            times.sort_by(f64::total_cmp);
            Ok(times[times.len() / 2])
        });
        let ns = write
            .join()
            .map_err(|_| "memory figure: writer panicked")??;
        read.join()
            .map_err(|_| "memory figure: reader panicked")??;
        Ok(ns)
    })
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
        assert!(write_read_across_ns(4096, 5, None, None).unwrap() > 0.0);
        assert!(write_read_across_ns(0, 5, None, None).is_err());
        assert_eq!(reps_for(4 << 20, 0), 5);
        assert_eq!(reps_for(64, u64::MAX), 10_000);
    }
}
