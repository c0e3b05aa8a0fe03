//! The bridge: one per domain carries the selected services (a second one
//! waits as a stand-by and takes over when the first goes), looks every
//! scan interval for services that came or went here or elsewhere, and
//! keeps a link for each.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hako::{Node, NodeBuilder, Pattern, ServiceName, StaticDescription};
use zenoh::Wait;

use crate::discovery::{self, Discovery, LocalService, Selection};
use crate::events::EventLink;
use crate::keys::{DomainId, Keys, Roles};
use crate::link::{Ctx, LinkError, Shared};
use crate::open::check_same;
use crate::options::BridgeOptions;
use crate::peers;
use crate::pubsub::PubSubLink;
use crate::reqres::{Mode, ReqResLink};

/// The name of a bridge's node (`hako list` marks services that have ports
/// of such a node as bridged).
pub const BRIDGE_NODE_NAME: &str = hako::inspect::BRIDGE_NODE_NAME;

/// The name of the lock a domain's active bridge holds
/// ([`hako::Node::try_lock_named`]): the file `bridge.lock` in the
/// domain's root.
pub const LOCK_NAME: &str = "bridge";

/// The file of that lock, in the domain's root.
pub const LOCK_FILE: &str = "bridge.lock";

/// How long a failed service waits before the next try.
const RETRY: Duration = Duration::from_secs(2);

/// A bridged service.
enum Link {
    PubSub(PubSubLink),
    Event(EventLink),
    ReqRes(#[allow(dead_code)] ReqResLink),
}

/// A link, with the description it was made from and the domains whose
/// copy of the service was checked against it, with the roles they had
/// then (those that differ are refused: what they send is dropped; those
/// whose roles change are asked again, for the length of their messages).
struct Linked {
    link: Link,
    desc: StaticDescription,
    checked: BTreeMap<DomainId, Roles>,
    shared: Shared,
}

/// Why a bridge could not run.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The options are wrong.
    #[error("{0}")]
    Options(String),
    /// The local node could not be made.
    #[error("cannot join the hako domain: {0}")]
    Node(#[from] hako::NodeCreateError),
    /// The lock file could not be opened.
    #[error("cannot open the bridge lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Zenoh could not be joined.
    #[error("cannot open a Zenoh session: {0}")]
    Zenoh(String),
}

/// A bridge between a hako domain and a Zenoh network.
pub struct Bridge {
    options: BridgeOptions,
    selection: Selection,
    low_latency: Selection,
    zenoh: zenoh::Config,
    node: Arc<Node>,
    domain: DomainId,
}

impl Bridge {
    /// Checks the options and joins the domain (as a node named
    /// [`BRIDGE_NODE_NAME`]); nothing is bridged until [`run`](Self::run).
    pub fn new(options: BridgeOptions) -> Result<Self, BridgeError> {
        let selection = Selection::new(&options.services).map_err(BridgeError::Options)?;
        let low_latency = if options.low_latency.is_empty() {
            Selection::none()
        } else {
            Selection::new(&options.low_latency).map_err(BridgeError::Options)?
        };
        let zenoh = options.zenoh.config().map_err(BridgeError::Options)?;
        let node = NodeBuilder::new()
            .name(BRIDGE_NODE_NAME)
            .map_err(|e| BridgeError::Options(e.to_string()))?
            .config(&options.hako)
            // The program decides what SIGINT and SIGTERM do (see `run`).
            .signal_handling(false)
            .create()?;
        let domain = DomainId::of_root(&options.hako.root);
        Ok(Self {
            options,
            selection,
            low_latency,
            zenoh,
            node: Arc::new(node),
            domain,
        })
    }

    /// This domain's id on the Zenoh side.
    pub fn domain(&self) -> DomainId {
        self.domain
    }

    /// Bridges until `stop` is set: waits to be the domain's active bridge,
    /// joins Zenoh, then follows the services.
    pub fn run(&self, stop: &AtomicBool) -> Result<(), BridgeError> {
        let Some(_lock) = self.lead(stop)? else {
            return Ok(());
        };
        tracing::info!(domain = %self.domain, root = %self.options.hako.root.display(), "active bridge of the domain");
        let session = zenoh::open(self.zenoh.clone())
            .wait()
            .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
        log_exposure(&self.zenoh);
        let keys = Keys::new(&self.options.prefix);
        let _peers = peers::follow(&session, &keys, self.domain).map_err(BridgeError::Zenoh)?;
        let ctx = Ctx {
            node: self.node.clone(),
            session: session.clone(),
            keys: keys.clone(),
            domain: self.domain,
            query_timeout: self.options.query_timeout,
            low_latency: self.low_latency.clone(),
        };
        let mut discovery = Discovery::start(
            &session,
            &keys,
            (self.domain, self.node.id()),
            &self.options.hako,
            &self.selection,
        )
        .map_err(BridgeError::Zenoh)?;
        let mut links: HashMap<String, Linked> = HashMap::new();
        let mut failed: HashMap<String, (Instant, String)> = HashMap::new();
        while !stop.load(Ordering::Relaxed) {
            self.scan(&ctx, &mut discovery, &mut links, &mut failed);
            sleep_unless(stop, self.options.scan_interval);
        }
        drop(links);
        drop(discovery);
        let _ = session.close().wait();
        Ok(())
    }

