//! A service's dynamic segment: its node table, its two port tables and
//! the extra area each entry of the second table owns (see
//! [`crate::core::layout`] for the layout).
//!
//! The tables' sizes come from the pattern's settings ([`Tables`]); the
//! entries are the same for every pattern. The first table holds the
//! sending ports (publishers, notifiers), the second the receiving ones
//! (subscribers, listeners), which is all the domain needs to know of them.

use std::io;
use std::sync::atomic::Ordering;

use super::error::{io_err, ServiceError};
use super::files::DYNAMIC_FILE;
use crate::core::layout::{
    DynGeometry, DynHeader, NodeSlot, PortSlot, DYN_MAGIC, LAYOUT_VERSION, PAGE, PORT_SLOT_SIZE,
};
use crate::core::park::Kernel;
use crate::os::dir::{refusal, Dir};
use crate::os::futex::OsKernel;
use crate::os::shm::{self, Mapping};

/// Which port table. Publish/subscribe: publishers, subscribers. Events:
/// notifiers, listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortKind {
    /// Publishers, notifiers.
    Publisher,
    /// Subscribers, listeners.
    Subscriber,
}

/// Sizes of a service's tables, which its pattern derives from its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    /// Entries of the node table.
    pub nodes: u32,
    /// Entries of the first port table (publishers, notifiers).
    pub first: u32,
    /// Entries of the second port table (subscribers, listeners).
    pub second: u32,
    /// Bytes each entry of the second table owns in the extra area.
    pub extra_per_second: u64,
    /// Bytes of the area of the whole service at the end (the blackboard's
    /// entries; zero for the other patterns).
    pub shared: u64,
}

impl Tables {
    pub(crate) fn geometry(&self) -> DynGeometry {
        DynGeometry::new(
            self.nodes,
            self.first,
            self.second,
            self.extra_per_second,
            self.shared,
        )
    }
}

/// A service's dynamic segment, mapped: its node and port tables.
pub(crate) struct DynSegment {
    map: Mapping,
    geo: DynGeometry,
    tables: Tables,
}

/// The immutable head of [`DynHeader`], as written at creation.
#[repr(C)]
#[derive(Clone, Copy)]
struct DynHeaderInit {
    magic: u64,
    version: u32,
    max_nodes: u32,
    first: u32,
    second: u32,
}
const _: () = assert!(
    std::mem::offset_of!(DynHeader, max_subscribers) == std::mem::offset_of!(DynHeaderInit, second)
);

impl DynSegment {
    /// Whether the file was truncated under the mapping (it reads zeros
    /// now; see `os::sigbus`).
    pub(crate) fn lost(&self) -> bool {
        self.map.lost()
    }

    /// Bytes of the file mapped.
    pub(crate) fn size(&self) -> u64 {
        self.map.len() as u64
    }

    /// Creates the dynamic segment of a new service in `dir` (domain lock
    /// held), its header written.
    pub(crate) fn create(
        dir: &Dir,
        tables: Tables,
        access: shm::Access,
    ) -> Result<Self, ServiceError> {
        let geo = tables.geometry();
        let dyn_path = dir.join(DYNAMIC_FILE);
        let fd = dir
            .create_file(DYNAMIC_FILE, geo.total_size, access)
            .map_err(io_err("create", &dyn_path))?;
        let map = Mapping::new(&fd, 0, geo.total_size, true).map_err(io_err("map", &dyn_path))?;
        map.write(
            0,
            DynHeaderInit {
                magic: DYN_MAGIC,
                version: LAYOUT_VERSION,
                max_nodes: tables.nodes,
                first: tables.first,
                second: tables.second,
            },
        );
        Ok(Self { map, geo, tables })
    }

    /// Opens and validates the dynamic segment of the service in `dir`,
    /// whose pattern gives its `tables`: the file must have exactly their
    /// size and its header must agree.
    pub(crate) fn open(dir: &Dir, svc: &str, tables: Tables) -> Result<Self, ServiceError> {
        Self::open_with(dir, svc, Some(tables), true)
    }

