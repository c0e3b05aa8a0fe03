//! Named locks in a domain root: `<name>.lock` files that one process at
//! a time holds, for programs that must run once per domain (the bridge
//! to other hosts is one). Like a node's liveness, a named lock is a
//! `flock` that the kernel drops when its holder dies; the holder removes
//! the file when it lets go, and the cleaner removes one nobody holds.

use std::io;
use std::os::fd::OwnedFd;

use super::name::NodeName;
use crate::os::dir::{refuse, trusted_file, Dir};
use crate::os::lock;
use crate::os::shm::Access;

/// The suffix of a named lock's file.
pub(crate) const LOCK_SUFFIX: &str = ".lock";

/// A named lock of a domain, held until dropped (see
/// [`Node::try_lock_named`](crate::Node::try_lock_named)). Dropping it
/// removes its file.
#[derive(Debug)]
pub struct NamedLock {
    root: Dir,
    file: String,
    /// Holds the lock.
    _fd: OwnedFd,
}

impl NamedLock {
    /// Takes the lock `name` of the domain at `root` unless another
    /// process holds it (`Ok(None)` then). `name` follows the rules of
    /// node names.
    pub(crate) fn try_take(root: &Dir, name: &str, access: Access) -> io::Result<Option<Self>> {
        NodeName::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let file = format!("{name}{LOCK_SUFFIX}");
        loop {
            let fd = root.open_or_create_file(&file, access)?;
            if !trusted_file(&fd, access) {
                return Err(refuse(format!(
                    "{} belongs to a user outside the domain, or others may write to it; remove it",
                    root.join(&file).display()
                )));
            }
            if !lock::try_lock(&fd)? {
                return Ok(None);
            }
            // Locked: but a holder that let go (or the cleaner) may have
            // removed the file between our open and our lock, and a third
            // process may lock a new file of that name. Ours counts only if
            // it is still the file of that name.
            if root.names(&file, &fd)? {
                return Ok(Some(Self {
                    root: root.clone(),
                    file,
                    _fd: fd,
                }));
            }
        }
    }

    /// The path of its file (for messages).
    pub fn path(&self) -> std::path::PathBuf {
        self.root.join(&self.file)
    }
}

impl Drop for NamedLock {
    fn drop(&mut self) {
        // Removed while still locked: whoever opened it meanwhile finds,
        // once it gets the lock, that the name is no longer its file.
        let _ = self.root.remove_file(&self.file);
    }
}

/// Whether the named lock file `name` of `root` is held by nobody; if so
/// it is removed (unless `dry_run`), under its own lock so that nobody
/// takes it meanwhile. Files of other users are left alone.
pub(crate) fn reclaim_stale_lock(root: &Dir, name: &str, access: Access, dry_run: bool) -> bool {
    let Ok(fd) = root.open_file(name, false) else {
        return false;
    };
    if !trusted_file(&fd, access) || !matches!(lock::try_lock(&fd), Ok(true)) {
        return false;
    }
    dry_run || root.remove_file(name).is_ok()
}
