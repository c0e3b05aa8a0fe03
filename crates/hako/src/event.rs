//! The event pattern: notifiers signal event ids, listeners wait for them.
//!
//! Each listener owns, in the service's dynamic segment, a counter per event
//! id and a summary word with one bit per group of 64 ids:
//!
//! ```text
//!  +0   summary: AtomicU64        bit g set: some id in 64·g .. 64·g+63 fired
//!  +8   counters: [AtomicU64; event_id_max + 1]
//! ```
//!
//! A notification adds one to the listener's counter of that id, sets the
//! group's summary bit and, only if the listener sleeps, wakes it (see
//! [`crate::core::park`]). Waiting takes the summary and the counters, so a
//! listener learns which ids fired and how often; nothing is lost however
//! many notifications arrive between two waits.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::Defaults;
use crate::name::ServiceName;
use crate::node::{new_id, node_is_alive, NodeInner};
use crate::os::fifo;
use crate::os::futex::OsKernel;
use crate::service::{
    acquire, at_least, check_range, io_err, Mode, Pattern, PatternRequest, PortKind, ServiceError,
    ServiceInner, StaticDescription,
};
use crate::wait::{Adaptive, WaitStrategy, Waiter};

/// Largest `event_id_max` a service may have.
pub const MAX_EVENT_ID: u64 = 4095;

/// Bytes of a listener's counter area for ids `0..=event_id_max`.
pub(crate) fn counter_area_size(event_id_max: u64) -> u64 {
    (8 + 8 * (event_id_max + 1)).div_ceil(128) * 128
}

/// The id of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EventId(pub u64);

impl EventId {
    /// The id as a number.
    pub fn value(self) -> u64 {
        self.0
    }
}

impl From<u64> for EventId {
    fn from(v: u64) -> Self {
        Self(v)
    }
}

/// Quality of service of an event service, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventQos {
    /// Notifiers the service admits.
    pub max_notifiers: u32,
    /// Listeners the service admits.
    pub max_listeners: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
    /// Largest event id (at most 4095).
    pub event_id_max: u64,
}

pub(crate) fn validate_qos(q: &EventQos) -> Result<(), ServiceError> {
    check_range(
        "max_notifiers",
        q.max_notifiers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range(
        "max_listeners",
        q.max_listeners,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    if q.event_id_max > MAX_EVENT_ID {
        return Err(ServiceError::InvalidSetting {
            field: "event_id_max",
            value: q.event_id_max,
            rule: "at most 4095",
        });
    }
    Ok(())
}

#[derive(Debug, Default, Clone)]
struct EventRequest {
    max_notifiers: Option<u32>,
    max_listeners: Option<u32>,
    max_nodes: Option<u32>,
    event_id_max: Option<u64>,
}

/// Builds an event service; returned by
/// [`ServiceBuilder::event`](crate::ServiceBuilder::event). Settings given are
/// what `create` uses and what `open` requires (at least); others take the
/// config's defaults on create and accept anything on open.
pub struct EventBuilder {
    node: Arc<NodeInner>,
    name: ServiceName,
    req: EventRequest,
}

impl std::fmt::Debug for EventBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBuilder")
            .field("name", &self.name)
            .field("qos", &self.req)
            .finish()
    }
}

impl EventBuilder {
    pub(crate) fn new(node: Arc<NodeInner>, name: ServiceName) -> Self {
        Self {
            node,
            name,
            req: EventRequest::default(),
        }
    }

    /// Notifiers the service admits (at most 4096).
    pub fn max_notifiers(mut self, n: u32) -> Self {
        self.req.max_notifiers = Some(n);
        self
    }

    /// Listeners the service admits (at most 4096).
    pub fn max_listeners(mut self, n: u32) -> Self {
        self.req.max_listeners = Some(n);
        self
    }

    /// Nodes that may hold the service open at once.
    pub fn max_nodes(mut self, n: u32) -> Self {
        self.req.max_nodes = Some(n);
        self
    }

