//! loom models of the connection protocol (run with `RUSTFLAGS="--cfg loom"`).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use super::pool::{ChunkBook, Outstanding};
use super::returns::{DropCount, Returns};
use super::ring::{
    Inline, InlineCell, Pop, Producer, Push, Submission, Tag, INLINE_SLOT_WORDS, NO_TAG,
};
use super::sync::{AtomicU64, Ordering};

/// The tag entry `i` carries in a tagged ring.
fn tag_of(i: u32) -> Tag {
    [u64::from(i) + 200, !u64::from(i)]
}

fn slots(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// The words of a submission ring of `n` slots.
fn ring(n: usize) -> Vec<AtomicU64> {
    slots(n * super::ring::SLOT_WORDS)
}

/// The words of a tagged submission ring of `n` slots.
fn tagged_ring(n: usize) -> Vec<AtomicU64> {
    slots(n * super::ring::TAGGED_SLOT_WORDS)
}

/// The SPSC submission ring delivers every item once, in order, and a
/// consumer that sees an item also sees the data written before it.
#[test]
fn submission_ring_fifo() {
    fifo_model(false);
}

/// As above, with the store-only consumer of backpressure services, in a
/// tagged ring (as request/response uses them): each entry's tag is
/// published with it too.
#[test]
fn submission_ring_fifo_sole_consumer() {
    fifo_model(true);
}

fn fifo_model(sole: bool) {
    // The sole consumer's model runs a tagged ring, the other a plain one.
    let tagged = sole;
    loom::model(move || {
        let words = if tagged { tagged_ring(2) } else { ring(2) };
        let s = Arc::new((words, AtomicU64::new(0)));
        let data: Arc<Vec<UnsafeCell<u32>>> =
            Arc::new((0..3).map(|_| UnsafeCell::new(0)).collect());
        let (s2, d2) = (s.clone(), data.clone());
        let consumer = thread::spawn(move || {
            let mut ring = Submission::with_tags(&s2.0, &s2.1, 2, tagged);
            if sole {
                ring = ring.sole_consumer();
            }
            let mut got = Vec::new();
            while got.len() < 3 {
                match ring.pop().unwrap() {
                    Pop::Item {
                        index: i,
                        ret,
                        len,
                        next,
                        tag,
                        ..
                    } => {
                        // The return slot travels in the descriptor.
                        assert_eq!(ret, i + 3);
                        // SAFETY: loom's cell pointer is valid; loom reports a
                        // write racing with this read, which is what the model checks.
                        let v = d2[i as usize].with(|p| unsafe { *p });
                        assert_eq!(v, i + 100);
                        // The length travels in the slot, published with it.
                        assert_eq!(len, u64::from(i) + 7);
                        assert_eq!(next, Some(i + 1));
                        let want = if tagged { tag_of(i) } else { [0, 0] };
                        assert_eq!(tag, want);
                        got.push(i);
                    }
                    Pop::Empty => thread::yield_now(),
                }
            }
            assert_eq!(got, vec![0, 1, 2]);
        });
        let ring = Submission::with_tags(&s.0, &s.1, 2, tagged);
        let mut p = Producer::default();
        for i in 0..3u32 {
            // SAFETY: loom's cell pointer is valid; loom reports a read or
            // write racing with this one, which is what the model checks.
            data[i as usize].with_mut(|ptr| unsafe { *ptr = i + 100 });
            while ring
                .try_push(
                    &mut p,
                    i,
                    i + 3,
                    u64::from(i) + 7,
                    Some(i + 1),
                    tag_of(i),
                    None,
                )
                .unwrap()
                == Push::Full
            {
                thread::yield_now();
            }
        }
        consumer.join().unwrap();
    });
}

/// Drop-oldest: the producer's reclaim and the consumer's pop race for the
/// oldest entry; exactly one of them gets it, and nothing is lost or doubled.
#[test]
fn reclaim_races_pop() {
    loom::model(|| {
        let s = Arc::new((ring(2), AtomicU64::new(0)));
        let s2 = s.clone();
        let ring = Submission::new(&s.0, &s.1, 2);
        let mut p = Producer::default();
        ring.try_push(&mut p, 0, 0, 1, None, NO_TAG, None).unwrap();
        ring.try_push(&mut p, 1, 1, 1, None, NO_TAG, None).unwrap();
        let consumer = thread::spawn(move || {
            let ring = Submission::new(&s2.0, &s2.1, 2);
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Pop::Item { index: i, .. } = ring.pop().unwrap() {
                    got.push(i);
                }
            }
            got
        });
        let mut reclaimed = Vec::new();
        if let Some((i, ret)) = ring.reclaim_oldest(&mut p).unwrap() {
            assert_eq!(ret, i);
            reclaimed.push(i);
            assert_eq!(
                ring.try_push(&mut p, 2, 2, 1, None, NO_TAG, None).unwrap(),
                Push::Done
            );
        }
        let got = consumer.join().unwrap();
        let mut rest = Vec::new();
        while let Pop::Item { index: i, .. } = ring.pop().unwrap() {
            rest.push(i);
        }
        let mut all: Vec<u32> = got.iter().chain(&reclaimed).chain(&rest).copied().collect();
        // Consumer order is FIFO.
        let consumed: Vec<u32> = got.iter().chain(&rest).copied().collect();
        assert!(consumed.windows(2).all(|w| w[0] < w[1]), "{consumed:?}");
        all.sort_unstable();
        all.dedup();
        let expected = if reclaimed.is_empty() {
            vec![0, 1]
        } else {
            vec![0, 1, 2]
        };
        assert_eq!(all, expected);
        assert_eq!(got.len() + reclaimed.len() + rest.len(), expected.len());
    });
}

