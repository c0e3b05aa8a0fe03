//! Opening a blackboard: its builder (the entries with their defaults, the
//! quality of service), the checks of an existing service, writing the
//! defaults into a new one, and the service handle.

use std::mem::MaybeUninit;
use std::sync::Arc;

use super::access::{entry_in, Parts};
use super::reader::ReaderBuilder;
use super::settings::{
    check_key, check_value, BlackboardQos, BlackboardSettings, EntryDescription, EntryPlace,
    BOARD_MAGIC,
};
use super::writer::WriterBuilder;
use crate::domain::config::Defaults;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;
use crate::domain::service::builder::ServiceBuilder;
use crate::domain::service::error::{at_least, ServiceError};
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::open::{acquire, Mode, PatternRequest};
use crate::domain::service::tables::{DynSegment, PortKind};
use crate::port::payload::{check_payload, Payload, ShmSafe, TypeDetails, PAYLOAD_FIELDS};

impl ServiceBuilder {
    /// A blackboard: entries of shared state, one writer, many readers.
    pub fn blackboard(self) -> BlackboardBuilder {
        BlackboardBuilder {
            node: self.node,
            name: self.name,
            max_readers: None,
            max_nodes: None,
            entries: Vec::new(),
        }
    }
}

/// An entry asked for: its key, value type and (on create) default.
#[derive(Debug, Clone)]
struct EntryRequest {
    key: String,
    value: TypeDetails,
    /// The default's bytes (a typed default's padding may be
    /// uninitialised, so they are copied as they are, never read as u8).
    default: Vec<MaybeUninit<u8>>,
}

/// Builds a blackboard; returned by
/// [`ServiceBuilder::blackboard`](crate::ServiceBuilder::blackboard).
///
/// `create` makes the service with the entries given (their defaults are
/// the first values); `open` checks that the service has each entry given
/// with that value type (it may have more); settings given are what
/// `create` uses and what `open` requires (at least), others take the
/// config's defaults (`max_readers` that of `max_subscribers`).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-bb-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let board = node
///     .service_builder(&"Doc/Robot/State".try_into()?)
///     .blackboard()
///     .entry::<[f64; 3]>("position", [0.0; 3])
///     .entry::<u32>("mode", 1)
///     .max_readers(4)
///     .open_or_create()?;
/// assert_eq!(board.entries().len(), 2);
/// # Ok(()) }
/// ```
pub struct BlackboardBuilder {
    node: Arc<NodeInner>,
    name: ServiceName,
    max_readers: Option<u32>,
    max_nodes: Option<u32>,
    entries: Vec<EntryRequest>,
}

impl std::fmt::Debug for BlackboardBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlackboardBuilder")
            .field("name", &self.name)
            .field("max_readers", &self.max_readers)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl BlackboardBuilder {
    /// An entry `key` holding a `T`, `default` its value until the first
    /// update (used on create; on open, the entry must exist with that
    /// type).
    pub fn entry<T: ShmSafe + Copy>(mut self, key: &str, default: T) -> Self {
        let p = std::ptr::from_ref(&default).cast::<MaybeUninit<u8>>();
        // SAFETY: a T's bytes, while `default` lives, as MaybeUninit (its
        // padding may be uninitialised; it is only copied).
        let bytes = unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<T>()) };
        self.entries.push(EntryRequest {
            key: key.to_owned(),
            value: <T as Payload>::details(),
            default: bytes.to_vec(),
        });
        self
    }

    /// An entry whose value type is described at run time (for the other
    /// languages' faces): `default` holds `value.size` bytes.
    pub fn entry_described(mut self, key: &str, value: TypeDetails, default: &[u8]) -> Self {
        self.entries.push(EntryRequest {
            key: key.to_owned(),
            value,
            default: default.iter().map(|&b| MaybeUninit::new(b)).collect(),
        });
        self
    }

    /// Readers the service admits, at most 254 (each entry keeps this many
    /// buffers plus two, so that the writer never waits for a reader).
    pub fn max_readers(mut self, n: u32) -> Self {
        self.max_readers = Some(n);
        self
    }

    /// Nodes that may hold the service open at once.
    pub fn max_nodes(mut self, n: u32) -> Self {
        self.max_nodes = Some(n);
        self
    }

    fn finish(self, mode: Mode) -> Result<BlackboardService, ServiceError> {
        let (inner, settings) = acquire(&self.node, &self.name, &self, mode)?;
        let places = settings.places().0;
        Ok(BlackboardService {
            inner: Arc::new(inner),
            settings: Arc::new(settings),
            places: Arc::new(places),
        })
    }

    /// Creates the service; fails if it exists.
    pub fn create(self) -> Result<BlackboardService, ServiceError> {
        self.finish(Mode::Create)
    }

    /// Opens an existing service, checking that it is compatible.
    pub fn open(self) -> Result<BlackboardService, ServiceError> {
        self.finish(Mode::Open)
    }

    /// Opens the service if it exists, creates it otherwise.
    pub fn open_or_create(self) -> Result<BlackboardService, ServiceError> {
        self.finish(Mode::OpenOrCreate)
    }
}

impl PatternRequest for BlackboardBuilder {
    type Settings = BlackboardSettings;

