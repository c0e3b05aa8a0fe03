//! Watching a domain: services created and removed, nodes and ports that
//! come, leave, die and are reclaimed, as it happens.
//!
//! A [`Watcher`] sleeps in the kernel until the domain changes, and never
//! polls the directory:
//!
//! * an inotify watch on the root sees services and nodes appear and go
//!   (their directories and files are created and removed there), and every
//!   end of a section under the domain lock, which is where ports are
//!   registered, removed and reclaimed (the lock is taken on a fresh open
//!   file description of the root, so its close is an event of the root
//!   itself);
//! * a pidfd per live node says when its process ends, so a death is seen
//!   at once, before anything reclaims the node.
//!
//! On any of these the watcher reads the domain again, as
//! [`inspect`](crate::inspect) does, and reports what differs from what it
//! saw before, as [`Change`]s. Its own reading opens no new description of
//! the root (it lists the root through one it keeps), so it does not wake
//! itself. Other readers of the domain (the `hako` tool) may wake it for
//! nothing: a reading that finds no difference reports nothing.
//!
//! The watcher is a file descriptor ([`AsFd`]), readable when there may
//! be changes: attach [`Watcher::ready_fd`] to a [`WaitSet`](crate::WaitSet)
//! with `attach_fd`, or await it under tokio (`aio::AsyncWatcher`, with the
//! `tokio` feature).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # struct Rm(std::path::PathBuf);
//! # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
//! # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-watch", std::process::id())));
//! # let config = hako::Config::default().with_root(&root.0);
//! let node = hako::NodeBuilder::new().config(&config).create()?;
//! let mut watcher = hako::Watcher::new(&config)?;
//! let service = node
//!     .service_builder(&"Doc/Watched".try_into()?)
//!     .publish_subscribe::<u64>()
//!     .create()?;
//! let publisher = service.publisher_builder().create()?;
//! let changes = watcher.wait(Some(std::time::Duration::from_secs(5)))?;
//! assert!(changes.iter().any(|c| matches!(c,
//!     hako::Change::ServiceCreated { service, .. } if service == "Doc/Watched")));
//! # drop(publisher);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::fs::inotify;

use crate::describe::Pattern;
use crate::domain::config::Config;
use crate::inspect::{DomainView, PortInfo, ServiceInfo};

/// What a port is to its service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A publish/subscribe publisher.
    Publisher,
    /// A publish/subscribe subscriber.
    Subscriber,
    /// An event notifier.
    Notifier,
    /// An event listener.
    Listener,
    /// A request/response client.
    Client,
    /// A request/response server.
    Server,
    /// A blackboard's writer.
    Writer,
    /// A blackboard's reader.
    Reader,
}

impl Role {
    /// Its name, as the JSON of a change and the tools write it
    /// (`publisher`, `subscriber`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Role::Publisher => "publisher",
            Role::Subscriber => "subscriber",
            Role::Notifier => "notifier",
            Role::Listener => "listener",
            Role::Client => "client",
            Role::Server => "server",
            Role::Writer => "writer",
            Role::Reader => "reader",
        }
    }
}

/// A change of the domain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// A service was created.
    ServiceCreated {
        /// Its name.
        service: String,
        /// Its pattern (`publish_subscribe`, `event`, `request_response`).
        pattern: &'static str,
    },
    /// A service was removed (its last port and node left).
    ServiceRemoved {
        /// Its name.
        service: String,
    },
    /// A node joined the domain.
    NodeJoined {
        /// Its id.
        #[serde(serialize_with = "hex")]
        node: u64,
        /// The process id it recorded.
        pid: Option<u32>,
        /// Its name.
        name: String,
    },
    /// A node left the domain (its process ended it).
    NodeLeft {
        /// Its id.
        #[serde(serialize_with = "hex")]
        node: u64,
    },
    /// A node's process died without ending it.
    NodeDied {
        /// Its id.
        #[serde(serialize_with = "hex")]
        node: u64,
    },
    /// What a dead node left was reclaimed.
    NodeReclaimed {
        /// Its id.
        #[serde(serialize_with = "hex")]
        node: u64,
    },
    /// A port was created.
    PortAdded(PortChange),
    /// A port was dropped by its process.
    PortRemoved(PortChange),
    /// A port's process died.
    PortDied(PortChange),
    /// A dead process's port was reclaimed.
    PortReclaimed(PortChange),
}

/// The port a [`Change`] is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortChange {
    /// Its service.
    pub service: String,
    /// What it is.
    pub role: Role,
    /// Its id.
    #[serde(serialize_with = "hex")]
    pub port: u64,
    /// Its node.
    #[serde(serialize_with = "hex")]
    pub node: u64,
}

fn hex<S: serde::Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{id:016x}"))
}

