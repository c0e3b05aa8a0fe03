//! Opening a publish/subscribe service: its builder, the checks of its
//! settings against an existing service, and the service handle.

use std::marker::PhantomData;
use std::sync::Arc;

use super::publisher::PublisherBuilder;
use super::settings::{validate_qos, PubSubQos, PubSubSettings};
use super::subscriber::SubscriberBuilder;
use crate::core::layout::MAX_ALIGN;
use crate::domain::config::{Defaults, OverflowPolicy};
use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;
use crate::domain::service::builder::{qos_setter, ServiceBuilder};
use crate::domain::service::error::{at_least, ServiceError};
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::open::{acquire, Mode, PatternRequest};
use crate::port::payload::{
    check_described, check_payload, Payload, PayloadDescription, TypeDetails, PAYLOAD_FIELDS,
};

impl ServiceBuilder {
    /// A publish/subscribe service carrying `T` (a [`ShmSafe`](crate::ShmSafe)
    /// type, or a slice `[T]`).
    pub fn publish_subscribe<T: Payload + ?Sized>(self) -> PubSubBuilder<T> {
        PubSubBuilder::new(self.node, self.name)
    }
}

#[derive(Debug, Default, Clone)]
struct QosRequest {
    max_publishers: Option<u32>,
    max_subscribers: Option<u32>,
    max_nodes: Option<u32>,
    buffer: Option<u32>,
    borrowed: Option<u32>,
    history: Option<u32>,
    overflow: Option<OverflowPolicy>,
}

/// Builds a publish/subscribe service. Settings given here are what
/// `create` uses and what `open` requires of an existing service; settings
/// left out take the config's defaults on `create` and accept anything on
/// `open`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pubsub-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Imu".try_into()?)
///     .publish_subscribe::<[f32; 3]>()
///     .max_publishers(1)
///     .max_subscribers(4)
///     .subscriber_max_buffer_size(8) // samples queued per publisher
///     .history_size(2) // samples a late subscriber gets
///     .overflow_policy(hako::OverflowPolicy::DropOldest)
///     .create()?;
/// assert_eq!(service.qos().history_size, 2);
/// # Ok(()) }
/// ```
pub struct PubSubBuilder<T: Payload + ?Sized> {
    node: Arc<NodeInner>,
    name: ServiceName,
    req: QosRequest,
    /// The payload as described at run time ([`PubSubBuilder::payload_type`]).
    described: Option<TypeDetails>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for PubSubBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSubBuilder")
            .field("name", &self.name)
            .field("qos", &self.req)
            .finish()
    }
}

impl<T: Payload + ?Sized> PubSubBuilder<T> {
    qos_setter!(
        /// Publishers the service admits (at most 4096). On open: at least this many.
        max_publishers, max_publishers);
    qos_setter!(
        /// Subscribers the service admits (at most 4096). On open: at least this many.
        max_subscribers, max_subscribers);
    qos_setter!(
        /// Nodes that may hold the service open at once. On open: at least this many.
        max_nodes, max_nodes);
    qos_setter!(
        /// Samples each subscriber queues per publisher. On open: at least this many.
        subscriber_max_buffer_size, buffer);
    qos_setter!(
        /// Samples a subscriber may hold at once. On open: at least this many.
        subscriber_max_borrowed_samples, borrowed);
    qos_setter!(
        /// Samples kept for late-joining subscribers (at most the buffer size
        /// is delivered). On open: at least this many.
        history_size, history);

    /// Overflow policy. On open: must match.
    pub fn overflow_policy(mut self, policy: OverflowPolicy) -> Self {
        self.req.overflow = Some(policy);
        self
    }

    pub(crate) fn new(node: Arc<NodeInner>, name: ServiceName) -> Self {
        Self {
            node,
            name,
            req: QosRequest::default(),
            described: None,
            _t: PhantomData,
        }
    }

    /// The payload's name, size and alignment: `T`'s, or those described
    /// at run time.
    fn details(&self) -> TypeDetails {
        self.described.clone().unwrap_or_else(T::details)
    }

    fn finish(self, mode: Mode) -> Result<PubSubService<T>, ServiceError> {
        let (inner, settings) = acquire(&self.node, &self.name, &self, mode)?;
        Ok(PubSubService {
            inner: Arc::new(inner),
            settings: Arc::new(settings),
            _t: PhantomData,
        })
    }

    /// Creates the service; fails if it exists.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-create", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let name = "Doc/Once".try_into()?;
    /// let service = node.service_builder(&name).publish_subscribe::<u64>().create()?;
    /// // A second create fails; the error says why.
    /// if let Err(e) = node.service_builder(&name).publish_subscribe::<u64>().create() {
    ///     eprintln!("{e}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn create(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::Create)
    }

    /// Opens an existing service, checking that it is compatible.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-open", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let name = "Doc/Open".try_into()?;
    /// let created = node.service_builder(&name).publish_subscribe::<u64>().create()?;
    /// let opened = node.service_builder(&name).publish_subscribe::<u64>().open()?;
    /// assert_eq!(opened.qos(), created.qos());
    /// // Another payload type is refused, the error naming both.
    /// if let Err(e) = node.service_builder(&name).publish_subscribe::<u32>().open() {
    ///     eprintln!("{e}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn open(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::Open)
    }

    /// Opens the service if it exists, creates it otherwise. Safe to call
    /// from many processes at once: exactly one creates it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-open-or-create", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let name = "Doc/Shared".try_into()?;
    /// // Each process (here: twice in one) opens the service or creates it.
    /// let first = node.service_builder(&name).publish_subscribe::<u64>().open_or_create()?;
    /// let second = node.service_builder(&name).publish_subscribe::<u64>().open_or_create()?;
    /// assert_eq!(first.payload(), second.payload());
    /// # Ok(()) }
    /// ```
    pub fn open_or_create(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::OpenOrCreate)
    }
}