    /// Largest event id notifiers may use (at most 4095).
    pub fn event_id_max(mut self, id: u64) -> Self {
        self.req.event_id_max = Some(id);
        self
    }

    fn finish(self, mode: Mode) -> Result<EventService, ServiceError> {
        let inner = acquire(&self.node, &self.name, &self, mode)?;
        Ok(EventService {
            inner: Arc::new(inner),
        })
    }

    /// Creates the service; fails if it exists.
    pub fn create(self) -> Result<EventService, ServiceError> {
        self.finish(Mode::Create)
    }

    /// Opens an existing service, checking that it is compatible.
    pub fn open(self) -> Result<EventService, ServiceError> {
        self.finish(Mode::Open)
    }

    /// Opens the service if it exists, creates it otherwise.
    pub fn open_or_create(self) -> Result<EventService, ServiceError> {
        self.finish(Mode::OpenOrCreate)
    }
}

impl PatternRequest for EventBuilder {
    const NAME: &'static str = "event";

    fn for_create(&self, d: &Defaults) -> Result<Pattern, ServiceError> {
        let qos = EventQos {
            max_notifiers: self.req.max_notifiers.unwrap_or(d.max_notifiers),
            max_listeners: self.req.max_listeners.unwrap_or(d.max_listeners),
            max_nodes: self.req.max_nodes.unwrap_or(d.max_nodes),
            event_id_max: self.req.event_id_max.unwrap_or(d.event_id_max),
        };
        validate_qos(&qos)?;
        Ok(Pattern::Event { qos })
    }

