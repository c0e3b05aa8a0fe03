//! What a sending port fixed when it was made: its settings, its data
//! segment's geometry and mapping, its entry in the service.

use std::sync::Arc;

use super::settings::BackpressureStrategy;
use crate::core::layout::SegmentGeometry;
use crate::core::ring::{Inline, LOST_PAYLOAD};
use crate::domain::config::OverflowPolicy;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::os::shm::Mapping;

/// The sender's immutable part, beside its state (see `SenderInner`).
pub(crate) struct SenderParams {
    pub(super) overflow: OverflowPolicy,
    pub(super) strategy: BackpressureStrategy,
    pub(super) history_size: usize,
    pub(super) per_conn_limit: usize,
    pub(super) buffer: u64,
    pub(super) max_loans: usize,
    pub(super) max_len: usize,
    /// Chunks of at least `REUSE_MIN_CHUNK`: the publisher times how
    /// long its samples take to fill (`FillClock`).
    pub(super) large_chunks: bool,
    /// Bytes per payload element.
    pub(super) elem_size: u64,
    pub(super) geo: SegmentGeometry,
    pub(super) port_id: u64,
    /// Index of the sender's own entry, when it registered one.
    pub(super) index: Option<usize>,
    /// The table of its own entry, and the one whose entries it serves.
    pub(super) own: PortKind,
    pub(super) peers: PortKind,
    /// The name of its data segment in the service's directory.
    pub(super) file: String,
    pub(super) map: Mapping,
    /// The service's generation word (in its mapping, kept alive by `service`).
    pub(super) generation: &'static std::sync::atomic::AtomicU64,
    pub(super) service: Arc<ServiceInner>,
}

impl SenderParams {
    /// The payload of chunk `idx` (the chunk's first byte).
    #[inline]
    pub(super) fn payload_ptr(&self, idx: u32) -> *mut u8 {
        let off = self.geo.pool_offset + u64::from(idx) * self.geo.chunk_size;
        debug_assert!(off + self.geo.chunk_size <= self.map.len() as u64);
        // SAFETY: idx comes from our own ChunkBook (< chunk_count), so the
        // chunk lies inside the mapping.
        unsafe { self.map.ptr().add(off as usize) }
    }

    /// What the slots carry of chunk `idx`'s payload: when the rings are
    /// inline (see `core::ring`), the chunk's first words, which hold the
    /// whole payload (the geometry let the rings be inline only if the
    /// largest fits); nothing otherwise. Words past the payload's end carry
    /// whatever the chunk holds there, which receivers may read anyway.
    /// With inline rings, `len` becomes [`LOST_PAYLOAD`] if the pool was
    /// truncated under us: its lines then read zeros or what this process
    /// alone wrote, and a receiver, which never reads the pool itself, must
    /// learn that from the slot.
    #[inline(always)]
    pub(super) fn inline_words(&self, idx: u32, len: &mut u64) -> Option<&Inline> {
        if !self.geo.inline {
            return None;
        }
        if self.map.lost() {
            *len = LOST_PAYLOAD;
        }
        const _: () = assert!(size_of::<Inline>() <= 64);
        // SAFETY: the chunk is ours (idx from our own book), at least 64
        // bytes long and aligned to 64 (see the geometry), in a mapping
        // `self` keeps; the publisher alone writes its pool, and it does
        // not while this borrow lives (the send that reads it).
        Some(unsafe { &*self.payload_ptr(idx).cast::<Inline>() })
    }
}
