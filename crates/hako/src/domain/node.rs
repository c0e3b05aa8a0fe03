//! Nodes: the owners of ports.
//!
//! A node is a file `node_<id>` in the domain root on which its process holds
//! an exclusive `flock` for the node's lifetime (see `nodefile.rs`). Creating
//! one reclaims what dead nodes left behind; a node opens services.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::cleanup::reclaim_domain_locked;
use super::config::{Config, ConfigError};
use super::lockfile::NamedLock;
use super::name::{NameError, NodeName, ServiceName};
use super::nodefile::{new_id, node_file, NodeInner};
use super::service::builder::ServiceBuilder;
use crate::os::dir::{write_all, Dir, RootError, RootMode};
use crate::os::lock::{self, DomainLock};

/// Why a node could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeCreateError {
    /// The configuration from the environment is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The domain root could not be created or is not a directory.
    #[error("cannot use domain root {root}: {source}; check that its parent exists and is writable (set HAKO_ROOT to use another directory)")]
    Root {
        /// The root.
        root: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The domain root may be written by someone this user cannot trust
    /// (see the message).
    #[error("refusing domain root {root}: {why}")]
    UntrustedRoot {
        /// The root.
        root: PathBuf,
        /// What is wrong, and how to fix it.
        why: String,
    },
    /// The node file could not be created or locked.
    #[error("cannot create node file {path}: {source}")]
    NodeFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Why [`Node::wait`] returned early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeWaitError {
    /// SIGINT or SIGTERM arrived: the program should stop.
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
    /// The signal handlers could not be installed or polling failed.
    #[error("cannot wait: {0}")]
    Io(#[from] io::Error),
}

/// Builds a [`Node`].
///
/// ```
/// use hako::{Config, NodeBuilder};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let root = std::env::temp_dir().join(format!("hako-doc-{}-nodebuilder", std::process::id()));
/// // Without `.config(..)`, the node takes `Config::from_env()`.
/// let config = Config::default().with_root(&root);
/// let node = NodeBuilder::new().name("camera")?.config(&config).create()?;
/// assert_eq!(node.name().map(|n| n.as_str()), Some("camera"));
/// # drop(node);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct NodeBuilder {
    name: Option<NodeName>,
    config: Option<Config>,
    signals: bool,
}

impl Default for NodeBuilder {
    fn default() -> Self {
        Self {
            name: None,
            config: None,
            signals: true,
        }
    }
}

impl NodeBuilder {
    /// A builder with no name and the config from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the node (shown by inspection tools).
    ///
    /// ```
    /// // Node names are ASCII letters, digits, '_', '-' and '.'.
    /// if let Err(e) = hako::NodeBuilder::new().name("front camera") {
    ///     eprintln!("{e}"); // the name holds ' ' at byte 5; only ...
    /// }
    /// ```
    pub fn name(mut self, name: &str) -> Result<Self, NameError> {
        self.name = Some(NodeName::new(name)?);
        Ok(self)
    }

    /// Whether the blocking waits of this node's ports end on SIGINT or
    /// SIGTERM (true, the default): `blocking_receive`, `receive_timeout`
    /// and the listener's waits then return their error's
    /// `TerminationRequest` when Ctrl-C arrives while they wait (a busy or
    /// spinning wait looks at least every 100 ms, a sleeping one at once),
    /// and go on returning it at once while nothing is there, so a loop
    /// around them ends; a second Ctrl-C ends the process (exit status
    /// 130). The first wait that finds nothing installs hako's handlers for
    /// the whole process; until then the signals keep their default effect.
    /// A program that handles signals itself (or a language runtime that
    /// does, as Python's) turns this off: its waits and
    /// [`Node::wait`](crate::Node::wait) then never look, and hako installs
    /// nothing for them; its waitsets are made with
    /// [`WaitSet::without_signal_handling`](crate::WaitSet::without_signal_handling)
    /// (a [`WaitSet::new`](crate::WaitSet::new) installs the handlers).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let root = std::env::temp_dir().join(format!("hako-doc-{}-signals", std::process::id()));
    /// # let config = hako::Config::default().with_root(&root);
    /// // This program handles Ctrl-C itself: hako's waits leave it alone.
    /// let node = hako::NodeBuilder::new()
    ///     .signal_handling(false)
    ///     .config(&config)
    ///     .create()?;
    /// # drop(node);
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok(()) }
    /// ```
    pub fn signal_handling(mut self, on: bool) -> Self {
        self.signals = on;
        self
    }

    /// Uses `config` instead of [`Config::from_env`].
    pub fn config(mut self, config: &Config) -> Self {
        self.config = Some(config.clone());
        self
    }

    /// Creates the node: makes sure the domain root exists and takes the
    /// node's liveness lock.
    pub fn create(self) -> Result<Node, NodeCreateError> {
        // Before any send of this process: its senders may then publish
        // with the light barrier (core::sync::publish_barrier).
        crate::os::futex::register_light_publish();
        let config = match self.config {
            Some(c) => c,
            None => Config::from_env()?,
        };
        let root_path = config.root.clone();
        let access = config.access()?;
        let root = Dir::open_root(&root_path, access, RootMode::Create).map_err(|e| match e {
            RootError::Io(source) => NodeCreateError::Root {
                root: root_path.clone(),
                source,
            },
            RootError::Untrusted(why) => NodeCreateError::UntrustedRoot {
                root: root_path.clone(),
                why,
            },
        })?;
        let id = new_id();
        let name = node_file(id);
        // The file is made under a temporary name and appears under its real
        // name only once locked, so nobody ever finds it unlocked and takes
        // its owner for dead. The domain lock keeps a reclaimer from removing
        // the temporary file meanwhile.
        let domain = DomainLock::acquire(&root).map_err(|source| NodeCreateError::Root {
            root: root_path.clone(),
            source,
        })?;
        let tmp = format!("{name}.new");
        let fd = root
            .create_file(&tmp, 0, access)
            .map_err(|source| NodeCreateError::NodeFile {
                path: root.join(&tmp),
                source,
            })?;
        let info = format!(
            "pid = {}\nname = {:?}\n",
            std::process::id(),
            self.name.as_ref().map(NodeName::as_str).unwrap_or("")
        );
        let made = lock::try_lock(&fd)
            .and_then(|locked| {
                if locked {
                    Ok(())
                } else {
                    Err(io::Error::other("node file locked by someone else"))
                }
            })
            .and_then(|()| write_all(&fd, info.as_bytes()))
            .and_then(|()| root.rename(&tmp, &name));
        if let Err(source) = made {
            let _ = root.remove_file(&tmp);
            return Err(NodeCreateError::NodeFile {
                path: root.join(&name),
                source,
            });
        }
        // What dead nodes left behind goes now, while we hold the lock.
        let reclaimed = reclaim_domain_locked(&root, access, false, false);
        drop(domain);
        if !reclaimed.is_empty() {
            tracing::info!(
                dead_nodes = reclaimed.dead_nodes.len(),
                ports = reclaimed.ports,
                services = reclaimed.services.len(),
                "reclaimed what dead nodes left behind"
            );
        }
        Ok(Node {
            inner: Arc::new(NodeInner {
                id,
                name: self.name,
                config,
                access,
                root,
                _lock: fd,
                signals: self.signals,
            }),
        })
    }
}

