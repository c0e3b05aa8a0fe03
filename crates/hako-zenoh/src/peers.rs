//! Bridges see each other come and go: the active bridge of each domain
//! holds a liveliness token (`<prefix>/bridge/<domain>`), and follows the
//! others', logging each bridge that joins or leaves the network.

use zenoh::sample::SampleKind;
use zenoh::Wait;

use crate::keys::{DomainId, Keys};

/// This bridge's token and its view of the others'; both go when dropped.
pub(crate) struct Peers {
    _token: zenoh::liveliness::LivelinessToken,
    _follow: zenoh::pubsub::Subscriber<()>,
}

/// Announces the bridge of domain `me` and logs the others as they come
/// and go (those already there too, as having joined).
pub(crate) fn follow(session: &zenoh::Session, keys: &Keys, me: DomainId) -> Result<Peers, String> {
    let token = session
        .liveliness()
        .declare_token(keys.bridge(me))
        .wait()
        .map_err(|e| format!("cannot announce the bridge: {e}"))?;
    let parse = keys.clone();
    let follow = session
        .liveliness()
        .declare_subscriber(keys.all_bridges())
        .history(true)
        .callback(move |sample| {
            let Some(domain) = parse.parse_bridge(sample.key_expr().as_str()) else {
                return;
            };
            if domain == me {
                return;
            }
            match sample.kind() {
                SampleKind::Put => tracing::info!(%domain, "the bridge of domain {domain} joined"),
                SampleKind::Delete => tracing::info!(%domain, "the bridge of domain {domain} left"),
            }
        })
        .wait()
        .map_err(|e| format!("cannot follow other bridges: {e}"))?;
    Ok(Peers {
        _token: token,
        _follow: follow,
    })
}
