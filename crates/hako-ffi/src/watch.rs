//! Discovery: a watcher of a domain's changes (services created and
//! removed; nodes and ports that come, leave, die and are reclaimed).

use std::collections::VecDeque;
use std::ffi::c_char;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use crate::error::{guard, hako_status, Failure};
use crate::handle::{get, get_mut, give, opt_text, put, take};
use crate::node::HAKO_FOREVER;

/// Watches a domain (`hako_watcher_create`). Owning handle
/// (`hako_watcher_drop`); one thread at a time.
pub struct hako_watcher {
    watcher: hako::Watcher,
    pending: VecDeque<hako::Change>,
}

/// What a change is.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_change_kind {
    /// A service was created (`service`, `pattern`).
    HAKO_CHANGE_SERVICE_CREATED = 0,
    /// A service was removed (`service`).
    HAKO_CHANGE_SERVICE_REMOVED = 1,
    /// A node joined (`node`, `pid`, `node_name`).
    HAKO_CHANGE_NODE_JOINED = 2,
    /// A node left: its process ended it (`node`).
    HAKO_CHANGE_NODE_LEFT = 3,
    /// A node's process died without ending it (`node`).
    HAKO_CHANGE_NODE_DIED = 4,
    /// What a dead node left was reclaimed (`node`).
    HAKO_CHANGE_NODE_RECLAIMED = 5,
    /// A port was created (`service`, `role`, `port`, `node`).
    HAKO_CHANGE_PORT_ADDED = 6,
    /// A port was dropped by its process.
    HAKO_CHANGE_PORT_REMOVED = 7,
    /// A port's process died.
    HAKO_CHANGE_PORT_DIED = 8,
    /// A dead process's port was reclaimed.
    HAKO_CHANGE_PORT_RECLAIMED = 9,
}

/// What a port is to its service.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_port_role {
    /// Not about a port.
    HAKO_ROLE_NONE = 0,
    /// A publisher.
    HAKO_ROLE_PUBLISHER = 1,
    /// A subscriber.
    HAKO_ROLE_SUBSCRIBER = 2,
    /// An event notifier.
    HAKO_ROLE_NOTIFIER = 3,
    /// An event listener.
    HAKO_ROLE_LISTENER = 4,
    /// A request/response client.
    HAKO_ROLE_CLIENT = 5,
    /// A request/response server.
    HAKO_ROLE_SERVER = 6,
    /// A blackboard's writer.
    HAKO_ROLE_WRITER = 7,
    /// A blackboard's reader.
    HAKO_ROLE_READER = 8,
}

/// Room for a service name and its NUL (names are at most 255 bytes).
pub const HAKO_SERVICE_NAME_SIZE: usize = 256;
/// Room for a node name and its NUL (names are at most 128 bytes).
pub const HAKO_NODE_NAME_SIZE: usize = 129;
/// Room for a pattern's name and its NUL.
pub const HAKO_PATTERN_NAME_SIZE: usize = 32;

/// A change of the domain. Fields a kind does not use are zero (empty
/// strings, `HAKO_ROLE_NONE`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_change {
    /// What changed.
    pub kind: hako_change_kind,
    /// The service (NUL-terminated), or "".
    pub service: [c_char; HAKO_SERVICE_NAME_SIZE],
    /// The service's pattern ("publish_subscribe", "event",
    /// "request_response") for `HAKO_CHANGE_SERVICE_CREATED`, or "".
    pub pattern: [c_char; HAKO_PATTERN_NAME_SIZE],
    /// The node, or 0.
    pub node: u64,
    /// The node's process id (`HAKO_CHANGE_NODE_JOINED`), or 0.
    pub pid: u32,
    /// The node's name (`HAKO_CHANGE_NODE_JOINED`), or "".
    pub node_name: [c_char; HAKO_NODE_NAME_SIZE],
    /// The port's role, or `HAKO_ROLE_NONE`.
    pub role: hako_port_role,
    /// The port, or 0.
    pub port: u64,
}

/// `s` into `out`, NUL-terminated (cut to fit, which names within the
/// limits never are).
fn copy<const N: usize>(out: &mut [c_char; N], s: &str) {
    let n = s.len().min(N - 1);
    for (o, &b) in out.iter_mut().zip(&s.as_bytes()[..n]) {
        *o = b as c_char;
    }
    out[n] = 0;
}

