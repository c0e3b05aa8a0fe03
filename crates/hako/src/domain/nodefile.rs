//! Node files: the identity and liveness of nodes, below everything that
//! uses them.
//!
//! A node is a file `node_<id>` in the domain root on which its process holds
//! an exclusive `flock` for the node's lifetime. The kernel drops the lock when
//! the process dies, so anyone can tell a live node from a dead one by trying
//! the lock; pids are never trusted. The public face ([`Node`](super::node::Node),
//! its builder) is in `node.rs`, above the services it opens.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::config::Config;
use super::name::NodeName;
use crate::os::lock;
use crate::os::shm::{self, Access};

/// Creates `dir` (and parents) if missing; a directory made here gets the
/// permissions of `access` (owner-only by default). An existing one is left
/// as it is.
pub(crate) fn ensure_dir(dir: &Path, access: Access) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    if access != Access::default() {
        let fd = rustix::fs::open(
            dir,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        access.apply(&fd, true)?;
    }
    Ok(())
}

/// Whether `dir` may be trusted with this user's files, as ssh's
/// StrictModes trusts a home directory: it must belong to this user or to
/// root, and nobody but its owner and the configured group (`access`) may
/// write to it; otherwise whoever can write to it could rename this user's
/// files away and put their own in their place. The error says what is
/// wrong and how to fix it.
pub(crate) fn trust_dir(dir: &Path, access: Access) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir)?;
    match crate::os::shm::distrust(m.uid(), m.gid(), m.mode(), access, false) {
        Some(why) => Err(io::Error::new(io::ErrorKind::PermissionDenied, why)),
        None => Ok(()),
    }
}

/// Whether a service's directory or file (`path`, not followed if it is a
/// symbolic link) may be trusted inside a trusted domain root: the rule of
/// [`trust_dir`], with one more owner admitted when the config shares the
/// domain with a group, a member of it (a file of the group's). A symbolic
/// link is never trusted; a missing entry is not judged. `Err` says what
/// is wrong and how to fix it.
pub(crate) fn trust_entry(path: &Path, access: Access) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        // Nothing there to trust: whoever reads it reports the absence.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    if m.file_type().is_symlink() {
        return Err("it is a symbolic link (hako makes none); remove it".into());
    }
    match crate::os::shm::distrust(m.uid(), m.gid(), m.mode(), access, true) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// A fresh random non-zero 64-bit id.
pub(crate) fn new_id() -> u64 {
    let mut buf = [0u8; 8];
    loop {
        let mut filled = 0;
        while filled < 8 {
            match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())
            {
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => {
                    // No entropy source: fall back to time, pid and a counter.
                    use std::sync::atomic::{AtomicU64, Ordering};
                    static COUNTER: AtomicU64 = AtomicU64::new(0);
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_nanos() as u64)
                        .unwrap_or(0);
                    // Relaxed: only uniqueness of the value matters.
                    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
                    let v = t ^ (u64::from(std::process::id()) << 32) ^ c.rotate_left(17);
                    buf = v.to_le_bytes();
                    filled = 8;
                }
            }
        }
        let id = u64::from_le_bytes(buf);
        if id != 0 {
            return id;
        }
    }
}

/// Whether the node `id` in `root` is alive: its file exists and its lock is
/// held. A node whose file is gone counts as dead.
pub fn node_is_alive(root: &Path, id: u64) -> bool {
    let path = root.join(format!("node_{id:016x}"));
    match shm::open_existing(&path, false) {
        // If we got the lock, nobody holds it: the owner is dead. Dropping
        // the descriptor releases our lock again.
        Ok(fd) => !matches!(lock::try_lock(&fd), Ok(true)),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

/// A node's shared state: its identity, its config and its liveness lock.
pub(crate) struct NodeInner {
    pub(crate) id: u64,
    pub(crate) name: Option<NodeName>,
    pub(crate) config: Config,
    /// Who may use the files this node creates (from the config's group).
    pub(crate) access: Access,
    pub(crate) path: PathBuf,
    pub(crate) _lock: OwnedFd,
    /// Its ports' blocking waits end on SIGINT and SIGTERM
    /// ([`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    pub(crate) signals: bool,
}

impl Drop for NodeInner {
    fn drop(&mut self) {
        // Remove the file while still holding the lock; the lock goes with
        // the descriptor right after.
        let _ = std::fs::remove_file(&self.path);
    }
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
