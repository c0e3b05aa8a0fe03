//! The publish/subscribe pattern: its settings, builder and service handle.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Defaults;
use crate::name::ServiceName;
use crate::node::NodeInner;
use crate::payload::{Payload, TypeDetails};
use crate::publisher::PublisherBuilder;
use crate::service::{
    acquire, at_least, check_range, Mode, Pattern, PatternRequest, PayloadDescription,
    ServiceError, ServiceInner, StaticDescription,
};
use crate::subscriber::SubscriberBuilder;

/// What a publisher does when a subscriber's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverflowPolicy {
    /// The publisher takes the oldest queued sample back; the subscriber
    /// always sees the newest data.
    DropOldest,
    /// Nothing queued is ever dropped; the publisher waits, retries or
    /// discards the new sample as its [`BackpressureStrategy`] says.
    Backpressure,
}

/// What a publisher does, under [`OverflowPolicy::Backpressure`], when a
/// subscriber's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackpressureStrategy {
    /// Wait until the subscriber makes room (or goes away, or its process
    /// dies).
    Block,
    /// Try again up to this many times, yielding the CPU in between, then
    /// skip this subscriber for this sample.
    Retry(u32),
    /// Skip this subscriber for this sample at once.
    Discard,
}

/// Quality of service of a publish/subscribe service, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PubSubQos {
    /// Publishers the service admits.
    pub max_publishers: u32,
    /// Subscribers the service admits.
    pub max_subscribers: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
    /// Samples a subscriber's queue holds per publisher.
    pub subscriber_max_buffer_size: u32,
    /// Samples a subscriber may hold at once.
    pub subscriber_max_borrowed_samples: u32,
    /// Samples delivered to a late-joining subscriber.
    pub history_size: u32,
    /// What happens when a subscriber's queue is full.
    pub overflow: OverflowPolicy,
}

/// The static description of a service, as stored in `static.toml`.

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
pub struct PubSubBuilder<T: Payload + ?Sized> {
    node: Arc<NodeInner>,
    name: ServiceName,
    req: QosRequest,
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

macro_rules! qos_setter {
    ($(#[$doc:meta])* $fn:ident, $field:ident) => {
        $(#[$doc])*
        pub fn $fn(mut self, value: u32) -> Self {
            self.req.$field = Some(value);
            self
        }
    };
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
            _t: PhantomData,
        }
    }

    fn finish(self, mode: Mode) -> Result<PubSubService<T>, ServiceError> {
        let inner = acquire(&self.node, &self.name, &self, mode)?;
        Ok(PubSubService {
            inner: Arc::new(inner),
            _t: PhantomData,
        })
    }

    /// Creates the service; fails if it exists.
    pub fn create(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::Create)
    }

    /// Opens an existing service, checking that it is compatible.
    pub fn open(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::Open)
    }

    /// Opens the service if it exists, creates it otherwise. Safe to call
    /// from many processes at once: exactly one creates it.
    pub fn open_or_create(self) -> Result<PubSubService<T>, ServiceError> {
        self.finish(Mode::OpenOrCreate)
    }
}

impl<T: Payload + ?Sized> PatternRequest for PubSubBuilder<T> {
    const NAME: &'static str = "publish_subscribe";

    fn for_create(&self, d: &Defaults) -> Result<Pattern, ServiceError> {
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
        let t: TypeDetails = T::details();
        if t.align > crate::core::layout::MAX_ALIGN {
            return Err(ServiceError::InvalidSetting {
                field: "payload alignment",
                value: t.align,
                rule: "at most 4096",
            });
        }
        Ok(Pattern::PublishSubscribe {
            payload: PayloadDescription {
                type_name: t.type_name,
                size: t.size,
                align: t.align,
                slice: t.slice,
            },
            qos,
        })
    }

    fn check(&self, svc: &str, existing: &Pattern) -> Result<(), ServiceError> {
        let Pattern::PublishSubscribe { payload, qos: q } = existing else {
            return Err(ServiceError::IncompatiblePattern {
                service: svc.into(),
                requested: Self::NAME.into(),
                actual: existing.name().into(),
            });
        };
        let t = T::details();
        let ty = |field, requested: String, actual: String| ServiceError::IncompatibleType {
            service: svc.into(),
            field,
            requested,
            actual,
        };
        if t.type_name != payload.type_name {
            return Err(ty("type_name", t.type_name, payload.type_name.clone()));
        }
        if t.slice != payload.slice {
            return Err(ty("slice", t.slice.to_string(), payload.slice.to_string()));
        }
        if t.size != payload.size {
            return Err(ty("size", t.size.to_string(), payload.size.to_string()));
        }
        if t.align != payload.align {
            return Err(ty("align", t.align.to_string(), payload.align.to_string()));
        }
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

/// Checks the ranges of publish/subscribe settings.
pub(crate) fn validate_qos(q: &PubSubQos) -> Result<(), ServiceError> {
    check_range(
        "max_publishers",
        q.max_publishers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range(
        "max_subscribers",
        q.max_subscribers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    check_range(
        "subscriber_max_buffer_size",
        q.subscriber_max_buffer_size,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check_range(
        "subscriber_max_borrowed_samples",
        q.subscriber_max_borrowed_samples,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check_range(
        "history_size",
        q.history_size,
        0,
        1 << 20,
        "at most 1048576",
    )
}

/// An open publish/subscribe service carrying `T`.
///
/// `Send` and `Sync`; cheap to clone. Create ports with
/// [`publisher_builder`](Self::publisher_builder) and
/// [`subscriber_builder`](Self::subscriber_builder). The service's files are
/// removed when the last handle and port in the domain are dropped.
pub struct PubSubService<T: Payload + ?Sized> {
    pub(crate) inner: Arc<ServiceInner>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> Clone for PubSubService<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: Payload + ?Sized> std::fmt::Debug for PubSubService<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSubService")
            .field("name", &self.inner.name)
            .field("description", &self.inner.desc)
            .finish()
    }
}

impl<T: Payload + ?Sized> PubSubService<T> {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The service's static description (type and quality of service).
    pub fn description(&self) -> &StaticDescription {
        &self.inner.desc
    }

    /// The payload type recorded in the service.
    pub fn payload(&self) -> &PayloadDescription {
        self.inner.pubsub().0
    }

    /// The service's quality of service.
    pub fn qos(&self) -> &PubSubQos {
        self.inner.pubsub().1
    }

    /// Starts building a publisher.
    pub fn publisher_builder(&self) -> PublisherBuilder<T> {
        PublisherBuilder::new(self.inner.clone())
    }

    /// Starts building a subscriber.
    pub fn subscriber_builder(&self) -> SubscriberBuilder<T> {
        SubscriberBuilder::new(self.inner.clone())
    }
}
