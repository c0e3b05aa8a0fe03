//! What can go wrong creating or opening a service, and the checks of
//! settings that every pattern's builder makes.

use std::io;
use std::path::{Path, PathBuf};

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
    #[error("service {service:?} has an incompatible payload: {field} is {actual} there, {requested} here; {}", type_advice(field))]
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
    #[error("service {service:?} has incompatible quality of service: {field} is {actual} there, {requested} requested; the program that created the service chose its settings: define the service once (one function in a library every program uses) so that all ask for the same, or ask for no more than it has")]
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
    /// A directory or file of the service is not to be trusted: another
    /// user could have put it there or could swap it (see the README's
    /// "Permissions").
    #[error("refusing service {service:?}: {path}: {reason}")]
    Untrusted {
        /// The service.
        service: String,
        /// The directory or file.
        path: PathBuf,
        /// What is wrong with it, and how to fix it.
        reason: String,
    },
    /// A history longer than a subscriber's queue: a late subscriber could
    /// not be given all of it.
    #[error("history_size {history} is more than subscriber_max_buffer_size {buffer}: a late subscriber's queue must hold the whole history; raise subscriber_max_buffer_size to at least {history}")]
    HistoryExceedsBuffer {
        /// The history asked for.
        history: u32,
        /// The queue of each subscriber.
        buffer: u32,
    },
    /// A blackboard entry's key or value is not allowed.
    #[error("invalid blackboard entry {key:?}: {rule}")]
    InvalidEntry {
        /// The entry's key.
        key: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A blackboard has no entry of that key.
    #[error("blackboard {service:?} has no entry {key:?}; its entries are fixed when it is created (hako inspect lists them)")]
    NoSuchEntry {
        /// The service.
        service: String,
        /// The key asked for.
        key: String,
    },
    /// Every node slot of the service is taken.
    #[error("service {service:?} is open in as many nodes as it admits (max_nodes = {max}); raise max_nodes when creating it")]
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

/// What to do about a payload that differs from the service's.
fn type_advice(field: &str) -> &'static str {
    if field == "type_name" {
        "a type is known by its full path (crate::module::Type), so a struct copied into a second \
         program is another type: define it once in a library both programs use, or give each \
         copy the same name with #[hako(type_name = \"...\")]"
    } else {
        "use the same payload type in every process"
    }
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
