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
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::{io_err, ServiceError};
use crate::core::layout::LAYOUT_VERSION;
use crate::os::shm;

pub(crate) const STATIC_FILE: &str = "static.toml";
pub(crate) const DYNAMIC_FILE: &str = "dynamic";

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

/// Reads and parses the static description of the service in `dir`
/// (called `name` in errors).
pub(crate) fn read_description(dir: &Path, name: &str) -> Result<RawDescription, ServiceError> {
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
    dir: &Path,
    desc: &Described<S>,
    access: shm::Access,
) -> Result<(), ServiceError> {
    let fin = dir.join(STATIC_FILE);
    let text = toml::to_string(desc).map_err(|e| ServiceError::Io {
        action: "serialise",
        path: fin.clone(),
        source: io::Error::other(e),
    })?;
    let tmp = dir.join("static.toml.tmp");
    write_private(&tmp, text.as_bytes(), access).map_err(io_err("write", &tmp))?;
    std::fs::rename(&tmp, &fin).map_err(io_err("publish", &fin))
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