    fn check(&self, svc: &str, existing: &Pattern) -> Result<(), ServiceError> {
        let Pattern::Event { qos: q } = existing else {
            return Err(ServiceError::IncompatiblePattern {
                service: svc.into(),
                requested: Self::NAME.into(),
                actual: existing.name().into(),
            });
        };
        at_least(
            svc,
            "max_notifiers",
            self.req.max_notifiers,
            q.max_notifiers,
        )?;
        at_least(
            svc,
            "max_listeners",
            self.req.max_listeners,
            q.max_listeners,
        )?;
        at_least(svc, "max_nodes", self.req.max_nodes, q.max_nodes)?;
        if let Some(m) = self.req.event_id_max {
            if m > q.event_id_max {
                return Err(ServiceError::IncompatibleQos {
                    service: svc.into(),
                    field: "event_id_max",
                    requested: format!("at least {m}"),
                    actual: q.event_id_max.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// An open event service. `Send`, `Sync`, cheap to clone.
#[derive(Clone)]
pub struct EventService {
    inner: Arc<ServiceInner>,
}

impl std::fmt::Debug for EventService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventService")
            .field("name", &self.inner.name)
            .field("qos", self.inner.event_qos())
            .finish()
    }
}

impl EventService {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The service's static description.
    pub fn description(&self) -> &StaticDescription {
        &self.inner.desc
    }

    /// Starts building a notifier.
    pub fn notifier_builder(&self) -> NotifierBuilder {
        NotifierBuilder {
            service: self.inner.clone(),
            default_id: EventId(0),
        }
    }

    /// Starts building a listener.
    pub fn listener_builder(&self) -> ListenerBuilder {
        ListenerBuilder {
            service: self.inner.clone(),
            strategy: WaitStrategy::default(),
        }
    }
}

/// Why a port of an event service could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventPortCreateError {
    /// The service's table for this kind of port is full.
    #[error("service {service:?} already has {max} {kind} (max_{kind}); raise it when creating the service")]
    TooMany {
        /// The service.
        service: String,
        /// "notifiers" or "listeners".
        kind: &'static str,
        /// The limit.
        max: u32,
    },
    /// The default event id is above the service's `event_id_max`.
    #[error("event id {id} is above the service's event_id_max {max}")]
    EventIdOutOfRange {
        /// The id.
        id: u64,
        /// The maximum.
        max: u64,
    },
    /// The service's files could not be used.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// Why a notification failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// The id is above the service's `event_id_max`.
    #[error("event id {id} is above the service's event_id_max {max}; use a smaller id or create the service with a larger event_id_max")]
    EventIdOutOfRange {
        /// The id.
        id: u64,
        /// The maximum.
        max: u64,
    },
}

/// Why waiting failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenerError {
    /// Every notifier that was there during a blocking wait has left or died;
    /// waiting on could only hang.
    #[error("every notifier of service {0:?} is gone; nothing can wake this listener")]
    NotifiersGone(String),
}

/// Builds a [`Notifier`].
#[derive(Debug)]
pub struct NotifierBuilder {
    service: Arc<ServiceInner>,
    default_id: EventId,
}

impl NotifierBuilder {
    /// The id [`Notifier::notify`] signals (default 0).
    pub fn default_event_id(mut self, id: EventId) -> Self {
        self.default_id = id;
        self
    }

    /// Creates the notifier.
    pub fn create(self) -> Result<Notifier, EventPortCreateError> {
        let svc = self.service;
        let q = svc.event_qos().clone();
        if self.default_id.0 > q.event_id_max {
            return Err(EventPortCreateError::EventIdOutOfRange {
                id: self.default_id.0,
                max: q.event_id_max,
            });
        }
        let port_id = new_id();
        let index = svc
            .register(PortKind::Publisher, port_id, 0, 0, |_| {})?
            .ok_or_else(|| EventPortCreateError::TooMany {
                service: svc.name.to_string(),
                kind: "notifiers",
                max: q.max_notifiers,
            })?;
        Ok(Notifier {
            fifos: Mutex::new((0..q.max_listeners).map(|_| None).collect()),
            service: svc,
            port_id,
            index,
            default_id: self.default_id,
            max_id: q.event_id_max,
        })
    }
}

/// Signals events to every listener of a service. `Send` and `Sync`.
///
/// A notification to a listener that is not asleep costs two atomic
/// operations and a fence; only a sleeping listener costs a system call.
pub struct Notifier {
    service: Arc<ServiceInner>,
    port_id: u64,
    index: usize,
    default_id: EventId,
    max_id: u64,
    /// Write ends of listeners' FIFOs, opened when first needed.
    fifos: Mutex<Vec<Option<(u64, OwnedFd)>>>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("service", &self.service.name)
            .field("port_id", &format_args!("{:016x}", self.port_id))
            .finish()
    }
}

/// The counter area of listener `j`.
fn counters<'a>(
    svc: &'a ServiceInner,
    j: usize,
) -> (&'a AtomicU64, impl Fn(u64) -> &'a AtomicU64 + 'a) {
    let (map, base) = svc.extra(j);
    let summary = map.atomic(base);
    (summary, move |id: u64| map.atomic(base + 8 + 8 * id))
}

impl Notifier {
    /// Signals the default event id; returns how many listeners were notified.
    pub fn notify(&self) -> Result<usize, NotifyError> {
        self.notify_with_id(self.default_id)
    }

    /// Signals `id` to every listener; returns how many were notified.
    pub fn notify_with_id(&self, id: EventId) -> Result<usize, NotifyError> {
        if id.0 > self.max_id {
            return Err(NotifyError::EventIdOutOfRange {
                id: id.0,
                max: self.max_id,
            });
        }
        let svc = &self.service;
        let mut n = 0;
        for j in 0..svc.table_len(PortKind::Subscriber) {
            let slot = svc.port_slot(PortKind::Subscriber, j);
            // ORDERING: Acquire; pairs with the Release store in register(),
            // which follows the zeroing of the listener's counters.
            let pid = slot.port_id.load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            let (summary, counter) = counters(svc, j);
            // Relaxed: published by the Release fetch_or of the summary.
            counter(id.0).fetch_add(1, Ordering::Relaxed);
            // ORDERING: Release; pairs with the Acquire swap in take().
            summary.fetch_or(1 << (id.0 / 64), Ordering::Release);
            if slot.wake.notify(&OsKernel) {
                self.poke(j, pid);
            }
            n += 1;
        }
        Ok(n)
    }

