//! Services: discovery with no daemon.
//!
//! A service lives in a directory `svc_<hash of name>` of the domain root:
//!
//! * `static.toml` — the immutable description (name, pattern, payload type,
//!   quality of service), written to a temporary file and renamed into place,
//!   so it is either absent or whole;
//! * `dynamic` — the dynamic segment: node and port tables, the generation
//!   counter and, for events, the listeners' counters (see
//!   [`crate::core::layout`]);
//! * `pub_<port id>` — one data segment per publisher;
//! * `wake_<port id>` — a FIFO per port that a waitset can poll.
//!
//! Creating, opening and closing services and registering ports happen under
//! an exclusive `flock` on the domain root, so concurrent `open_or_create`
//! calls from many processes are safe; a process that dies while holding it
//! releases it. `dynamic` is created before `static.toml` is renamed into
//! place; a directory without `static.toml` is the debris of a creator that
//! died halfway and is cleaned by the next creator.
//!
//! Each messaging pattern (publish/subscribe in [`crate::pubsub`], events in
//! [`crate::event`]) describes itself through [`PatternRequest`]; everything
//! else here is shared.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Defaults;
use crate::core::layout::{
    DynGeometry, DynHeader, NodeSlot, PortSlot, DYN_MAGIC, LAYOUT_VERSION, PORT_RETIRED,
    PORT_SLOT_SIZE,
};
use crate::core::park::WakeBlock;
use crate::event::{EventBuilder, EventQos};
use crate::name::ServiceName;
use crate::node::{ensure_dir, NodeInner};
use crate::os::lock::DomainLock;
use crate::os::shm::{self, Mapping};
use crate::payload::Payload;
use crate::pubsub::{PubSubBuilder, PubSubQos};

/// The static description of a service, as stored in `static.toml`:
///
/// ```toml
/// version = 4
/// name = "My/Funk/ServiceName"
/// pattern = "publish_subscribe"
///
/// [payload]
/// type_name = "Frame"
/// size = 4104
/// align = 8
/// slice = false
///
/// [qos]
/// max_publishers = 2
/// # ...
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticDescription {
    /// Layout version of the service's segments.
    pub version: u32,
    /// The service name.
    pub name: String,
    /// The messaging pattern and its settings.
    #[serde(flatten)]
    pub pattern: Pattern,
}

impl StaticDescription {
    /// Parses and validates a static description (the text of a
    /// `static.toml`), as a process opening the service does: the layout
    /// version first, then the TOML, then every setting's range. The error
    /// says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct VersionOnly {
            version: u32,
        }
        if let Ok(v) = toml::from_str::<VersionOnly>(text) {
            if v.version != LAYOUT_VERSION {
                return Err(format!(
                    "layout version {} (this build reads {LAYOUT_VERSION})",
                    v.version
                ));
            }
        }
        let desc: Self =
            toml::from_str(text).map_err(|e| format!("does not parse: {}", e.message()))?;
        validate_pattern(&desc.pattern).map_err(|e| e.to_string())?;
        Ok(desc)
    }
}

/// A service's messaging pattern with its fixed settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pattern {
    /// Publish/subscribe.
    PublishSubscribe {
        /// The payload type.
        payload: PayloadDescription,
        /// Quality of service.
        qos: PubSubQos,
    },
    /// Events (notifier/listener).
    Event {
        /// Quality of service.
        qos: EventQos,
    },
}

