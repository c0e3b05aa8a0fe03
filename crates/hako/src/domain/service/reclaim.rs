//! Reclaiming the ports of dead nodes from one service's tables, and the
//! report of what a reclaim removed. The whole-domain sweep that calls it
//! for every service is `domain/cleanup.rs`.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::files::{fifo_file, publisher_file};
use super::tables::{DynSegment, PortKind};
use crate::core::layout::PORT_RETIRED;
use crate::domain::nodefile::Liveness;
use crate::os::dir::Dir;

/// A node found dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadNode {
    /// Its id.
    pub id: u64,
    /// The process id it recorded (informational only; never used to decide).
    pub pid: Option<u32>,
    /// Its name ("" if it had none).
    pub name: String,
}

/// What a reclaim removed (or, for a dry run, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Dead nodes.
    pub dead_nodes: Vec<DeadNode>,
    /// Ports of dead nodes taken out of service tables.
    pub ports: usize,
    /// Services removed because nobody used them any more.
    pub services: Vec<String>,
    /// Files removed.
    pub files: Vec<PathBuf>,
}

impl Reclaimed {
    /// Whether there was nothing to reclaim.
    pub fn is_empty(&self) -> bool {
        self.dead_nodes.is_empty() && self.ports == 0 && self.services.is_empty()
    }
}

/// One service's tables; domain lock held. Used on open, too.
pub(crate) fn reclaim_service_locked(
    dir: &Dir,
    seg: &DynSegment,
    live: &mut Liveness<'_>,
    dry_run: bool,
    out: &mut Reclaimed,
) {
    for kind in [PortKind::Publisher, PortKind::Subscriber] {
        for i in 0..seg.table_len(kind) {
            let s = seg.port_slot(kind, i);
            // Relaxed (all three): writers are serialised by the domain lock.
            let port = s.port_id.load(Ordering::Relaxed);
            if port == 0 || s.flags.load(Ordering::Relaxed) == PORT_RETIRED {
                // Free, or a publisher that left cleanly with samples still
                // queued (port/segment.rs collects those).
                continue;
            }
            if live.alive(s.node_id.load(Ordering::Relaxed)) {
                continue;
            }
            out.ports += 1;
            if dry_run || seg.remove_port(kind, i, port) {
                // (A dry run lists what the real run removes with the port.)
                for f in [publisher_file(port), fifo_file(port)] {
                    if dir.has(&f) {
                        remove(out, dir, &f, dry_run);
                    }
                }
            }
        }
    }
    if dry_run {
        return;
    }
    for i in 0..seg.node_count() {
        let n = seg.node_slot(i);
        // Relaxed (all): writers are serialised by the domain lock.
        let id = n.node_id.load(Ordering::Relaxed);
        if id != 0 && !live.alive(id) {
            n.refs.store(0, Ordering::Relaxed);
            n.node_id.store(0, Ordering::Relaxed);
        }
    }
}

/// Whether anything alive still uses the service once its dead nodes'
/// ports are gone (what a dry run asks; the real run looks at the table).
pub(crate) fn used_by_the_living(seg: &DynSegment, live: &mut Liveness<'_>) -> bool {
    // Relaxed (all): writers are serialised by the domain lock.
    let nodes = (0..seg.node_count()).any(|i| {
        let id = seg.node_slot(i).node_id.load(Ordering::Relaxed);
        id != 0 && live.alive(id)
    });
    nodes
        || [PortKind::Publisher, PortKind::Subscriber].iter().any(|&k| {
            (0..seg.table_len(k)).any(|i| {
                let s = seg.port_slot(k, i);
                s.port_id.load(Ordering::Relaxed) != 0
                    && (s.flags.load(Ordering::Relaxed) == PORT_RETIRED
                        || live.alive(s.node_id.load(Ordering::Relaxed)))
            })
        })
}

/// Removes the file `name` of `dir` (in a dry run, only reports it).
pub(crate) fn remove(out: &mut Reclaimed, dir: &Dir, name: &str, dry_run: bool) {
    if dry_run || dir.remove_file(name).is_ok() {
        out.files.push(dir.join(name));
    }
}