/// A node as last seen.
#[derive(Debug, Clone, PartialEq)]
struct NodeSeen {
    pid: Option<u32>,
    name: String,
    alive: bool,
}

/// A service as last seen: its pattern and its ports (role, node, alive).
/// A publisher that left with samples still queued (retired) is not among
/// them: it left, and what remains of it is the subscribers' to collect.
#[derive(Debug, Clone, PartialEq, Default)]
struct ServiceSeen {
    pattern: &'static str,
    ports: BTreeMap<u64, (Role, u64, bool)>,
}

/// What the watcher saw last.
#[derive(Debug, Clone, PartialEq, Default)]
struct Seen {
    nodes: BTreeMap<u64, NodeSeen>,
    services: BTreeMap<String, ServiceSeen>,
}

/// The epoll data of the inotify descriptor (pidfds carry their node's id,
/// which is never all ones).
const INOTIFY: u64 = u64::MAX;

/// Watches a domain for changes: see the [module](self) documentation.
#[derive(Debug)]
pub struct Watcher {
    view: DomainView,
    /// The root, listed again at each reading (one description, kept).
    listing: rustix::fs::Dir,
    inotify: OwnedFd,
    epoll: OwnedFd,
    /// A pidfd per live node, in `epoll`.
    pidfds: HashMap<u64, OwnedFd>,
    seen: Seen,
    pending: VecDeque<Change>,
}

fn roles(info: &ServiceInfo) -> (Role, Role) {
    match info.description.pattern {
        Pattern::PublishSubscribe { .. } => (Role::Publisher, Role::Subscriber),
        Pattern::RequestResponse { .. } => (Role::Client, Role::Server),
        Pattern::Blackboard { .. } => (Role::Writer, Role::Reader),
        _ => (Role::Notifier, Role::Listener),
    }
}

