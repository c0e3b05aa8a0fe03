//! The writer: one per blackboard at a time. It updates an entry by copy
//! ([`WriterEntry::update`]) or by writing in place into a loan
//! ([`WriterEntry::loan_uninit`], [`WriterEntry::loan_latest`]), then
//! publishing it. It never waits for a reader; a reader that sleeps until
//! an entry changes is woken by the publish (a system call only for a
//! reader that sleeps, and a load or two for every other).

use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::access::{BlackboardError, Board, Handles, Parts};
use crate::core::board::State;
use crate::core::park::{publish_barrier, Kernel};
use crate::domain::nodefile::new_id;
use crate::domain::service::inner::NewPort;
use crate::domain::service::tables::PortKind;
use crate::os::futex::OsKernel;
use crate::port::pokes::Pokes;
use crate::port::payload::{Payload, ShmSafe};

/// Builds the [`Writer`] of a blackboard.
#[derive(Debug)]
pub struct WriterBuilder {
    pub(super) parts: Parts,
}

impl WriterBuilder {
    /// Creates the writer; fails with [`BlackboardError::WriterExists`]
    /// while another one lives.
    pub fn create(self) -> Result<Writer, BlackboardError> {
        let s = self.parts;
        let svc = s.svc.clone();
        let port_id = new_id();
        let entry = NewPort {
            kind: PortKind::Publisher,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: 1,
        };
        let Some(index) = svc.register(entry, |_| {}, |_| {})? else {
            return Err(BlackboardError::WriterExists {
                service: svc.name.to_string(),
            });
        };
        let readers = s.settings.qos.max_readers as usize;
        Ok(Writer {
            port: Arc::new(WriterPort {
                board: Board::new(s),
                port_id,
                index,
                pokes: Pokes::new(readers),
            }),
        })
    }
}

/// The registered writer, kept alive by the writer and its entries.
#[derive(Debug)]
struct WriterPort {
    board: Board,
    port_id: u64,
    index: usize,
    /// Write ends of readers' FIFOs, opened when first needed.
    pokes: Pokes,
}

impl WriterPort {
    /// After entry `i` was published: wakes the readers that wait for it
    /// (their interest bit set) and sleep; others cost a load or two.
    fn wake(&self, i: usize) {
        let b = &self.board;
        let svc = &b.svc;
        // Once for every reader: pairs with the fence and sleeper's barrier
        // a reader makes after it set its interest bit and registered as a
        // sleeper (core/park.rs): either this sees both, or its re-check
        // sees the new version.
        publish_barrier();
        for j in 0..svc.table_len(PortKind::Subscriber) {
            let slot = svc.port_slot(PortKind::Subscriber, j);
            // ORDERING: Acquire; pairs with the Release store in register(),
            // after the reader's area was zeroed.
            let pid = slot.port_id.load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            let (word, bit) = b.interest(j, i);
            // Relaxed: ordered by the barrier above.
            if word.load(Ordering::Relaxed) & bit == 0 {
                continue;
            }
            let w = slot.wake.sleepers_after_fence();
            if w.futex {
                OsKernel.futex_wake(&slot.wake.epoch);
            }
            if w.fd {
                self.pokes.poke(svc, j, pid);
            }
        }
    }
}

impl Drop for WriterPort {
    fn drop(&mut self) {
        self.board
            .svc
            .unregister(PortKind::Publisher, self.index, self.port_id);
    }
}

/// A blackboard's writer. `Send` and `Sync`; its entries
/// ([`entry`](Self::entry)) do the writing.
#[derive(Debug)]
pub struct Writer {
    port: Arc<WriterPort>,
}

impl Writer {
    /// The writer's unique port id.
    pub fn id(&self) -> u64 {
        self.port.port_id
    }

    /// The entry `key`, whose values are `T`s (checked against the
    /// service's type). One handle per entry at a time.
    pub fn entry<T: ShmSafe + Copy>(&self, key: &str) -> Result<WriterEntry<T>, BlackboardError> {
        let i = self.port.board.take(key, <T as Payload>::details())?;
        Ok(WriterEntry {
            port: self.port.clone(),
            i,
            _t: Handles::default(),
        })
    }
}

/// Writes one entry. `Send`, not `Sync` (one thread writes an entry).
pub struct WriterEntry<T: ShmSafe + Copy> {
    port: Arc<WriterPort>,
    i: usize,
    _t: Handles<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for WriterEntry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterEntry").field("key", &self.key()).finish()
    }
}

impl<T: ShmSafe + Copy> Drop for WriterEntry<T> {
    fn drop(&mut self) {
        self.port.board.give_back(self.i);
    }
}

impl<T: ShmSafe + Copy> WriterEntry<T> {
    /// The entry's key.
    pub fn key(&self) -> &str {
        &self.port.board.settings.entries[self.i].key
    }

    /// The entry's version: its updates so far.
    pub fn version(&self) -> Result<u64, BlackboardError> {
        Ok(self.current()?.version)
    }

    fn current(&self) -> Result<State, BlackboardError> {
        let b = &self.port.board;
        // ORDERING: Acquire; pairs with the Release publish of a writer before
        // this one (a writer that died): its value is visible.
        b.entry(self.i)
            .state(Ordering::Acquire)
            .map_err(|_| b.corrupted(self.i))
    }