impl PubSubBuilder<[u8]> {
    /// For language bindings: the service carries a payload described at
    /// run time, by the name, size and alignment a Rust process would give
    /// it ([`TypeDetails`]; `slice` for a slice of such elements), so that
    /// a C or Python program and a Rust program with the real type share
    /// one service. The ports of this builder's service see each payload
    /// as bytes: a sample holds [`len`](crate::Sample::len) elements of
    /// `details.size` bytes, reached through `as_ptr` / `as_mut_ptr` (a
    /// `[u8]` view of it covers only `len` bytes). Refused on create
    /// unless the size is at least 1, the alignment a power of two up to
    /// 4096 and the size a multiple of it.
    pub fn payload_type(mut self, details: TypeDetails) -> Self {
        self.described = Some(details);
        self
    }
}

impl<T: Payload + ?Sized> PatternRequest for PubSubBuilder<T> {
    type Settings = PubSubSettings;

    fn for_create(&self, d: &Defaults) -> Result<PubSubSettings, ServiceError> {
        let qos = PubSubQos {
            max_publishers: self.req.max_publishers.unwrap_or(d.max_publishers),
            max_subscribers: self.req.max_subscribers.unwrap_or(d.max_subscribers),
            max_nodes: self.req.max_nodes.unwrap_or(d.max_nodes),
            subscriber_max_buffer_size: self.req.buffer.unwrap_or(d.subscriber_max_buffer_size),
            subscriber_max_borrowed_samples: self
                .req
                .borrowed
                .unwrap_or(d.subscriber_max_borrowed_samples),
            history_size: self.req.history.unwrap_or(d.history_size),
            overflow: self.req.overflow.unwrap_or(d.overflow),
        };
        validate_qos(&qos)?;
        let t: TypeDetails = self.details();
        if self.described.is_some() {
            check_described(&t)?;
        }
        if t.align > MAX_ALIGN {
            return Err(ServiceError::InvalidSetting {
                field: "payload alignment",
                value: t.align,
                rule: "at most 4096",
            });
        }
        Ok(PubSubSettings {
            payload: t.into(),
            qos,
        })
    }

    fn check(&self, svc: &str, existing: &PubSubSettings) -> Result<(), ServiceError> {
        let PubSubSettings { payload, qos: q } = existing;
        check_payload(svc, PAYLOAD_FIELDS, self.details(), payload)?;
        at_least(
            svc,
            "max_publishers",
            self.req.max_publishers,
            q.max_publishers,
        )?;
        at_least(
            svc,
            "max_subscribers",
            self.req.max_subscribers,
            q.max_subscribers,
        )?;
        at_least(svc, "max_nodes", self.req.max_nodes, q.max_nodes)?;
        at_least(
            svc,
            "subscriber_max_buffer_size",
            self.req.buffer,
            q.subscriber_max_buffer_size,
        )?;
        at_least(
            svc,
            "subscriber_max_borrowed_samples",
            self.req.borrowed,
            q.subscriber_max_borrowed_samples,
        )?;
        at_least(svc, "history_size", self.req.history, q.history_size)?;
        if let Some(o) = self.req.overflow {
            if o != q.overflow {
                return Err(ServiceError::IncompatibleQos {
                    service: svc.into(),
                    field: "overflow",
                    requested: format!("{o:?}"),
                    actual: format!("{:?}", q.overflow),
                });
            }
        }
        Ok(())
    }
}

/// An open publish/subscribe service carrying `T`.
///
/// `Send` and `Sync`; cheap to clone. Create ports with
/// [`publisher_builder`](Self::publisher_builder) and
/// [`subscriber_builder`](Self::subscriber_builder). The service's files are
/// removed when the last handle and port in the domain are dropped.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pubsub-service", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Temperature".try_into()?)
///     .publish_subscribe::<f32>()
///     .open_or_create()?;
/// let subscriber = service.subscriber_builder().create()?;
/// let publisher = service.publisher_builder().create()?;
/// publisher.send_copy(21.5)?;
/// assert_eq!(subscriber.receive()?.map(|s| *s), Some(21.5));
/// # Ok(()) }
/// ```
pub struct PubSubService<T: Payload + ?Sized> {
    pub(crate) inner: Arc<ServiceInner>,
    pub(crate) settings: Arc<PubSubSettings>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> Clone for PubSubService<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            settings: self.settings.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: Payload + ?Sized> std::fmt::Debug for PubSubService<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSubService")
            .field("name", &self.inner.name)
            .field("payload", &self.settings.payload)
            .field("qos", &self.settings.qos)
            .finish()
    }
}

impl<T: Payload + ?Sized> PubSubService<T> {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The payload type recorded in the service.
    pub fn payload(&self) -> &PayloadDescription {
        &self.settings.payload
    }

    /// The service's quality of service.
    pub fn qos(&self) -> &PubSubQos {
        &self.settings.qos
    }

    /// Starts building a publisher.
    pub fn publisher_builder(&self) -> PublisherBuilder<T> {
        PublisherBuilder::new(self.inner.clone(), self.settings.clone())
    }

    /// Starts building a subscriber.
    pub fn subscriber_builder(&self) -> SubscriberBuilder<T> {
        SubscriberBuilder::new(self.inner.clone(), self.settings.clone())
    }
}
