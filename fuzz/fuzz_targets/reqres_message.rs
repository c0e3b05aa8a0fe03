//! A request or response as another process may have sent it: the tag of
//! its descriptor (the message's header) and the length the descriptor
//! gives. Opening it must never panic, and what it accepts must account
//! for every byte: a whole number of payload elements, nothing for an end.
#![no_main]

use hako::unstable::envelope::{request_id, Envelope};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let word = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
    let tag = [word(0), word(8)];
    let len = u16::from_le_bytes([data[16], *data.get(17).unwrap_or(&0)]) as usize % 4096;
    let shapes = [
        Envelope::of::<u64>(1),
        Envelope::of::<()>(1),
        Envelope::of::<[u8]>(4096),
        Envelope::of::<[u32]>(1024),
        Envelope::of::<[[u8; 3]]>(1024),
        Envelope::of::<[()]>(8),
    ];
    for env in shapes {
        for responses in [false, true] {
            let Ok(m) = env.open(tag, len, responses) else {
                continue;
            };
            if m.end {
                assert!(responses);
                assert_eq!(m.elems, 0);
            } else {
                assert_eq!(env.size * m.elems, len);
                if !env.slice {
                    assert_eq!(m.elems, 1);
                }
            }
            assert!(!(m.no_response && responses));
            assert!(!(m.last && (m.end || !responses)));
            assert_eq!(request_id(m.slot, m.generation), tag[0]);
        }
    }
});
