//! Creating and opening services: what every pattern does the same way
//! under the domain lock, with the pattern's part asked of its
//! [`PatternRequest`].

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{io_err, ServiceError};
use super::files::{
    publish_description, read_description, remove_service_files, Described, DYNAMIC_FILE,
    STATIC_FILE,
};
use super::inner::ServiceInner;
use super::reclaim::{reclaim_service_locked, Reclaimed};
use super::tables::{DynSegment, Tables};
use crate::core::layout::LAYOUT_VERSION;
use crate::domain::config::Defaults;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::{ensure_dir, trust_entry, Liveness, NodeInner};
use crate::os::lock::DomainLock;

/// A pattern's settings as they stand in `static.toml`, after the fields
/// every description has.
pub(crate) trait PatternSettings: Serialize + DeserializeOwned + Clone {
    /// The pattern's name, as in `static.toml` ("publish_subscribe").
    const NAME: &'static str;
    /// Checks every setting's range (a description read from a file may
    /// hold anything).
    fn validate(&self) -> Result<(), ServiceError>;
    /// The sizes of the service's tables.
    fn tables(&self) -> Tables;
}

/// What a messaging pattern's builder contributes to create and open.
pub(crate) trait PatternRequest {
    /// The pattern's settings.
    type Settings: PatternSettings;
    /// The settings of a new service (unset ones from `defaults`).
    fn for_create(&self, defaults: &Defaults) -> Result<Self::Settings, ServiceError>;
    /// Checks an existing service's settings against what was requested.
    fn check(&self, service: &str, existing: &Self::Settings) -> Result<(), ServiceError>;
}

/// How to get at a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Create,
    Open,
    OpenOrCreate,
}

/// Creates and/or opens the service `name` for `node`; returns it with its
/// pattern's settings.
pub(crate) fn acquire<R: PatternRequest>(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &R,
    mode: Mode,
) -> Result<(ServiceInner, R::Settings), ServiceError> {
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

fn create_locked<R: PatternRequest>(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &R,
    dir: PathBuf,
) -> Result<(ServiceInner, R::Settings), ServiceError> {
    let settings = req.for_create(&node.config.defaults)?;
    // Debris of a creator that died before publishing static.toml.
    if dir.exists() {
        tracing::warn!(dir = %dir.display(), "removing a half-created service");
        remove_service_files(&dir);
    }
    ensure_dir(&dir, node.access).map_err(io_err("create directory", &dir))?;
    let seg = DynSegment::create(&dir, settings.tables(), node.access)?;
    let desc = Described {
        version: LAYOUT_VERSION,
        name: name.to_string(),
        pattern: R::Settings::NAME.to_owned(),
        settings,
    };
    publish_description(&dir, &desc, node.access)?;
    let inner = ServiceInner::attach(node.clone(), name.clone(), dir, seg)?;
    Ok((inner, desc.settings))
}

fn open_locked<R: PatternRequest>(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &R,
    dir: PathBuf,
) -> Result<(ServiceInner, R::Settings), ServiceError> {
    let svc = name.to_string();
    let corrupted = |reason: String| ServiceError::Corrupted {
        service: svc.clone(),
        reason,
        path: dir.clone(),
    };
    // The root is trusted (NodeBuilder::create checked it), so what is in
    // it was made by a trusted user; what those made must be trusted too
    // before it is read (the directory, then its files: once the directory
    // is trusted, nobody else can swap them after the check).
    for path in [dir.clone(), dir.join(STATIC_FILE), dir.join(DYNAMIC_FILE)] {
        trust_entry(&path, node.access).map_err(|reason| ServiceError::Untrusted {
            service: svc.clone(),
            path,
            reason,
        })?;
    }
    let desc = read_description(&dir, &svc)?;
    if desc.name != svc {
        return Err(corrupted(format!(
            "its directory belongs to service {:?} (name hash collision)",
            desc.name
        )));
    }
    if desc.pattern != R::Settings::NAME {
        return Err(ServiceError::IncompatiblePattern {
            service: svc,
            requested: R::Settings::NAME.into(),
            actual: desc.pattern,
        });
    }
    let settings: R::Settings = desc
        .settings_as()
        .map_err(|m| corrupted(format!("static.toml does not parse: {m}")))?;
    req.check(&svc, &settings)?;
    settings
        .validate()
        .map_err(|e| corrupted(format!("static.toml: {e}")))?;
    let seg = DynSegment::open(&dir, &svc, settings.tables())?;
    // Ports and node entries of dead processes go before we take an entry.
    let mut live = Liveness::new(&node.config.root);
    let mut reclaimed = Reclaimed::default();
    reclaim_service_locked(&dir, &seg, &mut live, false, &mut reclaimed);
    if reclaimed.ports > 0 {
        tracing::info!(service = %svc, ports = reclaimed.ports, "reclaimed the ports of dead nodes");
    }
    let inner = ServiceInner::attach(node.clone(), name.clone(), dir, seg)?;
    Ok((inner, settings))
}
