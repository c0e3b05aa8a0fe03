//! An entry of an open blackboard: finding it by key and type, its place
//! in the shared area as a `core::board::Entry`, a reader's pin words, and
//! the errors of the pattern's ports.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::settings::{BlackboardSettings, EntryPlace};
use crate::core::board::Entry;
use crate::domain::service::error::ServiceError;
use crate::domain::service::inner::ServiceInner;
use crate::port::payload::{check_payload, TypeDetails, PAYLOAD_FIELDS};

/// Why a blackboard port, entry or read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlackboardError {
    /// The service admits one writer, and it has one.
    #[error("blackboard {service:?} has a writer already (one at a time); a writer that died is reclaimed by the next process that opens the service")]
    WriterExists {
        /// The service.
        service: String,
    },
    /// The service admits no more readers.
    #[error("blackboard {service:?} admits no more readers (max_readers = {max}); raise it when creating the service")]
    TooManyReaders {
        /// The service.
        service: String,
        /// The limit.
        max: u32,
    },
    /// This port has a handle on that entry already (one per port and entry).
    #[error("entry {key:?} already has a handle on this port; use that one (or drop it first)")]
    EntryInUse {
        /// The key.
        key: String,
    },
    /// The entry's state names a buffer that does not exist: the shared
    /// memory was overwritten.
    #[error("entry {key:?} of blackboard {service:?} is corrupted (its state names no buffer)")]
    Corrupted {
        /// The service.
        service: String,
        /// The key.
        key: String,
    },
    /// The entry holds bytes that are not a value of its type (a type with
    /// invalid bit patterns, such as `bool`).
    #[error("entry {key:?} holds bytes that are not a value of its type")]
    InvalidValue {
        /// The key.
        key: String,
    },
    /// A value given as bytes has another size than the entry's.
    #[error("entry {key:?} holds {size} bytes, and {given} were given")]
    WrongSize {
        /// The key.
        key: String,
        /// The entry's size.
        size: usize,
        /// The size given.
        given: usize,
    },
    /// A loan of the entry is held already (one at a time).
    #[error("entry {key:?} has a loan held already: publish or abandon it first")]
    LoanHeld {
        /// The key.
        key: String,
    },
    /// No loan of the entry is held.
    #[error("entry {key:?} has no loan held: begin one first")]
    NoLoan {
        /// The key.
        key: String,
    },
    /// SIGINT or SIGTERM arrived while it waited (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
    /// The service's files or settings.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<crate::port::wait::Terminated> for BlackboardError {
    fn from(_: crate::port::wait::Terminated) -> Self {
        Self::TerminationRequest
    }
}

/// What an entry handle's marker says: it handles `T`s, and is `Send` but
/// not `Sync` (one thread at a time reads or writes through it).
pub(crate) type Handles<T> = std::marker::PhantomData<(fn(T) -> T, std::cell::Cell<()>)>;

/// An open service's parts, as its ports are built from them.
#[derive(Debug, Clone)]
pub(crate) struct Parts {
    pub svc: Arc<ServiceInner>,
    pub settings: Arc<BlackboardSettings>,
    pub places: Arc<Vec<EntryPlace>>,
}

/// What a port shares with its entry handles: the service, its settings,
/// each entry's place, and which entries have a handle.
#[derive(Debug)]
pub(crate) struct Board {
    pub svc: Arc<ServiceInner>,
    pub settings: Arc<BlackboardSettings>,
    pub places: Arc<Vec<EntryPlace>>,
    pub taken: Vec<AtomicBool>,
    /// A reader's: the version of each entry its handle last read.
    pub seen: Vec<AtomicU64>,
    /// A reader's: the entries whose changes wake it (their interest bits).
    pub watched: Vec<AtomicBool>,
}

impl Board {
    pub(crate) fn new(parts: Parts) -> Self {
        let Parts {
            svc,
            settings,
            places,
        } = parts;
        let n = places.len();
        let flags = || (0..n).map(|_| AtomicBool::new(false)).collect();
        Self {
            svc,
            settings,
            places,
            taken: flags(),
            seen: (0..n).map(|_| AtomicU64::new(0)).collect(),
            watched: flags(),
        }
    }

    /// The index of entry `key` holding values of `t`, taken for one handle.
    pub(crate) fn take(&self, key: &str, t: TypeDetails) -> Result<usize, BlackboardError> {
        let service = self.svc.name.to_string();
        let (i, d) = self
            .settings
            .find(key)
            .ok_or_else(|| ServiceError::NoSuchEntry {
                service: service.clone(),
                key: key.to_owned(),
            })?;
        check_payload(&service, PAYLOAD_FIELDS, t, &d.value)?;
        // Relaxed: an in-process flag; the entry's memory is synchronised by
        // its own words.
        if self.taken[i].swap(true, Ordering::Relaxed) {
            return Err(BlackboardError::EntryInUse { key: key.to_owned() });
        }
        Ok(i)
    }

    /// Gives entry `i` back (its handle dropped).
    pub(crate) fn give_back(&self, i: usize) {
        // Relaxed: as in take().
        self.taken[i].store(false, Ordering::Relaxed);
    }

    /// Entry `i`'s key.
    pub(crate) fn key(&self, i: usize) -> &str {
        &self.settings.entries[i].key
    }

    /// Bytes of entry `i`'s value.
    pub(crate) fn size(&self, i: usize) -> usize {
        self.places[i].size as usize
    }

    /// Entry `i` in the shared area.
    pub(crate) fn entry(&self, i: usize) -> Entry<'_> {
        entry_in(&self.svc, &self.places[i])
    }

    /// Entry `i`'s error of a corrupted state.
    pub(crate) fn corrupted(&self, i: usize) -> BlackboardError {
        BlackboardError::Corrupted {
            service: self.svc.name.to_string(),
            key: self.key(i).to_owned(),
        }
    }

    /// An entry handle's `Debug`: its type's name and its key.
    pub(crate) fn debug_entry(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        handle: &str,
        i: usize,
    ) -> std::fmt::Result {
        f.debug_struct(handle).field("key", &self.key(i)).finish()
    }

    /// Reader `j`'s interest word holding entry `i`'s bit, and the bit.
    pub(crate) fn interest(&self, j: usize, i: usize) -> (&AtomicU64, u64) {
        let (map, base) = self.svc.extra(j);
        let off = base + self.settings.interest_offset() + 8 * (i as u64 / 64);
        (map.atomic(off), 1 << (i % 64))
    }

    /// Reader `j`'s pin word of entry `i`.
    pub(crate) fn pin(&self, j: usize, i: usize) -> &AtomicU64 {
        let (map, base) = self.svc.extra(j);
        map.atomic(base + 8 * i as u64)
    }
}

/// The entry at `place` in `svc`'s shared area.
pub(crate) fn entry_in<'a>(svc: &'a ServiceInner, place: &EntryPlace) -> Entry<'a> {
    let (map, off) = svc.shared();
    let end = off + place.buffers + place.count * place.stride;
    assert!(end <= map.len() as u64, "an entry beyond its segment");
    let state = map.atomic(off + place.state);
    let seqs = map.atomics(off + place.state + 8, place.count);
    // SAFETY: the buffers lie in the mapping (asserted), which lives as long
    // as `svc`; size <= stride (settings.rs).
    unsafe {
        Entry::new(
            state,
            seqs,
            map.ptr().add((off + place.buffers) as usize),
            place.stride,
            place.size as usize,
        )
    }
}
