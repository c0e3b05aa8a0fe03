//! A receiver's registration in its service and its view of one sender's
//! data segment (a connection), with the hand-over that frees a connection
//! after the last sample taken from it.

use std::ops::Deref;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::settings::ReceiverSettings;
use crate::core::bias::SampleCount;
use crate::core::layout::{SegmentGeometry, ATTACHED_OFFSET, LINE, PAGE};
use crate::core::returns::Returns;
use crate::core::ring::{InlineCell, Submission};
use crate::domain::service::inner::ServiceInner;
use crate::os::shm::Mapping;
use crate::port::lock::{biasable, process_barrier};
use crate::port::segment::{open_segment, reap_retired, OpenSegment};

/// The subscriber's entry in the service; removed when the subscriber and
/// every sample it handed out are gone.
pub(crate) struct Registration {
    pub(crate) service: Arc<ServiceInner>,
    pub(crate) port_id: u64,
    pub(crate) index: usize,
    /// Read end of the wake-up FIFO a waitset polls.
    pub(crate) fifo: OwnedFd,
    /// Its name in the service's directory.
    pub(crate) fifo_name: String,
    /// Samples received in all, for inspectors: in the service's extra area
    /// for this subscriber (kept mapped by `service`).
    pub(crate) received_total: &'static AtomicU64,
    /// The port's settings.
    pub(crate) settings: ReceiverSettings,
    /// Where `received_total` points for an entry of the first table,
    /// which has no extra area: a leaked box, freed when this goes.
    pub(crate) own_total: Option<std::ptr::NonNull<AtomicU64>>,
}

// SAFETY: `own_total` points to an AtomicU64 that this registration owns
// (see Drop); everything else is Send and Sync.
unsafe impl Send for Registration {}
// SAFETY: as for Send; the AtomicU64 is only read and written atomically.
unsafe impl Sync for Registration {}