/// Drop-oldest on an inline ring: the producer takes entry 0 back and
/// writes entry 2 into the very slot (of a ring of two) while the consumer
/// may be copying entry 0's payload out of it. Whatever the consumer takes,
/// its payload and tag are the ones pushed with that entry: a copy that
/// raced a rewrite is dropped with its lost compare-and-swap.
#[test]
fn inline_payload_never_torn_by_a_take_back() {
    let payload = |i: u32| -> Inline { std::array::from_fn(|k| u64::from(i) * 100 + k as u64) };
    loom::model(move || {
        let s = Arc::new((slots(2 * INLINE_SLOT_WORDS), AtomicU64::new(0)));
        let s2 = s.clone();
        let ring = Submission::with_format(&s.0, &s.1, 2, true, true);
        let mut p = Producer::default();
        for i in 0..2 {
            ring.try_push(&mut p, i, i, 1, None, tag_of(i), Some(&payload(i)))
                .unwrap();
        }
        let consumer = thread::spawn(move || {
            let ring = Submission::with_format(&s2.0, &s2.1, 2, true, true);
            let n = ring.inline_words();
            let cells: Vec<InlineCell> = (0..3)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect();
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Pop::Item {
                    index, ret, tag, ..
                } = ring.pop_with(&cells).unwrap()
                {
                    assert_eq!(tag, tag_of(index));
                    let cell = &cells[ret as usize][..n];
                    let words: Vec<u64> = cell.iter().map(|w| w.load(Ordering::Relaxed)).collect();
                    assert_eq!(words[..], payload(index)[..n], "entry {index}");
                    got.push(index);
                }
            }
            got
        });
        if let Some((old, _)) = ring.reclaim_oldest(&mut p).unwrap() {
            assert_eq!(
                ring.try_push(&mut p, 2, 2, 1, None, tag_of(2), Some(&payload(2))),
                Ok(Push::Done)
            );
            // The oldest the consumer had not taken yet.
            assert!(old < 2);
        }
        let got = consumer.join().unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    });
}

