//! The writer: one per blackboard at a time. It updates an entry by copy
//! ([`WriterEntry::update`]) or by writing in place into a loan
//! ([`WriterEntry::loan_uninit`], [`WriterEntry::loan_latest`]), then
//! publishing it. It never waits for a reader; a reader that sleeps until
//! an entry changes is woken by the publish (a system call only for a
//! reader that sleeps, and a load or two for every other). The entries'
//! typed handles stand on byte-level ones ([`RawWriterEntry`]), which the
//! other languages' faces and the `hako` tool use.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use super::access::{BlackboardError, Handles, Parts};
use super::ports::WriterPort;
use crate::core::board::State;
use crate::port::payload::{Payload, ShmSafe, TypeDetails};

/// Builds the [`Writer`] of a blackboard.
#[derive(Debug)]
pub struct WriterBuilder {
    pub(super) parts: Parts,
}

impl WriterBuilder {
    /// Creates the writer; fails with [`BlackboardError::WriterExists`]
    /// while another one lives.
    pub fn create(self) -> Result<Writer, BlackboardError> {
        Ok(Writer {
            port: Arc::new(WriterPort::register(self.parts)?),
        })
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
        Ok(WriterEntry {
            raw: self.entry_described(key, <T as Payload>::details())?,
            _t: Handles::default(),
        })
    }

    /// The entry `key`, whose values are described at run time (`value`,
    /// checked against the service's type), written as bytes.
    pub fn entry_described(
        &self,
        key: &str,
        value: TypeDetails,
    ) -> Result<RawWriterEntry, BlackboardError> {
        let i = self.port.board.take(key, value)?;
        Ok(RawWriterEntry {
            port: self.port.clone(),
            i,
            ready: None,
            held: None,
        })
    }
}

/// Writes one entry as bytes. `Send`, not `Sync`.
pub struct RawWriterEntry {
    port: Arc<WriterPort>,
    i: usize,
    /// The buffer the next update writes, chosen and marked as being
    /// written right after the last publish, so that an update's own
    /// path holds only the value's stores and the publish (no barrier, no
    /// look at the readers' pins, no store to the header line before the
    /// value's).
    ready: Option<Claim>,
    /// A loan held across calls by a face that cannot borrow ([`begin`](Self::begin)).
    held: Option<Claim>,
}

/// A buffer claimed for the next version: the state it follows, the
/// buffer, the version it will hold (its sequence word says so, odd).
#[derive(Debug, Clone, Copy)]
struct Claim {
    current: State,
    buf: u64,
    next: u64,
}

impl std::fmt::Debug for RawWriterEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.port.board.debug_entry(f, "RawWriterEntry", self.i)
    }
}

impl Drop for RawWriterEntry {
    fn drop(&mut self) {
        self.abandon();
        self.port.board.give_back(self.i);
    }
}

impl RawWriterEntry {
    /// The entry's key.
    pub fn key(&self) -> &str {
        self.port.board.key(self.i)
    }

    /// Bytes of the entry's value.
    pub fn size(&self) -> usize {
        self.port.board.size(self.i)
    }

    /// The entry's version: its updates so far.
    pub fn version(&self) -> Result<u64, BlackboardError> {
        Ok(self.port.current(self.i)?.version)
    }

    /// Publishes `value` (exactly [`size`](Self::size) bytes) as the next
    /// version; returns it.
    pub fn update_bytes(&mut self, value: &[u8]) -> Result<u64, BlackboardError> {
        if value.len() != self.size() {
            return Err(BlackboardError::WrongSize {
                key: self.key().to_owned(),
                size: self.size(),
                given: value.len(),
            });
        }
        let mut loan = self.loan()?;
        loan.bytes_mut().copy_from_slice(value);
        Ok(loan.publish())
    }

    /// Claims a buffer for the next version and marks it as being written.
    fn claim(&self) -> Result<Claim, BlackboardError> {
        let (current, buf) = self.port.claim(self.i)?;
        let next = current.next_version();
        self.port.board.entry(self.i).begin_write(buf, next);
        Ok(Claim { current, buf, next })
    }

