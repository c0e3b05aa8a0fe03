//! Readers: the latest value of an entry by copy ([`ReaderEntry::get`]) or
//! in place ([`ReaderEntry::read`]), with its version; waiting for a change
//! without polling ([`ReaderEntry::wait_for_change`], a
//! [`WaitSet`](crate::WaitSet) the reader is attached to, or
//! `aio::AsyncReader`). A reader never blocks the writer, and a killed
//! reader holds nothing back. The typed handles stand on byte-level ones
//! ([`RawReaderEntry`]), which the other languages' faces and the `hako`
//! tool use.

use std::mem::MaybeUninit;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::access::{BlackboardError, Handles, Parts};
use super::ports::ReaderPort;
use crate::core::board::Entry;
use crate::domain::service::tables::PortKind;
use crate::os::fifo;
use crate::os::futex::OsKernel;
use crate::port::payload::{Payload, ShmSafe, TypeDetails};
use crate::port::wait::{WaitStrategy, Waiter};

/// Optimistic copies tried before a read pins its buffer.
const COPY_TRIES: u32 = 4;

/// Builds a [`Reader`].
#[derive(Debug)]
pub struct ReaderBuilder {
    pub(super) parts: Parts,
    pub(super) strategy: WaitStrategy,
}

impl ReaderBuilder {
    /// How waits for a change wait (default: spin, then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Creates the reader: its pin words and interest bits, zeroed, and its
    /// wake-up FIFO.
    pub fn create(self) -> Result<Reader, BlackboardError> {
        Ok(Reader {
            port: Arc::new(ReaderPort::register(self.parts, self.strategy)?),
        })
    }
}

/// A reader of a blackboard. `Send` and `Sync`; its entries
/// ([`entry`](Self::entry)) do the reading. Also a file descriptor (its
/// wake-up FIFO) that a [`WaitSet`](crate::WaitSet) can wait on.
#[derive(Debug)]
pub struct Reader {
    port: Arc<ReaderPort>,
}

impl Reader {
    /// The reader's unique port id.
    pub fn id(&self) -> u64 {
        self.port.port_id
    }

    /// Whether an entry whose handle [`watch`](ReaderEntry::watch)es it
    /// changed since the handle last read it (what a
    /// [`WaitSet`](crate::WaitSet) the reader is attached to wakes for).
    pub fn has_changes(&self) -> bool {
        self.port.watched_changed()
    }

    /// Registers interest in the wake-up descriptor (`as_fd`): the writer
    /// writes a byte to it when a watched entry changes, until
    /// [`disarm_wakeup`](Self::disarm_wakeup). True if one changed already.
    /// For event loops other than a [`WaitSet`](crate::WaitSet).
    pub fn arm_wakeup(&self) -> bool {
        let p = &self.port;
        p.board
            .svc
            .wake_block(PortKind::Subscriber, p.index)
            .register_fd(&OsKernel, || p.watched_changed())
    }

    /// Withdraws the interest registered by
    /// [`arm_wakeup`](Self::arm_wakeup), and empties the descriptor.
    pub fn disarm_wakeup(&self) {
        let p = &self.port;
        p.board
            .svc
            .wake_block(PortKind::Subscriber, p.index)
            .unregister_fd();
        fifo::drain(&p.fifo);
    }

    /// The reader's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn spin_policy(&self) -> (WaitStrategy, &crate::port::wait::Adaptive) {
        (self.port.strategy, &self.port.adaptive)
    }

    /// The entry `key`, whose values are `T`s (checked against the
    /// service's type). One handle per entry at a time.
    pub fn entry<T: ShmSafe + Copy>(&self, key: &str) -> Result<ReaderEntry<T>, BlackboardError> {
        Ok(ReaderEntry {
            raw: self.entry_described(key, <T as Payload>::details())?,
            _t: Handles::default(),
        })
    }

    /// The entry `key`, whose values are described at run time (`value`,
    /// checked against the service's type), read as bytes.
    pub fn entry_described(
        &self,
        key: &str,
        value: TypeDetails,
    ) -> Result<RawReaderEntry, BlackboardError> {
        let i = self.port.board.take(key, value)?;
        Ok(RawReaderEntry {
            port: self.port.clone(),
            i,
            holding: false,
        })
    }
}