/// The pool protocol end to end: a publisher loans, writes and sends chunks
/// through the submission ring and takes returned chunks back through the
/// return words; a subscriber reads and returns them. loom's UnsafeCell
/// reports any moment where a chunk is written while a reader holds it.
#[test]
fn pool_reuse_is_exclusive() {
    loom::model(|| {
        const CHUNKS: u32 = 2;
        const MSGS: u32 = 3;
        let shared = Arc::new((ring(1), AtomicU64::new(0), slots(CHUNKS as usize)));
        let data: Arc<Vec<UnsafeCell<u32>>> =
            Arc::new((0..CHUNKS).map(|_| UnsafeCell::new(0)).collect());
        let (sh2, d2) = (shared.clone(), data.clone());
        let subscriber = thread::spawn(move || {
            let sub = Submission::new(&sh2.0, &sh2.1, 1);
            let returns = Returns::new(&sh2.2);
            let mut expect = 0;
            while expect < MSGS {
                match sub.pop().unwrap() {
                    Pop::Item {
                        index: i, ret, pos, ..
                    } => {
                        // SAFETY: loom's cell pointer is valid; loom reports a
                        // write racing with this read, which is what the model checks.
                        let v = d2[i as usize].with(|p| unsafe { *p });
                        assert_eq!(v, expect);
                        expect += 1;
                        returns.release(ret, pos + 1);
                    }
                    Pop::Empty => thread::yield_now(),
                }
            }
        });
        let sub = Submission::new(&shared.0, &shared.1, 1);
        let returns = Returns::new(&shared.2);
        let mut book = ChunkBook::new(CHUNKS);
        let mut out = Outstanding::new(CHUNKS);
        let mut p = Producer::default();
        for seq in 0..MSGS {
            let idx = loop {
                out.take_returned(&returns, |i| {
                    book.release(i);
                });
                match book.alloc() {
                    Some(i) => break i,
                    None => thread::yield_now(),
                }
            };
            // SAFETY: loom's cell pointer is valid; loom reports a read or
            // write racing with this one, which is what the model checks.
            data[idx as usize].with_mut(|ptr| unsafe { *ptr = seq });
            let stamp = p.tail + 1;
            // As many return slots as chunks may be outstanding (the
            // publisher keeps each delivery's slot until it came back).
            let ret = out.free_slot().unwrap();
            loop {
                match sub
                    .try_push(&mut p, idx, ret, 1, None, NO_TAG, None)
                    .unwrap()
                {
                    Push::Done => break,
                    Push::Full => thread::yield_now(),
                }
            }
            out.insert(ret, idx, stamp);
            book.add_ref(idx);
            book.release(idx);
        }
        subscriber.join().unwrap();
        out.take_returned(&returns, |i| {
            book.release(i);
        });
        assert_eq!(book.free_count(), CHUNKS as usize);
    });
}

/// Two threads of the subscriber's process drop samples while the
/// subscriber lets go of the connection: exactly one of the three frees it,
/// and only after both return stores (which it can then see).
#[test]
fn connection_freed_once_after_every_drop() {
    loom::model(|| {
        let shared = Arc::new((slots(4), DropCount::new()));
        let drop_sample = |sh: Arc<(Vec<AtomicU64>, DropCount)>, idx: u32| {
            Returns::new(&sh.0).release(idx, 1);
            sh.1.sample_dropped(|| 2).then(|| {
                let r = Returns::new(&sh.0);
                assert!(r.returned(1, 1) && r.returned(2, 1));
            })
        };
        let (a, b) = (shared.clone(), shared.clone());
        let ta = thread::spawn(move || drop_sample(a, 1).is_some());
        let tb = thread::spawn(move || drop_sample(b, 2).is_some());
        // The subscriber received the two samples, then lets go.
        let owner = shared.1.owner_gone(2);
        if owner {
            let r = Returns::new(&shared.0);
            assert!(r.returned(1, 1) && r.returned(2, 1));
        }
        let freed = [owner, ta.join().unwrap(), tb.join().unwrap()];
        assert_eq!(freed.iter().filter(|f| **f).count(), 1);
        // Relaxed is fine: every thread joined.
        let _ = Ordering::Relaxed;
    });
}

/// A model of the kernel's futex: the value check and the sleep are atomic
/// with respect to wakes (the kernel's hash-bucket lock), as on Linux.
struct LoomFutex {
    m: loom::sync::Mutex<()>,
    cv: loom::sync::Condvar,
}

impl super::park::Kernel for LoomFutex {
    fn futex_wait(
        &self,
        word: &super::sync::AtomicU32,
        expected: u32,
        _t: Option<std::time::Duration>,
    ) {
        let g = self.m.lock().unwrap();
        if word.load(Ordering::Relaxed) != expected {
            return;
        }
        drop(self.cv.wait(g).unwrap());
    }
    fn futex_wake(&self, _word: &super::sync::AtomicU32) {
        let _g = self.m.lock().unwrap();
        self.cv.notify_all();
    }
}

