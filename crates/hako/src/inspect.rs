//! Looking into a domain from outside: its nodes, services, ports and their
//! counters, as the `hako` command-line tool shows them.
//!
//! Everything here only reads: files are opened and mapped read-only,
//! relative to the root held open and never through a link, no lock is
//! taken but the brief, non-blocking liveness probe of each node, and
//! nothing found is trusted. The result is a snapshot; ports may come and go
//! while it is taken.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::core::layout::{PubCounters, COUNTERS_OFFSET, DROPPED_OFFSET, PORT_LOSSY, PORT_RETIRED};
use crate::describe::{Pattern, StaticDescription};
use crate::domain::config::Config;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::{node_alive_in, open_root_for_tools, parse_node_file, read_node_info};
use crate::domain::service::error::ServiceError;
use crate::domain::service::files::read_description;
use crate::domain::service::tables::{DynSegment, PortKind};
use crate::os::dir::{refusal, Dir, RootMode};
use crate::os::shm::Mapping;
use crate::port::segment::{open_segment_with, OpenSegment};

/// Ids serialise as 16 hex digits, as the tools print them: a JSON number
/// loses the low bits of a 64-bit id in most JSON tools.
fn hex_id<S: serde::Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{id:016x}"))
}

fn hex_ids<S: serde::Serializer>(ids: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(|id| format!("{id:016x}")))
}

/// The node name of hako's bridge to other hosts (the `hako-bridge`
/// program of the crate `hako-zenoh`): a service with ports of a node of
/// this name is carried to and from other hosts, and `hako list` marks it
/// as bridged.
pub const BRIDGE_NODE_NAME: &str = "hako-bridge";

/// A node of the domain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodeInfo {
    /// Its id (in JSON: 16 hex digits).
    #[serde(serialize_with = "hex_id")]
    pub id: u64,
    /// The process id it recorded (informational).
    pub pid: Option<u32>,
    /// Its name ("" if none).
    pub name: String,
    /// Whether its process still holds its liveness lock.
    pub alive: bool,
}

/// Counters of a port, from shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PortCounters {
    /// A publisher.
    Publisher {
        /// Samples sent.
        sent: u64,
        /// Deliveries (one per subscriber that got a sample).
        deliveries: u64,
        /// Deliveries lost to overflow.
        dropped: u64,
        /// Samples loaned now.
        loans: u64,
        /// Chunks of its pool in use (queued, held, in the history or loaned).
        chunks_in_use: u64,
        /// Chunks in its pool.
        pool_size: u64,
    },
    /// A subscriber.
    Subscriber {
        /// Samples received, from every publisher.
        received: u64,
        /// Samples its present publishers dropped for it (overflow).
        dropped: u64,
    },
    /// A request/response client.
    Client {
        /// Requests sent.
        requests_sent: u64,
        /// Chunks of its pool in use: requests loaned, queued at a server or
        /// held by one (what the client has in flight, and requests whose
        /// pending responses it dropped while a server still held them).
        requests_in_use: u64,
        /// Chunks in its pool.
        pool_size: u64,
    },
    /// A request/response server.
    Server {
        /// Requests received, from every client.
        requests_received: u64,
        /// Responses sent (ends of streams included).
        responses_sent: u64,
        /// Chunks of its pool in use: responses loaned, queued at a client
        /// or held by one.
        responses_in_use: u64,
        /// Chunks in its pool.
        pool_size: u64,
    },
    /// None kept (event ports), or none readable.
    None,
}