impl Drop for Registration {
    fn drop(&mut self) {
        // The entry goes when the receiver and every sample it handed out
        // are gone, also one it shares with a sender (see
        // ReceiverSettings::shared): until then its peers keep the chunks
        // those samples hold.
        self.service
            .unregister(self.settings.own, self.index, self.port_id);
        if self.settings.shared.is_none() {
            reap_retired(&self.service);
        }
        let _ = self.service.dir.remove_file(&self.fifo_name);
        if let Some(p) = self.own_total {
            // SAFETY: leaked from a Box in Receiver::create for this
            // registration alone; `received_total` (the only other
            // reference) goes with it, and no sample outlives it.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

/// This subscriber's view of one publisher's segment.
pub(crate) struct SubConn {
    pub(super) reg: Arc<Registration>,
    pub(super) publisher: u64,
    /// The sender's entry in the peers' table.
    pub(super) slot: usize,
    /// This subscriber's connection block (the pages holding it),
    /// read-write; kept mapped for the views.
    pub(super) rw: Mapping,
    /// The chunk pool, read-only; kept mapped for the views.
    pub(super) pool: Mapping,
    pub(super) geo: SegmentGeometry,
    pub(super) chunk_count: u32,
    pub(super) max_len: u64,
    /// Bytes per payload element.
    pub(super) elem_size: u64,
    /// Whether the payload is a slice (else the length must be 1).
    pub(super) slice: bool,
    /// Samples of this connection received and dropped; decides who frees
    /// it (see [`ConnHandle`]). Its bias is claimed at the first receive (a
    /// subscriber may be created on one thread and used on another) and
    /// revoked when the handle goes, both on the subscriber's thread.
    pub(super) count: SampleCount,
    // Views into `rw` and `pool`, computed once. The 'static lifetimes are
    // sound because the mappings live in this same struct, are never
    // replaced, and the views are only handed out borrowed from `&self`.
    pub(super) sub: Submission<'static>,
    pub(super) returns: Returns<'static>,
    pub(super) connected: &'static AtomicU64,
    /// Our withdrawal words in the sender's segment (a client's, in a
    /// server's segment, see `Receiver::withdraw`; empty for others).
    pub(super) withdrawn: &'static [AtomicU64],
    pub(super) pool_base: usize,
    /// The pool mapping's lost flag (`Mapping::lost_flag`; set if either
    /// mapping of the connection faulted, as they are beside each other).
    pub(super) pool_lost: &'static AtomicBool,
    /// Where the payloads of an inline connection live while their samples
    /// do: one cell per return slot (a delivery keeps its slot until its
    /// sample drops, and an honest sender reuses a slot only after that),
    /// in this process's memory. Empty unless the rings are inline.
    pub(super) cells: Box<[InlineCell]>,
}


impl SubConn {
    pub(super) fn open(reg: &Arc<Registration>, slot: usize, pid: u64) -> Result<Option<Self>, &'static str> {
        let svc = &reg.service;
        let Some(OpenSegment { fd, header: h, geo }) = open_segment(&svc.dir, pid, svc.node.access)?
        else {
            return Ok(None);
        };
        let s = &reg.settings;
        let p = &h.params;
        let ps = svc.port_slot(s.peers, slot);
        // Relaxed (both): published by the Acquire load of port_id that found it.
        let (slot_len, slot_chunks) = (
            ps.max_len.load(Ordering::Relaxed),
            ps.chunk_count.load(Ordering::Relaxed),
        );
        if h.port_id != pid
            || p.elem_size != s.elem_size
            || p.align != s.align
            || (!s.slice && p.max_len != 1)
            || p.max_subscribers != u64::from(s.max_receivers)
            || p.buffer != s.buffer
            || p.borrowed != s.borrowed
            || p.tagged != u64::from(s.tagged)
            || p.withdrawals != s.withdrawals
            || p.max_len != slot_len
            || p.chunk_count != slot_chunks
        {
            return Err("segment header disagrees with the service");
        }
        // Only this subscriber's connection block (and the pages it
        // shares with its neighbours' blocks): mapping every block would
        // make each subscriber map the whole segment, which grows with the
        // subscribers the service allows.
        let base = geo.conns_offset + reg.index as u64 * geo.conn_stride;
        let start = base & !(PAGE - 1);
        let end = (base + geo.conn_stride).div_ceil(PAGE) * PAGE;
        let rw = Mapping::new(&fd, start, end.min(geo.pool_offset) - start, true)
            .map_err(|_| "cannot map the connection block")?;
        // Beside `rw`: if the file is truncated, a fault in either turns
        // both to zeros, so the connection reads as closed (os::sigbus).
        let pool = Mapping::new_beside(
            &fd,
            geo.pool_offset,
            geo.total_size - geo.pool_offset,
            false,
            Some(&rw),
        )
        .map_err(|_| "cannot map the pool")?;
        // The block's offset in `rw`.
        let base = base - start;
        // ORDERING: Release; pairs with the Acquire load in
        // port/segment.rs (still_needed): once seen, the file may be removed.
        rw.atomic(base + ATTACHED_OFFSET)
            .store(reg.port_id, Ordering::Release);
        // SAFETY: the five views below point into `rw`, which moves
        // into the returned struct with them and stays mapped until it is
        // dropped; they are only used through it (see the field comment).
        let (slots, head, returns, connected, withdrawn) = unsafe {
            (
                rw.atomics_detached(base + geo.sub_offset, geo.ring_words()),
                rw.atomic_detached(base + LINE),
                rw.atomics_detached(base + geo.returns_offset, geo.return_slots),
                rw.atomic_detached(base),
                rw.atomics_detached(base + geo.withdrawn_offset, geo.withdrawals),
            )
        };
        Ok(Some(Self {
            reg: reg.clone(),
            publisher: pid,
            slot,
            pool_base: pool.ptr() as usize,
            pool_lost: pool.lost_flag(),
            rw,
            pool,
            geo,
            chunk_count: h.chunk_count,
            max_len: p.max_len,
            elem_size: p.elem_size,
            slice: s.slice,
            count: SampleCount::new(biasable()),
            sub: if s.backpressure && !s.lossy {
                Submission::with_format(slots, head, p.buffer, s.tagged, geo.inline).sole_consumer()
            } else {
                Submission::with_format(slots, head, p.buffer, s.tagged, geo.inline)
            },
            cells: if geo.inline {
                (0..geo.return_slots)
                    .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                    .collect()
            } else {
                Box::default()
            },
            returns: Returns::new(returns),
            connected,
            withdrawn,
        }))
    }

    /// Samples of this connection currently held.
    #[inline]
    pub(super) fn held(&self) -> usize {
        // A drop racing with this check at worst refuses one receive that
        // would just have fitted.
        self.count.held() as usize
    }

    /// Whether fewer than `max` samples of this connection are held (a
    /// drop racing with it may refuse, as with held(), one receive that
    /// would just have fitted).
    #[inline]
    pub(super) fn holds_fewer_than(&self, max: usize) -> bool {
        self.count.holds_fewer_than(max as u64)
    }

    #[inline]
    pub(super) fn connected(&self) -> bool {
        // ORDERING: Acquire; pairs with the publisher's Release store in
        // connect(): the reset rings are visible once we see our id.
        self.connected.load(Ordering::Acquire) == self.reg.port_id
    }

    #[inline]
    pub(super) fn submission(&self) -> Submission<'_> {
        self.sub
    }

    fn chunk_offset(&self, idx: u32) -> u64 {
        u64::from(idx) * self.geo.chunk_size
    }

    /// Address of chunk `idx`'s payload; `idx` must be below `chunk_count`.
    #[inline]
    pub(super) fn payload_addr(&self, idx: u32) -> usize {
        self.pool_base + self.chunk_offset(idx) as usize
    }

    /// The first byte of the cell of return slot `ret` (unvalidated), where
    /// the pop put an inline payload (aligned to 8, enough for every
    /// payload an inline sender may have); `None` if `ret` is out of range.
    #[inline(always)]
    pub(super) fn inline_payload(&self, ret: u32) -> Option<*const u8> {
        Some(self.cells.get(ret as usize)?.as_ptr().cast())
    }

    /// What to prefetch while waiting for the message after one of `len`
    /// elements (validated) in chunk `idx` (validated), returned through
    /// slot `ret` (unvalidated), which announced `next` (unvalidated): the
    /// first and last byte of `next`'s payload, guessing the same length,
    /// or, if `next` is missing, `idx`'s payload, which is in our cache
    /// already; and the line of `ret`'s return word, where the next
    /// delivery's slot most likely sits too (a connection has a few return
    /// words, a line holds sixteen, and the publisher reuses the slot freed
    /// last). Addresses for prefetches only, never dereferenced: those a
    /// hostile publisher's `next` or `ret` give are not checked, as a
    /// prefetch of any address is harmless (see `core::sync`).
    #[inline(always)]
    pub(super) fn ahead(&self, idx: u32, ret: u32, len: u64, next: Option<u32>) -> [usize; 3] {
        let word = self.returns.word_addr(ret);
        match next {
            Some(n) => {
                let first = self
                    .pool_base
                    .wrapping_add(u64::from(n).wrapping_mul(self.geo.chunk_size) as usize);
                [
                    first,
                    first.wrapping_add((len * self.elem_size).saturating_sub(1) as usize),
                    word,
                ]
            }
            _ => {
                let first = self.payload_addr(idx);
                [first, first, word]
            }
        }
    }
}

/// The subscriber's hold on a connection. Samples point at the same
/// `SubConn` without a reference count: the connection's [`SampleCount`]
/// tells who is last. When the handle goes, it frees the connection if
/// every sample received is dropped by then, else the last sample to drop
/// does. A sample stores its return word before it counts itself, so the
/// one that frees comes after every other sample's last access.
pub(crate) struct ConnHandle(pub(super) NonNull<SubConn>);

// SAFETY: SubConn is Send and Sync (mappings, atomics and an Arc); the handle
// is its owner until the hand-over described above.
unsafe impl Send for ConnHandle {}

impl ConnHandle {
    pub(super) fn new(conn: SubConn) -> Self {
        Self(NonNull::from(Box::leak(Box::new(conn))))
    }
}

impl Deref for ConnHandle {
    type Target = SubConn;
    fn deref(&self) -> &SubConn {
        // SAFETY: freed only after the handle is gone (see the type's docs).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for ConnHandle {
    fn drop(&mut self) {
        // On the subscriber's thread (it is not Sync). If the process-wide
        // barrier fails, the connection is kept (with its mapping) rather
        // than risk freeing it under a sample; nothing else is lost.
        if self.count.let_go(process_barrier) {
            // SAFETY: every sample of the connection is gone and so are we.
            unsafe { free_conn(self.0) };
        }
    }
}

/// Frees a connection.
///
/// # Safety
/// Only by the last of the handle and the samples (see [`ConnHandle`]).
pub(super) unsafe fn free_conn(conn: NonNull<SubConn>) {
    // SAFETY: allocated by Box in ConnHandle::new; the caller is the last user.
    drop(unsafe { Box::from_raw(conn.as_ptr()) });
}
