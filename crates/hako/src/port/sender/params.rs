//! What a sending port fixed when it was made: its settings, its data
//! segment's geometry and mapping, its entry in the service.

use std::sync::Arc;

use super::settings::BackpressureStrategy;
use crate::core::layout::SegmentGeometry;
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
}