/// A port registered with a service.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortInfo {
    /// The port id (in JSON: 16 hex digits).
    #[serde(serialize_with = "hex_id")]
    pub id: u64,
    /// The node that owns it (in JSON: 16 hex digits).
    #[serde(serialize_with = "hex_id")]
    pub node: u64,
    /// Whether that node is alive.
    pub node_alive: bool,
    /// A publisher that left with samples still queued for a subscriber.
    pub retired: bool,
    /// A subscriber that publishers never wait for
    /// (`SubscriberBuilder::lossy`).
    pub lossy: bool,
    /// Its counters.
    pub counters: PortCounters,
    /// The most elements one message of its may hold (its
    /// `max_slice_len`; 1 for a type that is no slice): for a publisher,
    /// a request/response client or server, read from its data segment;
    /// 0 for ports that send no payload (subscribers, event ports) or
    /// whose segment could not be read.
    pub max_slice_len: u64,
    /// Its data segment failed validation: what is wrong with it (its
    /// counters are then unknown, and receivers ignore it).
    pub corrupted: Option<String>,
}

/// A service and what is registered with it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServiceInfo {
    /// Its name.
    pub name: String,
    /// Its directory in the domain root.
    pub dir: PathBuf,
    /// Its static description (pattern, payload, QoS).
    pub description: StaticDescription,
    /// Ids of the nodes that have it open (in JSON: 16 hex digits each).
    #[serde(serialize_with = "hex_ids")]
    pub nodes: Vec<u64>,
    /// Publishers (publish/subscribe) or notifiers (events).
    pub publishers: Vec<PortInfo>,
    /// Subscribers (publish/subscribe) or listeners (events).
    pub subscribers: Vec<PortInfo>,
    /// A blackboard's entries with their versions (empty for the other
    /// patterns).
    pub entries: Vec<EntryInfo>,
}

/// An entry of a blackboard.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntryInfo {
    /// Its key.
    pub key: String,
    /// Its value's type.
    pub value: crate::port::payload::PayloadDescription,
    /// Its version: the updates published so far (`None` if its state
    /// word is corrupted).
    pub version: Option<u64>,
}

/// A domain root held open for reading, as the tools read it. Every file
/// in it is reached through the root's descriptor, never through a link.
///
/// [`open`](Self::open) checks the root and the directories above it as a
/// node does (see `NodeBuilder::create`), and refuses one that another
/// user could have filled; [`open_untrusted`](Self::open_untrusted) reads
/// such a domain anyway (say, root looking into a user's domain), which
/// is safe only because nothing here writes or removes anything.
#[derive(Debug)]
pub struct DomainView {
    root: Dir,
}

impl DomainView {
    /// Opens the domain root of `config`, checked; `Ok(None)` if there is
    /// none. A root that is not to be trusted is an error of kind
    /// `PermissionDenied` that says why.
    pub fn open(config: &Config) -> io::Result<Option<Self>> {
        Ok(open_root_for_tools(config, RootMode::Open)?.map(|root| Self { root }))
    }

    /// Opens the domain root of `config` without judging who owns it or
    /// the directories above it (links are still refused): for looking
    /// into a domain this user does not trust, read-only.
    pub fn open_untrusted(config: &Config) -> io::Result<Option<Self>> {
        Ok(open_root_for_tools(config, RootMode::ReadAnyway)?.map(|root| Self { root }))
    }

    /// The root's path.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The nodes of the domain, sorted by id.
    pub fn nodes(&self) -> io::Result<Vec<NodeInfo>> {
        let root = &self.root;
        let mut out = Vec::new();
        for e in root.entries()? {
            let Some(id) = parse_node_file(&e.name) else {
                continue;
            };
            let (pid, name) = read_node_info(root, &e.name);
            out.push(NodeInfo {
                id,
                pid,
                name,
                alive: node_alive_in(root, id),
            });
        }
        out.sort_by_key(|n| n.id);
        Ok(out)
    }