impl Pattern {
    /// The pattern's name, as in messages ("publish_subscribe", "event").
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::PublishSubscribe { .. } => "publish_subscribe",
            Pattern::Event { .. } => "event",
        }
    }

    /// Node table size, the two port tables' sizes, and the bytes each entry
    /// of the second table owns in the dynamic segment's extra area.
    pub(crate) fn tables(&self) -> Tables {
        match self {
            // Twice the publishers: a retired publisher (see crate::segment)
            // keeps its entry until its queued samples are collected, and must
            // not keep a new publisher out.
            Pattern::PublishSubscribe { qos, .. } => Tables {
                nodes: qos.max_nodes,
                first: qos.max_publishers.saturating_mul(2),
                second: qos.max_subscribers,
                extra_per_second: crate::core::layout::SUB_COUNTERS_SIZE,
            },
            Pattern::Event { qos } => Tables {
                nodes: qos.max_nodes,
                first: qos.max_notifiers,
                second: qos.max_listeners,
                extra_per_second: crate::event::counter_area_size(qos.event_id_max),
            },
        }
    }
}

/// Sizes of a service's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    pub nodes: u32,
    pub first: u32,
    pub second: u32,
    pub extra_per_second: u64,
}

impl Tables {
    fn geometry(&self) -> DynGeometry {
        DynGeometry::new(self.nodes, self.first, self.second, self.extra_per_second)
    }
}

/// The payload of a publish/subscribe service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayloadDescription {
    /// Payload type name.
    pub type_name: String,
    /// Size of one payload element.
    pub size: u64,
    /// Payload alignment.
    pub align: u64,
    /// Whether the payload is a slice.
    pub slice: bool,
}

pub(crate) const STATIC_FILE: &str = "static.toml";
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
    #[error("service {service:?} uses the {actual} pattern, not {requested}; open it with the matching builder or use another name")]
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

/// What a messaging pattern's builder contributes to create and open.
pub(crate) trait PatternRequest {
    /// The pattern's name.
    const NAME: &'static str;
    /// The pattern with its settings, for `create` (unset settings from `defaults`).
    fn for_create(&self, defaults: &Defaults) -> Result<Pattern, ServiceError>;
    /// Checks an existing service's pattern against what was requested.
    fn check(&self, service: &str, existing: &Pattern) -> Result<(), ServiceError>;
}

/// How to get at a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Create,
    Open,
    OpenOrCreate,
}

/// Creates and/or opens the service `name` for `node`.
pub(crate) fn acquire(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &impl PatternRequest,
    mode: Mode,
) -> Result<ServiceInner, ServiceError> {
    let root = node.config.root.clone();
    let dir = root.join(format!("svc_{}", name.file_key()));
    let _lock = DomainLock::acquire(&root).map_err(io_err("lock", &root))?;
    let exists = dir.join(STATIC_FILE).exists();
    match (mode, exists) {
        (Mode::Create, true) => Err(ServiceError::AlreadyExists(name.to_string())),
        (Mode::Open, _) | (Mode::OpenOrCreate, true) => open_locked(node, name, req, dir),
        (Mode::Create, false) | (Mode::OpenOrCreate, false) => create_locked(node, name, req, dir),
    }
}

fn create_locked(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &impl PatternRequest,
    dir: PathBuf,
) -> Result<ServiceInner, ServiceError> {
    let pattern = req.for_create(&node.config.defaults)?;
    // Debris of a creator that died before publishing static.toml.
    if dir.exists() {
        tracing::warn!(dir = %dir.display(), "removing a half-created service");
        remove_service_files(&dir);
    }
    ensure_dir(&dir, node.access).map_err(io_err("create directory", &dir))?;
    let tables = pattern.tables();
    let geo = tables.geometry();
    let dyn_path = dir.join(DYNAMIC_FILE);
    let fd =
        shm::create(&dyn_path, geo.total_size, node.access).map_err(io_err("create", &dyn_path))?;
    let map = Mapping::new(&fd, 0, geo.total_size, true).map_err(io_err("map", &dyn_path))?;
    map.write(
        0,
        DynHeaderInit {
            magic: DYN_MAGIC,
            version: LAYOUT_VERSION,
            max_nodes: tables.nodes,
            first: tables.first,
            second: tables.second,
        },
    );
    let desc = StaticDescription {
        version: LAYOUT_VERSION,
        name: name.to_string(),
        pattern,
    };
    let fin = dir.join(STATIC_FILE);
    let text = toml::to_string(&desc).map_err(|e| ServiceError::Io {
        action: "serialise",
        path: fin.clone(),
        source: io::Error::other(e),
    })?;
    let tmp = dir.join("static.toml.tmp");
    write_private(&tmp, text.as_bytes(), node.access).map_err(io_err("write", &tmp))?;
    std::fs::rename(&tmp, &fin).map_err(io_err("publish", &fin))?;
    ServiceInner::attach(
        node.clone(),
        name.clone(),
        dir,
        desc,
        DynSegment { map, geo, tables },
    )
}

