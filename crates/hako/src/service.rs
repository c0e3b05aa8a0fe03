//! Services: discovery with no daemon.
//!
//! A service lives in a directory `svc_<hash of name>` of the domain root:
//!
//! * `static.toml` — the immutable description (name, pattern, payload type,
//!   quality of service), written to a temporary file and renamed into place,
//!   so it is either absent or whole;
//! * `dynamic` — the dynamic segment: port tables and the generation counter
//!   (see [`crate::core::layout`]);
//! * `pub_<port id>` — one data segment per publisher.
//!
//! Creating, opening and closing services and registering ports happen under
//! an exclusive `flock` on the domain root, so concurrent `open_or_create`
//! calls from many processes are safe; a process that dies while holding it
//! releases it. `dynamic` is created before `static.toml` is renamed into
//! place; a directory without `static.toml` is the debris of a creator that
//! died halfway and is cleaned by the next creator.

use std::io;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::core::layout::{
    DynGeometry, DynHeader, NodeSlot, PortSlot, DYN_MAGIC, LAYOUT_VERSION, PORT_RETIRED,
    PORT_SLOT_SIZE,
};
use crate::name::ServiceName;
use crate::node::{ensure_dir, NodeInner};
use crate::os::lock::DomainLock;
use crate::os::shm::{self, Mapping};
use crate::payload::{Payload, TypeDetails};
use crate::publisher::PublisherBuilder;
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticDescription {
    /// Layout version of the service's segments.
    pub version: u32,
    /// The service name.
    pub name: String,
    /// Messaging pattern ("publish_subscribe").
    pub pattern: String,
    /// Payload type name.
    pub type_name: String,
    /// Size of one payload element.
    pub size: u64,
    /// Payload alignment.
    pub align: u64,
    /// Whether the payload is a slice.
    pub slice: bool,
    /// Quality of service.
    pub qos: PubSubQos,
}

const PATTERN_PUBSUB: &str = "publish_subscribe";
const STATIC_FILE: &str = "static.toml";
const DYNAMIC_FILE: &str = "dynamic";

/// Why a service could not be created, opened, or opened-or-created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// `create` found the service already there.
    #[error("service {0:?} already exists; use open() or open_or_create()")]
    AlreadyExists(String),
    /// `open` found no such service.
    #[error("service {0:?} does not exist; create it first or use open_or_create()")]
    DoesNotExist(String),
    /// The service carries another payload type.
    #[error("service {service:?} has an incompatible payload: {field} is {actual} there, {requested} here; use the same payload type in every process")]
    IncompatibleType {
        /// The service.
        service: String,
        /// Which property differs: "type_name", "size", "align" or "slice".
        field: &'static str,
        /// What this process asked for.
        requested: String,
        /// What the service has.
        actual: String,
    },
    /// The service's quality of service does not meet what was requested.
    #[error("service {service:?} has incompatible quality of service: {field} is {actual} there, {requested} requested; ask for what the service offers or create it under another name")]
    IncompatibleQos {
        /// The service.
        service: String,
        /// The QoS field.
        field: &'static str,
        /// Requested value.
        requested: String,
        /// The service's value.
        actual: String,
    },
    /// The service exists with another messaging pattern.
    #[error("service {service:?} is a {actual} service, not {requested}")]
    IncompatiblePattern {
        /// The service.
        service: String,
        /// Requested pattern.
        requested: String,
        /// The service's pattern.
        actual: String,
    },
    /// The service was created by an incompatible version of hako.
    #[error("service {service:?} has layout version {found}, this hako speaks {expected}; run the same hako version everywhere, or remove the service")]
    VersionMismatch {
        /// The service.
        service: String,
        /// Version found.
        found: u32,
        /// Version this library speaks.
        expected: u32,
    },
    /// The service's files are damaged (half-written or overwritten).
    #[error("service {service:?} is corrupted: {reason}; remove {path} once no process uses it")]
    Corrupted {
        /// The service.
        service: String,
        /// What is wrong.
        reason: String,
        /// Its directory.
        path: PathBuf,
    },
    /// Every node slot of the service is taken.
    #[error("service {service:?} is open in {max} nodes already (max_nodes); raise max_nodes when creating it")]
    TooManyNodes {
        /// The service.
        service: String,
        /// The limit.
        max: u32,
    },
    /// A requested setting is out of range.
    #[error("invalid setting {field} = {value}: {rule}")]
    InvalidSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// The file system refused (full tmpfs, permissions, ...).
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// On which file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

