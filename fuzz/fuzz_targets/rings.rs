//! One connection's shared words — the submission ring, its head and the
//! return words — driven by a publisher and a subscriber that follow the
//! protocol, while a hostile peer overwrites any of the words at any time.
//! Nothing may panic or spin without bound, and the publisher's books must
//! always balance: every chunk is free, loaned, or outstanding on the
//! connection, exactly once. The first byte also chooses a plain ring or a
//! tagged one (request/response), whose tags are carried through intact
//! while nobody overwrites them, and a compact or an inline one (a line per
//! slot, the payload in it), whose payload words likewise come through.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use hako::unstable::pool::{ChunkBook, Outstanding};
use hako::unstable::returns::Returns;
use hako::unstable::ring::{
    Inline, InlineCell, Pop, Producer, Push, Submission, INLINE_SLOT_WORDS, SLOT_WORDS,
    TAGGED_SLOT_WORDS,
};
use libfuzzer_sys::fuzz_target;

const SLOTS: usize = 4;
const CHUNKS: u32 = 8;

fuzz_target!(|data: &[u8]| {
    let first = data.first().copied().unwrap_or(0);
    let tagged = first & 0x80 != 0;
    let inline = first & 0x40 != 0;
    let words_per_slot = if inline {
        INLINE_SLOT_WORDS
    } else if tagged {
        TAGGED_SLOT_WORDS
    } else {
        SLOT_WORDS
    };
    let slot_words = SLOTS * words_per_slot;
    let slots: Vec<AtomicU64> = (0..slot_words).map(|_| AtomicU64::new(0)).collect();
    let head = AtomicU64::new(0);
    // One return word per delivery that can be outstanding: every chunk.
    let words: Vec<AtomicU64> = (0..CHUNKS).map(|_| AtomicU64::new(0)).collect();
    let capacity = 1 + u64::from(first & 0x3f) % SLOTS as u64;
    let sub = Submission::with_format(&slots, &head, capacity, tagged, inline);
    let payload_of = |idx: u32, stamp: u64| -> Inline {
        std::array::from_fn(|k| stamp.wrapping_mul(31).wrapping_add(u64::from(idx) * 7 + k as u64))
    };
    // Whether a hostile write has happened: until then every entry's tag
    // is the one it was pushed with.
    let mut scribbled = false;
    let tag_of = |idx: u32, stamp: u64| [u64::from(idx) << 32 | stamp, !stamp];
    let returns = Returns::new(&words);
    let mut producer = Producer::default();
    let mut book = ChunkBook::new(CHUNKS);
    let mut out = Outstanding::new(CHUNKS);
    let mut held: Vec<(u32, u64)> = Vec::new();
    // Where a pop copies an inline entry's payload: a cell per return slot.
    let cells: Vec<InlineCell> = (0..CHUNKS)
        .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
        .collect();
    let mut bytes = data.iter().skip(1).copied();
    let next_u64 = |b: &mut dyn Iterator<Item = u8>| {
        let mut w = [0u8; 8];
        for x in &mut w {
            *x = b.next().unwrap_or(0);
        }
        u64::from_le_bytes(w)
    };
    while let Some(op) = bytes.next() {
        match op % 8 {
            // Publisher: loan a chunk and send it, as deliver() does.
            0 => {
                out.take_returned(&returns, |i| {
                    book.release(i);
                });
                let Some(idx) = book.alloc() else { continue };
                let stamp = producer.tail + 1;
                // A chunk was free, so fewer than all are outstanding and a
                // return slot is free too.
                let ret = out.free_slot().expect("a free return slot");
                let payload = payload_of(idx, stamp);
                match sub.try_push(&mut producer, idx, ret, 1, book.top(), tag_of(idx, stamp), Some(&payload)) {
                    Ok(Push::Done) => {
                        let before = out.count();
                        out.insert(ret, idx, stamp);
                        assert_eq!(out.count(), before + 1);
                        book.add_ref(idx);
                    }
                    Ok(Push::Full) | Err(_) => {}
                }
                book.release(idx);
            }
            // Subscriber: take one, validate the index, hold it.
            1 => match sub.pop_with(&cells) {
                Ok(Pop::Item {
                    index: idx,
                    ret,
                    pos,
                    tag,
                    ..
                }) if idx < CHUNKS => {
                    if !scribbled {
                        let want = if tagged {
                            tag_of(idx, pos.wrapping_add(1))
                        } else {
                            [0, 0]
                        };
                        assert_eq!(tag, want);
                        let n = sub.inline_words();
                        let got: Vec<u64> = cells[ret as usize][..n]
                            .iter()
                            .map(|w| w.load(Ordering::Relaxed))
                            .collect();
                        assert_eq!(got[..], payload_of(idx, pos.wrapping_add(1))[..n]);
                    }
                    held.push((ret, pos.wrapping_add(1)))
                }
                Ok(_) | Err(_) => {}
            },
            // Subscriber: drop the oldest sample it holds.
            2 => {
                if !held.is_empty() {
                    let (ret, stamp) = held.remove(0);
                    returns.release(ret, stamp);
                }
            }
            // Publisher under drop-oldest: take the oldest queued one back.
            3 => {
                if let Ok(Some((old, ret))) = sub.reclaim_oldest(&mut producer) {
                    // Only deliveries it has outstanding; anything else is garbage.
                    if out.remove(ret, old) {
                        book.release(old);
                    }
                }
            }
            // Publisher: take back whatever came back.
            4 => out.take_returned(&returns, |i| {
                book.release(i);
            }),
            // Hostile peer: any slot, the head, any return word.
            5 => {
                let i = bytes.next().unwrap_or(0) as usize % slot_words;
                slots[i].store(next_u64(&mut bytes), Ordering::Relaxed);
                scribbled = true;
            }
            6 => {
                head.store(next_u64(&mut bytes), Ordering::Relaxed);
                scribbled = true;
            }
            _ => {
                let i = bytes.next().unwrap_or(0) as usize % CHUNKS as usize;
                words[i].store(next_u64(&mut bytes), Ordering::Relaxed);
            }
        }
        // Every chunk is free or outstanding (nothing stays loaned between
        // operations), and a chunk is never both.
        assert_eq!(book.free_count() + out.count(), CHUNKS as usize);
        for i in 0..CHUNKS {
            assert_eq!(book.refs(i) != 0, out.find(i).is_some(), "chunk {i}");
        }
    }
});
