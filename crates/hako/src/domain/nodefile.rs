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
use std::path::Path;

use super::config::Config;
use super::name::NodeName;
use crate::os::dir::{refuse, Dir, RootError, RootMode};
use crate::os::lock;
use crate::os::shm::Access;

/// Opens the domain root of `config` for the tools (`mode` `Open` or
/// `ReadAnyway`: never made here); `Ok(None)` if there is none. A root
/// that is not to be trusted is an `io::Error` carrying the refusal.
pub(crate) fn open_root_for_tools(config: &Config, mode: RootMode) -> io::Result<Option<Dir>> {
    let root = &config.root;
    let access = config
        .access()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    match Dir::open_root(root, access, mode) {
        Ok(dir) => Ok(Some(dir)),
        Err(RootError::Io(e)) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(RootError::Io(e)) => Err(e),
        Err(RootError::Untrusted(why)) => Err(refuse(format!(
            "refusing domain root {}: {why}",
            root.display()
        ))),
    }
}

/// The name of node `id`'s file in the domain root.
pub(crate) fn node_file(id: u64) -> String {
    format!("node_{id:016x}")
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

/// Whether the node `id` of the domain at `root` is alive: its file
/// exists and its lock is held. A node whose file is gone counts as dead.
/// The root is opened as a node opens it (checked, never through a link);
/// one that cannot be opened holds no live node.
pub fn node_is_alive(root: &Path, id: u64) -> bool {
    Dir::open_root(root, Access::default(), RootMode::ReadAnyway)
        .is_ok_and(|dir| node_alive_in(&dir, id))
}

/// [`node_is_alive`] in a root held open.
pub(crate) fn node_alive_in(root: &Dir, id: u64) -> bool {
    match root.open_file(&node_file(id), false) {
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
    /// The domain root, held open: every file of the domain is reached
    /// through it.
    pub(crate) root: Dir,
    pub(crate) _lock: OwnedFd,
    /// Its ports' blocking waits end on SIGINT and SIGTERM
    /// ([`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    pub(crate) signals: bool,
}

impl Drop for NodeInner {
    fn drop(&mut self) {
        // Remove the file while still holding the lock; the lock goes with
        // the descriptor right after.
        let _ = self.root.remove_file(&node_file(self.id));
    }
}

/// Liveness of node ids, asked once each per reclaim.
pub(crate) struct Liveness<'a> {
    root: &'a Dir,
    known: HashMap<u64, bool>,
}

impl<'a> Liveness<'a> {
    pub(crate) fn new(root: &'a Dir) -> Self {
        Self {
            root,
            known: HashMap::new(),
        }
    }

    pub(crate) fn alive(&mut self, id: u64) -> bool {
        *self
            .known
            .entry(id)
            .or_insert_with(|| node_alive_in(self.root, id))
    }
}

/// The node id in a node file's name (`node_<16 hex digits>`).
pub(crate) fn parse_node_file(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("node_")?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// The pid and name a node wrote into its file `name` (best effort).
pub(crate) fn read_node_info(root: &Dir, name: &str) -> (Option<u32>, String) {
    #[derive(serde::Deserialize)]
    struct Info {
        pid: Option<u32>,
        name: Option<String>,
    }
    root.read_text(name, 4096)
        .ok()
        .and_then(|t| toml::from_str::<Info>(&t).ok())
        .map(|i| (i.pid, i.name.unwrap_or_default()))
        .unwrap_or((None, String::new()))
}
