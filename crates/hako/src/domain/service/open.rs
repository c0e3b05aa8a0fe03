//! Creating and opening services: what every pattern does the same way
//! under the domain lock, with the pattern's part asked of its
//! [`PatternRequest`].

use std::io;
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
use crate::domain::nodefile::{Liveness, NodeInner};
use crate::os::dir::{refusal, Dir};
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
    /// Fills a new service's dynamic segment (the domain lock held, before
    /// its description is published, so no other process sees it yet).
    /// Default: nothing to fill (the segment is zeros).
    fn init(&self, settings: &Self::Settings, seg: &DynSegment) -> Result<(), ServiceError> {
        let _ = (settings, seg);
        Ok(())
    }
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
    let root = &node.root;
    let key = format!("svc_{}", name.file_key());
    let _lock = DomainLock::acquire(root).map_err(io_err("lock", root.path()))?;
    let untrusted = |path: PathBuf, reason: String| ServiceError::Untrusted {
        service: name.to_string(),
        path,
        reason,
    };
    // The service's directory, held open from here on: never a link, and
    // made by someone the domain trusts before anything in it is read,
    // written or removed (so nobody else can swap its files afterwards).
    let dir = match root.subdir(&key) {
        Ok(dir) => {
            dir.trust(node.access)
                .map_err(|why| untrusted(dir.path().to_owned(), why))?;
            Some(dir)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(match refusal(&e) {
                Some(why) => untrusted(root.join(&key), why.to_owned()),
                None => io_err("open", &root.join(&key))(e),
            })
        }
    };
    let exists = dir.as_ref().is_some_and(|d| d.has(STATIC_FILE));
    match (mode, dir) {
        (Mode::Create, Some(_)) if exists => Err(ServiceError::AlreadyExists(name.to_string())),
        (Mode::Open, None) => Err(ServiceError::DoesNotExist(name.to_string())),
        (Mode::Open, Some(dir)) => open_locked(node, name, req, dir),
        (Mode::OpenOrCreate, Some(dir)) if exists => open_locked(node, name, req, dir),
        (_, debris) => create_locked(node, name, req, &key, debris),
    }
}

fn create_locked<R: PatternRequest>(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &R,
    key: &str,
    debris: Option<Dir>,
) -> Result<(ServiceInner, R::Settings), ServiceError> {
    // Settings first: a request that cannot be met leaves nothing behind.
    let settings = req.for_create(&node.config.defaults)?;
    let root = &node.root;
    // Debris of a creator that died before publishing static.toml.
    if let Some(dir) = debris {
        tracing::warn!(dir = %dir.path().display(), "removing a half-created service");
        remove_service_files(root, key, &dir);
    }
    let dir = root
        .make_subdir(key, node.access)
        .map_err(io_err("create directory", &root.join(key)))?;
    let made = DynSegment::create(&dir, settings.tables(), node.access).and_then(|seg| {
        req.init(&settings, &seg)?;
        let desc = Described {
            version: LAYOUT_VERSION,
            name: name.to_string(),
            pattern: R::Settings::NAME.to_owned(),
            settings,
        };
        publish_description(&dir, &desc, node.access)?;
        Ok((seg, desc))
    });
    let (seg, desc) = match made {
        Ok(m) => m,
        Err(e) => {
            remove_service_files(root, key, &dir);
            return Err(e);
        }
    };
    let inner = ServiceInner::attach(node.clone(), name.clone(), dir, seg)?;
    Ok((inner, desc.settings))
}

fn open_locked<R: PatternRequest>(
    node: &Arc<NodeInner>,
    name: &ServiceName,
    req: &R,
    dir: Dir,
) -> Result<(ServiceInner, R::Settings), ServiceError> {
    let svc = name.to_string();
    let corrupted = |reason: String| ServiceError::Corrupted {
        service: svc.clone(),
        reason,
        path: dir.path().to_owned(),
    };
    // The directory is trusted (acquire checked it), so what is in it was
    // made by a trusted user; its files must be trusted too before they
    // are read.
    for file in [STATIC_FILE, DYNAMIC_FILE] {
        dir.trust_entry(file, node.access)
            .map_err(|reason| ServiceError::Untrusted {
                service: svc.clone(),
                path: dir.join(file),
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
    let mut live = Liveness::new(&node.root);
    let mut reclaimed = Reclaimed::default();
    reclaim_service_locked(&dir, &seg, &mut live, false, &mut reclaimed);
    if reclaimed.ports > 0 {
        tracing::info!(service = %svc, ports = reclaimed.ports, "reclaimed the ports of dead nodes");
    }
    let inner = ServiceInner::attach(node.clone(), name.clone(), dir, seg)?;
    Ok((inner, settings))
}
