//! [`AsyncWatcher`]: a domain's changes awaited under tokio.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::watch::{Change, Watcher};

/// The watcher's descriptor, for tokio's reactor.
#[derive(Debug)]
struct Fd(Watcher);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A [`Watcher`] whose changes are awaited.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-watch", std::process::id())));
/// # let config = hako::Config::default().with_root(&root.0);
/// let node = hako::NodeBuilder::new().config(&config).create()?;
/// let mut watcher = hako::aio::AsyncWatcher::new(hako::Watcher::new(&config)?)?;
/// let _events = node.service_builder(&"Doc/Bell".try_into()?).event().create()?;
/// let changes = watcher.changes().await?;
/// assert!(matches!(&changes[0], hako::Change::ServiceCreated { service, .. } if service == "Doc/Bell"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AsyncWatcher {
    fd: AsyncFd<Fd>,
}

impl AsyncWatcher {
    /// Registers `watcher` with the current tokio runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(watcher: Watcher) -> io::Result<Self> {
        // SAFETY: the descriptor is the watcher's epoll descriptor, which
        // the watcher owns and keeps open, unchanged, for as long as it
        // lives; the watcher lives inside the AsyncFd until it drops.
        let fd = unsafe { AsyncFd::register_with_interest(Fd(watcher), Interest::READABLE)? };
        Ok(Self { fd })
    }

    /// The next changes, as soon as there are some.
    pub async fn changes(&mut self) -> io::Result<Vec<Change>> {
        loop {
            let mut guard = self.fd.readable_mut().await?;
            // Cleared before looking: whatever comes after the look makes
            // the descriptor ready again.
            guard.clear_ready();
            let changes = guard.get_inner_mut().0.try_changes()?;
            if !changes.is_empty() {
                return Ok(changes);
            }
        }
    }

    /// The watcher.
    pub fn get_mut(&mut self) -> &mut Watcher {
        &mut self.fd.get_mut().0
    }
}
