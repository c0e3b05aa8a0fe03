//! Readers: the latest value of an entry by copy ([`ReaderEntry::get`]) or
//! in place ([`ReaderEntry::read`]), with its version. A reader never
//! blocks the writer, and a killed reader holds nothing back.

use std::mem::MaybeUninit;
use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::access::{BlackboardError, Board, Handles, Parts};
use crate::core::board::Entry;
use crate::domain::nodefile::new_id;
use crate::domain::service::inner::NewPort;
use crate::domain::service::tables::PortKind;
use crate::port::payload::{Payload, ShmSafe};

/// Optimistic copies tried before a read pins its buffer.
const COPY_TRIES: u32 = 4;

/// Builds a [`Reader`].
#[derive(Debug)]
pub struct ReaderBuilder {
    pub(super) parts: Parts,
}

impl ReaderBuilder {
    /// Creates the reader: its pin words, zeroed.
    pub fn create(self) -> Result<Reader, BlackboardError> {
        let s = self.parts;
        let svc = s.svc.clone();
        let port_id = new_id();
        let entries = s.settings.entries.len() as u64;
        let max = s.settings.qos.max_readers;
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
                for pin in map.atomics(base, entries) {
                    // Relaxed: published by the Release store of the port id.
                    pin.store(0, Ordering::Relaxed);
                }
            },
        )?;
        let Some(index) = index else {
            return Err(BlackboardError::TooManyReaders {
                service: svc.name.to_string(),
                max,
            });
        };
        Ok(Reader {
            port: Arc::new(ReaderPort {
                board: Board::new(s),
                port_id,
                index,
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
}

impl Drop for ReaderPort {
    fn drop(&mut self) {
        self.board
            .svc
            .unregister(PortKind::Subscriber, self.index, self.port_id);
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

impl<T: ShmSafe + Copy> Drop for ReaderEntry<T> {
    fn drop(&mut self) {
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
        let e = self.entry();
        let pin = self.port.board.pin(self.port.index, self.i);
        let s = e.pin(pin).map_err(|_| self.port.board.corrupted(self.i))?;
        let value = e.value_ptr(s.buffer).cast_const();
        if let Err(err) = self.check(value) {
            Entry::unpin(pin);
            return Err(err);
        }
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
