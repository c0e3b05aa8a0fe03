//! Configuration: where a domain lives and the defaults of new services.
//!
//! ```toml
//! # hako.toml
//! root = "/dev/shm/hako-robot"
//!
//! [defaults]
//! max_publishers = 2
//! max_subscribers = 8
//! subscriber_max_buffer_size = 2
//! history_size = 0
//! ```
//! [`Config::from_env`] (what [`NodeBuilder`](crate::NodeBuilder) uses unless
//! given a config) reads the file named by `HAKO_CONFIG`, if set, and then lets
//! `HAKO_ROOT` override the root.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::os::shm::Access;

/// Where default domain roots live: `<prefix>-<uid>` (see
/// [`default_root`]).
pub const DEFAULT_ROOT_PREFIX: &str = "/dev/shm/hako";

/// The default domain root, one per user: `/dev/shm/hako-<uid>` (the
/// effective uid). A domain that users share is configured (the config's
/// `root` and `group`, or `HAKO_ROOT`): by default no process joins a
/// domain that another user made.
pub fn default_root() -> PathBuf {
    PathBuf::from(format!(
        "{DEFAULT_ROOT_PREFIX}-{}",
        rustix::process::geteuid().as_raw()
    ))
}
/// Environment variable that overrides the domain root.
pub const ROOT_ENV: &str = "HAKO_ROOT";
/// Environment variable naming a config file.
pub const CONFIG_ENV: &str = "HAKO_CONFIG";

/// What a sending port does when a receiver's queue is full.
///
/// Defined here, with the config, because the config's defaults name it;
/// every pattern that queues messages (publish/subscribe, and
/// request/response to come) takes it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverflowPolicy {
    /// The publisher takes the oldest queued sample back; the subscriber
    /// always sees the newest data.
    DropOldest,
    /// Nothing queued is ever dropped; the publisher waits, retries or
    /// discards the new sample as its
    /// [`BackpressureStrategy`](crate::BackpressureStrategy) says.
    Backpressure,
}

/// Defaults for the quality of service of new services and ports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Defaults {
    /// Publishers a service admits.
    pub max_publishers: u32,
    /// Subscribers a service admits.
    pub max_subscribers: u32,
    /// Nodes that may hold a service open at once.
    pub max_nodes: u32,
    /// Samples a subscriber's queue holds per publisher.
    pub subscriber_max_buffer_size: u32,
    /// Samples a subscriber may hold (borrow) at once.
    pub subscriber_max_borrowed_samples: u32,
    /// Samples delivered to a late-joining subscriber.
    pub history_size: u32,
    /// Samples a publisher may have loaned at once.
    pub publisher_max_loaned_samples: u32,
    /// What a publisher does when a subscriber's queue is full.
    pub overflow: OverflowPolicy,
    /// Notifiers an event service admits.
    pub max_notifiers: u32,
    /// Listeners an event service admits.
    pub max_listeners: u32,
    /// Largest event id of an event service.
    pub event_id_max: u64,
    /// Clients a request/response service admits.
    pub max_clients: u32,
    /// Servers a request/response service admits.
    pub max_servers: u32,
    /// Requests a client may have in flight at once.
    pub max_requests_in_flight: u32,
    /// Responses a client may hold or have queued per request in flight.
    pub max_response_buffer: u32,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            max_publishers: 2,
            max_subscribers: 8,
            max_nodes: 32,
            subscriber_max_buffer_size: 2,
            subscriber_max_borrowed_samples: 2,
            history_size: 0,
            publisher_max_loaned_samples: 2,
            overflow: OverflowPolicy::DropOldest,
            max_notifiers: 16,
            max_listeners: 16,
            event_id_max: 255,
            max_clients: 8,
            max_servers: 2,
            max_requests_in_flight: 4,
            max_response_buffer: 4,
        }
    }
}

/// hako's configuration.
///
/// A program usually takes the config of its environment
/// ([`from_env`](Self::from_env), what [`NodeBuilder`](crate::NodeBuilder)
/// uses unless given one); tests and tools give their nodes a private
/// domain root instead:
///
/// ```
/// use hako::{Config, NodeBuilder};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = std::env::temp_dir().join(format!("hako-doc-{}-config", std::process::id()));
/// let mut config = Config::default().with_root(&root);
/// config.defaults.history_size = 1; // new services keep a sample for late joiners
/// let node = NodeBuilder::new().config(&config).create()?;
/// assert_eq!(node.config().root, root);
/// drop(node);
/// std::fs::remove_dir_all(&root)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Directory (on a tmpfs) that holds every file of the domain.
    pub root: PathBuf,
    /// Defaults of new services and ports.
    pub defaults: Defaults,
    /// A group whose members may use the domain too (cooperating users,
    /// containers), by name (looked up in the system's group database) or number. Unset, the
    /// default, every file and directory is for its owner alone (`0600`,
    /// `0700`); set, for the group as well (`0660`, and `2770` so that new
    /// files inherit the group). Only files created under this setting get
    /// it: give the domain root the group first if it exists already.
    pub group: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            root: default_root(),
            defaults: Defaults::default(),
            group: None,
        }
    }
}

/// A config file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The `group` setting names no group.
    #[error("config: unknown group {0:?} (the system has no group of that name; give its number instead)")]
    UnknownGroup(String),
    /// The file is not valid TOML for a hako config.
    #[error("invalid config{}: {message}", path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default())]
    Parse {
        /// The file, if any.
        path: Option<PathBuf>,
        /// The parser's message (names the line and field).
        message: String,
    },
}

