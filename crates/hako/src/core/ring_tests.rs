//! Unit tests of the submission ring (`ring.rs`).

use super::*;

/// A popped entry with no announcement.
fn item(index: u32, pos: u64, len: u64) -> Pop {
    Pop::Item {
        index,
        ret: 0,
        pos,
        len,
        next: None,
        tag: NO_TAG,
    }
}

/// The words of a submission ring of `n` slots (or `n * SLOT_WORDS`
/// return words).
fn slots(n: usize) -> Vec<AtomicU64> {
    (0..n * SLOT_WORDS).map(|_| AtomicU64::new(0)).collect()
}

#[test]
fn submission_fifo_and_full() {
    let s = slots(4);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 3);
    let mut p = Producer::default();
    assert_eq!(ring.pop(), Ok(Pop::Empty));
    for i in 0..3 {
        assert!(ring.has_room(&mut p));
        assert_eq!(
            ring.try_push(&mut p, i, 0, 1, None, NO_TAG, None),
            Ok(Push::Done)
        );
    }
    assert!(!ring.has_room(&mut p));
    assert_eq!(
        ring.try_push(&mut p, 9, 0, 1, None, NO_TAG, None),
        Ok(Push::Full)
    );
    assert!(ring.has_item());
    for i in 0..3 {
        assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
        // Room again as soon as the consumer took one.
        assert!(ring.has_room(&mut p));
    }
    assert_eq!(ring.pop(), Ok(Pop::Empty));
    assert!(!ring.has_item());
    // A consumer position that cannot be counts as room: the push says why.
    for i in 0..3 {
        assert_eq!(
            ring.try_push(&mut p, i, 0, 1, None, NO_TAG, None),
            Ok(Push::Done)
        );
    }
    head.store(0, std::sync::atomic::Ordering::Relaxed);
    assert!(ring.has_room(&mut p));
    assert_eq!(
        ring.try_push(&mut p, 9, 0, 1, None, NO_TAG, None),
        Err(Corrupted)
    );
}

#[test]
fn submission_wraps_many_laps() {
    let s = slots(2);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 2);
    let mut p = Producer::default();
    for i in 0..10_000u32 {
        assert_eq!(
            ring.try_push(&mut p, i, 0, 1, None, NO_TAG, None),
            Ok(Push::Done)
        );
        if i % 2 == 1 {
            assert_eq!(ring.pop(), Ok(item(i - 1, u64::from(i - 1), 1)));
            assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
            assert_eq!(ring.pop(), Ok(Pop::Empty));
        }
    }
}

#[test]
fn sole_consumer_pops_in_order() {
    let s = slots(4);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 4);
    let consumer = ring.sole_consumer();
    let mut p = Producer::default();
    for round in 0..10u32 {
        for i in 0..4 {
            assert_eq!(
                ring.try_push(&mut p, round * 4 + i, 0, 1, None, NO_TAG, None),
                Ok(Push::Done)
            );
        }
        for i in 0..4 {
            assert_eq!(
                consumer.pop(),
                Ok(item(round * 4 + i, u64::from(round * 4 + i), 1))
            );
        }
        assert_eq!(consumer.pop(), Ok(Pop::Empty));
    }
}

#[test]
fn reclaim_oldest_keeps_order() {
    let s = slots(4);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 4);
    let mut p = Producer::default();
    for i in 0..4 {
        ring.try_push(&mut p, i, 0, 1, None, NO_TAG, None).unwrap();
    }
    assert_eq!(
        ring.try_push(&mut p, 4, 0, 1, None, NO_TAG, None),
        Ok(Push::Full)
    );
    assert_eq!(ring.reclaim_oldest(&mut p), Ok(Some((0, 0))));
    assert_eq!(
        ring.try_push(&mut p, 4, 0, 1, None, NO_TAG, None),
        Ok(Push::Done)
    );
    for i in 1..5 {
        assert_eq!(ring.pop(), Ok(item(i, u64::from(i), 1)));
    }
    assert_eq!(ring.reclaim_oldest(&mut p), Ok(None));
}

