//! A listener's counters in the service's extra area:
//!
//! ```text
//!  +0   summary: AtomicU64        bit g set: some id in 64·g .. 64·g+63 fired
//!  +8   counters: [AtomicU64; event_id_max + 1]
//! ```

use std::sync::atomic::AtomicU64;

use crate::domain::service::inner::ServiceInner;

/// Bytes of a listener's counter area for ids `0..=event_id_max`.
pub(crate) fn counter_area_size(event_id_max: u64) -> u64 {
    (8 + 8 * (event_id_max + 1)).div_ceil(128) * 128
}

/// The counter area of listener `j`.
pub(super) fn counters<'a>(
    svc: &'a ServiceInner,
    j: usize,
) -> (&'a AtomicU64, impl Fn(u64) -> &'a AtomicU64 + 'a) {
    let (map, base) = svc.extra(j);
    let summary = map.atomic(base);
    (summary, move |id: u64| map.atomic(base + 8 + 8 * id))
}