    /// Waits for the domain's bridge lock; `None` if stopped first.
    fn lead(&self, stop: &AtomicBool) -> Result<Option<hako::NamedLock>, BridgeError> {
        let mut said = false;
        loop {
            let taken =
                self.node
                    .try_lock_named(LOCK_NAME)
                    .map_err(|source| BridgeError::Lock {
                        path: self.options.hako.root.join(LOCK_FILE).display().to_string(),
                        source,
                    })?;
            match taken {
                Some(lock) => return Ok(Some(lock)),
                None if !said => {
                    tracing::info!("another bridge serves this domain; standing by");
                    said = true;
                }
                None => {}
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            sleep_unless(stop, Duration::from_millis(200));
        }
    }

    /// One look at what is here and elsewhere; links made and dropped to
    /// match.
    fn scan(
        &self,
        ctx: &Ctx,
        discovery: &mut Discovery,
        links: &mut HashMap<String, Linked>,
        failed: &mut HashMap<String, (Instant, String)>,
    ) {
        let local = discovery::local_services(&self.options.hako, self.node.id(), &self.selection);
        discovery.announce(&ctx.session, &ctx.keys, self.domain, &local);
        let remote = discovery.remote_services();
        let wanted: Vec<&String> = local.keys().chain(remote.keys()).collect();
        links.retain(|name, link: &mut Linked| {
            if !wanted.contains(&name) {
                tracing::info!(service = %name, "no longer bridged: gone here and elsewhere");
                return false;
            }
            // Samples and events come in while there are subscribers or
            // listeners here.
            let readers = local.get(name).is_some_and(|l| l.roles.readers);
            let followed = match &mut link.link {
                Link::PubSub(l) => l.readers_here(readers),
                Link::Event(l) => l.readers_here(readers),
                Link::ReqRes(_) => Ok(()),
            };
            if let Err(e) = followed {
                tracing::warn!(service = %name, "cannot subscribe to other domains: {e}");
            }
            // A request/response link follows where the servers are.
            if let Link::ReqRes(l) = &link.link {
                let mode = reqres_mode(local.get(name), remote.get(name));
                if l.mode != mode {
                    tracing::info!(service = %name, ?mode, "servers moved: bridging anew");
                    return false;
                }
            }
            true
        });
        let now = Instant::now();
        for name in wanted {
            if links.contains_key(name) || failed.get(name).is_some_and(|(t, _)| *t > now) {
                continue;
            }
            let domains = remote.get(name);
            match self.link(ctx, name, local.get(name), domains) {
                Ok(link) => {
                    tracing::info!(service = %name, "bridged");
                    failed.remove(name);
                    links.insert(name.clone(), link);
                }
                Err(e) => {
                    let msg = e.to_string();
                    if failed.get(name).is_none_or(|(_, m)| *m != msg) {
                        tracing::warn!(service = %name, "cannot bridge: {msg}");
                    }
                    failed.insert(name.clone(), (now + RETRY, msg));
                }
            }
        }
        self.check_domains(ctx, links, &remote);
    }

    /// Checks every domain that has a linked service and was not checked
    /// yet (or whose roles changed since) against the link's description;
    /// one that differs is refused. What each says of its messages' length
    /// makes room in the link.
    fn check_domains(
        &self,
        ctx: &Ctx,
        links: &mut HashMap<String, Linked>,
        remote: &HashMap<String, BTreeMap<DomainId, Roles>>,
    ) {
        for (name, linked) in links.iter_mut() {
            let Some(domains) = remote.get(name) else {
                continue;
            };
            for (&d, &roles) in domains {
                if linked.checked.get(&d) == Some(&roles) {
                    continue;
                }
                let timeout = self.options.query_timeout.min(Duration::from_secs(2));
                match discovery::fetch_description(&ctx.session, &ctx.keys, d, name, timeout) {
                    Ok(theirs) => {
                        if let Err(e) =
                            check_same(&linked.desc, &theirs.description, &d.to_string())
                        {
                            tracing::warn!(service = %name, "not bridged with domain {d}: {e}");
                            if let Ok(mut r) = linked.shared.refused.write() {
                                r.insert(d);
                            }
                        } else {
                            let m = theirs.max_slice_len;
                            linked.shared.room.raise(m.writers, m.readers);
                        }
                        linked.checked.insert(d, roles);
                    }
                    Err(e) => tracing::debug!(service = %name, "cannot check domain {d} yet: {e}"),
                }
            }
        }
    }

    /// Makes the link of service `name`: from its local description if it
    /// exists here (checked against a remote one's), else from a remote
    /// domain's.
    fn link(
        &self,
        ctx: &Ctx,
        name: &str,
        local: Option<&LocalService>,
        domains: Option<&BTreeMap<DomainId, Roles>>,
    ) -> Result<Linked, LinkError> {
        let service = ServiceName::try_from(name)
            .map_err(|_| LinkError::Unsupported("not a valid service name"))?;
        let here = local
            .map(|l| l.description.clone())
            .or_else(|| discovery::local_description(&self.options.hako, &service));
        let there = match domains.and_then(|d| d.iter().next()) {
            Some((&d, &roles)) => Some((
                (d, roles),
                discovery::fetch_description(
                    &ctx.session,
                    &ctx.keys,
                    d,
                    name,
                    self.options.query_timeout.min(Duration::from_secs(2)),
                )
                .map_err(LinkError::Zenoh)?,
            )),
            None => None,
        };
        let mut checked = BTreeMap::new();
        let shared = Shared::default();
        let mut know = |(d, roles): (DomainId, Roles), t: discovery::Described| {
            checked.insert(d, roles);
            let m = t.max_slice_len;
            shared.room.raise(m.writers, m.readers);
            t.description
        };
        let (desc, create) = match (here, there) {
            (Some(h), Some((d, t))) => {
                check_same(&h, &t.description, &d.0.to_string())?;
                know(d, t);
                (h, false)
            }
            (Some(h), None) => (h, false),
            (None, Some((d, t))) => (know(d, t), true),
            (None, None) => return Err(LinkError::Unsupported("the service is gone")),
        };
        let spin = ctx.low_latency.has(name);
        let link = match &desc.pattern {
            Pattern::PublishSubscribe { payload, qos } => {
                let readers = local.is_some_and(|l| l.roles.readers);
                Link::PubSub(PubSubLink::start(
                    ctx,
                    &service,
                    payload,
                    qos,
                    create,
                    &shared,
                    (spin, readers),
                )?)
            }
            Pattern::Event { qos } => {
                let readers = local.is_some_and(|l| l.roles.readers);
                Link::Event(EventLink::start(
                    ctx,
                    &service,
                    qos,
                    create,
                    &shared.refused,
                    (spin, readers),
                )?)
            }
            Pattern::RequestResponse {
                request,
                response,
                qos,
            } => Link::ReqRes(ReqResLink::start(
                ctx,
                &service,
                (request, response),
                qos,
                create,
                reqres_mode(local, domains),
                &shared,
                spin,
            )?),
            Pattern::Blackboard { .. } => {
                return Err(LinkError::Unsupported(
                    "blackboards stay on their host (one writer per board; see docs/bridge.md)",
                ))
            }
            _ => {
                return Err(LinkError::Unsupported(
                    "a pattern this bridge does not know",
                ))
            }
        };
        Ok(Linked {
            link,
            desc,
            checked,
            shared,
        })
    }
}

/// Which way requests of a service go: to servers here if there are any,
/// else to other domains' (readers of a request/response service are its
/// servers).
fn reqres_mode(local: Option<&LocalService>, remote: Option<&BTreeMap<DomainId, Roles>>) -> Mode {
    Mode::of(
        local.is_some_and(|l| l.roles.readers),
        remote.is_some_and(|d| d.values().any(|r| r.readers)),
    )
}

/// Says where other hosts can reach the bridge.
fn log_exposure(zenoh: &zenoh::Config) {
    let at = crate::options::listening(zenoh);
    if at.is_empty() {
        tracing::info!("listening nowhere: this bridge connects to others (--connect)");
    }
    for e in at {
        if crate::options::every_interface(&e) {
            tracing::info!(
                "listening on {e}: every network interface of this host (--listen chooses where)"
            );
        } else {
            tracing::info!("listening on {e}");
        }
    }
}

/// Sleeps `d`, in steps, returning early once `stop` is set.
fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
