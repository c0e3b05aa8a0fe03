//! Nodes, the settings every pattern shares, and the cleanup of dead
//! nodes.

use std::ffi::c_char;

use crate::error::{guard, hako_status, Failure};
use crate::handle::{get, give, opt_text, put, take};

/// A node: a process's membership of a domain. Owning handle
/// (`hako_node_drop`); usable from any thread at once.
pub struct hako_node {
    pub(crate) node: hako::Node,
}

/// How a node is made. Zero it (or pass NULL) for the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_node_options {
    /// The node's name (shown by `hako nodes`), or NULL.
    pub name: *const c_char,
    /// The domain root, or NULL for the configuration in effect
    /// (`HAKO_ROOT`, `HAKO_CONFIG`, else the user's own
    /// `/dev/shm/hako-<uid>`).
    pub root: *const c_char,
    /// True: hako leaves SIGINT and SIGTERM alone, for programs that handle
    /// them themselves (make their waitsets with
    /// `hako_waitset_create_without_signal_handling`). False (the default):
    /// a wait of this node's ports (a receive with a timeout, a listener's
    /// wait) returns `HAKO_ERROR_TERMINATED` when one arrives, and a second
    /// Ctrl-C ends the process at once.
    pub no_signal_handling: bool,
}

/// How a call that waits (a receive with a timeout, a listener's wait)
/// waits.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_wait_strategy {
    /// Spin briefly (adaptive, at most 100 µs), then sleep. The default.
    HAKO_WAIT_SPIN_THEN_PARK = 0,
    /// Never sleep: the lowest latency, one CPU busy while waiting.
    HAKO_WAIT_BUSY_SPIN = 1,
    /// Sleep at once: the least CPU.
    HAKO_WAIT_PARK = 2,
}

impl From<hako_wait_strategy> for hako::WaitStrategy {
    fn from(w: hako_wait_strategy) -> Self {
        match w {
            hako_wait_strategy::HAKO_WAIT_SPIN_THEN_PARK => hako::WaitStrategy::SpinThenPark,
            hako_wait_strategy::HAKO_WAIT_BUSY_SPIN => hako::WaitStrategy::BusySpin,
            hako_wait_strategy::HAKO_WAIT_PARK => hako::WaitStrategy::Park,
        }
    }
}

/// Whether a service is created, opened, or either.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_open_mode {
    /// Open it if it exists, create it otherwise (safe from many processes
    /// at once: exactly one creates it).
    HAKO_OPEN_OR_CREATE = 0,
    /// Create it; `HAKO_ERROR_EXISTS` if it exists.
    HAKO_CREATE = 1,
    /// Open it; `HAKO_ERROR_NOT_FOUND` if it does not exist.
    HAKO_OPEN = 2,
}

/// A timeout that never ends (for the `timeout_us` arguments).
pub const HAKO_FOREVER: u64 = u64::MAX;

/// Creates a node. `options` may be NULL.
///
/// # Safety
/// `options` is NULL or points to a `hako_node_options` whose strings are
/// NULL or NUL-terminated; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_node_create(
    options: *const hako_node_options,
    out: *mut *mut hako_node,
) -> hako_status {
    guard(|| {
        // Before anything is made (the domain root, on a first node).
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // SAFETY: NULL or a valid options struct (the caller's promise).
        let opts = unsafe { options.as_ref() };
        let mut builder = hako::NodeBuilder::new();
        let mut config = None;
        if let Some(o) = opts {
            // SAFETY: NULL or NUL-terminated (the caller's promise).
            if let Some(name) = unsafe { opt_text(o.name, "the node name") }? {
                builder = builder.name(name)?;
            }
            // SAFETY: as above.
            if let Some(root) = unsafe { opt_text(o.root, "the root") }? {
                config = Some(hako::Config::from_env()?.with_root(root));
            }
            builder = builder.signal_handling(!o.no_signal_handling);
        }
        if let Some(c) = &config {
            builder = builder.config(c);
        }
        let node = builder.create()?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_node { node }) }
    })
}

/// Drops a node and sets `*node` to NULL. Its services and ports may
/// outlive it.
///
/// # Safety
/// `node` is NULL or points to NULL or to a node handle.
#[no_mangle]
pub unsafe extern "C" fn hako_node_drop(node: *mut *mut hako_node) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(node, "the node") }.map(drop))
}

/// The node's id, as `hako nodes` shows it.
///
/// # Safety
/// `node` is NULL or a node handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_node_id(node: *const hako_node, out: *mut u64) -> hako_status {
    guard(|| {
        // SAFETY: NULL or live (the caller's promise).
        let n = unsafe { get(node, "the node") }?;
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // SAFETY: non-NULL and writable.
        unsafe { put(out, n.node.id()) };
        Ok(())
    })
}

/// Removes what nodes that died left in the domain at `root` (NULL: the
/// configuration in effect): their ports, services no live node holds,
/// their files. `reclaimed` (may be NULL) gets the number of dead nodes.
///
/// # Safety
/// `root` is NULL or NUL-terminated; `reclaimed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_reclaim_dead_nodes(
    root: *const c_char,
    reclaimed: *mut usize,
) -> hako_status {
    guard(|| {
        let mut config = hako::Config::from_env()?;
        // SAFETY: NULL or NUL-terminated (the caller's promise).
        if let Some(r) = unsafe { opt_text(root, "the root") }? {
            config = config.with_root(r);
        }
        let done = hako::reclaim_dead_nodes(&config, false)?;
        // SAFETY: NULL or writable (the caller's promise).
        unsafe { put(reclaimed, done.dead_nodes.len()) };
        Ok(())
    })
}

impl crate::error::ToFailure for hako::ConfigError {
    fn status(&self) -> hako_status {
        hako_status::HAKO_ERROR_INVALID_ARGUMENT
    }
}