/// Reads and parses a service's static description.
pub(crate) fn read_description(dir: &Path, name: &str) -> Result<StaticDescription, ServiceError> {
    let corrupted = |reason: String| ServiceError::Corrupted {
        service: name.to_owned(),
        reason,
        path: dir.to_owned(),
    };
    let static_path = dir.join(STATIC_FILE);
    let text = match std::fs::read_to_string(&static_path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ServiceError::DoesNotExist(name.to_owned()));
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return Err(corrupted("static.toml is not UTF-8 text".into()));
        }
        Err(e) => return Err(io_err("read", &static_path)(e)),
    };
    // The version is checked first, so a description from another layout
    // version is reported as such rather than as unparsable.
    #[derive(Deserialize)]
    struct VersionOnly {
        version: u32,
    }
    if let Ok(v) = toml::from_str::<VersionOnly>(&text) {
        if v.version != LAYOUT_VERSION {
            return Err(ServiceError::VersionMismatch {
                service: name.to_owned(),
                found: v.version,
                expected: LAYOUT_VERSION,
            });
        }
    }
    toml::from_str(&text)
        .map_err(|e| corrupted(format!("static.toml does not parse: {}", e.message())))
}

fn open_locked(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &impl PatternRequest,
    dir: PathBuf,
) -> Result<ServiceInner, ServiceError> {
    let svc = name.to_string();
    let corrupted = |reason: String| ServiceError::Corrupted {
        service: svc.clone(),
        reason,
        path: dir.clone(),
    };
    let desc = read_description(&dir, &svc)?;
    if desc.name != svc {
        return Err(corrupted(format!(
            "its directory belongs to service {:?} (name hash collision)",
            desc.name
        )));
    }
    if desc.pattern.name() != <_ as PatternRequestName>::name(req) {
        return Err(ServiceError::IncompatiblePattern {
            service: svc,
            requested: <_ as PatternRequestName>::name(req).into(),
            actual: desc.pattern.name().into(),
        });
    }
    req.check(&svc, &desc.pattern)?;
    validate_pattern(&desc.pattern).map_err(|e| corrupted(format!("static.toml: {e}")))?;
    let seg = DynSegment::open(&dir, &svc, &desc)?;
    // Ports and node entries of dead processes go before we take an entry.
    let mut live = crate::cleanup::Liveness::new(&node.config.root);
    let mut reclaimed = crate::cleanup::Reclaimed::default();
    crate::cleanup::reclaim_service_locked(&dir, &seg, &mut live, false, &mut reclaimed);
    if reclaimed.ports > 0 {
        tracing::info!(service = %svc, ports = reclaimed.ports, "reclaimed the ports of dead nodes");
    }
    ServiceInner::attach(node.clone(), name.clone(), dir, desc, seg)
}

/// The pattern name of a request (a helper so `open_locked` can name it
/// without an instance-level method on the trait).
trait PatternRequestName {
    fn name(&self) -> &'static str;
}

impl<R: PatternRequest> PatternRequestName for R {
    fn name(&self) -> &'static str {
        R::NAME
    }
}