/// A participant in a domain: owns the ports created through it.
///
/// A node is `Send` and `Sync`; clones share the same identity. Dropping the
/// last handle (and the last port created through it) removes its file.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let root = std::env::temp_dir().join(format!("hako-doc-{}-node", std::process::id()));
/// let config = hako::Config::default().with_root(&root);
/// let node = hako::NodeBuilder::new().config(&config).create()?;
/// let service = node
///     .service_builder(&"Doc/Node".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// println!("node {:016x} opened {}", node.id(), service.name().as_str());
/// # drop(service);
/// # drop(node);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Node {
    pub(crate) inner: Arc<NodeInner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &format_args!("{:016x}", self.inner.id))
            .field("name", &self.inner.name)
            .field("root", &self.inner.config.root)
            .finish()
    }
}

impl Node {
    /// The node's unique id.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The node's name, if it was given one.
    pub fn name(&self) -> Option<&NodeName> {
        self.inner.name.as_ref()
    }

    /// The config the node uses.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Sleeps for `cycle`; returns [`NodeWaitError::TerminationRequest`] as
    /// soon as SIGINT or SIGTERM arrives (at once if one already has), so
    /// that `while node.wait(CYCLE).is_ok() { ... }` ends cleanly on Ctrl-C.
    /// A node built with [`signal_handling(false)`](NodeBuilder::signal_handling)
    /// only sleeps: it installs no handler and reports no request.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-wait", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// for cycle in 0..3 {
    ///     node.wait(std::time::Duration::from_millis(10))?; // Err on Ctrl-C
    ///     println!("cycle {cycle}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait(&self, cycle: std::time::Duration) -> Result<(), NodeWaitError> {
        use rustix::event::{poll, PollFd, PollFlags};
        if !self.inner.signals {
            // A node that leaves signals alone sleeps its cycle, no more.
            std::thread::sleep(cycle);
            return Ok(());
        }
        let fd = crate::os::signal::fd()?;
        let end = std::time::Instant::now() + cycle;
        loop {
            if crate::os::signal::requested() {
                return Err(NodeWaitError::TerminationRequest);
            }
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let ts = rustix::time::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(NodeWaitError::Io(e.into())),
            }
        }
    }

    /// Takes the named lock `name` of the node's domain (a file
    /// `<name>.lock` in the root) unless another process holds it, in
    /// which case `Ok(None)`: for a program of which one instance at a
    /// time should serve a domain, as the bridge to other hosts does. The
    /// lock is released when the [`NamedLock`] drops or its process dies;
    /// `hako clean` removes the file of a lock nobody holds. `name`
    /// follows the rules of node names.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-named-lock", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let held = node.try_lock_named("recorder")?.expect("nobody else records");
    /// assert!(node.try_lock_named("recorder")?.is_none()); // taken
    /// drop(held);
    /// assert!(node.try_lock_named("recorder")?.is_some());
    /// # Ok(()) }
    /// ```
    pub fn try_lock_named(&self, name: &str) -> io::Result<Option<NamedLock>> {
        NamedLock::try_take(&self.inner.root, name, self.inner.access)
    }

    /// Starts building a service with the given name; its pattern is
    /// chosen next (see [`ServiceBuilder`]).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-service-builder", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let name: hako::ServiceName = "Robot/Arm/Position".try_into()?;
    /// let service = node.service_builder(&name).event().open_or_create()?;
    /// assert_eq!(service.name(), &name);
    /// # Ok(()) }
    /// ```
    pub fn service_builder(&self, name: &ServiceName) -> ServiceBuilder {
        ServiceBuilder::new(self.inner.clone(), name.clone())
    }
}
