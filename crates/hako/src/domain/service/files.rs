//! A service's files in its directory, as far as the domain knows them:
//! the static description, written once and published by a rename, and
//! the removal of the whole directory.
//!
//! The domain reads a static description without knowing its pattern: it
//! checks the layout version, the name and the pattern's name, and keeps
//! the pattern's own settings as a TOML table for the pattern to parse
//! ([`Described::settings_as`]). So `static.toml` reads:
//!
//! ```toml
//! version = 5
//! name = "My/Funk/ServiceName"
//! pattern = "publish_subscribe"
//!
//! [payload]     # the pattern's settings from here on
//! type_name = "Frame"
//! # ...
//! ```

use std::io;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::{io_err, ServiceError};
use crate::core::layout::LAYOUT_VERSION;
use crate::os::dir::{refusal, Dir};
use crate::os::shm;

pub(crate) const STATIC_FILE: &str = "static.toml";
pub(crate) const DYNAMIC_FILE: &str = "dynamic";

/// The name of a publisher's data segment in its service's directory.
pub(crate) fn publisher_file(port_id: u64) -> String {
    format!("pub_{port_id:016x}")
}

/// The name of a port's wake-up FIFO in its service's directory.
pub(crate) fn fifo_file(port_id: u64) -> String {
    format!("wake_{port_id:016x}")
}

/// A static description: the fields every pattern has, then the pattern's
/// settings `S`, flattened into the same table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Described<S> {
    /// Layout version of the service's segments.
    pub version: u32,
    /// The service name.
    pub name: String,
    /// The pattern's name ("publish_subscribe", "event").
    pub pattern: String,
    /// The pattern's settings.
    #[serde(flatten)]
    pub settings: S,
}

/// A description as read, its settings not yet parsed by their pattern.
pub(crate) type RawDescription = Described<toml::Table>;

impl RawDescription {
    /// Parses the settings as the pattern's type; the error says why not.
    pub(crate) fn settings_as<S: DeserializeOwned>(&self) -> Result<S, String> {
        toml::Value::Table(self.settings.clone())
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_owned())
    }

    /// Parses the text of a `static.toml`: the layout version first (so a
    /// description of another version says so rather than failing to
    /// parse), then the TOML.
    pub(crate) fn parse(text: &str) -> Result<Self, DescriptionError> {
        #[derive(Deserialize)]
        struct VersionOnly {
            version: u32,
        }
        if let Ok(v) = toml::from_str::<VersionOnly>(text) {
            if v.version != LAYOUT_VERSION {
                return Err(DescriptionError::Version(v.version));
            }
        }
        toml::from_str(text).map_err(|e| DescriptionError::Parse(e.message().to_owned()))
    }
}

/// Why a static description could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DescriptionError {
    /// Another layout version.
    Version(u32),
    /// Not TOML of the right shape; the parser's message.
    Parse(String),
}

/// The largest `static.toml` read: a description is a few hundred bytes;
/// a file larger than this was not written by hako.
const STATIC_LIMIT: usize = 64 * 1024;

/// Reads and parses the static description of the service in `dir`
/// (called `name` in errors).
pub(crate) fn read_description(dir: &Dir, name: &str) -> Result<RawDescription, ServiceError> {
    let corrupted = |reason: String| ServiceError::Corrupted {
        service: name.to_owned(),
        reason,
        path: dir.path().to_owned(),
    };
    let text = match dir.read_text(STATIC_FILE, STATIC_LIMIT) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ServiceError::DoesNotExist(name.to_owned()));
        }
        Err(e) if refusal(&e).is_some() => {
            return Err(ServiceError::Untrusted {
                service: name.to_owned(),
                path: dir.join(STATIC_FILE),
                reason: refusal(&e).unwrap_or_default().to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return Err(corrupted(e.to_string()));
        }
        Err(e) => return Err(io_err("read", &dir.join(STATIC_FILE))(e)),
    };
    RawDescription::parse(&text).map_err(|e| match e {
        DescriptionError::Version(found) => ServiceError::VersionMismatch {
            service: name.to_owned(),
            found,
            expected: LAYOUT_VERSION,
        },
        DescriptionError::Parse(m) => corrupted(format!("static.toml does not parse: {m}")),
    })
}

/// Writes the static description of a new service into `dir` under a
/// temporary name and renames it into place, so that it is either absent
/// or whole.
pub(crate) fn publish_description<S: Serialize>(
    dir: &Dir,
    desc: &Described<S>,
    access: shm::Access,
) -> Result<(), ServiceError> {
    let fin = dir.join(STATIC_FILE);
    let text = toml::to_string(desc).map_err(|e| ServiceError::Io {
        action: "serialise",
        path: fin.clone(),
        source: io::Error::other(e),
    })?;
    const TMP: &str = "static.toml.tmp";
    dir.write_file(TMP, text.as_bytes(), access)
        .map_err(io_err("write", &dir.join(TMP)))?;
    dir.rename(TMP, STATIC_FILE)
        .map_err(io_err("publish", &fin))
}

/// Removes every file of the service directory `dir`, then the directory
/// (the entry `key` of `root`, if it is still that directory).
pub(crate) fn remove_service_files(root: &Dir, key: &str, dir: &Dir) {
    // static.toml first, so the service stops existing before its parts go.
    let _ = dir.remove_file(STATIC_FILE);
    if let Ok(entries) = dir.entries() {
        for e in entries {
            // Through the directory's own descriptor: a file of it, never
            // of wherever a link or a renamed directory may lead.
            let _ = dir.remove_file(&e.name);
        }
    }
    if let Ok(Some(st)) = root.stat_entry(key) {
        if dir.same_as(&st) {
            let _ = root.remove_dir(key);
        }
    }
}