    /// Every service of the domain, sorted by name; one that cannot be
    /// read is an error in its place (labelled by its directory).
    pub fn services(&self) -> io::Result<Vec<Result<ServiceInfo, ServiceError>>> {
        let mut out: Vec<_> = self
            .root
            .entries()?
            .into_iter()
            .filter(|e| e.name.starts_with("svc_"))
            .map(|e| service_in(&self.root, &e.name, None))
            .collect();
        out.sort_by(|a, b| match (a, b) {
            (Ok(a), Ok(b)) => a.name.cmp(&b.name),
            (Ok(_), Err(_)) => std::cmp::Ordering::Less,
            (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
            (Err(a), Err(b)) => a.to_string().cmp(&b.to_string()),
        });
        Ok(out)
    }

    /// The node of the entry `file` (a `node_` file name), or `None` if
    /// it names no node: for a watcher that lists the root itself.
    pub(crate) fn node_of(&self, file: &str) -> Option<NodeInfo> {
        let id = parse_node_file(file)?;
        let (pid, name) = read_node_info(&self.root, file);
        Some(NodeInfo {
            id,
            pid,
            name,
            alive: node_alive_in(&self.root, id),
        })
    }

    /// Whether the root has an entry `name` now.
    pub(crate) fn has_entry(&self, name: &str) -> bool {
        matches!(self.root.stat_entry(name), Ok(Some(_)))
    }

    /// The service of the directory `key` (a `svc_` entry).
    pub(crate) fn service_of(&self, key: &str) -> Result<ServiceInfo, ServiceError> {
        service_in(&self.root, key, None)
    }

    /// A second open file description of the root, to list it from.
    pub(crate) fn reopen_root(&self) -> io::Result<std::os::fd::OwnedFd> {
        self.root.reopen()
    }

    /// The service `name`.
    pub fn service(&self, name: &ServiceName) -> Result<ServiceInfo, ServiceError> {
        service_in(
            &self.root,
            &format!("svc_{}", name.file_key()),
            Some(name.as_str()),
        )
    }
}

/// The nodes of the domain of `config`, sorted by id. An absent root is an
/// empty domain; one that is not to be trusted is an error
/// ([`DomainView::open`]).
pub fn nodes(config: &Config) -> io::Result<Vec<NodeInfo>> {
    match DomainView::open(config)? {
        Some(view) => view.nodes(),
        None => Ok(Vec::new()),
    }
}

/// Every service of the domain of `config`, sorted by name; one that cannot
/// be read is an error in its place (labelled by its directory). An absent
/// root is an empty domain; one that is not to be trusted is an error
/// ([`DomainView::open`]).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-inspect", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let topic = node
///     .service_builder(&"Doc/Inspected".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let publisher = topic.publisher_builder().create()?;
/// for service in hako::inspect::services(node.config())? {
///     match service {
///         Ok(info) => println!("{}: {} publisher(s)", info.name, info.publishers.len()),
///         Err(e) => eprintln!("unreadable service: {e}"),
///     }
/// }
/// # Ok(()) }
/// ```
pub fn services(config: &Config) -> io::Result<Vec<Result<ServiceInfo, ServiceError>>> {
    match DomainView::open(config)? {
        Some(view) => view.services(),
        None => Ok(Vec::new()),
    }
}

/// The service `name` of the domain of `config`.
pub fn service(config: &Config, name: &ServiceName) -> Result<ServiceInfo, ServiceError> {
    match DomainView::open(config) {
        Ok(Some(view)) => view.service(name),
        Ok(None) => Err(ServiceError::DoesNotExist(name.to_string())),
        Err(e) => Err(match refusal(&e) {
            Some(why) => ServiceError::Untrusted {
                service: name.to_string(),
                path: config.root.clone(),
                reason: why.to_owned(),
            },
            None => ServiceError::Io {
                action: "open",
                path: config.root.clone(),
                source: e,
            },
        }),
    }
}

fn service_in(root: &Dir, key: &str, name: Option<&str>) -> Result<ServiceInfo, ServiceError> {
    let label = name.unwrap_or(key).to_string();
    let dir = match root.subdir(key) {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ServiceError::DoesNotExist(label));
        }
        Err(e) => {
            return Err(match refusal(&e) {
                Some(why) => ServiceError::Untrusted {
                    service: label,
                    path: root.join(key),
                    reason: why.to_owned(),
                },
                None => ServiceError::Io {
                    action: "open",
                    path: root.join(key),
                    source: e,
                },
            })
        }
    };
    let raw = read_description(&dir, &label)?;
    let desc = StaticDescription::from_raw_of(&raw, &label, dir.path())?;
    if name.is_some_and(|n| n != desc.name) {
        return Err(ServiceError::Corrupted {
            service: label,
            reason: format!("its directory belongs to service {:?}", desc.name),
            path: dir.path().to_path_buf(),
        });
    }
    let seg = DynSegment::open_with(&dir, &desc.name, Some(desc.pattern.tables()), false)?;
    // Relaxed (all table loads): a snapshot for display.
    let nodes = (0..seg.node_count())
        .map(|i| seg.node_slot(i).node_id.load(Ordering::Relaxed))
        .filter(|&id| id != 0)
        .collect();
    let ports = |kind| -> Vec<(usize, PortInfo)> {
        (0..seg.table_len(kind))
            .filter_map(|i| {
                let s = seg.port_slot(kind, i);
                let id = s.port_id.load(Ordering::Relaxed);
                (id != 0).then(|| {
                    let node = s.node_id.load(Ordering::Relaxed);
                    let flags = s.flags.load(Ordering::Relaxed);
                    let retired = kind == PortKind::Publisher && flags == PORT_RETIRED;
                    let info = PortInfo {
                        id,
                        node,
                        node_alive: !retired && node_alive_in(root, node),
                        retired,
                        lossy: kind == PortKind::Subscriber && flags & PORT_LOSSY != 0,
                        counters: PortCounters::None,
                        max_slice_len: 0,
                        corrupted: None,
                    };
                    (i, info)
                })
            })
            .collect()
    };
    let mut publishers = ports(PortKind::Publisher);
    let mut subscribers = ports(PortKind::Subscriber);
    if let Pattern::PublishSubscribe { .. } = desc.pattern {
        let mut segments = Vec::new();
        for (_, p) in &mut publishers {
            let opened = match open_segment_with(&dir, p.id, false, None) {
                Ok(opened) => opened,
                Err(what) => {
                    p.corrupted = Some(what.to_owned());
                    None
                }
            };
            if let Some(OpenSegment { fd, geo, header }) = opened {
                if let Ok(map) = Mapping::new(&fd, 0, geo.pool_offset, false) {
                    let c: &PubCounters = counters(&map);
                    // Relaxed (all): counters for display.
                    let free = c.free_chunks.load(Ordering::Relaxed);
                    let pool = u64::from(header.chunk_count);
                    p.max_slice_len = header.params.max_len;
                    p.counters = PortCounters::Publisher {
                        sent: c.sent.load(Ordering::Relaxed),
                        deliveries: c.deliveries.load(Ordering::Relaxed),
                        dropped: c.dropped.load(Ordering::Relaxed),
                        loans: c.loans.load(Ordering::Relaxed),
                        chunks_in_use: pool.saturating_sub(free),
                        pool_size: pool,
                    };
                    segments.push((map, geo));
                }
            }
        }
        for (j, s) in &mut subscribers {
            let (extra, off) = seg.extra(*j);
            // Relaxed (all): counters for display.
            let received = extra.atomic(off).load(Ordering::Relaxed);
            let mut dropped = 0u64;
            for (map, geo) in &segments {
                let base = geo.conns_offset + *j as u64 * geo.conn_stride;
                if base + geo.conn_stride > map.len() as u64 {
                    continue;
                }
                if map.atomic(base).load(Ordering::Relaxed) == s.id {
                    dropped += map.atomic(base + DROPPED_OFFSET).load(Ordering::Relaxed);
                }
            }
            s.counters = PortCounters::Subscriber { received, dropped };
        }
    }
    if let Pattern::RequestResponse {
        request, response, ..
    } = &desc.pattern
    {
        // A request/response segment sizes its chunks in bytes.
        let elements = |bytes: u64, p: &crate::port::payload::PayloadDescription| match p.size {
            _ if !p.slice => 1,
            0 => bytes,
            size => bytes / size,
        };
        for (_, p) in &mut publishers {
            match segment_counters(&dir, p.id) {
                Ok(Some((sent, in_use, pool, max_len))) => {
                    p.max_slice_len = elements(max_len, request);
                    p.counters = PortCounters::Client {
                        requests_sent: sent,
                        requests_in_use: in_use,
                        pool_size: pool,
                    }
                }
                Ok(None) => {}
                Err(what) => p.corrupted = Some(what.to_owned()),
            }
        }
        for (j, s) in &mut subscribers {
            let (extra, off) = seg.extra(*j);
            // Relaxed: a counter for display.
            let received = extra.atomic(off).load(Ordering::Relaxed);
            match segment_counters(&dir, s.id) {
                Ok(Some((sent, in_use, pool, max_len))) => {
                    s.max_slice_len = elements(max_len, response);
                    s.counters = PortCounters::Server {
                        requests_received: received,
                        responses_sent: sent,
                        responses_in_use: in_use,
                        pool_size: pool,
                    }
                }
                Ok(None) => {}
                Err(what) => s.corrupted = Some(what.to_owned()),
            }
        }
    }
    let entries = match &desc.pattern {
        Pattern::Blackboard { qos, entries } => board_entries(&seg, qos, entries),
        _ => Vec::new(),
    };
    Ok(ServiceInfo {
        name: desc.name.clone(),
        dir: dir.path().to_path_buf(),
        description: desc,
        nodes,
        publishers: publishers.into_iter().map(|(_, p)| p).collect(),
        subscribers: subscribers.into_iter().map(|(_, p)| p).collect(),
        entries,
    })
}

