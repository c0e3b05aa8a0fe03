//! Readers: the latest value of an entry by copy ([`ReaderEntry::get`]) or
//! in place ([`ReaderEntry::read`]), with its version. A reader never
//! blocks the writer, and a killed reader holds nothing back.

use std::mem::MaybeUninit;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::access::{BlackboardError, Board, Handles, Parts};
use crate::core::board::Entry;
use crate::domain::nodefile::new_id;
use crate::domain::service::error::io_err;
use crate::domain::service::files::fifo_file;
use crate::domain::service::inner::NewPort;
use crate::domain::service::tables::PortKind;
use crate::os::fifo;
use crate::os::futex::OsKernel;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::wait::{Adaptive, WaitStrategy, Waiter};

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
        let s = self.parts;
        let svc = s.svc.clone();
        let port_id = new_id();
        let words = s.settings.entries.len() as u64 + s.settings.interest_words();
        let max = s.settings.qos.max_readers;
        let fifo_name = fifo_file(port_id);
        let fifo = svc
            .dir
            .make_fifo(&fifo_name, svc.node.access)
            .map_err(io_err("create FIFO", &svc.dir.join(&fifo_name)))?;
        let entry = NewPort {
            kind: PortKind::Subscriber,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: max as usize,
        };
        let index = svc.register(
            entry,
            |_| {},
            |j| {
                let (map, base) = svc.extra(j);
                for word in map.atomics(base, words) {
                    // Relaxed: published by the Release store of the port id.
                    word.store(0, Ordering::Relaxed);
                }
            },
        );
        let index = match index {
            Ok(Some(i)) => i,
            Ok(None) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(BlackboardError::TooManyReaders {
                    service: svc.name.to_string(),
                    max,
                });
            }
            Err(e) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(e.into());
            }
        };
        Ok(Reader {
            port: Arc::new(ReaderPort {
                board: Board::new(s),
                port_id,
                index,
                fifo,
                fifo_name,
                strategy: self.strategy,
                adaptive: Adaptive::default(),
            }),
        })
    }
}

/// The registered reader, kept alive by the reader and its entries.
#[derive(Debug)]
struct ReaderPort {
    board: Board,
    port_id: u64,
    index: usize,
    fifo: OwnedFd,
    /// Its name in the service's directory.
    fifo_name: String,
    strategy: WaitStrategy,
    adaptive: Adaptive,
}

impl ReaderPort {
    /// Whether a watched entry changed since its handle last read it.
    fn watched_changed(&self) -> bool {
        let b = &self.board;
        (0..b.places.len()).any(|i| {
            // Relaxed (both): in-process flags and a count; the read that
            // follows orders itself.
            b.watched[i].load(Ordering::Relaxed)
                && b.entry(i)
                    .state(Ordering::Relaxed)
                    .is_ok_and(|s| s.version != b.seen[i].load(Ordering::Relaxed))
        })
    }

    /// Sets or clears entry `i`'s interest bit (the writer wakes this
    /// reader on its changes while set).
    fn interest(&self, i: usize, on: bool) {
        let (word, bit) = self.board.interest(self.index, i);
        // Relaxed (both): the park protocol's fence orders the bit before a
        // sleep (see WriterPort::wake).
        if on {
            word.fetch_or(bit, Ordering::Relaxed);
        } else {
            word.fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

impl Drop for ReaderPort {
    fn drop(&mut self) {
        self.board
            .svc
            .unregister(PortKind::Subscriber, self.index, self.port_id);
        let _ = self.board.svc.dir.remove_file(&self.fifo_name);
    }
}

/// A reader of a blackboard. `Send` and `Sync`; its entries
/// ([`entry`](Self::entry)) do the reading.
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
        self.port
            .board
            .svc
            .wake_block(PortKind::Subscriber, self.port.index)
            .register_fd(&OsKernel, || self.port.watched_changed())
    }

    /// The reader's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn spin_policy(&self) -> (WaitStrategy, &Adaptive) {
        (self.port.strategy, &self.port.adaptive)
    }

    /// Withdraws the interest registered by
    /// [`arm_wakeup`](Self::arm_wakeup), and empties the descriptor.
    pub fn disarm_wakeup(&self) {
        self.port
            .board
            .svc
            .wake_block(PortKind::Subscriber, self.port.index)
            .unregister_fd();
        fifo::drain(&self.port.fifo);
    }

    /// The entry `key`, whose values are `T`s (checked against the
    /// service's type). One handle per entry at a time.
    pub fn entry<T: ShmSafe + Copy>(&self, key: &str) -> Result<ReaderEntry<T>, BlackboardError> {
        let i = self.port.board.take(key, <T as Payload>::details())?;
        Ok(ReaderEntry {
            port: self.port.clone(),
            i,
            _t: Handles::default(),
        })
    }
}

/// Reads one entry. `Send`, not `Sync`.
pub struct ReaderEntry<T: ShmSafe + Copy> {
    port: Arc<ReaderPort>,
    i: usize,
    _t: Handles<T>,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for ReaderEntry<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderEntry").field("key", &self.key()).finish()
    }
}

impl AsFd for Reader {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.port.fifo.as_fd()
    }
}

impl<T: ShmSafe + Copy> Drop for ReaderEntry<T> {
    fn drop(&mut self) {
        self.unwatch();
        self.port.board.give_back(self.i);
    }
}