    /// A buffer no reader holds and the current version's state.
    fn claim(&self) -> Result<(State, u64), BlackboardError> {
        let b = &self.port.board;
        let svc = &b.svc;
        let current = self.current()?;
        let readers = svc.table_len(PortKind::Subscriber);
        let pinned = |buf: u64| {
            (0..readers).any(|j| {
                // ORDERING: Acquire; pairs with the Release store of the port
                // id in register(), which follows the zeroing of the pins.
                svc.port_slot(PortKind::Subscriber, j)
                    .port_id
                    .load(Ordering::Acquire)
                    != 0
                    // ORDERING: Acquire; after the barrier of free_buffer(),
                    // pairs with the reader's pin store and barrier, and with
                    // the Release of its unpin (see core/board.rs).
                    && b.pin(j, self.i).load(Ordering::Acquire) == buf + 1
            })
        };
        let buf = b
            .entry(self.i)
            .free_buffer(current.buffer, pinned)
            .ok_or_else(|| b.corrupted(self.i))?;
        Ok((current, buf))
    }

    /// Publishes `value` as the entry's next version (a copy into shared
    /// memory); returns that version.
    pub fn update(&mut self, value: T) -> Result<u64, BlackboardError> {
        let mut loan = self.loan_uninit()?;
        loan.payload_mut().write(value);
        // SAFETY: written just above.
        Ok(unsafe { loan.assume_init() }.publish())
    }

    /// Lends a buffer to write the next version in place; its bytes are an
    /// older version's (or anything), so write all of it. Dropped
    /// unpublished, nothing changes.
    pub fn loan_uninit(&mut self) -> Result<EntryLoanUninit<'_, T>, BlackboardError> {
        let (current, buf) = self.claim()?;
        let next = current.next_version();
        self.port.board.entry(self.i).begin_write(buf, next);
        Ok(EntryLoanUninit {
            entry: self,
            current,
            buf,
            next,
            ended: false,
        })
    }

    /// Lends a buffer holding a copy of the current value, to change in
    /// place and publish as the next version.
    pub fn loan_latest(&mut self) -> Result<EntryLoan<'_, T>, BlackboardError> {
        let loan = self.loan_uninit()?;
        let e = loan.entry.port.board.entry(loan.entry.i);
        // SAFETY: the current buffer and the loaned one are distinct buffers
        // of `size_of::<T>()` bytes; no one writes the current one (only
        // this writer writes, and not there).
        unsafe {
            std::ptr::copy_nonoverlapping(
                e.value_ptr(loan.current.buffer),
                e.value_ptr(loan.buf),
                std::mem::size_of::<T>(),
            );
            Ok(loan.assume_init())
        }
    }
}

/// A buffer of an entry lent to the writer, not yet written.
pub struct EntryLoanUninit<'a, T: ShmSafe + Copy> {
    entry: &'a mut WriterEntry<T>,
    current: State,
    buf: u64,
    /// The version it writes.
    next: u64,
    /// Its write was ended (by publish).
    ended: bool,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryLoanUninit<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryLoanUninit")
            .field("key", &self.entry.key())
            .finish()
    }
}

impl<'a, T: ShmSafe + Copy> EntryLoanUninit<'a, T> {
    /// The buffer's value, to write.
    pub fn payload_mut(&mut self) -> &mut MaybeUninit<T> {
        let p = self.entry.port.board.entry(self.entry.i).value_ptr(self.buf);
        // SAFETY: the buffer is this loan's (no reader reads it: it is
        // neither current nor pinned), holds size_of::<T>() bytes aligned
        // for T (the value offset is a multiple of T's alignment, the
        // buffers start on a LINE), for the loan's lifetime.
        unsafe { &mut *p.cast::<MaybeUninit<T>>() }
    }

    /// Writes `value` into the buffer.
    pub fn write(mut self, value: T) -> EntryLoan<'a, T> {
        self.payload_mut().write(value);
        // SAFETY: written just above.
        unsafe { self.assume_init() }
    }

    /// The loan, its value written.
    ///
    /// # Safety
    /// Every byte of the value that `T` needs was written (through
    /// [`payload_mut`](Self::payload_mut)).
    pub unsafe fn assume_init(self) -> EntryLoan<'a, T> {
        EntryLoan(self)
    }
}

impl<T: ShmSafe + Copy> Drop for EntryLoanUninit<'_, T> {
    fn drop(&mut self) {
        // Unpublished: the buffer's value is whole again, and simply never
        // becomes current.
        if !self.ended {
            self.entry
                .port
                .board
                .entry(self.entry.i)
                .end_write(self.buf, self.next);
        }
    }
}

/// A written buffer of an entry, to change further in place and publish.
pub struct EntryLoan<'a, T: ShmSafe + Copy>(EntryLoanUninit<'a, T>);

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryLoan<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryLoan")
            .field("key", &self.0.entry.key())
            .finish()
    }
}

impl<T: ShmSafe + Copy> Deref for EntryLoan<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        let p = self.0.entry.port.board.entry(self.0.entry.i).value_ptr(self.0.buf);
        // SAFETY: as in payload_mut; initialised (assume_init's promise).
        unsafe { &*p.cast::<T>() }
    }
}

impl<T: ShmSafe + Copy> DerefMut for EntryLoan<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: initialised (assume_init's promise).
        unsafe { self.0.payload_mut().assume_init_mut() }
    }
}

impl<T: ShmSafe + Copy> EntryLoan<'_, T> {
    /// Publishes the value as the entry's next version; returns it.
    pub fn publish(mut self) -> u64 {
        let l = &mut self.0;
        let e = l.entry.port.board.entry(l.entry.i);
        e.end_write(l.buf, l.next);
        l.ended = true;
        let version = e.publish(l.current, l.buf);
        l.entry.port.wake(l.entry.i);
        version
    }
}
