//! Reclaiming what dead processes left behind.
//!
//! A process that dies without dropping its ports (SIGKILL, a crash) leaves
//! its node file, its entries in the services' node and port tables, its
//! publishers' data segments and its ports' FIFOs. Its liveness lock died
//! with it, so anyone can tell (never by pid). Reclaiming happens under the
//! domain lock:
//!
//! 1. Every port of a dead node leaves its table and the generation counter
//!    moves. A publisher then disconnects a dead subscriber on its next send
//!    and takes back every chunk that subscriber held; a subscriber of a dead
//!    publisher drains what was queued for it, and samples it holds stay
//!    readable (its mapping outlives the file) until dropped.
//! 2. The dead ports' files go (data segments, FIFOs), the node's entries in
//!    the node tables are cleared, and a service that nobody uses any more
//!    is removed, as is a half-created one (its creator died before it
//!    published the static description).
//! 3. The node file goes last, so a reclaimer that dies midway leaves the
//!    rest to the next one.
//!
//! It runs when a node is created (the whole domain, if a dead node is
//! there), when a service is opened and when a port follows a change of its
//! service's tables (that service), and on demand:
//! [`reclaim_dead_nodes`], which `hako clean` calls and which also removes
//! ports whose node has no file at all.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::config::Config;
use crate::core::layout::PORT_RETIRED;
use crate::node::node_is_alive;
use crate::os::lock::DomainLock;
use crate::service::{read_description, DynSegment, PortKind};

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

/// Reclaims everything dead nodes left in the domain of `config`; with
/// `dry_run`, only reports what it would reclaim. Services whose files
/// cannot be read are skipped (and logged).
pub fn reclaim_dead_nodes(config: &Config, dry_run: bool) -> io::Result<Reclaimed> {
    let root = &config.root;
    if !root.is_dir() {
        return Ok(Reclaimed::default());
    }
    let _lock = DomainLock::acquire(root)?;
    Ok(reclaim_domain_locked(root, dry_run, true))
}

/// Liveness of node ids, asked once each per reclaim.
pub(crate) struct Liveness<'a> {
    root: &'a Path,
    known: HashMap<u64, bool>,
}

impl<'a> Liveness<'a> {
    pub(crate) fn new(root: &'a Path) -> Self {
        Self {
            root,
            known: HashMap::new(),
        }
    }

    pub(crate) fn alive(&mut self, id: u64) -> bool {
        *self
            .known
            .entry(id)
            .or_insert_with(|| node_is_alive(self.root, id))
    }
}

/// The whole domain; domain lock held. Unless `thorough`, the services are
/// looked at only when a dead node's file is found (the cheap check a node
/// makes when it is created); thorough, also for ports whose node has no
/// file at all.
pub(crate) fn reclaim_domain_locked(root: &Path, dry_run: bool, thorough: bool) -> Reclaimed {
    let mut out = Reclaimed::default();
    let mut live = Liveness::new(root);
    let Ok(entries) = std::fs::read_dir(root) else {
        return out;
    };
    let mut node_files = Vec::new();
    let mut services = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = parse_node_file(name) {
            node_files.push((id, e.path()));
        } else if name.starts_with("node_") && name.ends_with(".new") {
            // A node creator that died before publishing its file (creation
            // holds the domain lock, which we hold now).
            remove(&mut out, e.path(), dry_run);
        } else if name.starts_with("svc_") {
            services.push(e.path());
        }
    }
    for (id, path) in &node_files {
        if !live.alive(*id) {
            let (pid, name) = read_node_info(path);
            out.dead_nodes.push(DeadNode { id: *id, pid, name });
        }
    }
    if out.dead_nodes.is_empty() && !thorough {
        return out;
    }
    for dir in services {
        reclaim_service_dir_locked(&dir, &mut live, dry_run, &mut out);
    }
    for (id, path) in node_files {
        if out.dead_nodes.iter().any(|d| d.id == id) {
            remove(&mut out, path, dry_run);
        }
    }
    out
}

fn reclaim_service_dir_locked(
    dir: &Path,
    live: &mut Liveness<'_>,
    dry_run: bool,
    out: &mut Reclaimed,
) {
    let label = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !dir.join(crate::service::STATIC_FILE).exists() {
        // Services are created under the domain lock, which we hold: one
        // without a static description is the debris of a creator that died.
        if !dry_run {
            crate::service::remove_service_files(dir);
        }
        out.services.push(label);
        return;
    }
    let seg = match read_description(dir, &label)
        .and_then(|desc| DynSegment::open(dir, &desc.name, &desc).map(|s| (s, desc)))
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "skipping a service that cannot be read");
            return;
        }
    };
    let (seg, desc) = seg;
    reclaim_service_locked(dir, &seg, live, dry_run, out);
    if !dry_run && !seg.in_use() {
        drop(seg);
        out.services.push(desc.name);
        crate::service::remove_service_files(dir);
    }
}

/// One service's tables; domain lock held. Used on open, too.
pub(crate) fn reclaim_service_locked(
    dir: &Path,
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
                // queued (crate::segment collects those).
                continue;
            }
            if live.alive(s.node_id.load(Ordering::Relaxed)) {
                continue;
            }
            out.ports += 1;
            if dry_run {
                continue;
            }
            if seg.remove_port(kind, i, port) {
                for f in [format!("pub_{port:016x}"), format!("wake_{port:016x}")] {
                    let path = dir.join(f);
                    if path.exists() {
                        remove(out, path, false);
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

fn remove(out: &mut Reclaimed, path: PathBuf, dry_run: bool) {
    if dry_run || std::fs::remove_file(&path).is_ok() {
        out.files.push(path);
    }
}

/// The node id in a node file's name (`node_<16 hex digits>`).
pub(crate) fn parse_node_file(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("node_")?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// The pid and name a node wrote into its file (best effort).
pub(crate) fn read_node_info(path: &Path) -> (Option<u32>, String) {
    #[derive(serde::Deserialize)]
    struct Info {
        pid: Option<u32>,
        name: Option<String>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| toml::from_str::<Info>(&t).ok())
        .map(|i| (i.pid, i.name.unwrap_or_default()))
        .unwrap_or((None, String::new()))
}