    /// Wakes a waitset sleeping on listener `j`'s FIFO.
    fn poke(&self, j: usize, pid: u64) {
        let mut fifos = self.fifos.lock().unwrap_or_else(|e| e.into_inner());
        let entry = &mut fifos[j];
        if entry.as_ref().is_none_or(|(p, _)| *p != pid) {
            *entry = fifo::open_writer(&self.service.fifo_path(pid))
                .ok()
                .map(|fd| (pid, fd));
        }
        if let Some((_, fd)) = entry {
            fifo::poke(fd);
        }
    }

    /// The notifier's unique port id.
    pub fn id(&self) -> u64 {
        self.port_id
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.service
            .unregister(PortKind::Publisher, self.index, self.port_id);
    }
}

/// Builds a [`Listener`].
#[derive(Debug)]
pub struct ListenerBuilder {
    service: Arc<ServiceInner>,
    strategy: WaitStrategy,
}

impl ListenerBuilder {
    /// How the blocking waits wait (default: spin, then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Creates the listener: its counters and its wake-up FIFO.
    pub fn create(self) -> Result<Listener, EventPortCreateError> {
        let svc = self.service;
        let q = svc.event_qos().clone();
        let port_id = new_id();
        let fifo_path = svc.fifo_path(port_id);
        let fifo =
            fifo::create(&fifo_path, svc.node.access).map_err(io_err("create FIFO", &fifo_path))?;
        let index = match svc.register(PortKind::Subscriber, port_id, 0, 0, |j| {
            let (summary, counter) = counters(&svc, j);
            // Relaxed (all): published by the Release store of the port id.
            summary.store(0, Ordering::Relaxed);
            for id in 0..=q.event_id_max {
                counter(id).store(0, Ordering::Relaxed);
            }
        }) {
            Ok(Some(i)) => i,
            Ok(None) => {
                let _ = std::fs::remove_file(&fifo_path);
                return Err(EventPortCreateError::TooMany {
                    service: svc.name.to_string(),
                    kind: "listeners",
                    max: q.max_listeners,
                });
            }
            Err(e) => {
                let _ = std::fs::remove_file(&fifo_path);
                return Err(e.into());
            }
        };
        Ok(Listener {
            service: svc,
            port_id,
            index,
            fifo,
            fifo_path,
            strategy: self.strategy,
            adaptive: Adaptive::default(),
            saw_notifier: AtomicBool::new(false),
            max_id: q.event_id_max,
        })
    }
}

/// Waits for events. `Send` and `Sync`; also a file descriptor (its wake-up
/// FIFO) that a [`WaitSet`](crate::WaitSet) can wait on.
pub struct Listener {
    service: Arc<ServiceInner>,
    port_id: u64,
    index: usize,
    fifo: OwnedFd,
    fifo_path: PathBuf,
    strategy: WaitStrategy,
    adaptive: Adaptive,
    saw_notifier: AtomicBool,
    max_id: u64,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("service", &self.service.name)
            .field("port_id", &format_args!("{:016x}", self.port_id))
            .finish()
    }
}

impl Listener {
    /// The listener's unique port id.
    pub fn id(&self) -> u64 {
        self.port_id
    }

    /// Whether events are waiting (without taking them).
    pub fn has_events(&self) -> bool {
        self.pending()
    }

    fn pending(&self) -> bool {
        let (summary, _) = counters(&self.service, self.index);
        // Relaxed: a hint; take() does the synchronising swap.
        summary.load(Ordering::Relaxed) != 0
    }

