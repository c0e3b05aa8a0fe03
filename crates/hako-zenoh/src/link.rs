//! What every bridged service (a *link*) shares: the local node, the Zenoh
//! session, the key expressions and this domain's id; and why a link could
//! not start.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use hako::Node;
use zenoh::bytes::ZBytes;

use crate::keys::{DomainId, Keys};
use crate::open::OpenError;

/// How long a link's thread waits for local traffic before it looks
/// whether it should stop.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// A warning of a failure that is retried (every half second, say): said
/// once, and again only when it changes or after a success.
#[derive(Debug, Default)]
pub(crate) struct Said(Option<String>);

impl Said {
    /// Logs `what` of `service` at warning level unless it was just said.
    pub(crate) fn warn(&mut self, service: &str, what: String) {
        if self.0.as_deref() != Some(what.as_str()) {
            tracing::warn!(service, "{what}");
            self.0 = Some(what);
        }
    }

    /// The failure is over.
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }
}

/// Polls `look` until it gives something (`Some`) or [`POLL`] passed
/// (`None`), yielding the CPU between two looks: the `--low-latency` wait.
/// A message is taken as soon as it is there, and a thread that shares
/// the CPU (the program that sent it, Zenoh's) still runs whenever it has
/// something to do.
pub(crate) fn poll<T>(mut look: impl FnMut() -> Option<T>) -> Option<T> {
    let end = std::time::Instant::now() + POLL;
    let mut looks = 0u32;
    loop {
        if let Some(t) = look() {
            return Some(t);
        }
        std::thread::yield_now();
        looks = looks.wrapping_add(1);
        if looks % 256 == 0 && std::time::Instant::now() >= end {
            return None;
        }
    }
}

/// Domains whose copy of a service differs from this one's (another payload
/// type, say): what they send is dropped. Filled as the bridge checks each
/// domain that has the service.
pub(crate) type Refused = Arc<RwLock<HashSet<DomainId>>>;

/// Whether a message's attachment names a refused domain.
pub(crate) fn refused(attachment: Option<&ZBytes>, refused: &Refused) -> bool {
    let Some(d) = attachment.and_then(|a| DomainId::from_attachment(&a.to_bytes())) else {
        return false;
    };
    refused.read().is_ok_and(|r| r.contains(&d))
}

/// How many elements one message of a service may hold, as far as the
/// bridge knows: the most that the ports of the domains that have it can
/// send, raised as they describe their ports. A link makes its own ports
/// this roomy (or roomier, as longer messages arrive).
#[derive(Debug, Default)]
pub(crate) struct Room {
    /// Samples (publish/subscribe) or requests (request/response).
    writers: AtomicUsize,
    /// Responses (request/response).
    readers: AtomicUsize,
}

impl Room {
    /// Raises the room to what a domain's ports send (`writers`,
    /// `readers`: elements).
    pub(crate) fn raise(&self, writers: u64, readers: u64) {
        let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        // Relaxed (both): a size hint; each link reads it when it makes a
        // port, and a message that does not fit is handled anyway.
        self.writers.fetch_max(clamp(writers), Ordering::Relaxed);
        self.readers.fetch_max(clamp(readers), Ordering::Relaxed);
    }

    /// Elements of the longest sample or request known.
    pub(crate) fn writers(&self) -> usize {
        self.writers.load(Ordering::Relaxed)
    }

    /// Elements of the longest response known.
    pub(crate) fn readers(&self) -> usize {
        self.readers.load(Ordering::Relaxed)
    }
}

/// What every link of a service shares with the bridge: the domains it
/// refuses and the room its messages need.
#[derive(Clone, Default)]
pub(crate) struct Shared {
    pub refused: Refused,
    pub room: Arc<Room>,
}

/// What links are made with.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub node: Arc<Node>,
    pub session: zenoh::Session,
    pub keys: Keys,
    pub domain: DomainId,
    /// How long a request forwarded to another host may wait for its
    /// responses.
    pub query_timeout: Duration,
    /// Services whose local ports the bridge polls instead of sleeping
    /// (`--low-latency`).
    pub low_latency: crate::discovery::Selection,
}

/// A link's thread and the flag that ends it: set, and the thread joined,
/// when the link goes. The thread looks at the flag at least every
/// [`POLL`].
pub(crate) struct Worker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Runs `f` with the stop flag on a thread named `name`.
    pub(crate) fn spawn(
        name: String,
        f: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> Result<Self, LinkError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || f(&flag))
            .map_err(|e| LinkError::Thread(e.to_string()))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Relaxed: a request to stop; the join orders what follows.
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Why a service could not be bridged (the bridge tries again later).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The service could not be opened or differs across hosts.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A local port could not be made.
    #[error("cannot make a local port: {0}")]
    Port(String),
    /// Zenoh refused a declaration.
    #[error("zenoh: {0}")]
    Zenoh(String),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(String),
    /// The service cannot be bridged at all.
    #[error("not bridged: {0}")]
    Unsupported(&'static str),
}

impl LinkError {
    pub(crate) fn port(e: impl std::fmt::Display) -> Self {
        Self::Port(e.to_string())
    }

    pub(crate) fn zenoh(e: impl std::fmt::Display) -> Self {
        Self::Zenoh(e.to_string())
    }
}

/// Whether a message's attachment says it was put by a bridge of domain
/// `me` (a message without one comes from a plain Zenoh program).
pub(crate) fn from_domain(attachment: Option<&ZBytes>, me: DomainId) -> bool {
    attachment
        .and_then(|a| DomainId::from_attachment(&a.to_bytes()))
        .is_some_and(|d| d == me)
}
