//! A request or response chunk as another process may have written it: its
//! header and the length its descriptor gives. Opening it must never panic
//! or read past the header, and what it accepts must account for every
//! byte: the header, then a whole number of payload elements.
#![no_main]

use hako::unstable::envelope::Envelope;
use libfuzzer_sys::fuzz_target;

/// A chunk, aligned as the pool aligns them.
#[repr(C, align(64))]
struct Chunk([u8; 64]);

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let mut chunk = Chunk([0; 64]);
    chunk.0[..16].copy_from_slice(&data[..16]);
    let len = u16::from_le_bytes([data[16], *data.get(17).unwrap_or(&0)]) as usize % 4096;
    let shapes = [
        Envelope::of::<u64>(1),
        Envelope::of::<()>(1),
        Envelope::of::<[u8]>(4096),
        Envelope::of::<[u32]>(1024),
        Envelope::of::<[()]>(8),
    ];
    for env in shapes {
        for responses in [false, true] {
            // The header is all the chunk must hold; the payload is never read.
            // SAFETY: 64 bytes (at least the 16 of the header), aligned to 64,
            // live for the call.
            let opened = unsafe { env.open(chunk.0.as_ptr(), len, responses) };
            let Ok(m) = opened else { continue };
            assert!(len >= env.hdr);
            if m.end {
                assert!(responses);
                assert_eq!(m.elems, 0);
            } else {
                assert_eq!(env.hdr + env.size * m.elems, len);
                if !env.slice {
                    assert_eq!(m.elems, 1);
                }
            }
            assert!(!(m.no_response && responses));
            assert!(!(m.last && (m.end || !responses)));
            let id = hako::unstable::envelope::request_id(m.slot, m.generation);
            assert_eq!(u64::from_le_bytes(data[..8].try_into().unwrap()), id);
        }
    }
});