impl Watcher {
    /// Watches the domain of `config`, whose root must exist; the domain's
    /// state now is the base of the first changes reported.
    pub fn new(config: &Config) -> io::Result<Self> {
        let view = DomainView::open(config)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no hako domain at {}", config.root.display()),
            )
        })?;
        let ino = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
        // The watch names the root through this process's descriptor of
        // it, the one the view checked: never a path that could lead
        // elsewhere.
        let listed = view.reopen_root()?;
        let path = format!("/proc/self/fd/{}", listed.as_raw_fd());
        inotify::add_watch(
            &ino,
            path.as_str(),
            inotify::WatchFlags::CREATE
                | inotify::WatchFlags::DELETE
                | inotify::WatchFlags::MOVED_FROM
                | inotify::WatchFlags::MOVED_TO
                | inotify::WatchFlags::CLOSE_NOWRITE
                | inotify::WatchFlags::DELETE_SELF
                | inotify::WatchFlags::ONLYDIR,
        )?;
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            &ino,
            epoll::EventData::new_u64(INOTIFY),
            epoll::EventFlags::IN,
        )?;
        let mut w = Self {
            view,
            listing: rustix::fs::Dir::new(listed)?,
            inotify: ino,
            epoll,
            pidfds: HashMap::new(),
            seen: Seen::default(),
            pending: VecDeque::new(),
        };
        w.seen = w.read()?;
        w.follow_pids();
        // What reading the domain set off is not news.
        w.drain()?;
        Ok(w)
    }

    /// The domain as it is now.
    fn read(&mut self) -> io::Result<Seen> {
        self.listing.rewind();
        let mut names = Vec::new();
        for e in self.listing.by_ref() {
            if let Ok(name) = e?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        let mut seen = Seen::default();
        for name in &names {
            if let Some(n) = self.view.node_of(name) {
                // A node whose lock is free but whose file is gone left
                // while it was read: the next reading sees it gone. One
                // whose process still runs is ending itself, not dead.
                if !n.alive && !self.view.has_entry(name) {
                    continue;
                }
                let alive = n.alive || self.running(n.id, n.pid);
                seen.nodes.insert(
                    n.id,
                    NodeSeen {
                        pid: n.pid,
                        name: n.name,
                        alive,
                    },
                );
            } else if name.starts_with("svc_") {
                // One being made or removed is left for a later reading.
                let Ok(info) = self.view.service_of(name) else {
                    continue;
                };
                let (first, second) = roles(&info);
                let mut s = ServiceSeen {
                    pattern: info.description.pattern.name(),
                    ports: BTreeMap::new(),
                };
                let ports = |list: &[PortInfo], role| {
                    list.iter()
                        .filter(|p| !p.retired)
                        .map(move |p| (p.id, (role, p.node, p.node_alive)))
                        .collect::<Vec<_>>()
                };
                s.ports.extend(ports(&info.publishers, first));
                s.ports.extend(ports(&info.subscribers, second));
                seen.services.insert(info.name, s);
            }
        }
        Ok(seen)
    }

    /// Whether the process of node `id` still runs, as far as its pidfd
    /// (or, with none yet, a new one) tells; false when nothing tells.
    fn running(&self, id: u64, pid: Option<u32>) -> bool {
        let ready = |fd: BorrowedFd<'_>| {
            let mut p = [rustix::event::PollFd::from_borrowed_fd(
                fd,
                rustix::event::PollFlags::IN,
            )];
            let zero = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            rustix::event::poll(&mut p, Some(&zero)).map_or(true, |n| n > 0)
        };
        if let Some(fd) = self.pidfds.get(&id) {
            return !ready(fd.as_fd());
        }
        pid.and_then(|p| rustix::process::Pid::from_raw(p as i32))
            .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok())
            .is_some_and(|fd| !ready(fd.as_fd()))
    }

    /// A pidfd for every live node that has none, in the epoll set; the
    /// pidfds of nodes no longer alive leave it.
    fn follow_pids(&mut self) {
        let alive: Vec<(u64, Option<u32>)> = self
            .seen
            .nodes
            .iter()
            .filter(|(_, n)| n.alive)
            .map(|(&id, n)| (id, n.pid))
            .collect();
        self.pidfds
            .retain(|id, _| alive.iter().any(|(a, _)| a == id));
        for (id, pid) in alive {
            if self.pidfds.contains_key(&id) || id == INOTIFY {
                continue;
            }
            // A pid of another namespace, or one already gone, has no
            // pidfd: that node's death is seen at the next reading.
            let Some(fd) = pid
                .and_then(|p| rustix::process::Pid::from_raw(p as i32))
                .and_then(|p| {
                    rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
                })
            else {
                continue;
            };
            if epoll::add(
                &self.epoll,
                &fd,
                epoll::EventData::new_u64(id),
                epoll::EventFlags::IN,
            )
            .is_ok()
            {
                self.pidfds.insert(id, fd);
            }
        }
    }

    /// Reads and forgets the pending inotify events; whether any was news
    /// (anything but opening a child, which readers do).
    fn drain(&mut self) -> io::Result<bool> {
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&self.inotify, &mut buf);
        let mut news = false;
        loop {
            match reader.next() {
                Ok(_) => news = true,
                Err(rustix::io::Errno::AGAIN) => return Ok(news),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The changes since the last call, without waiting (empty when there
    /// are none).
    pub fn try_changes(&mut self) -> io::Result<Vec<Change>> {
        let mut events: Vec<epoll::Event> = Vec::with_capacity(16);
        let now = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&now),
            ) {
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let mut woken = false;
        for e in &events {
            let id = e.data.u64();
            if id == INOTIFY {
                woken |= self.drain()?;
            } else if let Some(fd) = self.pidfds.remove(&id) {
                // It ended: its pidfd stays readable, so it goes.
                let _ = epoll::delete(&self.epoll, &fd);
                woken = true;
            }
        }
        if woken {
            let now = self.read()?;
            let changes = diff(&self.seen, &now);
            self.seen = now;
            self.follow_pids();
            self.pending.extend(changes);
        }
        Ok(self.pending.drain(..).collect())
    }

    /// Waits for changes up to `timeout` (`None`: until there are some);
    /// empty if none came in time.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Change>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let changes = self.try_changes()?;
            if !changes.is_empty() {
                return Ok(changes);
            }
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(changes);
                    }
                    Some(rustix::time::Timespec {
                        tv_sec: left.as_secs() as i64,
                        tv_nsec: i64::from(left.subsec_nanos()),
                    })
                }
                None => None,
            };
            let mut events: Vec<epoll::Event> = Vec::with_capacity(1);
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                left.as_ref(),
            ) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Watcher {
    /// A descriptor of its own, readable when there may be changes: to
    /// attach to a [`WaitSet`](crate::WaitSet) (with `attach_fd`) while the
    /// watcher itself stays free to call [`try_changes`](Self::try_changes).
    pub fn ready_fd(&self) -> io::Result<OwnedFd> {
        Ok(rustix::io::fcntl_dupfd_cloexec(&self.epoll, 0)?)
    }
}

impl AsFd for Watcher {
    /// Readable when there may be changes ([`Watcher::try_changes`]).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

/// Changes, blocking until there are some; the iterator never ends on its
/// own.
impl Iterator for Watcher {
    type Item = io::Result<Change>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pending.is_empty() {
            match self.wait(None) {
                Ok(changes) => self.pending.extend(changes),
                Err(e) => return Some(Err(e)),
            }
        }
        self.pending.pop_front().map(Ok)
    }
}