impl From<&hako::Change> for hako_change {
    fn from(c: &hako::Change) -> Self {
        use hako::Change as C;
        use hako_change_kind as K;
        let mut out = hako_change {
            kind: K::HAKO_CHANGE_SERVICE_CREATED,
            service: [0; HAKO_SERVICE_NAME_SIZE],
            pattern: [0; HAKO_PATTERN_NAME_SIZE],
            node: 0,
            pid: 0,
            node_name: [0; HAKO_NODE_NAME_SIZE],
            role: hako_port_role::HAKO_ROLE_NONE,
            port: 0,
        };
        let port = |out: &mut hako_change, kind, p: &hako::PortChange| {
            out.kind = kind;
            copy(&mut out.service, &p.service);
            out.node = p.node;
            out.port = p.port;
            out.role = match p.role {
                hako::Role::Publisher => hako_port_role::HAKO_ROLE_PUBLISHER,
                hako::Role::Subscriber => hako_port_role::HAKO_ROLE_SUBSCRIBER,
                hako::Role::Notifier => hako_port_role::HAKO_ROLE_NOTIFIER,
                hako::Role::Listener => hako_port_role::HAKO_ROLE_LISTENER,
                hako::Role::Client => hako_port_role::HAKO_ROLE_CLIENT,
                hako::Role::Server => hako_port_role::HAKO_ROLE_SERVER,
                hako::Role::Writer => hako_port_role::HAKO_ROLE_WRITER,
                hako::Role::Reader => hako_port_role::HAKO_ROLE_READER,
            };
        };
        match c {
            C::ServiceCreated { service, pattern } => {
                copy(&mut out.service, service);
                copy(&mut out.pattern, pattern);
            }
            C::ServiceRemoved { service } => {
                out.kind = K::HAKO_CHANGE_SERVICE_REMOVED;
                copy(&mut out.service, service);
            }
            C::NodeJoined { node, pid, name } => {
                out.kind = K::HAKO_CHANGE_NODE_JOINED;
                out.node = *node;
                out.pid = pid.unwrap_or(0);
                copy(&mut out.node_name, name);
            }
            C::NodeLeft { node } => (out.kind, out.node) = (K::HAKO_CHANGE_NODE_LEFT, *node),
            C::NodeDied { node } => (out.kind, out.node) = (K::HAKO_CHANGE_NODE_DIED, *node),
            C::NodeReclaimed { node } => {
                (out.kind, out.node) = (K::HAKO_CHANGE_NODE_RECLAIMED, *node)
            }
            C::PortAdded(p) => port(&mut out, K::HAKO_CHANGE_PORT_ADDED, p),
            C::PortRemoved(p) => port(&mut out, K::HAKO_CHANGE_PORT_REMOVED, p),
            C::PortDied(p) => port(&mut out, K::HAKO_CHANGE_PORT_DIED, p),
            C::PortReclaimed(p) => port(&mut out, K::HAKO_CHANGE_PORT_RECLAIMED, p),
            _ => {}
        }
        out
    }
}

/// Watches the domain at `root` (NULL: the configuration in effect), whose
/// root must exist (`HAKO_ERROR_NOT_FOUND` if not); the changes reported
/// are those after this call.
///
/// # Safety
/// `root` is NULL or NUL-terminated; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_watcher_create(
    root: *const c_char,
    out: *mut *mut hako_watcher,
) -> hako_status {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        let mut config = hako::Config::from_env()?;
        // SAFETY: NULL or NUL-terminated (the caller's promise).
        if let Some(r) = unsafe { opt_text(root, "the root") }? {
            config = config.with_root(r);
        }
        let watcher = hako::Watcher::new(&config).map_err(|e| {
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                hako_status::HAKO_ERROR_NOT_FOUND
            } else {
                hako_status::HAKO_ERROR_IO
            };
            Failure::new(status, e.to_string())
        })?;
        // SAFETY: writable (the caller's promise).
        unsafe {
            give(
                out,
                hako_watcher {
                    watcher,
                    pending: VecDeque::new(),
                },
            )
        }
    })
}

/// Drops a watcher and sets `*watcher` to NULL.
///
/// # Safety
/// `watcher` is NULL or points to NULL or to a watcher handle.
#[no_mangle]
pub unsafe extern "C" fn hako_watcher_drop(watcher: *mut *mut hako_watcher) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(watcher, "the watcher") }.map(drop))
}

/// The next change: at once (`timeout_us` 0), within `timeout_us`
/// microseconds, or whenever one comes (`HAKO_FOREVER`). `*got` says
/// whether `*change` was written (false on a timeout).
///
/// # Safety
/// `watcher` is a watcher handle; `change` and `got` are writable.
#[no_mangle]
pub unsafe extern "C" fn hako_watcher_next(
    watcher: *mut hako_watcher,
    timeout_us: u64,
    change: *mut hako_change,
    got: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let w = unsafe { get_mut(watcher, "the watcher") }?;
        if change.is_null() || got.is_null() {
            return Err(Failure::null("the change or got pointer"));
        }
        if w.pending.is_empty() {
            let io = |e: std::io::Error| Failure::new(hako_status::HAKO_ERROR_IO, e.to_string());
            let changes = match timeout_us {
                0 => w.watcher.try_changes(),
                HAKO_FOREVER => w.watcher.wait(None),
                us => w.watcher.wait(Some(Duration::from_micros(us))),
            }
            .map_err(io)?;
            w.pending.extend(changes);
        }
        let next = w.pending.pop_front();
        // SAFETY: both writable (checked non-NULL; the caller's promise).
        unsafe {
            if let Some(c) = &next {
                put(change, hako_change::from(c));
            }
            put(got, next.is_some());
        }
        Ok(())
    })
}

/// A descriptor that is readable when there may be changes (for `poll`, or
/// `hako_waitset_attach_fd`); the watcher owns it: do not close it.
///
/// # Safety
/// `watcher` is a watcher handle; `fd` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_watcher_fd(
    watcher: *const hako_watcher,
    fd: *mut i32,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let w = unsafe { get(watcher, "the watcher") }?;
        if fd.is_null() {
            return Err(Failure::null("the fd pointer"));
        }
        // SAFETY: non-NULL and writable.
        unsafe { put(fd, w.watcher.as_fd().as_raw_fd()) };
        Ok(())
    })
}
