//! Termination requests: SIGINT and SIGTERM become a flag and a readable
//! file descriptor, so waiting loops can end cleanly.
//!
//! The handlers are installed the first time something waits
//! ([`WaitSet`](crate::WaitSet), [`Node::wait`](crate::Node::wait), or a
//! blocking receive that finds nothing, of a node that handles signals:
//! [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
//! The first signal sets the flag, which ends those waits with a
//! termination request; a second one, while the flag is set, ends the
//! process at once (exit status 130), so a program that ignores the request
//! can still be stopped with a second Ctrl-C. Until the first wait, SIGINT
//! and SIGTERM keep their default effect (the process ends), so a program
//! that never waits behaves as it always did.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

struct Termination {
    flag: Arc<AtomicBool>,
    read: OwnedFd,
}

static STATE: OnceLock<Result<Termination, String>> = OnceLock::new();

fn set_up() -> Result<Termination, String> {
    let flag = Arc::new(AtomicBool::new(false));
    let (read, write) = UnixStream::pair().map_err(|e| e.to_string())?;
    read.set_nonblocking(true).map_err(|e| e.to_string())?;
    for sig in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag before this signal sets it.
        signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())
            .map_err(|e| e.to_string())?;
        signal_hook::flag::register(sig, flag.clone()).map_err(|e| e.to_string())?;
        let w = write.try_clone().map_err(|e| e.to_string())?;
        signal_hook::low_level::pipe::register(sig, w).map_err(|e| e.to_string())?;
    }
    Ok(Termination {
        flag,
        read: read.into(),
    })
}

fn state() -> io::Result<&'static Termination> {
    STATE
        .get_or_init(set_up)
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))
}

/// Installs the handlers (once) and returns the descriptor that becomes
/// readable when termination is requested.
pub fn fd() -> io::Result<BorrowedFd<'static>> {
    Ok(state()?.read.as_fd())
}

/// Installs the handlers (once).
pub fn install() -> io::Result<()> {
    state().map(drop)
}

/// Whether SIGINT or SIGTERM has arrived since the handlers were
/// installed; false, without installing them, if they are not.
pub fn requested_if_installed() -> bool {
    // ORDERING: SeqCst; pairs with signal-hook's SeqCst store in the handler.
    matches!(STATE.get(), Some(Ok(s)) if s.flag.load(Ordering::SeqCst))
}

/// Whether SIGINT or SIGTERM has arrived (installs the handlers if needed).
pub fn requested() -> bool {
    // ORDERING: SeqCst; pairs with signal-hook's SeqCst store in the handler.
    state().is_ok_and(|s| s.flag.load(Ordering::SeqCst))
}