/// What changed from `old` to `new`: services created first, then nodes,
/// then ports; removals of ports before those of their services.
fn diff(old: &Seen, new: &Seen) -> Vec<Change> {
    let mut out = Vec::new();
    for (name, s) in &new.services {
        if !old.services.contains_key(name) {
            out.push(Change::ServiceCreated {
                service: name.clone(),
                pattern: s.pattern,
            });
        }
    }
    for (&id, n) in &new.nodes {
        match old.nodes.get(&id) {
            None => {
                out.push(Change::NodeJoined {
                    node: id,
                    pid: n.pid,
                    name: n.name.clone(),
                });
                if !n.alive {
                    out.push(Change::NodeDied { node: id });
                }
            }
            Some(o) if o.alive && !n.alive => out.push(Change::NodeDied { node: id }),
            Some(_) => {}
        }
    }
    let empty = ServiceSeen::default();
    for (name, s) in &new.services {
        let before = old.services.get(name).unwrap_or(&empty);
        for (&port, &(role, node, alive)) in &s.ports {
            let change = PortChange {
                service: name.clone(),
                role,
                port,
                node,
            };
            match before.ports.get(&port) {
                None => {
                    out.push(Change::PortAdded(change.clone()));
                    if !alive {
                        out.push(Change::PortDied(change));
                    }
                }
                Some(&(_, _, was)) if was && !alive => out.push(Change::PortDied(change)),
                Some(_) => {}
            }
        }
    }
    for (name, s) in &old.services {
        let after = new.services.get(name).unwrap_or(&empty);
        for (&port, &(role, node, alive)) in &s.ports {
            if after.ports.contains_key(&port) {
                continue;
            }
            let change = PortChange {
                service: name.clone(),
                role,
                port,
                node,
            };
            // Gone with its node dead (as seen before, or now): reclaimed.
            let dead_node = |seen: &Seen| seen.nodes.get(&node).is_some_and(|n| !n.alive);
            out.push(if !alive || dead_node(old) || dead_node(new) {
                Change::PortReclaimed(change)
            } else {
                Change::PortRemoved(change)
            });
        }
        if !new.services.contains_key(name) {
            out.push(Change::ServiceRemoved {
                service: name.clone(),
            });
        }
    }
    for (&id, n) in &old.nodes {
        if !new.nodes.contains_key(&id) {
            out.push(if n.alive {
                Change::NodeLeft { node: id }
            } else {
                Change::NodeReclaimed { node: id }
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(alive: bool) -> NodeSeen {
        NodeSeen {
            pid: Some(1),
            name: "n".into(),
            alive,
        }
    }

    fn service(ports: &[(u64, Role, u64, bool)]) -> ServiceSeen {
        ServiceSeen {
            pattern: "publish_subscribe",
            ports: ports.iter().map(|&(p, r, n, a)| (p, (r, n, a))).collect(),
        }
    }

    #[test]
    fn differences_are_changes() {
        let mut a = Seen::default();
        a.nodes.insert(1, node(true));
        a.nodes.insert(2, node(true));
        a.services.insert(
            "s".into(),
            service(&[(10, Role::Publisher, 1, true), (11, Role::Subscriber, 2, true)]),
        );
        assert!(diff(&a, &a).is_empty());
        // Node 2 dies: its node and port die.
        let mut b = a.clone();
        b.nodes.get_mut(&2).unwrap().alive = false;
        b.services.get_mut("s").unwrap().ports.get_mut(&11).unwrap().2 = false;
        let pc = |port, role, node| PortChange {
            service: "s".into(),
            role,
            port,
            node,
        };
        assert_eq!(
            diff(&a, &b),
            [
                Change::NodeDied { node: 2 },
                Change::PortDied(pc(11, Role::Subscriber, 2))
            ]
        );
        // ... and is reclaimed; node 1's publisher leaves; a node joins.
        let mut c = b.clone();
        c.nodes.remove(&2);
        c.nodes.insert(3, node(true));
        c.services.get_mut("s").unwrap().ports.clear();
        assert_eq!(
            diff(&b, &c),
            [
                Change::NodeJoined {
                    node: 3,
                    pid: Some(1),
                    name: "n".into()
                },
                Change::PortRemoved(pc(10, Role::Publisher, 1)),
                Change::PortReclaimed(pc(11, Role::Subscriber, 2)),
                Change::NodeReclaimed { node: 2 },
            ]
        );
        // The service goes, node 1 leaves.
        let mut d = c.clone();
        d.services.clear();
        d.nodes.remove(&1);
        assert_eq!(
            diff(&c, &d),
            [
                Change::ServiceRemoved { service: "s".into() },
                Change::NodeLeft { node: 1 }
            ]
        );
    }
}