    /// Lends a buffer to write the next version in place, as bytes (they
    /// hold an older version's value, or anything): write all of them.
    /// Dropped unpublished, nothing changes.
    pub fn loan(&mut self) -> Result<RawEntryLoan<'_>, BlackboardError> {
        let claim = match self.ready.take() {
            Some(c) => c,
            None => self.claim()?,
        };
        Ok(RawEntryLoan {
            entry: self,
            claim,
            ended: false,
        })
    }
}

impl RawWriterEntry {
    /// Lends a buffer as [`loan`](Self::loan) does, held by the entry until
    /// [`commit`](Self::commit) or [`abandon`](Self::abandon): for faces
    /// that cannot hold a borrow (the C API). Returns the buffer's first
    /// byte ([`size`](Self::size) bytes, writable until then);
    /// [`BlackboardError::LoanHeld`] while one is held.
    /// With `latest`, the buffer holds a copy of the current value (to
    /// change part of it); else an older version's bytes.
    pub fn begin(&mut self, latest: bool) -> Result<*mut u8, BlackboardError> {
        if self.held.is_some() {
            return Err(BlackboardError::LoanHeld {
                key: self.key().to_owned(),
            });
        }
        let claim = match self.ready.take() {
            Some(c) => c,
            None => self.claim()?,
        };
        self.held = Some(claim);
        let e = self.port.board.entry(self.i);
        let p = e.value_ptr(claim.buf);
        if latest {
            // SAFETY: the current buffer and the held one are distinct
            // buffers of size() bytes; only this writer writes, and not to
            // the current one.
            unsafe {
                std::ptr::copy_nonoverlapping(e.value_ptr(claim.current.buffer), p, self.size());
            }
        }
        Ok(p)
    }

    /// Publishes the buffer lent by [`begin`](Self::begin); returns its
    /// version ([`BlackboardError::NoLoan`] if none is held).
    pub fn commit(&mut self) -> Result<u64, BlackboardError> {
        let claim = self.held.take().ok_or_else(|| BlackboardError::NoLoan {
            key: self.key().to_owned(),
        })?;
        Ok(RawEntryLoan {
            entry: self,
            claim,
            ended: false,
        }
        .publish())
    }

    /// Gives back the buffer lent by [`begin`](Self::begin), unpublished.
    pub fn abandon(&mut self) {
        if let Some(claim) = self.held.take() {
            drop(RawEntryLoan {
                entry: self,
                claim,
                ended: false,
            });
        }
    }
}

/// A buffer of an entry lent to the writer, as bytes.
pub struct RawEntryLoan<'a> {
    entry: &'a mut RawWriterEntry,
    claim: Claim,
    /// Its write was ended (by publish).
    ended: bool,
}

impl std::fmt::Debug for RawEntryLoan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawEntryLoan")
            .field("key", &self.entry.key())
            .field("version", &self.claim.next)
            .finish()
    }
}

impl RawEntryLoan<'_> {
    fn ptr(&self) -> *mut u8 {
        let e = &self.entry;
        e.port.board.entry(e.i).value_ptr(self.claim.buf)
    }

    /// The buffer's bytes, to write. They are not read by anyone until
    /// published.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the buffer is this loan's (no reader reads it: it is
        // neither current nor pinned) and holds size() bytes, for the
        // loan's lifetime. Its bytes are initialised (shared memory is
        // zero-filled when created, and only whole values are written).
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.entry.size()) }
    }

    /// Copies the current value into the buffer (to change part of it).
    pub fn copy_latest(&mut self) {
        let e = self.entry.port.board.entry(self.entry.i);
        // SAFETY: the current buffer and the loaned one are distinct buffers
        // of size() bytes; no one writes the current one (only this writer
        // writes, and not there).
        unsafe {
            std::ptr::copy_nonoverlapping(
                e.value_ptr(self.claim.current.buffer),
                self.ptr(),
                self.entry.size(),
            );
        }
    }

    /// Publishes the buffer as the entry's next version; returns it.
    pub fn publish(mut self) -> u64 {
        let port = self.entry.port.clone();
        let (i, c) = (self.entry.i, self.claim);
        let e = port.board.entry(i);
        e.end_write(c.buf, c.next);
        self.ended = true;
        let version = e.publish(c.current, c.buf);
        port.wake(i);
        // Off the next update's path: its buffer, chosen now. (An error,
        // the entry's state corrupted, is met again by the next loan.)
        self.entry.ready = self.entry.claim().ok();
        version
    }
}