pub(crate) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> ServiceError + 'a {
    move |source| ServiceError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Starts building a service; returned by [`Node::service_builder`](crate::Node::service_builder).
pub struct ServiceBuilder {
    node: Arc<NodeInner>,
    name: ServiceName,
}

impl std::fmt::Debug for ServiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceBuilder")
            .field("name", &self.name)
            .finish()
    }
}

impl ServiceBuilder {
    pub(crate) fn new(node: Arc<NodeInner>, name: ServiceName) -> Self {
        Self { node, name }
    }

    /// A publish/subscribe service carrying `T` (a [`ShmSafe`](crate::ShmSafe)
    /// type, or a slice `[T]`).
    pub fn publish_subscribe<T: Payload + ?Sized>(self) -> PubSubBuilder<T> {
        PubSubBuilder {
            node: self.node,
            name: self.name,
            req: QosRequest::default(),
            _t: PhantomData,
        }
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

    fn qos_for_create(&self) -> Result<PubSubQos, ServiceError> {
        let d = &self.node.config.defaults;
        let q = PubSubQos {
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
        validate_qos(&q)?;
        Ok(q)
    }

    fn check_open(&self, desc: &StaticDescription) -> Result<(), ServiceError> {
        let svc = self.name.as_str();
        if desc.version != LAYOUT_VERSION {
            return Err(ServiceError::VersionMismatch {
                service: svc.into(),
                found: desc.version,
                expected: LAYOUT_VERSION,
            });
        }
        if desc.pattern != PATTERN_PUBSUB {
            return Err(ServiceError::IncompatiblePattern {
                service: svc.into(),
                requested: PATTERN_PUBSUB.into(),
                actual: desc.pattern.clone(),
            });
        }
        let t = T::details();
        let ty = |field, requested: String, actual: String| ServiceError::IncompatibleType {
            service: svc.into(),
            field,
            requested,
            actual,
        };
        if t.type_name != desc.type_name {
            return Err(ty("type_name", t.type_name, desc.type_name.clone()));
        }
        if t.slice != desc.slice {
            return Err(ty("slice", t.slice.to_string(), desc.slice.to_string()));
        }
        if t.size != desc.size {
            return Err(ty("size", t.size.to_string(), desc.size.to_string()));
        }
        if t.align != desc.align {
            return Err(ty("align", t.align.to_string(), desc.align.to_string()));
        }
        let q = &desc.qos;
        let at_least = |field, req: Option<u32>, actual: u32| match req {
            Some(r) if r > actual => Err(ServiceError::IncompatibleQos {
                service: svc.into(),
                field,
                requested: format!("at least {r}"),
                actual: actual.to_string(),
            }),
            _ => Ok(()),
        };
        at_least("max_publishers", self.req.max_publishers, q.max_publishers)?;
        at_least(
            "max_subscribers",
            self.req.max_subscribers,
            q.max_subscribers,
        )?;
        at_least("max_nodes", self.req.max_nodes, q.max_nodes)?;
        at_least(
            "subscriber_max_buffer_size",
            self.req.buffer,
            q.subscriber_max_buffer_size,
        )?;
        at_least(
            "subscriber_max_borrowed_samples",
            self.req.borrowed,
            q.subscriber_max_borrowed_samples,
        )?;
        at_least("history_size", self.req.history, q.history_size)?;
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

    fn paths(&self) -> (PathBuf, PathBuf) {
        let root = self.node.config.root.clone();
        let dir = root.join(format!("svc_{}", self.name.file_key()));
        (root, dir)
    }

    /// Creates the service; fails if it exists.
    pub fn create(self) -> Result<PubSubService<T>, ServiceError> {
        let (root, dir) = self.paths();
        let _lock = DomainLock::acquire(&root).map_err(io_err("lock", &root))?;
        if dir.join(STATIC_FILE).exists() {
            return Err(ServiceError::AlreadyExists(self.name.to_string()));
        }
        self.create_locked(dir)
    }

    /// Opens an existing service, checking that it is compatible.
    pub fn open(self) -> Result<PubSubService<T>, ServiceError> {
        let (root, dir) = self.paths();
        let _lock = DomainLock::acquire(&root).map_err(io_err("lock", &root))?;
        self.open_locked(dir)
    }

    /// Opens the service if it exists, creates it otherwise. Safe to call
    /// from many processes at once: exactly one creates it.
    pub fn open_or_create(self) -> Result<PubSubService<T>, ServiceError> {
        let (root, dir) = self.paths();
        let _lock = DomainLock::acquire(&root).map_err(io_err("lock", &root))?;
        if dir.join(STATIC_FILE).exists() {
            self.open_locked(dir)
        } else {
            self.create_locked(dir)
        }
    }

    fn create_locked(self, dir: PathBuf) -> Result<PubSubService<T>, ServiceError> {
        let qos = self.qos_for_create()?;
        let t: TypeDetails = T::details();
        if t.align > crate::core::layout::MAX_ALIGN {
            return Err(ServiceError::InvalidSetting {
                field: "payload alignment",
                value: t.align,
                rule: "at most 4096",
            });
        }
        // Debris of a creator that died before publishing static.toml.
        if dir.exists() {
            tracing::warn!(dir = %dir.display(), "removing a half-created service");
            remove_service_files(&dir);
        }
        ensure_dir(&dir).map_err(io_err("create directory", &dir))?;
        let geo = DynGeometry::new(qos.max_nodes, qos.max_publishers, qos.max_subscribers);
        let dyn_path = dir.join(DYNAMIC_FILE);
        let fd = shm::create(&dyn_path, geo.total_size).map_err(io_err("create", &dyn_path))?;
        let map = Mapping::new(&fd, 0, geo.total_size, true).map_err(io_err("map", &dyn_path))?;
        map.write(
            0,
            DynHeaderInit {
                magic: DYN_MAGIC,
                version: LAYOUT_VERSION,
                max_nodes: qos.max_nodes,
                max_publishers: qos.max_publishers,
                max_subscribers: qos.max_subscribers,
            },
        );
        let desc = StaticDescription {
            version: LAYOUT_VERSION,
            name: self.name.to_string(),
            pattern: PATTERN_PUBSUB.into(),
            type_name: t.type_name,
            size: t.size,
            align: t.align,
            slice: t.slice,
            qos,
        };
        let text = toml::to_string(&desc).map_err(|e| ServiceError::Io {
            action: "serialise",
            path: dir.join(STATIC_FILE),
            source: io::Error::other(e),
        })?;
        let tmp = dir.join("static.toml.tmp");
        write_private(&tmp, text.as_bytes()).map_err(io_err("write", &tmp))?;
        let fin = dir.join(STATIC_FILE);
        std::fs::rename(&tmp, &fin).map_err(io_err("publish", &fin))?;
        let inner = ServiceInner::attach(self.node, self.name, dir, desc, map, geo)?;
        Ok(PubSubService {
            inner: Arc::new(inner),
            _t: PhantomData,
        })
    }

    fn open_locked(self, dir: PathBuf) -> Result<PubSubService<T>, ServiceError> {
        let name = self.name.to_string();
        let corrupted = |reason: String| ServiceError::Corrupted {
            service: name.clone(),
            reason,
            path: dir.clone(),
        };
        let static_path = dir.join(STATIC_FILE);
        let text = match std::fs::read_to_string(&static_path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ServiceError::DoesNotExist(name));
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(corrupted("static.toml is not UTF-8 text".into()));
            }
            Err(e) => return Err(io_err("read", &static_path)(e)),
        };
        let desc: StaticDescription = toml::from_str(&text)
            .map_err(|e| corrupted(format!("static.toml does not parse: {}", e.message())))?;
        if desc.name != name {
            return Err(corrupted(format!(
                "its directory belongs to service {:?} (name hash collision)",
                desc.name
            )));
        }
        self.check_open(&desc)?;
        validate_qos(&desc.qos).map_err(|e| corrupted(format!("static.toml: {e}")))?;
        let geo = DynGeometry::new(
            desc.qos.max_nodes,
            desc.qos.max_publishers,
            desc.qos.max_subscribers,
        );
        let dyn_path = dir.join(DYNAMIC_FILE);
        let fd = match shm::open_existing(&dyn_path, true) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(corrupted("the dynamic segment is missing".into()));
            }
            Err(e) => return Err(io_err("open", &dyn_path)(e)),
        };
        let size = shm::file_size(&fd).map_err(io_err("stat", &dyn_path))?;
        if size != geo.total_size {
            return Err(corrupted(format!(
                "the dynamic segment has {size} bytes, {} expected",
                geo.total_size
            )));
        }
        let map = Mapping::new(&fd, 0, geo.total_size, true).map_err(io_err("map", &dyn_path))?;
        let h: DynHeaderInit = map.read(0);
        if h.magic != DYN_MAGIC {
            return Err(corrupted(
                "the dynamic segment has a bad magic number".into(),
            ));
        }
        if h.version != LAYOUT_VERSION {
            return Err(ServiceError::VersionMismatch {
                service: name,
                found: h.version,
                expected: LAYOUT_VERSION,
            });
        }
        if (h.max_nodes, h.max_publishers, h.max_subscribers)
            != (
                desc.qos.max_nodes,
                desc.qos.max_publishers,
                desc.qos.max_subscribers,
            )
        {
            return Err(corrupted(
                "the dynamic segment disagrees with static.toml".into(),
            ));
        }
        let inner = ServiceInner::attach(self.node, self.name, dir, desc, map, geo)?;
        Ok(PubSubService {
            inner: Arc::new(inner),
            _t: PhantomData,
        })
    }
}