#[test]
fn garbage_is_reported() {
    let s = slots(4);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 4);
    s[0].store(0xdead_beef_0000_0001, Ordering::Relaxed); // slot 0's descriptor
    assert_eq!(ring.pop(), Err(Corrupted));
    // A head far beyond the producer's tail.
    let s2 = slots(4);
    let head2 = AtomicU64::new(1000);
    let ring2 = Submission::new(&s2, &head2, 4);
    let mut p = Producer {
        tail: 4,
        cached_head: 0,
    };
    assert_eq!(
        ring2.try_push(&mut p, 1, 0, 1, None, NO_TAG, None),
        Err(Corrupted)
    );
}

#[test]
fn positions_at_the_end_of_the_range_wrap() {
    // Found by fuzzing: a peer that sets head to u64::MAX must not make
    // either side overflow (a panic in debug builds).
    let s = slots(4);
    let head = AtomicU64::new(u64::MAX);
    let ring = Submission::new(&s, &head, 4);
    s[3 * SLOT_WORDS].store(encode(u64::MAX, 2, 1, 0), Ordering::Relaxed);
    assert_eq!(ring.pop(), Ok(item(1, u64::MAX, 0)));
    assert_eq!(head.load(Ordering::Relaxed), 0);
    head.store(u64::MAX, Ordering::Relaxed);
    let mut p = Producer {
        tail: 0,
        cached_head: 0,
    };
    assert!(ring.reclaim_oldest(&mut p).is_ok());
}

#[test]
fn the_next_chunk_travels_with_the_length() {
    let s = slots(4);
    let head = AtomicU64::new(0);
    let ring = Submission::new(&s, &head, 4);
    let mut p = Producer::default();
    let max_len = 1u64 << 46; // a segment's limit
    for (len, next) in [
        (1, Some(0)),
        (max_len, Some(7)),
        (12, Some(MAX_ANNOUNCED)),
        (5, None),
    ] {
        ring.try_push(&mut p, 3, 0, len, next, NO_TAG, None)
            .unwrap();
        let want = Pop::Item {
            index: 3,
            ret: 0,
            pos: p.tail - 1,
            len,
            next,
            tag: NO_TAG,
        };
        assert_eq!(ring.pop(), Ok(want));
    }
    // Beyond what fits, the announcement is left out, never garbled.
    ring.push_known_room(&mut p, 3, 0, 9, Some(MAX_ANNOUNCED + 1), NO_TAG, None);
    assert_eq!(ring.pop(), Ok(item(3, p.tail - 1, 9)));
    ring.push_known_room(&mut p, 3, 0, 9, Some(u32::MAX), NO_TAG, None);
    assert_eq!(ring.pop(), Ok(item(3, p.tail - 1, 9)));
}

#[test]
fn a_tagged_ring_carries_each_entrys_tag_in_its_slot() {
    let s: Vec<AtomicU64> = (0..4 * TAGGED_SLOT_WORDS)
        .map(|_| AtomicU64::new(0))
        .collect();
    let head = AtomicU64::new(0);
    let ring = Submission::with_tags(&s, &head, 4, true);
    let sole = ring.sole_consumer();
    let mut p = Producer::default();
    for i in 0..21u32 {
        let tag = [u64::from(i) << 32 | 7, u64::from(i) * 3];
        ring.try_push(&mut p, i % 4, 0, 8, Some(1), tag, None)
            .unwrap();
        let want = Pop::Item {
            index: i % 4,
            ret: 0,
            pos: u64::from(i),
            len: 8,
            next: Some(1),
            tag,
        };
        let got = if i % 2 == 0 { ring.pop() } else { sole.pop() };
        assert_eq!(got, Ok(want));
    }
    // Entry 20 sat in slot 0: its tag in words 2 and 3, the next slot's
    // descriptor in word 4.
    assert_eq!(s[2].load(Ordering::Relaxed), 20 << 32 | 7);
    assert_eq!(s[3].load(Ordering::Relaxed), 60);
    assert_eq!(s[4].load(Ordering::Relaxed) as u32, 17 % 4);
    assert_eq!(ring.pop(), Ok(Pop::Empty));
}

