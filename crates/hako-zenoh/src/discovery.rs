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
use serde::{Deserialize, Serialize};
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

    /// Selects no service.
    pub(crate) fn none() -> Self {
        Self(Vec::new())
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

/// The most elements one message of a domain's own ports (not its
/// bridge's) holds: publishers' samples or clients' requests (`writers`),
/// servers' responses (`readers`). 0 where it has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MaxSliceLen {
    #[serde(default)]
    pub writers: u64,
    #[serde(default)]
    pub readers: u64,
}

/// What a domain answers a description query with: the service's
/// description, and how long its ports' messages may be (so that the
/// bridges that carry them make room for them before the first comes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Described {
    #[serde(flatten)]
    pub description: StaticDescription,
    #[serde(default)]
    pub max_slice_len: MaxSliceLen,
}

/// The description of local service `name` and the longest messages of
/// the ports other than the bridge's (node `bridge_node`), if it exists.
pub(crate) fn describe(cfg: &Config, name: &ServiceName, bridge_node: u64) -> Option<Described> {
    let info = hako::inspect::service(cfg, name).ok()?;
    let longest = |ports: &[hako::inspect::PortInfo]| {
        ports
            .iter()
            .filter(|p| p.node != bridge_node && p.node_alive && !p.retired)
            .map(|p| p.max_slice_len)
            .max()
            .unwrap_or(0)
    };
    Some(Described {
        max_slice_len: MaxSliceLen {
            writers: longest(&info.publishers),
            readers: longest(&info.subscribers),
        },
        description: info.description,
    })
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
        (me, bridge_node): (DomainId, u64),
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
                    let Some(desc) = describe(&cfg, &name, bridge_node) else {
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
) -> Result<Described, String> {
    let replies = session
        .get(keys.desc(domain, name))
        .timeout(timeout)
        .wait()
        .map_err(|e| format!("cannot ask domain {domain} for {name:?}: {e}"))?;
    while let Ok(reply) = replies.recv() {
        if let Ok(sample) = reply.result() {
            let bytes = sample.payload().to_bytes();
            let desc: Described = serde_json::from_slice(&bytes).map_err(|e| {
                format!("domain {domain} sent a description of {name:?} that does not parse: {e}")
            })?;
            if desc.description.name != name {
                return Err(format!(
                    "domain {domain} answered for {name:?} with a description of {:?}",
                    desc.description.name
                ));
            }
            return Ok(desc);
        }
    }
    Err(format!(
        "domain {domain} did not describe {name:?} within {timeout:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described() -> Described {
        let root = std::env::temp_dir().join(format!("hako-zenoh-desc-{}", std::process::id()));
        let node = hako::NodeBuilder::new()
            .config(&Config::default().with_root(&root))
            .signal_handling(false)
            .create()
            .expect("a node");
        let service = node
            .service_builder(&"t/x".try_into().unwrap())
            .request_response::<[u8], [u8]>()
            .open_or_create()
            .expect("a service");
        let description = service.description();
        drop((service, node));
        let _ = std::fs::remove_dir_all(&root);
        Described {
            description,
            max_slice_len: MaxSliceLen {
                writers: 4096,
                readers: 1 << 22,
            },
        }
    }

    #[test]
    fn a_description_answer_carries_the_longest_messages_and_reads_without_them() {
        let d = described();
        let json = serde_json::to_string(&d).unwrap();
        assert!(
            json.contains(r#""max_slice_len":{"writers":4096,"readers":4194304}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Described>(&json).unwrap(), d);
        // What a bridge without the sizes sends: the description alone.
        let plain = serde_json::to_string(&d.description).unwrap();
        let read: Described = serde_json::from_str(&plain).unwrap();
        assert_eq!(read.description, d.description);
        assert_eq!(read.max_slice_len, MaxSliceLen::default());
    }

    #[test]
    fn selections_match_key_expressions_and_none_matches_nothing() {
        let s = Selection::new(&["robot/**".to_owned()]).unwrap();
        assert!(s.has("robot/camera") && !s.has("base/camera"));
        assert!(Selection::new(&[]).unwrap().has("any/thing"));
        assert!(!Selection::none().has("any/thing"));
        assert!(Selection::new(&["a//b".to_owned()]).is_err());
    }
}
