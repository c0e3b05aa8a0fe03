//! A blackboard entry's shared words — its state word, a sequence word per
//! buffer, the values and a reader's pin — driven by a writer and a reader
//! that follow the protocol (core/board.rs), while a hostile peer
//! overwrites any of the words at any time. Nothing may panic or spin;
//! a state naming no buffer is reported as corruption, never used as an
//! index; and until the first hostile write every read returns the value
//! its version was written with.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use hako::unstable::board::{Corrupt, Entry};
use libfuzzer_sys::fuzz_target;

const BUFFERS: usize = 3;

fuzz_target!(|data: &[u8]| {
    let state = AtomicU64::new(0);
    let seqs: Vec<AtomicU64> = (0..BUFFERS).map(|_| AtomicU64::new(0)).collect();
    let mut values = vec![0u64; BUFFERS];
    let base = values.as_mut_ptr().cast::<u8>();
    // SAFETY: BUFFERS values of 8 bytes, the stride their size.
    let e = unsafe { Entry::new(&state, &seqs, base, 8, 8) };
    let pin = AtomicU64::new(0);
    let mut scribbled = false;
    let mut bytes = data.iter().copied();
    let next_u64 = |b: &mut dyn Iterator<Item = u8>| {
        let mut w = [0u8; 8];
        for x in &mut w {
            *x = b.next().unwrap_or(0);
        }
        u64::from_le_bytes(w)
    };
    while let Some(op) = bytes.next() {
        match op % 6 {
            // The writer: an update whose value is its version.
            0 => {
                // ORDERING: Acquire (both), as the library's writer: the
                // state's publish, and the reader's pin before reuse.
                let Ok(s) = e.state(Ordering::Acquire) else {
                    assert!(scribbled, "corrupt without a hostile write");
                    continue;
                };
                let held = pin.load(Ordering::Acquire);
                let Some(b) = e.free_buffer(s.buffer, |b| held == b + 1) else {
                    assert!(scribbled, "no free buffer without a hostile write");
                    continue;
                };
                assert_ne!(b, s.buffer, "the current buffer chosen");
                let v = s.next_version();
                e.begin_write(b, v);
                // SAFETY: buffer b's 8 bytes.
                unsafe { e.value_ptr(b).cast::<u64>().write(v) };
                e.end_write(b, v);
                assert_eq!(e.publish(s, b), v);
            }
            // A copy read.
            1 => {
                let mut out = 0u64;
                // SAFETY: 8 bytes into a u64.
                match unsafe { e.try_copy((&raw mut out).cast()) } {
                    Ok(Some(v)) if !scribbled => assert_eq!(out, v, "version {v} read {out}"),
                    Ok(_) => {}
                    Err(Corrupt) => assert!(scribbled, "corrupt without a hostile write"),
                }
            }
            // A read in place: pin, look, unpin.
            2 => match e.pin(&pin) {
                Ok(s) => {
                    // SAFETY: the pinned buffer's 8 bytes.
                    let v = unsafe { e.value_ptr(s.buffer).cast::<u64>().read() };
                    if !scribbled {
                        assert_eq!(v, s.version);
                    }
                    if bytes.next().unwrap_or(0) % 2 == 0 {
                        Entry::unpin(&pin);
                    }
                }
                Err(Corrupt) => assert!(scribbled, "corrupt without a hostile write"),
            },
            // Hostile: the state word, a sequence word, the pin.
            3 => {
                state.store(next_u64(&mut bytes), Ordering::Relaxed);
                scribbled = true;
            }
            4 => {
                let i = usize::from(bytes.next().unwrap_or(0)) % BUFFERS;
                seqs[i].store(next_u64(&mut bytes), Ordering::Relaxed);
                scribbled = true;
            }
            _ => {
                pin.store(next_u64(&mut bytes), Ordering::Relaxed);
                scribbled = true;
            }
        }
    }
});
