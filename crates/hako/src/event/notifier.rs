//! Notifiers: signal event ids to every listener of a service.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::counters::counters;
use super::settings::{EventId, EventPortCreateError, EventQos};
use crate::domain::nodefile::new_id;
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::domain::service::tables::PortKind;
use crate::os::futex::OsKernel;
use crate::port::pokes::Pokes;

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

/// Builds a [`Notifier`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-notifier-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node.service_builder(&"Doc/Alarm".try_into()?).event().open_or_create()?;
/// let listener = service.listener_builder().create()?;
/// let notifier = service.notifier_builder().default_event_id(hako::EventId(3)).create()?;
/// notifier.notify()?; // signals id 3
/// assert_eq!(listener.try_wait(), vec![(hako::EventId(3), 1)]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct NotifierBuilder {
    pub(super) service: Arc<ServiceInner>,
    pub(super) qos: Arc<EventQos>,
    pub(super) default_id: EventId,
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
        let q = self.qos;
        if self.default_id.0 > q.event_id_max {
            return Err(EventPortCreateError::EventIdOutOfRange {
                id: self.default_id.0,
                max: q.event_id_max,
            });
        }
        let port_id = new_id();
        let entry = NewPort {
            kind: PortKind::Publisher,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: q.max_notifiers as usize,
        };
        let index = svc
            .register(entry, |_| {}, |_| {})?
            .ok_or_else(|| EventPortCreateError::TooMany {
                service: svc.name.to_string(),
                kind: "notifiers",
                max: q.max_notifiers,
            })?;
        Ok(Notifier {
            pokes: Pokes::new(q.max_listeners as usize),
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
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-notifier", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node.service_builder(&"Doc/Notifier".try_into()?).event().open_or_create()?;
/// let notifier = service.notifier_builder().create()?;
/// assert_eq!(notifier.notify()?, 0); // nobody listens yet
/// let listener = service.listener_builder().create()?;
/// assert_eq!(notifier.notify()?, 1);
/// assert!(listener.has_events());
/// # Ok(()) }
/// ```
pub struct Notifier {
    service: Arc<ServiceInner>,
    port_id: u64,
    index: usize,
    default_id: EventId,
    max_id: u64,
    /// Write ends of listeners' FIFOs, opened when first needed.
    pokes: Pokes,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("service", &self.service.name)
            .field("port_id", &format_args!("{:016x}", self.port_id))
            .finish()
    }
}


impl Notifier {
    /// Signals the default event id; returns how many listeners were notified.
    pub fn notify(&self) -> Result<usize, NotifyError> {
        self.notify_with_id(self.default_id)
    }

    /// Signals `id` to every listener; returns how many were notified.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-notify-with-id", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// const STARTED: hako::EventId = hako::EventId(1);
    /// const STOPPED: hako::EventId = hako::EventId(2);
    /// let service = node
    ///     .service_builder(&"Doc/Motor".try_into()?)
    ///     .event()
    ///     .event_id_max(7)
    ///     .open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let notifier = service.notifier_builder().create()?;
    /// notifier.notify_with_id(STARTED)?;
    /// notifier.notify_with_id(STOPPED)?;
    /// assert_eq!(listener.try_wait(), vec![(STARTED, 1), (STOPPED, 1)]);
    /// // An id above the service's event_id_max is refused.
    /// if let Err(e) = notifier.notify_with_id(hako::EventId(8)) {
    ///     eprintln!("{e}");
    /// }
    /// # Ok(()) }
    /// ```
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
                self.pokes.poke(svc, j, pid);
            }
            n += 1;
        }
        Ok(n)
    }

    /// How many listeners the service has now (each notification reaches
    /// every one): a bridge's among them while another domain listens.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-listener-count", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node.service_builder(&"Doc/Door".try_into()?).event().open_or_create()?;
    /// let notifier = service.notifier_builder().create()?;
    /// assert_eq!(notifier.listener_count(), 0);
    /// let listener = service.listener_builder().create()?;
    /// assert_eq!(notifier.listener_count(), 1);
    /// drop(listener);
    /// assert_eq!(notifier.listener_count(), 0);
    /// # Ok(()) }
    /// ```
    pub fn listener_count(&self) -> usize {
        let svc = &self.service;
        (0..svc.table_len(PortKind::Subscriber))
            // Relaxed: a count for display and waiting, read again later.
            .filter(|&j| svc.port_slot(PortKind::Subscriber, j).port_id.load(Ordering::Relaxed) != 0)
            .count()
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
