//! A sending port: its data segment, made here, its entry in the service,
//! and its state behind the port lock. The typed faces (a publisher, and
//! the senders of other patterns) hold it in an `Arc`; loans point at it
//! (`loan.rs`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::conn::{ConnState, FillClock, REUSE_MIN_CHUNK};
use super::params::SenderParams;
use super::settings::{SenderCreateError, SenderSettings, Withdrawal};
use super::state::SenderState;
use crate::core::layout::{
    fits_inline, PubCounters, SegmentHeader, SegmentParams, COUNTERS_OFFSET, DROPPED_OFFSET,
    LAYOUT_VERSION, LINE, SEGMENT_MAGIC,
};
use crate::core::pool::{ChunkBook, Outstanding};
use crate::core::returns::Returns;
use crate::core::ring::{Producer, Submission};
use crate::domain::nodefile::{new_id, node_alive_in};
use crate::domain::service::error::io_err;
use crate::domain::service::files::publisher_file;
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::os::lock::DomainLock;
use crate::os::shm::Mapping;
use crate::port::lock::{PortGuard, PortLock};
use crate::port::segment;

/// A sending port.
pub(crate) struct SenderInner {
    /// Declared first, so its views into `params.map` go before the mapping.
    state: PortLock<SenderState>,
    pub(crate) params: SenderParams,
}

impl SenderInner {
    /// Makes a sending port of `service`: creates and maps its data
    /// segment (all of it, its page tables set up, so no send or receive
    /// takes a page fault later; creation takes time in proportion to the
    /// pool), enters it into the service's first table, and connects the
    /// receivers there now.
    pub(crate) fn create(
        service: Arc<ServiceInner>,
        s: SenderSettings,
    ) -> Result<Arc<Self>, SenderCreateError> {
        let svc = service;
        let params = SegmentParams {
            elem_size: s.elem_size,
            align: s.align,
            max_len: s.max_len,
            chunk_count: s.chunk_count,
            max_subscribers: s.max_receivers.into(),
            buffer: s.buffer,
            borrowed: s.borrowed,
            tagged: u64::from(s.tagged),
            withdrawals: s.withdrawals,
            inline: u64::from(
                s.inline && fits_inline(s.elem_size, s.max_len, s.align, s.tagged),
            ),
        };
        let geo = params.geometry().ok_or(SenderCreateError::Geometry)?;
        let port_id = s.shared_id.unwrap_or_else(new_id);
        let file = publisher_file(port_id);
        let path = svc.dir.join(&file);
        let seg_err = |source| SenderCreateError::Segment {
            size: geo.total_size,
            source,
        };
        let fd = svc
            .dir
            .create_file(&file, geo.total_size, svc.node.access)
            .map_err(|e| seg_err(io_err("create", &path)(e)))?;
        let map = match Mapping::new(&fd, 0, geo.total_size, true) {
            Ok(m) => m,
            Err(e) => {
                let _ = svc.dir.remove_file(&file);
                return Err(seg_err(io_err("map", &path)(e)));
            }
        };
        drop(fd);
        let chunk_count = s.chunk_count;
        map.write(
            0,
            SegmentHeader {
                magic: SEGMENT_MAGIC,
                version: LAYOUT_VERSION,
                chunk_count: chunk_count as u32,
                port_id,
                params,
            },
        );
        let index = match s.shared_id {
            Some(_) => None,
            None => {
                let entry = NewPort {
                    kind: s.own,
                    port_id,
                    max_len: s.max_len,
                    chunk_count,
                    limit: s.max_senders as usize,
                };
                match svc.register(entry, segment::reap_retired_locked, |_| {}) {
                    Ok(Some(i)) => Some(i),
                    Ok(None) => {
                        let _ = svc.dir.remove_file(&file);
                        return Err(SenderCreateError::TooMany);
                    }
                    Err(e) => {
                        let _ = svc.dir.remove_file(&file);
                        return Err(seg_err(e));
                    }
                }
            }
        };
        let n = chunk_count as u32;
        let conns = (0..s.max_receivers as usize)
            .map(|j| {
                let base = geo.conns_offset + j as u64 * geo.conn_stride;
                // SAFETY: the views below point into `map` and into the
                // service's dynamic segment. `map` moves into the
                // SenderParams built below, which also keeps the service
                // (and so its mapping) alive; both stay mapped until the
                // SenderInner holding them drops, and the views are only
                // used through it.
                let (slots, head, returns, connected, wake, dropped_word, withdrawn) = unsafe {
                    (
                        map.atomics_detached(base + geo.sub_offset, geo.ring_words()),
                        map.atomic_detached(base + LINE),
                        map.atomics_detached(base + geo.returns_offset, geo.return_slots),
                        map.atomic_detached(base),
                        &*std::ptr::from_ref(svc.wake_block(s.peers, j)),
                        map.atomic_detached(base + DROPPED_OFFSET),
                        map.atomics_detached(base + geo.withdrawn_offset, geo.withdrawals),
                    )
                };
                ConnState {
                    sub: Submission::with_format(slots, head, s.buffer, s.tagged, geo.inline),
                    returns: Returns::new(returns),
                    connected,
                    wake,
                    dropped_word,
                    dropped: 0,
                    sub_port: 0,
                    producer: Producer::default(),
                    outstanding: Outstanding::new(geo.return_slots as u32),
                    broken: false,
                    delivered: false,
                    fifo: None,
                    withdrawn,
                    lossy: false,
                }
            })
            .collect();
        let state = SenderState {
            book: ChunkBook::new(n),
            last_sent: None,
            fill: FillClock::default(),
            conns,
            history: VecDeque::with_capacity(s.history_size as usize),
            loaned: 0,
            orphaned: false,
            seen_generation: u64::MAX,
            active: Vec::with_capacity(s.max_receivers as usize),
            active_dirty: true,
            plain: s.history_size == 0 && geo.chunk_size < REUSE_MIN_CHUNK,
            lane: None,
            // SAFETY: in the sender's own mapping, which the SenderInner
            // holding this state keeps alive; PubCounters is made of atomics,
            // 8-aligned at COUNTERS_OFFSET.
            counters: unsafe {
                &*map
                    .ptr()
                    .add(COUNTERS_OFFSET as usize)
                    .cast::<PubCounters>()
            },
            sent: 0,
            deliveries: 0,
            dropped: 0,
        };
        // Relaxed: a counter for inspectors.
        state
            .counters
            .free_chunks
            .store(u64::from(n), Ordering::Relaxed);
        // SAFETY: the generation word lives in the service's mapping, which
        // the SenderParams keep alive through `service`.
        let generation = unsafe { &*std::ptr::from_ref(svc.generation_word()) };
        let inner = Arc::new(Self {
            state: PortLock::new(state),
            params: SenderParams {
                generation,
                overflow: s.overflow,
                strategy: s.strategy,
                history_size: s.history_size as usize,
                per_conn_limit: (s.buffer + s.borrowed) as usize,
                buffer: s.buffer,
                max_loans: s.max_loans as usize,
                max_len: s.max_len as usize,
                large_chunks: geo.chunk_size >= REUSE_MIN_CHUNK,
                elem_size: s.elem_size,
                geo,
                port_id,
                index,
                own: s.own,
                peers: s.peers,
                file,
                map,
                service: svc,
            },
        });
        inner.lock_unclaimed().update_connections(&inner.params);
        Ok(inner)
    }

