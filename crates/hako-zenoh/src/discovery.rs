//! Who has which service: this domain's services, announced with a Zenoh
//! liveliness token each and described by a queryable; other domains'
//! services, followed through their tokens and asked for their
//! descriptions.
//!
//! A domain announces a service only while ports other than the bridge's
//! own use it, so a service the bridge made for a remote one is not
//! announced back (a bridge never mistakes its own copy for the original).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hako::{Config, ServiceName, StaticDescription};
use zenoh::key_expr::KeyExpr;
use zenoh::sample::SampleKind;
use zenoh::Wait;

use crate::keys::{DomainId, Keys, Roles};

/// Which services the bridge carries: key expressions over their names.
#[derive(Debug, Clone)]
pub(crate) struct Selection(Vec<KeyExpr<'static>>);

impl Selection {
    /// From key expressions; none selects every service.
    pub(crate) fn new(patterns: &[String]) -> Result<Self, String> {
        let all = ["**".to_owned()];
        let patterns = if patterns.is_empty() {
            &all[..]
        } else {
            patterns
        };
        patterns
            .iter()
            .map(|p| {
                KeyExpr::try_from(p.clone()).map_err(|e| format!("bad service pattern {p:?}: {e}"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether service `name` is selected.
    pub(crate) fn has(&self, name: &str) -> bool {
        let Ok(k) = KeyExpr::try_from(name) else {
            return false;
        };
        self.0.iter().any(|p| p.includes(&k))
    }
}

/// A service of this domain that ports other than the bridge's use.
#[derive(Debug, Clone)]
pub(crate) struct LocalService {
    pub description: StaticDescription,
    pub roles: Roles,
}

/// The services of this domain that ports other than the bridge's use,
/// among those selected.
pub(crate) fn local_services(
    cfg: &Config,
    bridge_node: u64,
    selection: &Selection,
) -> BTreeMap<String, LocalService> {
    let Ok(all) = hako::inspect::services(cfg) else {
        return BTreeMap::new();
    };
    let real = |ports: &[hako::inspect::PortInfo]| {
        ports
            .iter()
            .any(|p| p.node != bridge_node && p.node_alive && !p.retired)
    };
    all.into_iter()
        .flatten()
        .filter(|s| selection.has(&s.name))
        .filter_map(|s| {
            let roles = Roles {
                writers: real(&s.publishers),
                readers: real(&s.subscribers),
            };
            (roles.writers || roles.readers).then(|| {
                (
                    s.name.clone(),
                    LocalService {
                        description: s.description,
                        roles,
                    },
                )
            })
        })
        .collect()
}

/// The description of local service `name`, if it exists.
pub(crate) fn local_description(cfg: &Config, name: &ServiceName) -> Option<StaticDescription> {
    hako::inspect::service(cfg, name)
        .ok()
        .map(|s| s.description)
}

/// Other domains' services, as their liveliness tokens say: per service,
/// the domains that have it and their roles.
pub(crate) type Remote = Arc<Mutex<HashMap<String, BTreeMap<DomainId, Roles>>>>;

/// What this domain tells the others: its tokens, its description
/// queryable, and what it learns of them.
pub(crate) struct Discovery {
    tokens: HashMap<String, (Roles, zenoh::liveliness::LivelinessToken)>,
    _descriptions: zenoh::query::Queryable<()>,
    _follow: zenoh::pubsub::Subscriber<()>,
    pub remote: Remote,
}

impl Discovery {
    /// Starts answering description queries for this domain's selected
    /// services and following the other domains' tokens.
    pub(crate) fn start(
        session: &zenoh::Session,
        keys: &Keys,
        me: DomainId,
        cfg: &Config,
        selection: &Selection,
    ) -> Result<Self, String> {
        let descriptions = {
            let keys = keys.clone();
            let cfg = cfg.clone();
            let selection = selection.clone();
            session
                .declare_queryable(keys.all_desc(me))
                .callback(move |query| {
                    let key = query.key_expr().as_str().to_owned();
                    let Some(name) = keys.parse_desc(me, &key) else {
                        return;
                    };
                    let Ok(name) = ServiceName::try_from(name) else {
                        return;
                    };
                    if !selection.has(name.as_str()) {
                        return;
                    }
                    let Some(desc) = local_description(&cfg, &name) else {
                        return;
                    };
                    let Ok(json) = serde_json::to_vec(&desc) else {
                        return;
                    };
                    if let Err(e) = query.reply(key.clone(), json).wait() {
                        tracing::debug!("cannot answer a description query: {e}");
                    }
                })
                .wait()
                .map_err(|e| format!("cannot declare the description queryable: {e}"))?
        };
        let remote: Remote = Arc::default();
        let follow = {
            let remote = remote.clone();
            let keys = keys.clone();
            let selection = selection.clone();
            session
                .liveliness()
                .declare_subscriber(keys.all_live())
                .history(true)
                .callback(move |sample| {
                    let key = sample.key_expr().as_str();
                    let Some((domain, roles, name)) = keys.parse_live(key) else {
                        return;
                    };
                    if domain == me || ServiceName::try_from(name).is_err() || !selection.has(name)
                    {
                        return;
                    }
                    let Ok(mut r) = remote.lock() else { return };
                    match sample.kind() {
                        SampleKind::Put => {
                            r.entry(name.to_owned()).or_default().insert(domain, roles);
                        }
                        SampleKind::Delete => {
                            if let Some(set) = r.get_mut(name) {
                                // A token replaced by one of other roles
                                // is put before the old one goes.
                                if set.get(&domain) == Some(&roles) {
                                    set.remove(&domain);
                                }
                                if set.is_empty() {
                                    r.remove(name);
                                }
                            }
                        }
                    }
                })
                .wait()
                .map_err(|e| format!("cannot follow other domains' services: {e}"))?
        };
        Ok(Self {
            tokens: HashMap::new(),
            _descriptions: descriptions,
            _follow: follow,
            remote,
        })
    }

    /// Announces exactly the services in `local`, with their roles (tokens
    /// of services no longer there, or whose roles changed, are replaced
    /// or withdrawn).
    pub(crate) fn announce(
        &mut self,
        session: &zenoh::Session,
        keys: &Keys,
        me: DomainId,
        local: &BTreeMap<String, LocalService>,
    ) {
        self.tokens
            .retain(|name, (roles, _)| local.get(name).is_some_and(|l| l.roles == *roles));
        for (name, l) in local {
            if self.tokens.contains_key(name) {
                continue;
            }
            match session
                .liveliness()
                .declare_token(keys.live(me, l.roles, name))
                .wait()
            {
                Ok(t) => {
                    tracing::info!(service = %name, roles = %l.roles, "announced to other domains");
                    self.tokens.insert(name.clone(), (l.roles, t));
                }
                Err(e) => tracing::warn!(service = %name, "cannot announce: {e}"),
            }
        }
    }

    /// The selected services other domains announce, each with the domains
    /// that do.
    pub(crate) fn remote_services(&self) -> HashMap<String, BTreeMap<DomainId, Roles>> {
        self.remote.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Asks domain `domain` for its description of `name`.
pub(crate) fn fetch_description(
    session: &zenoh::Session,
    keys: &Keys,
    domain: DomainId,
    name: &str,
    timeout: Duration,
) -> Result<StaticDescription, String> {
    let replies = session
        .get(keys.desc(domain, name))
        .timeout(timeout)
        .wait()
        .map_err(|e| format!("cannot ask domain {domain} for {name:?}: {e}"))?;
    while let Ok(reply) = replies.recv() {
        if let Ok(sample) = reply.result() {
            let bytes = sample.payload().to_bytes();
            let desc: StaticDescription = serde_json::from_slice(&bytes).map_err(|e| {
                format!("domain {domain} sent a description of {name:?} that does not parse: {e}")
            })?;
            if desc.name != name {
                return Err(format!(
                    "domain {domain} answered for {name:?} with a description of {:?}",
                    desc.name
                ));
            }
            return Ok(desc);
        }
    }
    Err(format!(
        "domain {domain} did not describe {name:?} within {timeout:?}"
    ))
}