/// A blackboard's entries with the versions their state words say.
fn board_entries(
    seg: &DynSegment,
    qos: &crate::blackboard::settings::BlackboardQos,
    entries: &[crate::blackboard::settings::EntryDescription],
) -> Vec<EntryInfo> {
    let settings = crate::blackboard::settings::BlackboardSettings {
        qos: qos.clone(),
        entries: entries.to_vec(),
    };
    let (map, off) = seg.shared();
    let (places, _) = settings.places();
    entries
        .iter()
        .zip(places)
        .map(|(e, place)| {
            // Relaxed: a snapshot for display.
            let word = map.atomic(off + place.state).load(Ordering::Relaxed);
            let buffer = word & (crate::core::board::MAX_BUFFERS - 1);
            EntryInfo {
                key: e.key.clone(),
                value: e.value.clone(),
                version: (buffer < place.count).then_some(word >> crate::core::board::BUFFER_BITS),
            }
        })
        .collect()
}

/// Messages sent, chunks in use, pool size and most elements per message
/// of the port `id`'s data segment in `dir`: `None` if it cannot be read
/// (gone, or not mapped), an error if it failed validation.
fn segment_counters(dir: &Dir, id: u64) -> Result<Option<(u64, u64, u64, u64)>, &'static str> {
    let Some(OpenSegment { fd, geo, header }) = open_segment_with(dir, id, false, None)? else {
        return Ok(None);
    };
    let Ok(map) = Mapping::new(&fd, 0, geo.pool_offset, false) else {
        return Ok(None);
    };
    let c = counters(&map);
    let pool = u64::from(header.chunk_count);
    // Relaxed (both): counters for display.
    let free = c.free_chunks.load(Ordering::Relaxed);
    Ok(Some((
        c.sent.load(Ordering::Relaxed),
        pool.saturating_sub(free),
        pool,
        header.params.max_len,
    )))
}

fn counters(map: &Mapping) -> &PubCounters {
    assert!(COUNTERS_OFFSET as usize + std::mem::size_of::<PubCounters>() <= map.len());
    // SAFETY: in range (checked; the segment header validated the geometry),
    // 8-aligned on a page-aligned mapping, made of atomics only, and it
    // lives as long as `map`.
    unsafe {
        &*map
            .ptr()
            .add(COUNTERS_OFFSET as usize)
            .cast::<PubCounters>()
    }
}