    fn for_create(&self, d: &Defaults) -> Result<BlackboardSettings, ServiceError> {
        let mut entries = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            check_key(&e.key)?;
            let value = e.value.clone().into();
            check_value(&e.key, &value)?;
            if e.default.len() as u64 != value.size {
                return Err(ServiceError::InvalidEntry {
                    key: e.key.clone(),
                    rule: "the default has the value's size",
                });
            }
            entries.push(EntryDescription {
                key: e.key.clone(),
                value,
            });
        }
        let settings = BlackboardSettings {
            qos: BlackboardQos {
                max_readers: self.max_readers.unwrap_or(d.max_subscribers),
                max_nodes: self.max_nodes.unwrap_or(d.max_nodes),
            },
            entries,
        };
        use crate::domain::service::open::PatternSettings;
        settings.validate()?;
        Ok(settings)
    }

    fn check(&self, svc: &str, existing: &BlackboardSettings) -> Result<(), ServiceError> {
        let q = &existing.qos;
        at_least(svc, "max_readers", self.max_readers, q.max_readers)?;
        at_least(svc, "max_nodes", self.max_nodes, q.max_nodes)?;
        for e in &self.entries {
            let (_, d) = existing
                .find(&e.key)
                .ok_or_else(|| ServiceError::NoSuchEntry {
                    service: svc.to_owned(),
                    key: e.key.clone(),
                })?;
            check_payload(svc, PAYLOAD_FIELDS, e.value.clone(), &d.value)?;
        }
        Ok(())
    }

    /// Writes the board's header and each entry's default as version 0 in
    /// its buffer 0, before any other process can see the service.
    fn init(&self, settings: &BlackboardSettings, seg: &DynSegment) -> Result<(), ServiceError> {
        let (map, off) = seg.shared();
        map.write(off, BOARD_MAGIC);
        map.write(off + 8, settings.entries.len() as u64);
        let (places, _) = settings.places();
        for (place, e) in places.iter().zip(&self.entries) {
            let at = off + place.buffers;
            assert!(at + place.size <= map.len() as u64);
            // SAFETY: in the mapping (asserted), which nobody else maps yet;
            // the default has the value's size (for_create checked).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    e.default.as_ptr(),
                    map.ptr().add(at as usize).cast::<MaybeUninit<u8>>(),
                    e.default.len(),
                );
            }
        }
        Ok(())
    }
}

/// An open blackboard. `Send`, `Sync`, cheap to clone.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-bb-service", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let board = node
///     .service_builder(&"Doc/Limits".try_into()?)
///     .blackboard()
///     .entry::<f64>("max_speed", 1.5)
///     .open_or_create()?;
/// let writer = board.writer_builder().create()?;
/// let reader = board.reader_builder().create()?;
/// let mut speed = reader.entry::<f64>("max_speed")?;
/// assert_eq!(speed.get()?, 1.5); // the default, version 0
/// writer.entry::<f64>("max_speed")?.update(2.0);
/// assert_eq!(speed.get_with_version()?, (2.0, 1));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct BlackboardService {
    pub(crate) inner: Arc<ServiceInner>,
    pub(crate) settings: Arc<BlackboardSettings>,
    pub(crate) places: Arc<Vec<EntryPlace>>,
}

impl std::fmt::Debug for BlackboardService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlackboardService")
            .field("name", &self.inner.name)
            .field("qos", &self.settings.qos)
            .field("entries", &self.settings.entries.len())
            .finish()
    }
}

impl BlackboardService {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The service's quality of service.
    pub fn qos(&self) -> &BlackboardQos {
        &self.settings.qos
    }

    /// The entries: key and value type, in creation order.
    pub fn entries(&self) -> &[EntryDescription] {
        &self.settings.entries
    }

    /// The version of entry `key` (its updates so far), without a reader.
    pub fn version(&self, key: &str) -> Option<u64> {
        let (i, _) = self.settings.find(key)?;
        let e = entry_in(&self.inner, &self.places[i]);
        // Relaxed: a count for display.
        e.state(std::sync::atomic::Ordering::Relaxed)
            .ok()
            .map(|s| s.version)
    }

    fn parts(&self) -> Parts {
        Parts {
            svc: self.inner.clone(),
            settings: self.settings.clone(),
            places: self.places.clone(),
        }
    }

    /// How many readers the board has now.
    pub fn reader_count(&self) -> usize {
        self.ports(PortKind::Subscriber)
    }

    /// Whether the board has a writer now.
    pub fn has_writer(&self) -> bool {
        self.ports(PortKind::Publisher) > 0
    }

    fn ports(&self, kind: PortKind) -> usize {
        let svc = &self.inner;
        (0..svc.table_len(kind))
            // Relaxed: a count for display and waiting, read again later.
            .filter(|&j| svc.port_slot(kind, j).port_id.load(std::sync::atomic::Ordering::Relaxed) != 0)
            .count()
    }

    /// Starts building the writer.
    pub fn writer_builder(&self) -> WriterBuilder {
        WriterBuilder {
            parts: self.parts(),
        }
    }

    /// Starts building a reader.
    pub fn reader_builder(&self) -> ReaderBuilder {
        ReaderBuilder {
            parts: self.parts(),
            strategy: crate::port::wait::WaitStrategy::default(),
        }
    }
}
