//! Opening an event service: its builder, the checks of its settings
//! against an existing service, and the service handle.
//!
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
//! `core/park.rs`). Waiting takes the summary and the counters, so a
//! listener learns which ids fired and how often; nothing is lost however
//! many notifications arrive between two waits.

use std::sync::Arc;

use super::listener::ListenerBuilder;
use super::notifier::NotifierBuilder;
use super::settings::{validate_qos, EventId, EventQos, EventSettings};
use crate::domain::config::Defaults;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;
use crate::domain::service::builder::ServiceBuilder;
use crate::domain::service::error::{at_least, ServiceError};
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::open::{acquire, Mode, PatternRequest};
use crate::port::wait::WaitStrategy;

impl ServiceBuilder {
    /// An event service: notifiers signal event ids, listeners wait for them.
    pub fn event(self) -> EventBuilder {
        EventBuilder::new(self.node, self.name)
    }
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
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-event-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Door".try_into()?)
///     .event()
///     .max_notifiers(4)
///     .max_listeners(2)
///     .event_id_max(15) // ids 0 to 15
///     .open_or_create()?;
/// assert_eq!(service.qos().event_id_max, 15);
/// # Ok(()) }
/// ```
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
        let (inner, settings) = acquire(&self.node, &self.name, &self, mode)?;
        Ok(EventService {
            inner: Arc::new(inner),
            qos: Arc::new(settings.qos),
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
    type Settings = EventSettings;

    fn for_create(&self, d: &Defaults) -> Result<EventSettings, ServiceError> {
        let qos = EventQos {
            max_notifiers: self.req.max_notifiers.unwrap_or(d.max_notifiers),
            max_listeners: self.req.max_listeners.unwrap_or(d.max_listeners),
            max_nodes: self.req.max_nodes.unwrap_or(d.max_nodes),
            event_id_max: self.req.event_id_max.unwrap_or(d.event_id_max),
        };
        validate_qos(&qos)?;
        Ok(EventSettings { qos })
    }

    fn check(&self, svc: &str, existing: &EventSettings) -> Result<(), ServiceError> {
        let q = &existing.qos;
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
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-event-service", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node.service_builder(&"Doc/Bell".try_into()?).event().open_or_create()?;
/// let listener = service.listener_builder().create()?;
/// let notifier = service.notifier_builder().create()?;
/// notifier.notify()?;
/// notifier.notify()?;
/// assert_eq!(listener.try_wait(), vec![(hako::EventId(0), 2)]); // id 0, twice
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct EventService {
    pub(crate) inner: Arc<ServiceInner>,
    pub(crate) qos: Arc<EventQos>,
}

impl std::fmt::Debug for EventService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventService")
            .field("name", &self.inner.name)
            .field("qos", &self.qos)
            .finish()
    }
}

impl EventService {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The service's quality of service.
    pub fn qos(&self) -> &EventQos {
        &self.qos
    }

    /// Starts building a notifier.
    pub fn notifier_builder(&self) -> NotifierBuilder {
        NotifierBuilder {
            service: self.inner.clone(),
            qos: self.qos.clone(),
            default_id: EventId(0),
        }
    }

    /// Starts building a listener.
    pub fn listener_builder(&self) -> ListenerBuilder {
        ListenerBuilder {
            service: self.inner.clone(),
            qos: self.qos.clone(),
            strategy: WaitStrategy::default(),
        }
    }
}