    /// Opens the dynamic segment of a service whose pattern the caller does
    /// not know (the cleaner): the table sizes come from its header,
    /// checked against the file's size, and its extra area is left out.
    pub(crate) fn open_any(dir: &Dir, svc: &str) -> Result<Self, ServiceError> {
        Self::open_with(dir, svc, None, true)
    }

    /// [`open`](Self::open) (with `tables`) or [`open_any`](Self::open_any)
    /// (without), mapped read-only unless `writable`.
    pub(crate) fn open_with(
        dir: &Dir,
        svc: &str,
        tables: Option<Tables>,
        writable: bool,
    ) -> Result<Self, ServiceError> {
        let corrupted = |reason: String| ServiceError::Corrupted {
            service: svc.to_string(),
            reason,
            path: dir.path().to_path_buf(),
        };
        let dyn_path = dir.join(DYNAMIC_FILE);
        let fd = match dir.open_file(DYNAMIC_FILE, writable) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(corrupted("the dynamic segment is missing".into()));
            }
            Err(e) if refusal(&e).is_some() => {
                return Err(ServiceError::Untrusted {
                    service: svc.to_string(),
                    path: dyn_path,
                    reason: refusal(&e).unwrap_or_default().to_owned(),
                });
            }
            Err(e) => return Err(io_err("open", &dyn_path)(e)),
        };
        let size = shm::file_size(&fd).map_err(io_err("stat", &dyn_path))?;
        let expected = match tables {
            Some(t) => t.geometry().total_size,
            None => size.max(PAGE),
        };
        if size != expected {
            return Err(corrupted(format!(
                "the dynamic segment has {size} bytes, {expected} expected"
            )));
        }
        let map = Mapping::new(&fd, 0, size, writable).map_err(io_err("map", &dyn_path))?;
        let h: DynHeaderInit = map.read(0);
        if h.magic != DYN_MAGIC {
            return Err(corrupted(
                "the dynamic segment has a bad magic number".into(),
            ));
        }
        if h.version != LAYOUT_VERSION {
            return Err(ServiceError::VersionMismatch {
                service: svc.to_string(),
                found: h.version,
                expected: LAYOUT_VERSION,
            });
        }
        let tables = match tables {
            Some(t) => {
                if (h.max_nodes, h.first, h.second) != (t.nodes, t.first, t.second) {
                    return Err(corrupted(
                        "the dynamic segment disagrees with static.toml".into(),
                    ));
                }
                t
            }
            None => {
                let t = Tables {
                    nodes: h.max_nodes,
                    first: h.first,
                    second: h.second,
                    extra_per_second: 0,
                    shared: 0,
                };
                // u32 table sizes times small slot sizes: no overflow in u64.
                if t.geometry().total_size > size {
                    return Err(corrupted(format!(
                        "the dynamic segment's header names tables larger than its {size} bytes"
                    )));
                }
                t
            }
        };
        Ok(Self {
            map,
            geo: tables.geometry(),
            tables,
        })
    }

    pub(crate) fn node_slot(&self, i: usize) -> &NodeSlot {
        let off = self.geo.nodes_offset + 16 * i as u64;
        assert!(off + 16 <= self.map.len() as u64);
        // SAFETY: in range (checked), 8-aligned (offsets are multiples of 16
        // from a page-aligned base), NodeSlot is made of atomics only.
        unsafe { &*self.map.ptr().add(off as usize).cast::<NodeSlot>() }
    }

    pub(crate) fn header(&self) -> &DynHeader {
        // SAFETY: the mapping is at least one page; DynHeader's mutable field
        // is atomic and the others are written once before anyone else maps it.
        unsafe { &*self.map.ptr().cast::<DynHeader>() }
    }

    /// The generation counter of the port tables.
    pub(crate) fn generation(&self) -> u64 {
        // ORDERING: Acquire; pairs with the Release fetch_add in bump(): table
        // entries changed before the bump are visible after this load.
        self.header().generation.load(Ordering::Acquire)
    }

    pub(crate) fn bump(&self) {
        // ORDERING: Release; pairs with the Acquire load in generation().
        self.header().generation.fetch_add(1, Ordering::Release);
        let changes = &self.header().changes;
        // ORDERING: Release; pairs with the Acquire load in changes(): a
        // waiter that sees the new count sees the tables changed.
        changes.fetch_add(1, Ordering::Release);
        // Off every hot path (a port came or went): one system call wakes
        // whoever sleeps in wait_for_changes.
        OsKernel.futex_wake(changes);
    }

    /// The count of table changes, for [`wait_for_changes`](Self::wait_for_changes).
    pub(crate) fn changes(&self) -> u32 {
        // ORDERING: Acquire; pairs with the Release increment in bump().
        self.header().changes.load(Ordering::Acquire)
    }

    /// Sleeps until the tables change after `seen` (a count from
    /// [`changes`](Self::changes) taken before the caller looked at them),
    /// or `timeout` passes; may return early.
    pub(crate) fn wait_for_changes(&self, seen: u32, timeout: std::time::Duration) {
        OsKernel.futex_wait(&self.header().changes, seen, Some(timeout));
    }

    pub(crate) fn table_len(&self, kind: PortKind) -> usize {
        match kind {
            PortKind::Publisher => self.tables.first as usize,
            PortKind::Subscriber => self.tables.second as usize,
        }
    }

    pub(crate) fn port_slot(&self, kind: PortKind, i: usize) -> &PortSlot {
        assert!(i < self.table_len(kind));
        let base = match kind {
            PortKind::Publisher => self.geo.pubs_offset,
            PortKind::Subscriber => self.geo.subs_offset,
        };
        let off = base + PORT_SLOT_SIZE * i as u64;
        assert!(off + PORT_SLOT_SIZE <= self.map.len() as u64);
        // SAFETY: in range (checked), 64-aligned, PortSlot is made of atomics.
        unsafe { &*self.map.ptr().add(off as usize).cast::<PortSlot>() }
    }

    /// The extra area owned by entry `i` of the second table.
    pub(crate) fn extra(&self, i: usize) -> (&Mapping, u64) {
        assert!(i < self.tables.second as usize);
        (
            &self.map,
            self.geo.extra_offset + i as u64 * self.tables.extra_per_second,
        )
    }

    /// The service's shared area: the mapping and the area's offset in it
    /// (`tables.shared` bytes; empty for patterns without one).
    pub(crate) fn shared(&self) -> (&Mapping, u64) {
        (&self.map, self.geo.shared_offset)
    }

    /// Removes a port from its table (domain lock held); false if the entry
    /// holds another port by now.
    pub(crate) fn remove_port(&self, kind: PortKind, index: usize, port_id: u64) -> bool {
        let s = self.port_slot(kind, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) != port_id {
            return false;
        }
        // Relaxed: published by the Release store below.
        s.flags.store(0, Ordering::Relaxed);
        // ORDERING: Release; pairs with readers' Acquire loads: everything
        // the port did before leaving is visible to whoever sees it gone.
        s.port_id.store(0, Ordering::Release);
        self.bump();
        true
    }

    /// Whether any node or port is still registered (domain lock held).
    pub(crate) fn in_use(&self) -> bool {
        // Relaxed (all): the domain lock serialises writers.
        let nodes = (0..self.tables.nodes as usize)
            .any(|i| self.node_slot(i).node_id.load(Ordering::Relaxed) != 0);
        let ports = [PortKind::Publisher, PortKind::Subscriber]
            .iter()
            .any(|&k| {
                (0..self.table_len(k))
                    .any(|i| self.port_slot(k, i).port_id.load(Ordering::Relaxed) != 0)
            });
        nodes || ports
    }

    /// Number of node table entries.
    pub(crate) fn node_count(&self) -> usize {
        self.tables.nodes as usize
    }
}