impl AsFd for Reader {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.port.fifo.as_fd()
    }
}

/// Reads one entry as bytes. `Send`, not `Sync`.
pub struct RawReaderEntry {
    port: Arc<ReaderPort>,
    i: usize,
    /// A pin held across calls by a face that cannot borrow
    /// ([`hold`](Self::hold)).
    holding: bool,
}

impl std::fmt::Debug for RawReaderEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.port.board.debug_entry(f, "RawReaderEntry", self.i)
    }
}

impl Drop for RawReaderEntry {
    fn drop(&mut self) {
        self.release();
        self.unwatch();
        self.port.board.give_back(self.i);
    }
}

impl RawReaderEntry {
    /// The entry's key.
    pub fn key(&self) -> &str {
        self.port.board.key(self.i)
    }

    /// Bytes of the entry's value.
    pub fn size(&self) -> usize {
        self.port.board.size(self.i)
    }

    fn entry(&self) -> Entry<'_> {
        self.port.board.entry(self.i)
    }

    fn corrupted(&self) -> BlackboardError {
        self.port.board.corrupted(self.i)
    }

    /// The entry's version: its updates so far (the default is version 0).
    /// Compare it with an earlier one to learn whether the entry changed.
    pub fn version(&self) -> Result<u64, BlackboardError> {
        // Relaxed: a count; a read that follows orders itself.
        self.entry()
            .state(Ordering::Relaxed)
            .map(|s| s.version)
            .map_err(|_| self.corrupted())
    }

    /// Copies the latest value into `out` (`size` bytes); returns its
    /// version. Never torn: a copy that an update overtakes is made again,
    /// and after a few such tries the buffer is pinned for the copy.
    ///
    /// # Safety
    /// `out` is valid for [`size`](Self::size) bytes of writes.
    unsafe fn copy_to(&self, out: *mut u8) -> Result<u64, BlackboardError> {
        let e = self.entry();
        for _ in 0..COPY_TRIES {
            // SAFETY: the caller's promise.
            if let Some(v) = unsafe { e.try_copy(out) }.map_err(|_| self.corrupted())? {
                self.saw(v);
                return Ok(v);
            }
        }
        let pin = self.port.board.pin(self.port.index, self.i);
        let s = e.pin(pin).map_err(|_| self.corrupted())?;
        // SAFETY: the pinned buffer's value, which the writer leaves alone
        // until the unpin below; `out` is the caller's.
        unsafe { std::ptr::copy_nonoverlapping(e.value_ptr(s.buffer), out, self.size()) };
        Entry::unpin(pin);
        self.saw(s.version);
        Ok(s.version)
    }

    /// Copies the latest value into `out` (exactly [`size`](Self::size)
    /// bytes); returns its version.
    pub fn get_bytes(&self, out: &mut [u8]) -> Result<u64, BlackboardError> {
        if out.len() != self.size() {
            return Err(BlackboardError::WrongSize {
                key: self.key().to_owned(),
                size: self.size(),
                given: out.len(),
            });
        }
        // SAFETY: `out` has size() bytes.
        unsafe { self.copy_to(out.as_mut_ptr()) }
    }

    /// The latest value in place, as bytes, without a copy: the buffer is
    /// pinned, and the writer writes elsewhere, until the returned guard
    /// drops. Costs the writer nothing but a look at the pin.
    pub fn read_bytes(&mut self) -> Result<RawEntryRef<'_>, BlackboardError> {
        let e = self.entry();
        let pin = self.port.board.pin(self.port.index, self.i);
        let s = e.pin(pin).map_err(|_| self.corrupted())?;
        self.saw(s.version);
        Ok(RawEntryRef {
            value: e.value_ptr(s.buffer).cast_const(),
            version: s.version,
            entry: self,
        })
    }

    /// Pins the latest value as [`read_bytes`](Self::read_bytes) does, held
    /// by the entry until [`release`](Self::release): for faces that cannot
    /// hold a borrow (the C API). Returns the value's first byte
    /// ([`size`](Self::size) bytes, readable until then) and its version;
    /// a pin already held is moved to the latest value.
    pub fn hold(&mut self) -> Result<(*const u8, u64), BlackboardError> {
        let (value, version) = {
            let e = self.entry();
            let pin = self.port.board.pin(self.port.index, self.i);
            let s = e.pin(pin).map_err(|_| self.corrupted())?;
            (e.value_ptr(s.buffer).cast_const(), s.version)
        };
        self.holding = true;
        self.saw(version);
        Ok((value, version))
    }

    /// Ends the pin of [`hold`](Self::hold) (nothing if none is held).
    pub fn release(&mut self) {
        if std::mem::take(&mut self.holding) {
            Entry::unpin(self.port.board.pin(self.port.index, self.i));
        }
    }

    /// Notes that the handle read `version`.
    fn saw(&self, version: u64) {
        // Relaxed: an in-process note.
        self.port.board.seen[self.i].store(version, Ordering::Relaxed);
    }

    /// Whether the entry changed since this handle last read it (before
    /// the first read, since version 0).
    pub fn changed(&self) -> Result<bool, BlackboardError> {
        // Relaxed: an in-process note.
        Ok(self.version()? != self.port.board.seen[self.i].load(Ordering::Relaxed))
    }

    /// Asks the writer to wake this reader when the entry changes: a
    /// [`WaitSet`](crate::WaitSet) the reader is attached to (or its
    /// descriptor, see [`Reader::arm_wakeup`]) then wakes for it, until
    /// [`unwatch`](Self::unwatch) or the handle drops.
    pub fn watch(&self) {
        // Relaxed: an in-process flag.
        self.port.board.watched[self.i].store(true, Ordering::Relaxed);
        self.port.interest(self.i, true);
    }

    /// Stops [`watch`](Self::watch)ing the entry.
    pub fn unwatch(&self) {
        // Relaxed: an in-process flag.
        if self.port.board.watched[self.i].swap(false, Ordering::Relaxed) {
            self.port.interest(self.i, false);
        }
    }

    /// Waits until the entry changes from the version this handle last
    /// read, at most `timeout` (`None`: no limit); returns the new version,
    /// or `None` on timeout. Sleeps (after the reader's wait strategy's
    /// spin) until the writer's publish wakes it: no polling.
    pub fn wait_for_change(&self, timeout: Option<Duration>) -> Result<Option<u64>, BlackboardError> {
        let port = &self.port;
        // Relaxed: an in-process flag.
        let was_watched = port.board.watched[self.i].load(Ordering::Relaxed);
        port.interest(self.i, true);
        let waiter = Waiter {
            signals: port.board.svc.node.signals,
            strategy: port.strategy,
            adaptive: &port.adaptive,
            block: port.board.svc.wake_block(PortKind::Subscriber, port.index),
        };
        // Relaxed: an in-process note.
        let seen = port.board.seen[self.i].load(Ordering::Relaxed);
        let r = waiter.wait(
            timeout.map(|t| Instant::now() + t),
            || Ok::<_, BlackboardError>(Some(self.version()?).filter(|&v| v != seen)),
            || self.version().is_ok_and(|v| v != seen),
            || Ok::<(), BlackboardError>(()),
        );
        if !was_watched {
            port.interest(self.i, false);
        }
        r
    }
}