/// The immutable head of [`DynHeader`], as written at creation.
#[repr(C)]
#[derive(Clone, Copy)]
struct DynHeaderInit {
    magic: u64,
    version: u32,
    max_nodes: u32,
    first: u32,
    second: u32,
}
const _: () = assert!(
    std::mem::offset_of!(DynHeader, max_subscribers) == std::mem::offset_of!(DynHeaderInit, second)
);

/// Checks that a setting lies in `lo..=hi`.
pub(crate) fn check_range(
    field: &'static str,
    value: u32,
    lo: u32,
    hi: u32,
    rule: &'static str,
) -> Result<(), ServiceError> {
    if value < lo || value > hi {
        Err(ServiceError::InvalidSetting {
            field,
            value: value.into(),
            rule,
        })
    } else {
        Ok(())
    }
}

/// Checks a requested minimum against a service's value.
pub(crate) fn at_least(
    service: &str,
    field: &'static str,
    requested: Option<u32>,
    actual: u32,
) -> Result<(), ServiceError> {
    match requested {
        Some(r) if r > actual => Err(ServiceError::IncompatibleQos {
            service: service.into(),
            field,
            requested: format!("at least {r}"),
            actual: actual.to_string(),
        }),
        _ => Ok(()),
    }
}

fn validate_pattern(p: &Pattern) -> Result<(), ServiceError> {
    match p {
        Pattern::PublishSubscribe { payload, qos } => {
            crate::pubsub::validate_qos(qos)?;
            if !payload.align.is_power_of_two() || payload.align > crate::core::layout::MAX_ALIGN {
                return Err(ServiceError::InvalidSetting {
                    field: "payload alignment",
                    value: payload.align,
                    rule: "a power of two, at most 4096",
                });
            }
            Ok(())
        }
        Pattern::Event { qos } => crate::event::validate_qos(qos),
    }
}

fn write_private(path: &Path, data: &[u8], access: shm::Access) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(shm::FILE_MODE)
        .open(path)?;
    if access != shm::Access::default() {
        access.apply(&f, false)?;
    }
    f.write_all(data)
}

/// Removes every file of a service directory and the directory.
pub(crate) fn remove_service_files(dir: &Path) {
    // static.toml first, so the service stops existing before its parts go.
    let _ = std::fs::remove_file(dir.join(STATIC_FILE));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
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
        PubSubBuilder::new(self.node, self.name)
    }

    /// An event service: notifiers signal event ids, listeners wait for them.
    pub fn event(self) -> EventBuilder {
        EventBuilder::new(self.node, self.name)
    }
}

/// Shared state of an open service; ports keep it alive.
pub(crate) struct ServiceInner {
    pub(crate) node: Arc<NodeInner>,
    pub(crate) name: ServiceName,
    pub(crate) dir: PathBuf,
    pub(crate) desc: StaticDescription,
    seg: DynSegment,
    node_slot: usize,
}

/// A service's dynamic segment, mapped: its node and port tables.
pub(crate) struct DynSegment {
    map: Mapping,
    geo: DynGeometry,
    tables: Tables,
}

impl std::fmt::Debug for ServiceInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("dir", &self.dir)
            .finish()
    }
}

/// Which port table. Publish/subscribe: publishers, subscribers. Events:
/// notifiers, listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortKind {
    /// Publishers, notifiers.
    Publisher,
    /// Subscribers, listeners.
    Subscriber,
}

impl ServiceInner {
    /// Registers the node as a user of the service (domain lock held).
    fn attach(
        node: Arc<NodeInner>,
        name: ServiceName,
        dir: PathBuf,
        desc: StaticDescription,
        seg: DynSegment,
    ) -> Result<Self, ServiceError> {
        let max = seg.tables.nodes;
        let mut me = Self {
            node,
            name,
            dir,
            desc,
            seg,
            node_slot: usize::MAX,
        };
        let id = me.node.id;
        let mut free = None;
        for i in 0..max as usize {
            // Relaxed: the domain lock orders all writers of the node table.
            let n = me.node_slot_ref(i).node_id.load(Ordering::Relaxed);
            if n == id {
                free = Some(i);
                break;
            }
            if n == 0 && free.is_none() {
                free = Some(i);
            }
        }
        let Some(i) = free else {
            return Err(ServiceError::TooManyNodes {
                service: me.name.to_string(),
                max,
            });
        };
        let slot = me.node_slot_ref(i);
        // Relaxed (both): writers are serialised by the domain lock.
        slot.node_id.store(id, Ordering::Relaxed);
        slot.refs.fetch_add(1, Ordering::Relaxed);
        me.node_slot = i;
        Ok(me)
    }