/// No lost wake-up: a receiver that parks while the sender publishes is
/// always woken (loom reports a deadlock otherwise), for two rounds.
#[test]
fn park_notify_no_lost_wakeup() {
    loom::model(|| {
        let shared = Arc::new((
            super::park::WakeBlock::default(),
            AtomicU64::new(0),
            LoomFutex {
                m: loom::sync::Mutex::new(()),
                cv: loom::sync::Condvar::new(),
            },
        ));
        let s2 = shared.clone();
        // ORDERING (this model's data word): Release stores pair with the
        // receiver's Acquire loads, as a ring slot does in the library.
        let sender = thread::spawn(move || {
            for i in 1..=2 {
                s2.1.store(i, Ordering::Release);
                s2.0.notify(&s2.2);
            }
        });
        let (block, data, kernel) = (&shared.0, &shared.1, &shared.2);
        let mut seen = 0;
        while seen < 2 {
            let v = data.load(Ordering::Acquire);
            if v > seen {
                seen = v;
                continue;
            }
            block.park(kernel, || data.load(Ordering::Acquire) > seen, None);
        }
        sender.join().unwrap();
    });
}

/// A notify wakes the listener it is meant for and no other: with two wake
/// blocks, notifying one leaves the other's epoch untouched.
#[test]
fn notify_targets_one_block() {
    loom::model(|| {
        let shared = Arc::new((
            super::park::WakeBlock::default(),
            super::park::WakeBlock::default(),
            AtomicU64::new(0),
            LoomFutex {
                m: loom::sync::Mutex::new(()),
                cv: loom::sync::Condvar::new(),
            },
        ));
        let s2 = shared.clone();
        // ORDERING: as in park_notify_no_lost_wakeup.
        let sender = thread::spawn(move || {
            s2.2.store(1, Ordering::Release);
            s2.0.notify(&s2.3);
        });
        let (a, data, kernel) = (&shared.0, &shared.2, &shared.3);
        while data.load(Ordering::Acquire) == 0 {
            a.park(kernel, || data.load(Ordering::Acquire) != 0, None);
        }
        sender.join().unwrap();
        assert_eq!(shared.1.epoch.load(Ordering::Relaxed), 0);
        assert_eq!(shared.1.waiters.load(Ordering::Relaxed), 0);
    });
}

/// A connection's sample count with its bias: the subscriber's thread drops
/// samples with plain counts while another thread drops one atomically and
/// the subscriber lets go (on another thread, revoking the bias with a
/// barrier, which is a SeqCst fence here, or on its own thread): exactly one
/// party frees the connection, and only after every sample's return.
#[test]
fn sample_count_frees_once_with_a_bias() {
    sample_count_model(true);
}

/// As above, with the subscriber letting go on its own thread.
#[test]
fn sample_count_frees_once_letting_go_at_home() {
    sample_count_model(false);
}

fn sample_count_model(let_go_elsewhere: bool) {
    use super::bias::SampleCount;
    use super::sync::fence;
    loom::model(move || {
        let shared = Arc::new((slots(3), SampleCount::new(true)));
        // This is the subscriber's thread: three samples received, which
        // claims the bias for it.
        for _ in 0..3 {
            shared.1.received_one();
        }
        let drop_sample = |sh: &(Vec<AtomicU64>, SampleCount), idx: u32| -> bool {
            Returns::new(&sh.0).release(idx, 1);
            let frees = sh.1.sample_dropped();
            if frees {
                let r = Returns::new(&sh.0);
                assert!((0..3).all(|i| r.returned(i, 1)), "freed before a return");
            }
            frees
        };
        let let_go = |sh: &(Vec<AtomicU64>, SampleCount)| -> bool {
            let frees = sh.1.let_go(|| {
                fence(Ordering::SeqCst);
                true
            });
            if frees {
                let r = Returns::new(&sh.0);
                assert!((0..3).all(|i| r.returned(i, 1)), "freed before a return");
            }
            frees
        };
        let a = shared.clone();
        let other = thread::spawn(move || drop_sample(&a, 1));
        let mut freed = Vec::new();
        if let_go_elsewhere {
            let b = shared.clone();
            let handle = thread::spawn(move || let_go(&b));
            freed.push(drop_sample(&shared, 0));
            freed.push(drop_sample(&shared, 2));
            freed.push(handle.join().unwrap());
        } else {
            freed.push(drop_sample(&shared, 0));
            freed.push(let_go(&shared));
            freed.push(drop_sample(&shared, 2));
        }
        freed.push(other.join().unwrap());
        assert_eq!(freed.iter().filter(|f| **f).count(), 1, "{freed:?}");
    });
}