/// An entry's value read in place, as bytes; its buffer stays pinned until
/// this drops.
pub struct RawEntryRef<'a> {
    entry: &'a mut RawReaderEntry,
    value: *const u8,
    version: u64,
}

impl std::fmt::Debug for RawEntryRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawEntryRef")
            .field("key", &self.entry.key())
            .field("version", &self.version)
            .finish()
    }
}

impl RawEntryRef<'_> {
    /// The version of the value held.
    pub fn version(&self) -> u64 {
        self.version
    }
}

impl Deref for RawEntryRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the pinned buffer's value, size() bytes, which the writer
        // does not write while pinned.
        unsafe { std::slice::from_raw_parts(self.value, self.entry.size()) }
    }
}

impl Drop for RawEntryRef<'_> {
    fn drop(&mut self) {
        let e = &self.entry;
        Entry::unpin(e.port.board.pin(e.port.index, e.i));
    }
}

/// Reads one entry. `Send`, not `Sync`.
pub struct ReaderEntry<T: ShmSafe + Copy> {
    raw: RawReaderEntry,
    _t: Handles<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for ReaderEntry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderEntry").field("key", &self.key()).finish()
    }
}

impl<T: ShmSafe + Copy> ReaderEntry<T> {
    /// The entry's key.
    pub fn key(&self) -> &str {
        self.raw.key()
    }