    /// The state, for the hot path (see [`PortLock::lock`]).
    #[inline]
    pub(crate) fn lock(&self) -> PortGuard<'_, SenderState> {
        self.state.lock()
    }

    /// The state, for calls off the hot path that must not claim the bias.
    pub(crate) fn lock_unclaimed(&self) -> PortGuard<'_, SenderState> {
        self.state.lock_unclaimed()
    }

    /// Connects receivers that arrived since the last send (and hands them
    /// the history).
    pub(crate) fn update_connections(&self) {
        self.lock_unclaimed().update_connections(&self.params);
    }

    /// Whether a send now would not wait for room (see
    /// `SenderState::room_everywhere`).
    pub(crate) fn room_everywhere(&self, check_alive: bool) -> bool {
        self.lock_unclaimed()
            .room_everywhere(&self.params, check_alive)
    }

    /// Receivers currently connected.
    pub(crate) fn receiver_count(&self) -> usize {
        let mut st = self.lock_unclaimed();
        st.update_connections(&self.params);
        st.connected_count()
    }

    /// Waits until a receiver is connected, at most `timeout`, sleeping on
    /// the service's count of table changes: `Err(Some(timeout))` when
    /// none came, `Err(None)` on SIGINT or SIGTERM (for a node that
    /// handles them; looked at least every 100 ms).
    pub(crate) fn wait_for_receivers(&self, timeout: Duration) -> Result<(), Option<Duration>> {
        let svc = &self.params.service;
        // No end for a timeout too long to add (Duration::MAX: forever).
        let end = Instant::now().checked_add(timeout);
        let slice = Duration::from_millis(100);
        loop {
            let seen = svc.changes();
            if self.receiver_count() > 0 {
                return Ok(());
            }
            if svc.node.signals && crate::os::signal::requested() {
                return Err(None);
            }
            let left = end.map_or(slice, |e| e.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return Err(Some(timeout));
            }
            svc.wait_for_changes(seen, left.min(slice));
        }
    }

    /// Whether this port's segment or its service's file was truncated
    /// while mapped (the lost memory reads zeros; see `os::sigbus`).
    pub(crate) fn is_corrupted(&self) -> bool {
        self.params.map.lost() || self.params.service.lost()
    }

    /// Chunks in the pool.
    pub(crate) fn pool_size(&self) -> u32 {
        self.lock_unclaimed().book.len()
    }

    /// Chunks free once everything returned is taken back.
    pub(crate) fn free_chunks(&self) -> usize {
        let mut st = self.lock_unclaimed();
        st.drain_all();
        st.book.free_count()
    }

    /// The typed face holding `this` goes. If samples are still loaned,
    /// leaves one reference behind for the last of them to release (see
    /// `RawLoan`); taken under the lock, so that loan cannot run first.
    pub(crate) fn face_dropped(this: &Arc<Self>) {
        let mut st = this.lock_unclaimed();
        if st.loaned > 0 {
            st.orphaned = true;
            let _ = Arc::into_raw(Arc::clone(this));
        }
    }

    /// The generation of the service's tables now.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        // ORDERING: Acquire; pairs with the Release bump of the generation
        // (DynSegment::bump): table changes before it are visible.
        self.params.generation.load(Ordering::Acquire)
    }

    /// The receiver's port id on connection `j`, if that connection is
    /// served now (after following the table).
    #[inline]
    pub(crate) fn served_port(&self, j: usize) -> Option<u64> {
        let mut st = self.lock_unclaimed();
        // ORDERING: Acquire; as in SenderState::send(). A busy-polling
        // client asks this after every empty poll: one load while the
        // table does not change.
        if self.params.generation.load(Ordering::Acquire) != st.seen_generation {
            st.update_connections(&self.params);
        }
        st.served_port(j)
    }

    /// Whether the receiver `port_id` is still in entry `j` of the peers'
    /// table and its node alive (a lock probe: a system call). If it died,
    /// its ports are reclaimed now, so that connections to it end.
    pub(crate) fn peer_alive(&self, j: usize, port_id: u64) -> bool {
        let svc = &self.params.service;
        if j >= svc.table_len(self.params.peers) {
            return false;
        }
        let slot = svc.port_slot(self.params.peers, j);
        // ORDERING: Acquire; pairs with the Release store in register().
        if slot.port_id.load(Ordering::Acquire) != port_id {
            return false;
        }
        // Relaxed: published by the port id.
        let node = slot.node_id.load(Ordering::Relaxed);
        if node_alive_in(&svc.node.root, node) {
            return true;
        }
        svc.reclaim_dead_ports();
        false
    }

    /// The port's id.
    pub(crate) fn id(&self) -> u64 {
        self.params.port_id
    }

    /// Whether the receiver `port`, on connection `j`, withdrew the message
    /// `w` names (see [`Withdrawal`]).
    pub(crate) fn withdrawn(&self, j: usize, port: u64, w: Withdrawal) -> bool {
        self.lock_unclaimed().withdrawn((j, port), w)
    }

    /// The service's name.
    pub(crate) fn service_name(&self) -> &crate::domain::name::ServiceName {
        &self.params.service.name
    }

    /// Elements of the largest slice a loan may hold.
    pub(crate) fn max_len(&self) -> usize {
        self.params.max_len
    }
}

impl Drop for SenderInner {
    fn drop(&mut self) {
        let p = &self.params;
        let svc = &p.service;
        let Some(index) = p.index else {
            // The entry is its pattern's: receivers that mapped the segment
            // keep their mappings, and what they had not mapped yet is lost
            // with the file (see SenderSettings::shared_id).
            let _ = svc.dir.remove_file(&p.file);
            return;
        };
        let _lock = DomainLock::acquire(&svc.node.root);
        // Receivers that mapped the segment keep their mappings: samples they
        // hold or have queued stay readable after the file is gone. One that
        // has samples queued but has not mapped it yet still needs the file.
        if segment::still_needed(svc, &p.map, &p.geo, p.buffer) {
            svc.retire_locked(index, p.port_id);
        } else {
            svc.remove_port_locked(p.own, index, p.port_id);
            let _ = svc.dir.remove_file(&p.file);
        }
    }
}