    fn node_slot_ref(&self, i: usize) -> &NodeSlot {
        self.seg.node_slot(i)
    }

    pub(crate) fn header(&self) -> &DynHeader {
        self.seg.header()
    }

    /// The generation counter of the port tables.
    pub(crate) fn generation(&self) -> u64 {
        self.seg.generation()
    }

    /// The generation counter itself, for ports that check it on every
    /// operation (load it with Acquire, as [`generation`](Self::generation)).
    pub(crate) fn generation_word(&self) -> &std::sync::atomic::AtomicU64 {
        &self.header().generation
    }

    /// The publish/subscribe settings. Only called on services opened as
    /// publish/subscribe (the pattern is checked at open).
    pub(crate) fn pubsub(&self) -> (&PayloadDescription, &PubSubQos) {
        match &self.desc.pattern {
            Pattern::PublishSubscribe { payload, qos } => (payload, qos),
            Pattern::Event { .. } => unreachable!("pattern checked when the service was opened"),
        }
    }

    /// The event settings. Only called on services opened as events.
    pub(crate) fn event_qos(&self) -> &EventQos {
        match &self.desc.pattern {
            Pattern::Event { qos } => qos,
            Pattern::PublishSubscribe { .. } => {
                unreachable!("pattern checked when the service was opened")
            }
        }
    }

    pub(crate) fn table_len(&self, kind: PortKind) -> usize {
        self.seg.table_len(kind)
    }

    pub(crate) fn port_slot(&self, kind: PortKind, i: usize) -> &PortSlot {
        self.seg.port_slot(kind, i)
    }

    /// The wake block of a port.
    pub(crate) fn wake_block(&self, kind: PortKind, i: usize) -> &WakeBlock {
        &self.port_slot(kind, i).wake
    }

    /// The extra area owned by entry `i` of the second table.
    pub(crate) fn extra(&self, i: usize) -> (&Mapping, u64) {
        self.seg.extra(i)
    }