impl<T: ShmSafe + Copy> ReaderEntry<T> {
    /// The entry's key.
    pub fn key(&self) -> &str {
        &self.port.board.settings.entries[self.i].key
    }

    fn entry(&self) -> Entry<'_> {
        self.port.board.entry(self.i)
    }

    /// The entry's version: its updates so far (the default is version 0).
    /// Compare it with an earlier one to learn whether the entry changed.
    pub fn version(&self) -> Result<u64, BlackboardError> {
        // Relaxed: a count; a read that follows orders itself.
        self.entry()
            .state(Ordering::Relaxed)
            .map(|s| s.version)
            .map_err(|_| self.port.board.corrupted(self.i))
    }

    /// The latest value, copied.
    pub fn get(&self) -> Result<T, BlackboardError> {
        self.get_with_version().map(|(v, _)| v)
    }

    /// The latest value, copied, and its version. Never torn: a copy that
    /// an update overtakes is made again, and after a few such tries the
    /// buffer is pinned for the copy.
    pub fn get_with_version(&self) -> Result<(T, u64), BlackboardError> {
        let e = self.entry();
        let corrupted = |_| self.port.board.corrupted(self.i);
        let mut out = MaybeUninit::<T>::uninit();
        let mut version = None;
        for _ in 0..COPY_TRIES {
            // SAFETY: `out` has room for the value's size_of::<T>() bytes.
            version = unsafe { e.try_copy(out.as_mut_ptr().cast()) }.map_err(corrupted)?;
            if version.is_some() {
                break;
            }
        }
        let version = match version {
            Some(v) => v,
            None => {
                let pin = self.port.board.pin(self.port.index, self.i);
                let s = e.pin(pin).map_err(corrupted)?;
                // SAFETY: the pinned buffer's value, which the writer leaves
                // alone until the unpin below; `out` has room for it.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        e.value_ptr(s.buffer),
                        out.as_mut_ptr().cast::<u8>(),
                        std::mem::size_of::<T>(),
                    );
                }
                Entry::unpin(pin);
                s.version
            }
        };
        self.check(out.as_ptr().cast())?;
        self.saw(version);
        // SAFETY: every byte was copied from a whole value, checked above
        // for types with invalid bit patterns; others are valid for any.
        Ok((unsafe { out.assume_init() }, version))
    }

    /// Notes that the handle read `version`.
    fn saw(&self, version: u64) {
        // Relaxed: an in-process note.
        self.port.board.seen[self.i].store(version, Ordering::Relaxed);
    }

    /// Whether the entry changed since this handle last read it (by
    /// [`get`](Self::get), [`get_with_version`](Self::get_with_version) or
    /// [`read`](Self::read); before the first read, since version 0).
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
    /// spin) until the writer's publish wakes it: no polling. Read the new
    /// value with [`get`](Self::get) or [`read`](Self::read).
    pub fn wait_for_change(&self, timeout: Option<Duration>) -> Result<Option<u64>, BlackboardError> {
        let port = &self.port;
        let was_watched = port.board.watched[self.i].load(Ordering::Relaxed);
        port.interest(self.i, true);
        let waiter = Waiter {
            signals: port.board.svc.node.signals,
            strategy: port.strategy,
            adaptive: &port.adaptive,
            block: port.board.svc.wake_block(PortKind::Subscriber, port.index),
        };
        let seen = port.board.seen[self.i].load(Ordering::Relaxed);
        let moved = || -> Result<Option<u64>, BlackboardError> {
            let v = self.version()?;
            Ok((v != seen).then_some(v))
        };
        let r = waiter.wait(
            timeout.map(|t| Instant::now() + t),
            moved,
            || self.version().is_ok_and(|v| v != seen),
            || Ok::<(), BlackboardError>(()),
        );
        if !was_watched {
            port.interest(self.i, false);
        }
        r
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
        let e = self.entry();
        let pin = self.port.board.pin(self.port.index, self.i);
        let s = e.pin(pin).map_err(|_| self.port.board.corrupted(self.i))?;
        let value = e.value_ptr(s.buffer).cast_const();
        if let Err(err) = self.check(value) {
            Entry::unpin(pin);
            return Err(err);
        }
        self.saw(s.version);
        Ok(EntryRef {
            entry: self,
            value: value.cast(),
            version: s.version,
        })
    }
}

/// An entry's value read in place; its buffer stays pinned until this
/// drops.
pub struct EntryRef<'a, T: ShmSafe + Copy> {
    entry: &'a mut ReaderEntry<T>,
    value: *const T,
    version: u64,
}

impl<T: ShmSafe + Copy> std::fmt::Debug for EntryRef<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryRef")
            .field("key", &self.entry.key())
            .field("version", &self.version)
            .finish()
    }
}

impl<T: ShmSafe + Copy> EntryRef<'_, T> {
    /// The version of the value held.
    pub fn version(&self) -> u64 {
        self.version
    }
}

impl<T: ShmSafe + Copy> Deref for EntryRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the pinned buffer's value, aligned for T (value offsets
        // are multiples of its alignment on LINE-aligned buffers), checked
        // valid in read(); the writer does not write it while pinned.
        unsafe { &*self.value }
    }
}

impl<T: ShmSafe + Copy> Drop for EntryRef<'_, T> {
    fn drop(&mut self) {
        let e = &self.entry;
        Entry::unpin(e.port.board.pin(e.port.index, e.i));
    }
}