/// A blackboard entry under loom: its state word, sequence words, and
/// values of two words each, written and read with relaxed atomics (so a
/// torn value shows as two words that differ).
struct Board {
    state: AtomicU64,
    seqs: Vec<AtomicU64>,
    values: Vec<[AtomicU64; 2]>,
}

fn board(n: usize) -> Board {
    Board {
        state: AtomicU64::new(0),
        seqs: (0..n).map(|_| AtomicU64::new(0)).collect(),
        values: (0..n)
            .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
            .collect(),
    }
}

fn board_entry(b: &Board) -> super::board::Entry<'_> {
    // SAFETY: the values live as long as the entry, one per sequence word,
    // the stride their size.
    unsafe {
        super::board::Entry::new(
            &b.state,
            &b.seqs,
            b.values.as_ptr().cast_mut().cast(),
            std::mem::size_of::<[AtomicU64; 2]>() as u64,
            16,
        )
    }
}

/// Both words of the value at `p` (relaxed loads, as the copy of a value
/// another process writes).
fn board_words(p: *const u8) -> [u64; 2] {
    // SAFETY: `p` is a Board's value (see board_entry).
    let v = unsafe { &*p.cast::<[AtomicU64; 2]>() };
    [v[0].load(Ordering::Relaxed), v[1].load(Ordering::Relaxed)]
}

/// The writer's update: the value `[v, v]` for version `v`, in a buffer
/// that is neither current nor pinned (`pin` is the reader's pin word).
fn board_update(e: &super::board::Entry<'_>, pin: &AtomicU64) -> u64 {
    // ORDERING: Acquire (both), as the library's writer: the state's
    // publish, and the reader's pin before the buffer is reused.
    let s = e.state(Ordering::Acquire).unwrap();
    let b = e
        .free_buffer(s.buffer, |b| pin.load(Ordering::Acquire) == b + 1)
        .expect("a free buffer");
    let v = s.next_version();
    e.write(b, v, |p| {
        // SAFETY: as in board_words.
        let w = unsafe { &*p.cast::<[AtomicU64; 2]>() };
        w[0].store(v, Ordering::Relaxed);
        w[1].store(v, Ordering::Relaxed);
    });
    e.publish(s, b)
}

/// A copy read that succeeds is never torn and is the version it says,
/// however the writer's two updates interleave with it (two buffers: the
/// second update reuses the buffer the reader may be copying).
#[test]
fn board_copy_is_never_torn() {
    loom::model(|| {
        let shared = Arc::new((board(2), AtomicU64::new(0)));
        let w = shared.clone();
        let writer = thread::spawn(move || {
            let e = board_entry(&w.0);
            assert_eq!(board_update(&e, &w.1), 1);
            assert_eq!(board_update(&e, &w.1), 2);
        });
        let e = board_entry(&shared.0);
        let mut words = [0; 2];
        if let Some(v) = e.try_read(|p| words = board_words(p)).unwrap() {
            assert_eq!(words, [v, v], "version {v} read as {words:?}");
        }
        writer.join().unwrap();
    });
}

/// A pinned value stays as it was while the writer updates: the writer
/// never chooses the pinned buffer (three buffers: one reader plus two;
/// three updates, so that the writer comes back to the buffer the reader
/// saw first).
#[test]
fn board_pin_holds_the_value() {
    loom::model(|| {
        let shared = Arc::new((board(3), AtomicU64::new(0)));
        let w = shared.clone();
        let writer = thread::spawn(move || {
            let e = board_entry(&w.0);
            for _ in 0..3 {
                board_update(&e, &w.1);
            }
        });
        let e = board_entry(&shared.0);
        let s = e.pin(&shared.1).unwrap();
        let first = board_words(e.value_ptr(s.buffer));
        assert_eq!(first, [s.version, s.version]);
        let again = board_words(e.value_ptr(s.buffer));
        assert_eq!(again, first, "the pinned value changed");
        super::board::Entry::unpin(&shared.1);
        writer.join().unwrap();
    });
}