impl Drop for RawEntryLoan<'_> {
    fn drop(&mut self) {
        // Unpublished: the buffer's value is whole again, and simply never
        // becomes current.
        if !self.ended {
            let e = &self.entry;
            e.port
                .board
                .entry(e.i)
                .end_write(self.claim.buf, self.claim.next);
        }
    }
}

/// Writes one entry. `Send`, not `Sync` (one thread writes an entry).
pub struct WriterEntry<T: ShmSafe + Copy> {
    raw: RawWriterEntry,
    _t: Handles<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for WriterEntry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterEntry").field("key", &self.key()).finish()
    }
}

impl<T: ShmSafe + Copy> WriterEntry<T> {
    /// The entry's key.
    pub fn key(&self) -> &str {
        self.raw.key()
    }

    /// The entry's version: its updates so far.
    pub fn version(&self) -> Result<u64, BlackboardError> {
        self.raw.version()
    }

    /// Publishes `value` as the entry's next version (a copy into shared
    /// memory); returns that version.
    pub fn update(&mut self, value: T) -> Result<u64, BlackboardError> {
        Ok(self.loan_uninit()?.write(value).publish())
    }

    /// Lends a buffer to write the next version in place; its bytes are an
    /// older version's (or anything), so write all of it. Dropped
    /// unpublished, nothing changes.
    pub fn loan_uninit(&mut self) -> Result<EntryLoanUninit<'_, T>, BlackboardError> {
        Ok(EntryLoanUninit {
            raw: self.raw.loan()?,
            _t: PhantomData,
        })
    }

    /// Lends a buffer holding a copy of the current value, to change in
    /// place and publish as the next version.
    pub fn loan_latest(&mut self) -> Result<EntryLoan<'_, T>, BlackboardError> {
        let mut raw = self.raw.loan()?;
        raw.copy_latest();
        // SAFETY: a whole value of T copied just above.
        Ok(unsafe {
            EntryLoanUninit {
                raw,
                _t: PhantomData,
            }
            .assume_init()
        })
    }
}

/// A buffer of an entry lent to the writer, not yet written.
pub struct EntryLoanUninit<'a, T: ShmSafe + Copy> {
    raw: RawEntryLoan<'a>,
    _t: PhantomData<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryLoanUninit<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EntryLoanUninit").field(&self.raw).finish()
    }
}

impl<'a, T: ShmSafe + Copy> EntryLoanUninit<'a, T> {
    /// The buffer's value, to write.
    pub fn payload_mut(&mut self) -> &mut MaybeUninit<T> {
        // SAFETY: the loan's buffer holds size_of::<T>() bytes (the entry's
        // type was checked to be T), aligned for T (the value offset is a
        // multiple of its alignment on LINE-aligned buffers), for the
        // loan's lifetime.
        unsafe { &mut *self.raw.ptr().cast::<MaybeUninit<T>>() }
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

/// A written buffer of an entry, to change further in place and publish.
pub struct EntryLoan<'a, T: ShmSafe + Copy>(EntryLoanUninit<'a, T>);

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryLoan<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EntryLoan").field(&self.0.raw).finish()
    }
}

impl<T: ShmSafe + Copy> Deref for EntryLoan<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: as in payload_mut; initialised (assume_init's promise).
        unsafe { &*self.0.raw.ptr().cast::<T>() }
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
    pub fn publish(self) -> u64 {
        self.0.raw.publish()
    }
}