impl Config {
    /// Parses a config from TOML text. Missing fields take their defaults;
    /// unknown fields are errors.
    ///
    /// ```
    /// let config = hako::Config::from_toml_str("[defaults]\nhistory_size = 4\n")?;
    /// assert_eq!(config.defaults.history_size, 4);
    /// assert_eq!(config.defaults.max_subscribers, 8); // a default
    /// // The message of an error names the line and the field.
    /// if let Err(e) = hako::Config::from_toml_str("histroy_size = 4") {
    ///     eprintln!("{e}");
    /// }
    /// # Ok::<(), hako::ConfigError>(())
    /// ```
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: None,
            message: where_and_why(text, &e),
        })
    }

    /// Reads a config file.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let path = std::env::temp_dir().join(format!("hako-doc-{}.toml", std::process::id()));
    /// std::fs::write(&path, "[defaults]\nmax_subscribers = 16\n")?;
    /// let config = hako::Config::from_file(&path);
    /// std::fs::remove_file(&path)?;
    /// assert_eq!(config?.defaults.max_subscribers, 16);
    /// # Ok(()) }
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: Some(path.to_owned()),
            message: where_and_why(&text, &e),
        })
    }

    /// The config of this process: the file named by `HAKO_CONFIG` (or the
    /// defaults), with the root overridden by `HAKO_ROOT` when set.
    ///
    /// ```
    /// match hako::Config::from_env() {
    ///     Ok(config) => println!("domain root: {}", config.root.display()),
    ///     Err(e) => eprintln!("invalid configuration: {e}"),
    /// }
    /// ```
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut cfg = match std::env::var_os(CONFIG_ENV) {
            Some(p) if !p.is_empty() => Self::from_file(PathBuf::from(p))?,
            _ => Self::default(),
        };
        if let Some(root) = std::env::var_os(ROOT_ENV) {
            if !root.is_empty() {
                cfg.root = PathBuf::from(root);
            }
        }
        Ok(cfg)
    }

    /// Who may use the domain's files, with `group` resolved to its id.
    pub(crate) fn access(&self) -> Result<Access, ConfigError> {
        let Some(g) = &self.group else {
            return Ok(Access::default());
        };
        let gid = match g.parse::<u32>() {
            Ok(n) if n != u32::MAX => Some(n),
            Ok(_) => None,
            // Through the system's group database (NSS: /etc/group, LDAP,
            // ...), as `ls` and `chgrp` look groups up.
            Err(_) => uzers::get_group_by_name(g.as_str()).map(|gr| gr.gid()),
        };
        gid.map(|gid| Access { group: Some(gid) })
            .ok_or_else(|| ConfigError::UnknownGroup(g.clone()))
    }

    /// The same config with another root.
    ///
    /// ```
    /// let config = hako::Config::default().with_root("/dev/shm/hako-robot");
    /// assert_eq!(config.root, std::path::Path::new("/dev/shm/hako-robot"));
    /// ```
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = root.into();
        self
    }
}

/// A parse error as "line L, column C: what": where the parser stopped
/// and why, never the text there (a file named by mistake, such as
/// /etc/shadow, must not be shown in an error).
fn where_and_why(text: &str, e: &toml::de::Error) -> String {
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return e.message().to_owned();
    };
    let before = text.as_bytes().get(..at).unwrap_or_default();
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at - before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    format!("line {line}, column {column}: {}", e.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_is_the_users_own() {
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(
            Config::default().root,
            PathBuf::from(format!("/dev/shm/hako-{uid}"))
        );
        // A file that names no root keeps the user's own.
        let c = Config::from_toml_str("[defaults]\nhistory_size = 1\n").unwrap();
        assert_eq!(c.root, default_root());
    }

    #[test]
    fn parses_partial_files() {
        let c = Config::from_toml_str("root = \"/tmp/x\"\n[defaults]\nhistory_size = 3\n").unwrap();
        assert_eq!(c.root, PathBuf::from("/tmp/x"));
        assert_eq!(c.defaults.history_size, 3);
        assert_eq!(c.defaults.max_subscribers, 8);
        let c = Config::from_toml_str("[defaults]\noverflow = \"backpressure\"\n").unwrap();
        assert_eq!(c.defaults.overflow, OverflowPolicy::Backpressure);
    }

    #[test]
    fn groups_by_name_or_number() {
        let c = Config::from_toml_str("group = \"root\"").unwrap();
        assert_eq!(c.access().unwrap().group, Some(0));
        let c = Config::from_toml_str("group = \"65534\"").unwrap();
        assert_eq!(c.access().unwrap().group, Some(65534));
        let c = Config::from_toml_str("group = \"no-such-group-here\"").unwrap();
        assert!(matches!(c.access(), Err(ConfigError::UnknownGroup(_))));
        assert_eq!(Config::default().access().unwrap().group, None);
    }

    #[test]
    fn parse_errors_say_where_but_never_show_the_text() {
        let secret = "root:$6$c2VjcmV0$hash:19000:0:99999:7:::\n";
        let e = Config::from_toml_str(secret).unwrap_err().to_string();
        assert!(e.contains("line 1, column"), "{e}");
        assert!(!e.contains("c2VjcmV0") && !e.contains("root:"), "{e}");
        let e = Config::from_toml_str("[defaults]\nhistory_size = \"many\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let path = std::env::temp_dir().join(format!("hako-secret-{}.toml", std::process::id()));
        std::fs::write(&path, secret).unwrap();
        let e = Config::from_file(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(!e.contains("c2VjcmV0") && e.contains(&path.display().to_string()), "{e}");
    }

    #[test]
    fn rejects_unknown_fields() {
        let e = Config::from_toml_str("rot = 1").unwrap_err().to_string();
        assert!(e.contains("rot"), "{e}");
    }
}
