//! An open service as every pattern shares it: its node's membership, its
//! tables, the registration of ports and the paths of its files.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::error::{io_err, ServiceError};
use super::files::{publisher_file, remove_service_files, DYNAMIC_FILE};
use super::reclaim::{reclaim_service_locked, Reclaimed};
use super::tables::{DynSegment, PortKind};
use crate::core::layout::{DynHeader, NodeSlot, PortSlot, PORT_RETIRED};
use crate::core::park::WakeBlock;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::{Liveness, NodeInner};
use crate::os::dir::Dir;
use crate::os::lock::DomainLock;
use crate::os::shm::Mapping;

/// Shared state of an open service; ports keep it alive. What flows
/// through it, and its settings, are its pattern's business.
pub(crate) struct ServiceInner {
    pub(crate) node: Arc<NodeInner>,
    pub(crate) name: ServiceName,
    /// The service's directory, held open: its files are made, opened and
    /// removed through it.
    pub(crate) dir: Dir,
    seg: DynSegment,
    node_slot: usize,
}

/// A port to enter into a table of its service ([`ServiceInner::register`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewPort {
    /// Which table.
    pub kind: PortKind,
    /// The port's id.
    pub port_id: u64,
    /// Published in the entry: a publisher's largest slice (else 0).
    pub max_len: u64,
    /// Published in the entry: a publisher's chunks (else 0).
    pub chunk_count: u64,
    /// Ports of this kind the service admits (at most the table's size).
    pub limit: usize,
}

impl std::fmt::Debug for ServiceInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("dir", &self.dir)
            .finish()
    }
}

impl ServiceInner {
    /// Registers the node as a user of the service (domain lock held).
    pub(crate) fn attach(
        node: Arc<NodeInner>,
        name: ServiceName,
        dir: Dir,
        seg: DynSegment,
    ) -> Result<Self, ServiceError> {
        let max = seg.node_count() as u32;
        let mut me = Self {
            node,
            name,
            dir,
            seg,
            node_slot: usize::MAX,
        };
        let id = me.node.id;
        let mut free = None;
        for i in 0..max as usize {
            // Relaxed: the domain lock orders all writers of the node table.
            let n = me.node_slot_ref(i).node_id.load(Ordering::Relaxed);
            if n == id {
                free = Some(i);
                break;
            }
            if n == 0 && free.is_none() {
                free = Some(i);
            }
        }
        let Some(i) = free else {
            return Err(ServiceError::TooManyNodes {
                service: me.name.to_string(),
                max,
            });
        };
        let slot = me.node_slot_ref(i);
        // Relaxed (both): writers are serialised by the domain lock.
        slot.node_id.store(id, Ordering::Relaxed);
        slot.refs.fetch_add(1, Ordering::Relaxed);
        me.node_slot = i;
        Ok(me)
    }

    fn node_slot_ref(&self, i: usize) -> &NodeSlot {
        self.seg.node_slot(i)
    }

    pub(crate) fn header(&self) -> &DynHeader {
        self.seg.header()
    }

    /// The generation counter of the port tables.
    pub(crate) fn generation(&self) -> u64 {
        self.seg.generation()
    }

    /// The count of changes of the port tables (see
    /// [`wait_for_changes`](Self::wait_for_changes)).
    pub(crate) fn changes(&self) -> u32 {
        self.seg.changes()
    }

    /// Sleeps until the port tables change after `seen`, or `timeout`
    /// passes (a futex in the dynamic segment; may return early).
    pub(crate) fn wait_for_changes(&self, seen: u32, timeout: std::time::Duration) {
        self.seg.wait_for_changes(seen, timeout);
    }

    /// Whether the service's dynamic file was truncated under its mapping
    /// (which reads zeros now): the service is corrupted for good.
    pub(crate) fn lost(&self) -> bool {
        self.seg.lost()
    }

    /// The generation counter itself, for ports that check it on every
    /// operation (load it with Acquire, as [`generation`](Self::generation)).
    pub(crate) fn generation_word(&self) -> &std::sync::atomic::AtomicU64 {
        &self.header().generation
    }

    pub(crate) fn table_len(&self, kind: PortKind) -> usize {
        self.seg.table_len(kind)
    }

    pub(crate) fn port_slot(&self, kind: PortKind, i: usize) -> &PortSlot {
        self.seg.port_slot(kind, i)
    }

    /// The wake block of a port.
    pub(crate) fn wake_block(&self, kind: PortKind, i: usize) -> &WakeBlock {
        &self.port_slot(kind, i).wake
    }

    /// The extra area owned by entry `i` of the second table.
    pub(crate) fn extra(&self, i: usize) -> (&Mapping, u64) {
        self.seg.extra(i)
    }

    /// The service's shared area (the blackboard's entries): the mapping
    /// and its offset.
    pub(crate) fn shared(&self) -> (&Mapping, u64) {
        self.seg.shared()
    }