    /// The entry's version: its updates so far (the default is version 0).
    pub fn version(&self) -> Result<u64, BlackboardError> {
        self.raw.version()
    }

    /// The latest value, copied.
    pub fn get(&self) -> Result<T, BlackboardError> {
        self.get_with_version().map(|(v, _)| v)
    }

    /// The latest value, copied, and its version. Never torn.
    pub fn get_with_version(&self) -> Result<(T, u64), BlackboardError> {
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` has room for the value's size_of::<T>() bytes (the
        // entry's type was checked to be T).
        let version = unsafe { self.raw.copy_to(out.as_mut_ptr().cast()) }?;
        self.check(out.as_ptr().cast())?;
        // SAFETY: every byte was copied from a whole value, checked above
        // for types with invalid bit patterns; others are valid for any.
        Ok((unsafe { out.assume_init() }, version))
    }

    /// The bytes at `p` are a value of `T`, for the types that may not be.
    fn check(&self, p: *const u8) -> Result<(), BlackboardError> {
        // SAFETY: `p` holds size_of::<T>() readable bytes.
        if T::CHECKED && !unsafe { T::is_valid(p) } {
            return Err(BlackboardError::InvalidValue {
                key: self.key().to_owned(),
            });
        }
        Ok(())
    }

    /// The latest value in place, without a copy (for large values): the
    /// buffer is pinned, and the writer writes elsewhere, until the
    /// returned guard drops. Costs the writer nothing but a look at the pin.
    pub fn read(&mut self) -> Result<EntryRef<'_, T>, BlackboardError> {
        let key = self.raw.key().to_owned();
        let raw = self.raw.read_bytes()?;
        // SAFETY: the pinned value's size_of::<T>() bytes.
        if T::CHECKED && !unsafe { T::is_valid(raw.value) } {
            return Err(BlackboardError::InvalidValue { key });
        }
        Ok(EntryRef {
            raw,
            _t: Handles::default(),
        })
    }

    /// Whether the entry changed since this handle last read it (by
    /// [`get`](Self::get), [`get_with_version`](Self::get_with_version) or
    /// [`read`](Self::read); before the first read, since version 0).
    pub fn changed(&self) -> Result<bool, BlackboardError> {
        self.raw.changed()
    }

    /// Asks the writer to wake this reader when the entry changes (see
    /// [`RawReaderEntry::watch`]).
    pub fn watch(&self) {
        self.raw.watch()
    }

    /// Stops [`watch`](Self::watch)ing the entry.
    pub fn unwatch(&self) {
        self.raw.unwatch()
    }

    /// Waits until the entry changes from the version this handle last
    /// read, at most `timeout` (`None`: no limit); returns the new version,
    /// or `None` on timeout. Sleeps (after the reader's wait strategy's
    /// spin) until the writer's publish wakes it: no polling. Read the new
    /// value with [`get`](Self::get) or [`read`](Self::read).
    pub fn wait_for_change(&self, timeout: Option<Duration>) -> Result<Option<u64>, BlackboardError> {
        self.raw.wait_for_change(timeout)
    }
}

/// An entry's value read in place; its buffer stays pinned until this
/// drops.
pub struct EntryRef<'a, T: ShmSafe + Copy> {
    raw: RawEntryRef<'a>,
    _t: Handles<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryRef<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EntryRef").field(&self.raw).finish()
    }
}

impl<T: ShmSafe + Copy> EntryRef<'_, T> {
    /// The version of the value held.
    pub fn version(&self) -> u64 {
        self.raw.version
    }
}

impl<T: ShmSafe + Copy> Deref for EntryRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the pinned buffer's value, aligned for T (value offsets
        // are multiples of its alignment on LINE-aligned buffers), checked
        // valid in read(); the writer does not write it while pinned.
        unsafe { &*self.raw.value.cast::<T>() }
    }
}