    /// Registers a port; returns its table index or `None` if the table is
    /// full. `init(index)` runs under the domain lock before the port becomes
    /// visible.
    pub(crate) fn register(
        &self,
        kind: PortKind,
        port_id: u64,
        max_len: u64,
        chunk_count: u64,
        init: impl FnOnce(usize),
    ) -> Result<Option<usize>, ServiceError> {
        let root = &self.node.config.root;
        let _lock = DomainLock::acquire(root).map_err(io_err("lock", root))?;
        if kind == PortKind::Publisher {
            crate::segment::reap_retired_locked(self);
        }
        let limit = match (&self.desc.pattern, kind) {
            (Pattern::PublishSubscribe { qos, .. }, PortKind::Publisher) => {
                qos.max_publishers as usize
            }
            _ => self.table_len(kind),
        };
        // Relaxed (both loads): writers are serialised by the domain lock.
        let active = (0..self.table_len(kind))
            .filter(|&i| {
                let s = self.port_slot(kind, i);
                s.port_id.load(Ordering::Relaxed) != 0
                    && s.flags.load(Ordering::Relaxed) != PORT_RETIRED
            })
            .count();
        if active >= limit {
            return Ok(None);
        }
        // Every free entry held by retired publishers: a live publisher takes
        // precedence over samples nobody has collected yet.
        let free = (0..self.table_len(kind))
            .any(|i| self.port_slot(kind, i).port_id.load(Ordering::Relaxed) == 0);
        if !free {
            if let Some(i) = (0..self.table_len(kind))
                .find(|&i| self.port_slot(kind, i).flags.load(Ordering::Relaxed) == PORT_RETIRED)
            {
                let pid = self.port_slot(kind, i).port_id.load(Ordering::Relaxed);
                tracing::warn!(
                    publisher = pid,
                    "evicting a departed publisher whose queued samples were never collected"
                );
                self.remove_port_locked(kind, i, pid);
                let _ = std::fs::remove_file(self.publisher_path(pid));
            }
        }
        for i in 0..self.table_len(kind) {
            let s = self.port_slot(kind, i);
            // Relaxed: writers are serialised by the domain lock.
            if s.port_id.load(Ordering::Relaxed) == 0 {
                // Relaxed (all stores): published by the Release store of port_id.
                s.node_id.store(self.node.id, Ordering::Relaxed);
                s.max_len.store(max_len, Ordering::Relaxed);
                s.chunk_count.store(chunk_count, Ordering::Relaxed);
                s.flags.store(0, Ordering::Relaxed);
                s.wake.waiters.store(0, Ordering::Relaxed);
                s.wake.fd_waiters.store(0, Ordering::Relaxed);
                init(i);
                // ORDERING: Release; pairs with the Acquire loads of port_id by
                // readers of the table, publishing the fields above.
                s.port_id.store(port_id, Ordering::Release);
                self.seg.bump();
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
        self.seg.remove_port(kind, index, port_id);
    }

    /// Marks a publisher retired (see [`crate::segment`]); domain lock held.
    pub(crate) fn retire_locked(&self, index: usize, port_id: u64) {
        let s = self.port_slot(PortKind::Publisher, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) == port_id {
            // ORDERING: Release; pairs with the Acquire load of the generation
            // by subscribers, which then see the flag.
            s.flags.store(PORT_RETIRED, Ordering::Release);
            self.seg.bump();
        }
    }

    /// Reclaims the ports of dead nodes in this service, if there are any:
    /// called when a port follows a change of the tables. Without the domain
    /// lock unless one is found dead (a liveness probe per port).
    pub(crate) fn reclaim_dead_ports(&self) {
        let root = &self.node.config.root;
        let mut live = crate::cleanup::Liveness::new(root);
        let dead = [PortKind::Publisher, PortKind::Subscriber]
            .iter()
            .any(|&k| {
                (0..self.table_len(k)).any(|i| {
                    let s = self.port_slot(k, i);
                    // Relaxed (all three): a hint; the reclaim checks again
                    // under the domain lock.
                    s.port_id.load(Ordering::Relaxed) != 0
                        && s.flags.load(Ordering::Relaxed) != PORT_RETIRED
                        && !live.alive(s.node_id.load(Ordering::Relaxed))
                })
            });
        if !dead {
            return;
        }
        let Ok(_lock) = DomainLock::acquire(root) else {
            return;
        };
        let mut out = crate::cleanup::Reclaimed::default();
        crate::cleanup::reclaim_service_locked(
            &self.dir,
            &self.seg,
            &mut crate::cleanup::Liveness::new(root),
            false,
            &mut out,
        );
        if out.ports > 0 {
            tracing::info!(service = %self.name, ports = out.ports, "reclaimed the ports of dead nodes");
        }
    }

    /// Path of a publisher's data segment.
    pub(crate) fn publisher_path(&self, port_id: u64) -> PathBuf {
        self.dir.join(format!("pub_{port_id:016x}"))
    }

    /// Path of a port's wake-up FIFO.
    pub(crate) fn fifo_path(&self, port_id: u64) -> PathBuf {
        self.dir.join(format!("wake_{port_id:016x}"))
    }
}

impl DynSegment {
    /// Opens and validates the dynamic segment of the service in `dir`,
    /// whose static description `desc` was read and validated.
    pub(crate) fn open(
        dir: &Path,
        svc: &str,
        desc: &StaticDescription,
    ) -> Result<Self, ServiceError> {
        Self::open_with(dir, svc, desc, true)
    }

    /// [`open`](Self::open), mapped read-only unless `writable`.
    pub(crate) fn open_with(
        dir: &Path,
        svc: &str,
        desc: &StaticDescription,
        writable: bool,
    ) -> Result<Self, ServiceError> {
        let corrupted = |reason: String| ServiceError::Corrupted {
            service: svc.to_string(),
            reason,
            path: dir.to_path_buf(),
        };
        let tables = desc.pattern.tables();
        let geo = tables.geometry();
        let dyn_path = dir.join(DYNAMIC_FILE);
        let fd = match shm::open_existing(&dyn_path, writable) {
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
        let map =
            Mapping::new(&fd, 0, geo.total_size, writable).map_err(io_err("map", &dyn_path))?;
        let h: DynHeaderInit = map.read(0);
        if h.magic != DYN_MAGIC {
            return Err(corrupted(
                "the dynamic segment has a bad magic number".into(),
            ));
        }
        if h.version != LAYOUT_VERSION {
            return Err(ServiceError::VersionMismatch {
                service: svc.to_string(),
                found: h.version,
                expected: LAYOUT_VERSION,
            });
        }
        if (h.max_nodes, h.first, h.second) != (tables.nodes, tables.first, tables.second) {
            return Err(corrupted(
                "the dynamic segment disagrees with static.toml".into(),
            ));
        }
        Ok(Self { map, geo, tables })
    }

    pub(crate) fn node_slot(&self, i: usize) -> &NodeSlot {
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

    pub(crate) fn bump(&self) {
        // ORDERING: Release; pairs with the Acquire load in generation().
        self.header().generation.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn table_len(&self, kind: PortKind) -> usize {
        match kind {
            PortKind::Publisher => self.tables.first as usize,
            PortKind::Subscriber => self.tables.second as usize,
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

    /// The extra area owned by entry `i` of the second table.
    pub(crate) fn extra(&self, i: usize) -> (&Mapping, u64) {
        assert!(i < self.tables.second as usize);
        (
            &self.map,
            self.geo.extra_offset + i as u64 * self.tables.extra_per_second,
        )
    }

    /// Removes a port from its table (domain lock held); false if the entry
    /// holds another port by now.
    pub(crate) fn remove_port(&self, kind: PortKind, index: usize, port_id: u64) -> bool {
        let s = self.port_slot(kind, index);
        // Relaxed: writers are serialised by the domain lock.
        if s.port_id.load(Ordering::Relaxed) != port_id {
            return false;
        }
        // Relaxed: published by the Release store below.
        s.flags.store(0, Ordering::Relaxed);
        // ORDERING: Release; pairs with readers' Acquire loads: everything
        // the port did before leaving is visible to whoever sees it gone.
        s.port_id.store(0, Ordering::Release);
        self.bump();
        true
    }

    /// Whether any node or port is still registered (domain lock held).
    pub(crate) fn in_use(&self) -> bool {
        // Relaxed (all): the domain lock serialises writers.
        let nodes = (0..self.tables.nodes as usize)
            .any(|i| self.node_slot(i).node_id.load(Ordering::Relaxed) != 0);
        let ports = [PortKind::Publisher, PortKind::Subscriber]
            .iter()
            .any(|&k| {
                (0..self.table_len(k))
                    .any(|i| self.port_slot(k, i).port_id.load(Ordering::Relaxed) != 0)
            });
        nodes || ports
    }

    /// Number of node table entries.
    pub(crate) fn node_count(&self) -> usize {
        self.tables.nodes as usize
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
        if !self.seg.in_use() {
            remove_service_files(&self.dir);
        }
    }
}