/// The immutable head of [`DynHeader`], as written at creation.
#[repr(C)]
#[derive(Clone, Copy)]
struct DynHeaderInit {
    magic: u64,
    version: u32,
    max_nodes: u32,
    max_publishers: u32,
    max_subscribers: u32,
}
const _: () = assert!(
    std::mem::offset_of!(DynHeader, max_subscribers)
        == std::mem::offset_of!(DynHeaderInit, max_subscribers)
);

fn validate_qos(q: &PubSubQos) -> Result<(), ServiceError> {
    let check = |field, value: u32, lo: u32, hi: u32, rule| {
        if value < lo || value > hi {
            Err(ServiceError::InvalidSetting {
                field,
                value: value.into(),
                rule,
            })
        } else {
            Ok(())
        }
    };
    check(
        "max_publishers",
        q.max_publishers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check(
        "max_subscribers",
        q.max_subscribers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    check(
        "subscriber_max_buffer_size",
        q.subscriber_max_buffer_size,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check(
        "subscriber_max_borrowed_samples",
        q.subscriber_max_borrowed_samples,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check(
        "history_size",
        q.history_size,
        0,
        1 << 20,
        "at most 1048576",
    )?;
    Ok(())
}

fn write_private(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(shm::FILE_MODE)
        .open(path)?;
    f.write_all(data)
}

/// Removes every file of a service directory and the directory.
fn remove_service_files(dir: &Path) {
    // static.toml first, so the service stops existing before its parts go.
    let _ = std::fs::remove_file(dir.join(STATIC_FILE));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Shared state of an open service; ports keep it alive.
pub(crate) struct ServiceInner {
    pub(crate) node: Arc<NodeInner>,
    pub(crate) name: ServiceName,
    pub(crate) dir: PathBuf,
    pub(crate) desc: StaticDescription,
    map: Mapping,
    geo: DynGeometry,
    node_slot: usize,
}

/// Which port table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortKind {
    Publisher,
    Subscriber,
}

impl ServiceInner {
    /// Registers the node as a user of the service (domain lock held).
    fn attach(
        node: Arc<NodeInner>,
        name: ServiceName,
        dir: PathBuf,
        desc: StaticDescription,
        map: Mapping,
        geo: DynGeometry,
    ) -> Result<Self, ServiceError> {
        let max = desc.qos.max_nodes;
        let mut me = Self {
            node,
            name,
            dir,
            desc,
            map,
            geo,
            node_slot: usize::MAX,
        };
        let id = me.node.id;
        let mut free = None;
        for i in 0..max as usize {
            let slot = me.node_slot_ref(i);
            // Relaxed: the domain lock orders all writers of the node table.
            let n = slot.node_id.load(Ordering::Relaxed);
            if n == id {
                free = Some(i);
                break;
            }
            if n == 0 && free.is_none() {
                free = Some(i);
            }
        }
        let Some(i) = free else {
            let svc = me.name.to_string();
            me.node_slot = usize::MAX;
            return Err(ServiceError::TooManyNodes { service: svc, max });
        };
        let slot = me.node_slot_ref(i);
        // Relaxed (both): writers are serialised by the domain lock.
        slot.node_id.store(id, Ordering::Relaxed);
        slot.refs.fetch_add(1, Ordering::Relaxed);
        me.node_slot = i;
        Ok(me)
    }

    fn node_slot_ref(&self, i: usize) -> &NodeSlot {
        let off = self.geo.nodes_offset + 16 * i as u64;
        assert!(off + 16 <= self.map.len() as u64);
        // SAFETY: in range (checked), 8-aligned (offsets are multiples of 16
        // from a page-aligned base), NodeSlot is made of atomics only.
        unsafe { &*self.map.ptr().add(off as usize).cast::<NodeSlot>() }
    }

    pub(crate) fn header(&self) -> &DynHeader {
        // SAFETY: the mapping is at least one page; DynHeader's mutable field
        // is atomic and the others are written once before anyone else maps it.
        unsafe { &*self.map.ptr().cast::<DynHeader>() }
    }

    /// The generation counter of the port tables.
    pub(crate) fn generation(&self) -> u64 {
        // ORDERING: Acquire; pairs with the Release fetch_add in bump(): table
        // entries changed before the bump are visible after this load.
        self.header().generation.load(Ordering::Acquire)
    }

    fn bump(&self) {
        // ORDERING: Release; pairs with the Acquire load in generation().
        self.header().generation.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn table_len(&self, kind: PortKind) -> usize {
        match kind {
            PortKind::Publisher => self.desc.qos.max_publishers as usize,
            PortKind::Subscriber => self.desc.qos.max_subscribers as usize,
        }
    }

    pub(crate) fn port_slot(&self, kind: PortKind, i: usize) -> &PortSlot {
        assert!(i < self.table_len(kind));
        let base = match kind {
            PortKind::Publisher => self.geo.pubs_offset,
            PortKind::Subscriber => self.geo.subs_offset,
        };
        let off = base + PORT_SLOT_SIZE * i as u64;
        assert!(off + PORT_SLOT_SIZE <= self.map.len() as u64);
        // SAFETY: in range (checked), 64-aligned, PortSlot is made of atomics.
        unsafe { &*self.map.ptr().add(off as usize).cast::<PortSlot>() }
    }

    /// Registers a port; returns its table index or `None` if the table is full.
    pub(crate) fn register(
        &self,
        kind: PortKind,
        port_id: u64,
        max_len: u64,
        chunk_count: u64,
    ) -> Result<Option<usize>, ServiceError> {
        let root = &self.node.config.root;
        let _lock = DomainLock::acquire(root).map_err(io_err("lock", root))?;
        for i in 0..self.table_len(kind) {
            let s = self.port_slot(kind, i);
            // Relaxed: writers are serialised by the domain lock.
            if s.port_id.load(Ordering::Relaxed) == 0 {
                // Relaxed (three stores): published by the Release store of port_id.
                s.node_id.store(self.node.id, Ordering::Relaxed);
                s.max_len.store(max_len, Ordering::Relaxed);
                s.chunk_count.store(chunk_count, Ordering::Relaxed);
                s.flags.store(0, Ordering::Relaxed);
                // ORDERING: Release; pairs with the Acquire loads of port_id by
                // readers of the table, publishing the fields above.
                s.port_id.store(port_id, Ordering::Release);
                self.bump();
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Removes a port from its table.
    pub(crate) fn unregister(&self, kind: PortKind, index: usize, port_id: u64) {
        let root = &self.node.config.root;
        let _lock = DomainLock::acquire(root);
        self.remove_port_locked(kind, index, port_id);
    }

    /// Removes a port from its table; the domain lock must be held.
    pub(crate) fn remove_port_locked(&self, kind: PortKind, index: usize, port_id: u64) {
        let s = self.port_slot(kind, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) == port_id {
            // Relaxed: published by the Release store below.
            s.flags.store(0, Ordering::Relaxed);
            // ORDERING: Release; pairs with readers' Acquire loads: everything
            // the port did before leaving is visible to whoever sees it gone.
            s.port_id.store(0, Ordering::Release);
            self.bump();
        }
    }

    /// Marks a publisher retired (see [`crate::segment`]); domain lock held.
    pub(crate) fn retire_locked(&self, index: usize, port_id: u64) {
        let s = self.port_slot(PortKind::Publisher, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) == port_id {
            // ORDERING: Release; pairs with the Acquire load of the generation
            // by subscribers, which then see the flag.
            s.flags.store(PORT_RETIRED, Ordering::Release);
            self.bump();
        }
    }

    /// Path of a publisher's data segment.
    pub(crate) fn publisher_path(&self, port_id: u64) -> PathBuf {
        self.dir.join(format!("pub_{port_id:016x}"))
    }
}

impl Drop for ServiceInner {
    fn drop(&mut self) {
        if self.node_slot == usize::MAX {
            return;
        }
        let root = &self.node.config.root;
        let Ok(_lock) = DomainLock::acquire(root) else {
            return;
        };
        let slot = self.node_slot_ref(self.node_slot);
        // Relaxed (all table accesses here): the domain lock serialises writers.
        if slot.refs.fetch_sub(1, Ordering::Relaxed) == 1 {
            slot.node_id.store(0, Ordering::Relaxed);
        }
        let nodes_left = (0..self.desc.qos.max_nodes as usize)
            .any(|i| self.node_slot_ref(i).node_id.load(Ordering::Relaxed) != 0);
        let ports_left = [PortKind::Publisher, PortKind::Subscriber]
            .iter()
            .any(|&k| {
                (0..self.table_len(k))
                    .any(|i| self.port_slot(k, i).port_id.load(Ordering::Relaxed) != 0)
            });
        if !nodes_left && !ports_left {
            remove_service_files(&self.dir);
        }
    }
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

    /// Starts building a publisher.
    pub fn publisher_builder(&self) -> PublisherBuilder<T> {
        PublisherBuilder::new(self.inner.clone())
    }

    /// Starts building a subscriber.
    pub fn subscriber_builder(&self) -> SubscriberBuilder<T> {
        SubscriberBuilder::new(self.inner.clone())
    }
}