    fn take(&self) -> Vec<(EventId, u64)> {
        let (summary, counter) = counters(&self.service, self.index);
        if summary.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        // ORDERING: Acquire; pairs with the notifiers' Release fetch_or: the
        // counter increments before it are visible.
        let groups = summary.swap(0, Ordering::Acquire);
        let mut out = Vec::new();
        let mut g = groups;
        while g != 0 {
            let group = u64::from(g.trailing_zeros());
            g &= g - 1;
            for id in group * 64..((group + 1) * 64).min(self.max_id + 1) {
                let c = counter(id);
                // Relaxed (both): ordered after the Acquire swap above; a count
                // that arrives later sets the summary bit again.
                if c.load(Ordering::Relaxed) != 0 {
                    let n = c.swap(0, Ordering::Relaxed);
                    if n != 0 {
                        out.push((EventId(id), n));
                    }
                }
            }
        }
        out
    }

    /// The events that fired since the last wait, with how often; empty if
    /// none. Never blocks.
    pub fn try_wait(&self) -> Vec<(EventId, u64)> {
        self.take()
    }

    /// Waits up to `timeout` for events; empty on timeout. A zero timeout
    /// is the same as [`try_wait`](Self::try_wait).
    pub fn timed_wait(&self, timeout: Duration) -> Result<Vec<(EventId, u64)>, ListenerError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// Waits until events fire. Returns
    /// [`ListenerError::NotifiersGone`] if every notifier seen during the
    /// wait leaves or dies (a listener started before any notifier waits for
    /// one to come).
    pub fn blocking_wait(&self) -> Result<Vec<(EventId, u64)>, ListenerError> {
        self.wait(None)
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<Vec<(EventId, u64)>, ListenerError> {
        let waiter = Waiter {
            strategy: self.strategy,
            adaptive: &self.adaptive,
            block: self.service.wake_block(PortKind::Subscriber, self.index),
        };
        // A cheap look at the table (no system call); liveness is checked
        // only when a sleep times out. Relaxed: used by this thread only.
        self.saw_notifier
            .store(self.notifiers_registered(), Ordering::Relaxed);
        let r = waiter.wait(
            deadline,
            || {
                let ev = self.take();
                Ok(if ev.is_empty() { None } else { Some(ev) })
            },
            || self.pending(),
            || {
                let alive = self.notifiers_alive();
                // Relaxed: used by this thread only.
                if alive {
                    self.saw_notifier.store(true, Ordering::Relaxed);
                    Ok(())
                } else if self.saw_notifier.load(Ordering::Relaxed) && !self.pending() {
                    Err(ListenerError::NotifiersGone(self.service.name.to_string()))
                } else {
                    Ok(())
                }
            },
        )?;
        Ok(r.unwrap_or_default())
    }

    fn notifiers_registered(&self) -> bool {
        let svc = &self.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            // Relaxed: a hint; notifiers_alive() does the real check.
            svc.port_slot(PortKind::Publisher, i)
                .port_id
                .load(Ordering::Relaxed)
                != 0
        })
    }

    fn notifiers_alive(&self) -> bool {
        let svc = &self.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            let slot = svc.port_slot(PortKind::Publisher, i);
            // ORDERING: Acquire; pairs with the Release store in register().
            slot.port_id.load(Ordering::Acquire) != 0
                // Relaxed: published with the port id.
                && node_is_alive(&svc.node.config.root, slot.node_id.load(Ordering::Relaxed))
        })
    }

    /// Registers interest before a waitset sleeps; true if events are
    /// already pending.
    pub(crate) fn arm(&self) -> bool {
        self.service
            .wake_block(PortKind::Subscriber, self.index)
            .register_fd(|| self.pending())
    }

    /// Withdraws the interest taken by [`arm`](Self::arm) and empties the FIFO.
    pub(crate) fn disarm(&self) {
        self.service
            .wake_block(PortKind::Subscriber, self.index)
            .unregister_fd();
        fifo::drain(&self.fifo);
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fifo.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.service
            .unregister(PortKind::Subscriber, self.index, self.port_id);
        let _ = std::fs::remove_file(&self.fifo_path);
    }
}