#[test]
fn return_slots_travel_and_laps_wrap_the_short_stamp() {
    // A ring of two slots driven through more than 1,024 laps, so the
    // ten-bit lap stamp wraps (to 0, the stamp of zeroed memory) several
    // times; the return slot, up to its widest, comes through untouched.
    let (words, head) = (slots(2), AtomicU64::new(0));
    let ring = Submission::new(&words, &head, 2);
    let mut p = Producer::default();
    let top = (MAX_RETURN_SLOTS - 1) as u32;
    for i in 0..5000u32 {
        let ret = if i % 2 == 0 { top } else { i % 7 };
        ring.try_push(&mut p, i ^ 0xdead_beef, ret, 1, None, NO_TAG, None)
            .unwrap();
        match ring.pop() {
            Ok(Pop::Item {
                index: got_index,
                ret: got_ret,
                ..
            }) => assert_eq!((got_index, got_ret), (i ^ 0xdead_beef, ret), "{i}"),
            other => panic!("{i}: {other:?}"),
        }
        assert_eq!(ring.pop(), Ok(Pop::Empty), "{i}");
    }
    // Taking back gives the slot too.
    ring.try_push(&mut p, 5, top, 1, None, NO_TAG, None)
        .unwrap();
    assert_eq!(ring.reclaim_oldest(&mut p), Ok(Some((5, top))));
}

/// `n` zeroed cells for an inline ring's payloads.
fn cells(n: usize) -> Vec<InlineCell> {
    (0..n)
        .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
        .collect()
}

/// The words of a cell.
fn read(c: &InlineCell) -> Inline {
    std::array::from_fn(|k| c[k].load(std::sync::atomic::Ordering::Relaxed))
}

#[test]
fn an_inline_ring_carries_each_payload_in_its_line() {
    // Plain (six payload words) and tagged (four), each slot a line of its
    // own; both kinds of consumer; the words of every lap come through,
    // into the cell of the entry's return slot alone, and the tag beside
    // them.
    for tagged in [false, true] {
        for sole in [false, true] {
            let s: Vec<AtomicU64> = (0..4 * INLINE_SLOT_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect();
            let head = AtomicU64::new(0);
            let mut ring = Submission::with_format(&s, &head, 3, tagged, true);
            if sole {
                ring = ring.sole_consumer();
            }
            let n = if tagged {
                TAGGED_INLINE_WORDS
            } else {
                INLINE_WORDS
            };
            assert_eq!(ring.inline_words(), n);
            let mut p = Producer::default();
            for i in 0..50u64 {
                let words: Inline = std::array::from_fn(|k| i * 100 + k as u64);
                let tag = [i, !i];
                let ret = (i % 3) as u32;
                ring.try_push(&mut p, 1, ret, 3, None, tag, Some(&words))
                    .unwrap();
                let cells = cells(3);
                let Ok(Pop::Item { tag: got_tag, .. }) = ring.pop_with(&cells) else {
                    panic!("{i}: nothing taken");
                };
                let inline = read(&cells[ret as usize]);
                assert_eq!(inline[..n], words[..n], "{i}");
                assert!(
                    inline[n..].iter().all(|&w| w == 0),
                    "{i}: words beyond the slot"
                );
                for (k, c) in cells.iter().enumerate() {
                    assert!(
                        k == ret as usize || read(c) == NO_INLINE,
                        "{i}: cell {k} written"
                    );
                }
                assert_eq!(got_tag, if tagged { tag } else { NO_TAG });
            }
            // Taken back under drop-oldest, nothing of it reaches a pop.
            if !sole {
                ring.try_push(&mut p, 4, 0, 1, None, NO_TAG, Some(&[7; INLINE_WORDS]))
                    .unwrap();
                assert_eq!(ring.reclaim_oldest(&mut p), Ok(Some((4, 0))));
                let cells = cells(1);
                assert_eq!(ring.pop_with(&cells), Ok(Pop::Empty));
                assert_eq!(read(&cells[0]), NO_INLINE, "an empty pop copies nothing");
            }
            // A return slot beyond the cells: the entry is taken, nothing
            // written (the caller refuses it).
            ring.try_push(&mut p, 4, 9, 1, None, NO_TAG, Some(&[7; INLINE_WORDS]))
                .unwrap();
            let few = cells(2);
            assert!(matches!(ring.pop_with(&few), Ok(Pop::Item { ret: 9, .. })));
            assert!(few.iter().all(|c| read(c) == NO_INLINE));
        }
    }
}
