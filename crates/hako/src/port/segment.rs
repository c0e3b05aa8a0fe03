//! Publisher data segments seen from outside the publisher: opening and
//! validating them, and the life of a segment after its publisher has left.
//!
//! A publisher that leaves while a connected subscriber has samples queued
//! but has not yet mapped the segment would lose those samples if it removed
//! the file. Instead it marks its port entry *retired* and leaves the file;
//! the subscriber maps it as usual (writing its id into the connection
//! block's `attached` word), and whoever then finds that no subscriber still
//! needs the file removes the entry and the file ([`reap_retired`]).

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use crate::core::layout::{
    SegmentGeometry, SegmentHeader, ATTACHED_OFFSET, LINE, PAGE, PORT_RETIRED,
};
use crate::core::ring::Submission;
use crate::domain::service::files::publisher_file;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::os::dir::{refusal, trusted_file, Dir};
use crate::os::lock::DomainLock;
use crate::os::shm::{self, Mapping};

/// An opened, validated segment file.
pub(crate) struct OpenSegment {
    pub fd: OwnedFd,
    pub header: SegmentHeader,
    pub geo: SegmentGeometry,
}

/// Opens the data segment of the sending port `port` in `dir` and
/// validates its header. `Ok(None)` if the file does not exist (its
/// publisher left).
pub(crate) fn open_segment(
    dir: &Dir,
    port: u64,
    access: shm::Access,
) -> Result<Option<OpenSegment>, &'static str> {
    open_segment_with(dir, port, true, Some(access))
}

/// What a segment file of an untrusted owner or mode is called in errors.
pub(crate) const UNTRUSTED_SEGMENT: &str =
    "its segment file belongs to a user outside the domain, or others may write to it";

/// What a segment that is a link (or no regular file) is called in errors.
pub(crate) const LINKED_SEGMENT: &str =
    "its segment file is a symbolic link or not a regular file (hako makes neither)";

/// [`open_segment`], the file opened read-only unless `writable`; its
/// owner and mode checked unless `access` is `None` (the inspectors, which
/// only read).
pub(crate) fn open_segment_with(
    dir: &Dir,
    port: u64,
    writable: bool,
    access: Option<shm::Access>,
) -> Result<Option<OpenSegment>, &'static str> {
    let fd = match dir.open_file(&publisher_file(port), writable) {
        Ok(fd) => fd,
        Err(e) if refusal(&e).is_some() => return Err(LINKED_SEGMENT),
        // Gone (its publisher left), or not ours to open.
        Err(_) => return Ok(None),
    };
    let size = shm::file_size(&fd).map_err(|_| "cannot stat the segment")?;
    if let Some(access) = access {
        // Owner and mode of the file opened (not of a path that could
        // change meanwhile): as for the service's own files.
        if !trusted_file(&fd, access) {
            return Err(UNTRUSTED_SEGMENT);
        }
    }
    if size < PAGE {
        return Err("segment too small");
    }
    let head = Mapping::new(&fd, 0, PAGE, false).map_err(|_| "cannot map the segment header")?;
    let header: SegmentHeader = head.read(0);
    let geo = header.validate(size)?;
    Ok(Some(OpenSegment { fd, header, geo }))
}

/// Whether some registered subscriber has samples queued in the segment
/// mapped by `map` (covering at least the connection blocks) but has not
/// mapped the segment itself yet.
pub(crate) fn still_needed(
    svc: &ServiceInner,
    map: &Mapping,
    geo: &SegmentGeometry,
    buffer: u64,
) -> bool {
    let subs = svc.table_len(PortKind::Subscriber);
    (0..subs).any(|j| {
        let base = geo.conns_offset + j as u64 * geo.conn_stride;
        // ORDERING: Acquire (three loads); pair with the Release stores of the
        // connected word (publisher), the port id (register) and the attached
        // word (subscriber).
        let connected = map.atomic(base).load(Ordering::Acquire);
        if connected == 0 {
            return false;
        }
        let registered = svc
            .port_slot(PortKind::Subscriber, j)
            .port_id
            .load(Ordering::Acquire)
            == connected;
        let attached = map.atomic(base + ATTACHED_OFFSET).load(Ordering::Acquire) == connected;
        let ring = Submission::with_format(
            map.atomics(base + geo.sub_offset, geo.ring_words()),
            map.atomic(base + LINE),
            buffer,
            geo.tagged,
            geo.inline,
        );
        registered && !attached && ring.has_item()
    })
}

/// Removes retired publisher entries (and their files) that no subscriber
/// needs any more.
pub(crate) fn reap_retired(svc: &ServiceInner) {
    let n = svc.table_len(PortKind::Publisher);
    // Relaxed: a hint; the check is repeated under the lock.
    let any = (0..n).any(|i| {
        svc.port_slot(PortKind::Publisher, i)
            .flags
            .load(Ordering::Relaxed)
            == PORT_RETIRED
    });
    if !any {
        return;
    }
    let Ok(_lock) = DomainLock::acquire(&svc.node.root) else {
        return;
    };
    reap_retired_locked(svc);
}

/// [`reap_retired`] with the domain lock already held. Only for services
/// whose first table holds publishers of data segments.
pub(crate) fn reap_retired_locked(svc: &ServiceInner) {
    let n = svc.table_len(PortKind::Publisher);
    for i in 0..n {
        let slot = svc.port_slot(PortKind::Publisher, i);
        // Relaxed (both): writers of the table are serialised by the lock we hold.
        let pid = slot.port_id.load(Ordering::Relaxed);
        if pid == 0 || slot.flags.load(Ordering::Relaxed) != PORT_RETIRED {
            continue;
        }
        let needed = match open_segment(&svc.dir, pid, svc.node.access) {
            // A segment that disagrees with the service is garbage: remove it.
            Ok(Some(seg))
                if seg.header.port_id == pid
                    && seg.header.params.max_subscribers
                        == svc.table_len(PortKind::Subscriber) as u64 =>
            {
                match Mapping::new(&seg.fd, 0, seg.geo.pool_offset, false) {
                    Ok(map) => still_needed(svc, &map, &seg.geo, seg.header.params.buffer),
                    Err(_) => false,
                }
            }
            _ => false,
        };
        if !needed {
            svc.remove_port_locked(PortKind::Publisher, i, pid);
            let _ = svc.dir.remove_file(&publisher_file(pid));
        }
    }
}