    /// Registers a port; returns its table index or `None` if `limit` ports
    /// of its kind are registered already or the table is full. Under the
    /// domain lock, `prepare` runs first (a pattern's own housekeeping of
    /// the table), and `init(index)` runs before the port becomes visible.
    pub(crate) fn register(
        &self,
        port: NewPort,
        prepare: impl FnOnce(&Self),
        init: impl FnOnce(usize),
    ) -> Result<Option<usize>, ServiceError> {
        let NewPort {
            kind,
            port_id,
            max_len,
            chunk_count,
            limit,
        } = port;
        let root = &self.node.root;
        let _lock = DomainLock::acquire(root).map_err(io_err("lock", root.path()))?;
        prepare(self);
        let limit = limit.min(self.table_len(kind));
        // Relaxed (both loads): writers are serialised by the domain lock.
        let active = (0..self.table_len(kind))
            .filter(|&i| {
                let s = self.port_slot(kind, i);
                s.port_id.load(Ordering::Relaxed) != 0
                    && s.flags.load(Ordering::Relaxed) != PORT_RETIRED
            })
            .count();
        if active >= limit {
            return Ok(None);
        }
        // Every free entry held by retired publishers: a live publisher takes
        // precedence over samples nobody has collected yet.
        let free = (0..self.table_len(kind))
            .any(|i| self.port_slot(kind, i).port_id.load(Ordering::Relaxed) == 0);
        if !free {
            if let Some(i) = (0..self.table_len(kind))
                .find(|&i| self.port_slot(kind, i).flags.load(Ordering::Relaxed) == PORT_RETIRED)
            {
                let pid = self.port_slot(kind, i).port_id.load(Ordering::Relaxed);
                tracing::warn!(
                    publisher = pid,
                    "evicting a departed publisher whose queued samples were never collected"
                );
                self.remove_port_locked(kind, i, pid);
                let _ = self.dir.remove_file(&publisher_file(pid));
            }
        }
        for i in 0..self.table_len(kind) {
            let s = self.port_slot(kind, i);
            // Relaxed: writers are serialised by the domain lock.
            if s.port_id.load(Ordering::Relaxed) == 0 {
                // Relaxed (all stores): published by the Release store of port_id.
                s.node_id.store(self.node.id, Ordering::Relaxed);
                s.max_len.store(max_len, Ordering::Relaxed);
                s.chunk_count.store(chunk_count, Ordering::Relaxed);
                s.flags.store(0, Ordering::Relaxed);
                s.wake.waiters.store(0, Ordering::Relaxed);
                s.wake.fd_waiters.store(0, Ordering::Relaxed);
                s.wake.notified.store(0, Ordering::Relaxed);
                init(i);
                // ORDERING: Release; pairs with the Acquire loads of port_id by
                // readers of the table, publishing the fields above.
                s.port_id.store(port_id, Ordering::Release);
                self.seg.bump();
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Removes a port from its table.
    pub(crate) fn unregister(&self, kind: PortKind, index: usize, port_id: u64) {
        let _lock = DomainLock::acquire(&self.node.root);
        self.remove_port_locked(kind, index, port_id);
    }

    /// Removes a port from its table; the domain lock must be held.
    pub(crate) fn remove_port_locked(&self, kind: PortKind, index: usize, port_id: u64) {
        self.seg.remove_port(kind, index, port_id);
    }

    /// Marks a publisher retired (see `port/segment.rs`); domain lock held.
    pub(crate) fn retire_locked(&self, index: usize, port_id: u64) {
        let s = self.port_slot(PortKind::Publisher, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) == port_id {
            // ORDERING: Release; pairs with the Acquire load of the generation
            // by subscribers, which then see the flag.
            s.flags.store(PORT_RETIRED, Ordering::Release);
            self.seg.bump();
        }
    }

    /// Reclaims the ports of dead nodes in this service, if there are any:
    /// called when a port follows a change of the tables. Without the domain
    /// lock unless one is found dead (a liveness probe per port).
    pub(crate) fn reclaim_dead_ports(&self) {
        let root = &self.node.root;
        let mut live = Liveness::new(root);
        let dead = [PortKind::Publisher, PortKind::Subscriber]
            .iter()
            .any(|&k| {
                (0..self.table_len(k)).any(|i| {
                    let s = self.port_slot(k, i);
                    // Relaxed (all three): a hint; the reclaim checks again
                    // under the domain lock.
                    s.port_id.load(Ordering::Relaxed) != 0
                        && s.flags.load(Ordering::Relaxed) != PORT_RETIRED
                        && !live.alive(s.node_id.load(Ordering::Relaxed))
                })
            });
        if !dead {
            return;
        }
        let Ok(_lock) = DomainLock::acquire(root) else {
            return;
        };
        let mut out = Reclaimed::default();
        reclaim_service_locked(
            &self.dir,
            &self.seg,
            &mut Liveness::new(root),
            false,
            &mut out,
        );
        if out.ports > 0 {
            tracing::info!(service = %self.name, ports = out.ports, "reclaimed the ports of dead nodes");
        }
    }

    /// The key of the service's directory in the domain root
    /// (`svc_<hash>`).
    pub(crate) fn key(&self) -> String {
        format!("svc_{}", self.name.file_key())
    }
}

impl Drop for ServiceInner {
    fn drop(&mut self) {
        if self.node_slot == usize::MAX {
            return;
        }
        let Ok(_lock) = DomainLock::acquire(&self.node.root) else {
            return;
        };
        let slot = self.node_slot_ref(self.node_slot);
        // Relaxed (all table accesses here): the domain lock serialises writers.
        if slot.refs.fetch_sub(1, Ordering::Relaxed) == 1 {
            slot.node_id.store(0, Ordering::Relaxed);
        }
        // A mapping that reads zeros (lost to a fault) says nothing of the
        // others' use: the files go only if the file itself was cut short
        // (then the service is broken for everyone).
        let truncated = || {
            self.dir
                .stat_entry(DYNAMIC_FILE)
                .ok()
                .flatten()
                .is_none_or(|st| (st.st_size as u64) < self.seg.size())
        };
        if !self.seg.in_use() && (!self.seg.lost() || truncated()) {
            remove_service_files(&self.node.root, &self.key(), &self.dir);
        }
    }
}
