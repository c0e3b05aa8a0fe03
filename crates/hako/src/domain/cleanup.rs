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

use std::io;
use std::path::{Path, PathBuf};

use super::config::Config;
use super::nodefile::{parse_node_file, read_node_info, Liveness};
use super::service::files::{read_description, remove_service_files, STATIC_FILE};
use super::service::reclaim::{
    reclaim_service_locked, remove, used_by_the_living, DeadNode, Reclaimed,
};
use super::service::tables::DynSegment;
use crate::os::lock::DomainLock;


/// Reclaims everything dead nodes left in the domain of `config`; with
/// `dry_run`, only reports what it would reclaim. Services whose files
/// cannot be read are skipped (and logged).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-reclaim", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let report = hako::reclaim_dead_nodes(node.config(), true)?; // a dry run
/// println!("{} dead node(s) to reclaim", report.dead_nodes.len());
/// # Ok(()) }
/// ```
pub fn reclaim_dead_nodes(config: &Config, dry_run: bool) -> io::Result<Reclaimed> {
    let root = &config.root;
    if !root.is_dir() {
        return Ok(Reclaimed::default());
    }
    let _lock = DomainLock::acquire(root)?;
    Ok(reclaim_domain_locked(root, dry_run, true))
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
        // Never through a symbolic link (hako makes none): a link planted
        // as `svc_...` could point at anyone's directory, whose files the
        // reclaim would then remove.
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            tracing::warn!(entry = %e.path().display(), "ignoring a symbolic link in the domain root");
            continue;
        }
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
    if !dir.join(STATIC_FILE).exists() {
        // Services are created under the domain lock, which we hold: one
        // without a static description is the debris of a creator that died.
        remove_service(dir, dry_run, out);
        out.services.push(label);
        return;
    }
    let seg = match read_description(dir, &label)
        .and_then(|desc| DynSegment::open_any(dir, &desc.name).map(|s| (s, desc)))
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "skipping a service that cannot be read");
            return;
        }
    };
    let (seg, desc) = seg;
    reclaim_service_locked(dir, &seg, live, dry_run, out);
    let unused = if dry_run {
        !used_by_the_living(&seg, live)
    } else {
        !seg.in_use()
    };
    if unused {
        drop(seg);
        out.services.push(desc.name);
        remove_service(dir, dry_run, out);
    }
}

/// Removes (or, in a dry run, lists) every file of a service nobody uses.
fn remove_service(dir: &Path, dry_run: bool, out: &mut Reclaimed) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|es| es.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files.retain(|f| !out.files.contains(f));
    if !dry_run {
        remove_service_files(dir);
    }
    out.files.extend(files);
}
