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
use std::path::PathBuf;

use super::config::Config;
use super::lockfile::{reclaim_stale_lock, LOCK_SUFFIX};
use super::nodefile::{open_root_for_tools, parse_node_file, read_node_info, Liveness};
use super::service::files::{read_description, remove_service_files, STATIC_FILE};
use super::service::reclaim::{
    reclaim_service_locked, remove, used_by_the_living, DeadNode, Reclaimed,
};
use super::service::tables::DynSegment;
use crate::os::dir::{refuse, Dir, RootMode};
use crate::os::lock::DomainLock;
use crate::os::shm::Access;

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
    // Checked as a node checks it: nothing is removed from a root that
    // someone else could have filled.
    let Some(root) = open_root_for_tools(config, RootMode::Open)? else {
        return Ok(Reclaimed::default());
    };
    let access = config
        .access()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let _lock = DomainLock::acquire(&root)?;
    Ok(reclaim_domain_locked(&root, access, dry_run, true))
}

/// The whole domain; domain lock held. Unless `thorough`, the services are
/// looked at only when a dead node's file is found (the cheap check a node
/// makes when it is created); thorough, also for ports whose node has no
/// file at all.
pub(crate) fn reclaim_domain_locked(
    root: &Dir,
    access: Access,
    dry_run: bool,
    thorough: bool,
) -> Reclaimed {
    let mut out = Reclaimed::default();
    let mut live = Liveness::new(root);
    let Ok(entries) = root.entries() else {
        return out;
    };
    let mut node_files = Vec::new();
    let mut services = Vec::new();
    for e in entries {
        let link = e.is_link();
        let name = e.name;
        // Never through a symbolic link (hako makes none): a link planted
        // as `svc_...` could point at anyone's directory, whose files the
        // reclaim would then remove. (Every open below refuses links as
        // well: this only keeps them out of the report.)
        if link {
            tracing::warn!(entry = %root.join(&name).display(), "ignoring a symbolic link in the domain root");
            continue;
        }
        if let Some(id) = parse_node_file(&name) {
            node_files.push((id, name));
        } else if name.starts_with("node_") && name.ends_with(".new") {
            // A node creator that died before publishing its file (creation
            // holds the domain lock, which we hold now).
            remove(&mut out, root, &name, dry_run);
        } else if name.starts_with("svc_") {
            services.push(name);
        } else if thorough && name.ends_with(LOCK_SUFFIX) {
            // A named lock whose holder died (or was stopped) with it.
            if reclaim_stale_lock(root, &name, access, dry_run) {
                out.files.push(root.join(&name));
            }
        }
    }
    for (id, name) in &node_files {
        if !live.alive(*id) {
            let (pid, node) = read_node_info(root, name);
            out.dead_nodes.push(DeadNode {
                id: *id,
                pid,
                name: node,
            });
        }
    }
    if out.dead_nodes.is_empty() && !thorough {
        return out;
    }
    for key in services {
        reclaim_service_dir_locked(root, access, &key, &mut live, dry_run, &mut out);
    }
    for (id, name) in node_files {
        if out.dead_nodes.iter().any(|d| d.id == id) {
            remove(&mut out, root, &name, dry_run);
        }
    }
    out
}

fn reclaim_service_dir_locked(
    root: &Dir,
    access: Access,
    key: &str,
    live: &mut Liveness<'_>,
    dry_run: bool,
    out: &mut Reclaimed,
) {
    let dir = match root.subdir(key).and_then(|dir| {
        // Made by someone the domain trusts, or left alone.
        dir.trust(access).map_err(refuse)?;
        Ok(dir)
    }) {
        Ok(dir) => dir,
        Err(e) => {
            tracing::warn!(dir = %root.join(key).display(), error = %e, "skipping a service directory hako may not touch");
            return;
        }
    };
    if !dir.has(STATIC_FILE) {
        // Services are created under the domain lock, which we hold: one
        // without a static description is the debris of a creator that died.
        remove_service(root, key, &dir, dry_run, out);
        out.services.push(key.to_owned());
        return;
    }
    let seg = match read_description(&dir, key)
        .and_then(|desc| DynSegment::open_any(&dir, &desc.name).map(|s| (s, desc)))
    {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(dir = %dir.path().display(), error = %e, "skipping a service that cannot be read");
            return;
        }
    };
    let (seg, desc) = seg;
    reclaim_service_locked(&dir, &seg, live, dry_run, out);
    let unused = if dry_run {
        !used_by_the_living(&seg, live)
    } else {
        !seg.in_use()
    };
    if unused {
        drop(seg);
        out.services.push(desc.name);
        remove_service(root, key, &dir, dry_run, out);
    }
}

/// Removes (or, in a dry run, lists) every file of a service nobody uses.
fn remove_service(root: &Dir, key: &str, dir: &Dir, dry_run: bool, out: &mut Reclaimed) {
    let mut files: Vec<PathBuf> = dir
        .entries()
        .map(|es| es.into_iter().map(|e| dir.join(&e.name)).collect())
        .unwrap_or_default();
    files.sort();
    files.retain(|f| !out.files.contains(f));
    if !dry_run {
        remove_service_files(root, key, dir);
    }
    out.files.extend(files);
}
