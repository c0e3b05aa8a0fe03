//! What the reading commands share: the domain root opened for reading
//! (and how far it is trusted), and the names and counts of a service's
//! ports.

use clap::Args;
use hako::inspect::{self, DomainView, ServiceInfo};
use hako::Pattern;

use crate::common::{exit, CliError};

/// How far the reading commands trust a domain root.
#[derive(Debug, Args)]
pub struct ReadTrust {
    /// Read a domain root that another user could have filled (say, as
    /// root, a user's domain): its owner and mode, and those of the
    /// directories above it, are not judged (links are still refused).
    /// Nothing is written or removed; `hako clean` has no such flag.
    #[arg(long)]
    untrusted: bool,
}

impl ReadTrust {
    /// Whether `--untrusted` was given.
    pub(super) fn untrusted(&self) -> bool {
        self.untrusted
    }
}

/// The error of a domain root that does not exist: nothing of hako's ran
/// there, or the path is mistyped.
pub(super) fn no_root(cfg: &hako::Config) -> CliError {
    CliError {
        code: exit::NOT_FOUND,
        message: format!(
            "no hako domain at {}: no hako program has used it yet (or the path is \
             mistyped; the root comes from --root, HAKO_ROOT or HAKO_CONFIG's `root`)",
            cfg.root.display()
        ),
    }
}

/// The domain root of `cfg`, held open for reading; one that does not
/// exist is an error ([`no_root`]), and one the user cannot trust is
/// refused unless `--untrusted`.
pub(super) fn open_view(cfg: &hako::Config, trust: &ReadTrust) -> Result<DomainView, CliError> {
    opened_view(cfg, trust)?.ok_or_else(|| no_root(cfg))
}

/// [`open_view`], `None` if there is no root.
fn opened_view(cfg: &hako::Config, trust: &ReadTrust) -> Result<Option<DomainView>, CliError> {
    let opened = if trust.untrusted {
        DomainView::open_untrusted(cfg)
    } else {
        DomainView::open(cfg)
    };
    opened.map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied && !trust.untrusted {
            CliError::failure(format!(
                "{e}; to read it anyway, without changing anything, add --untrusted"
            ))
        } else {
            CliError::io(&cfg.root, e)
        }
    })
}

pub(super) fn pattern_name(info: &ServiceInfo) -> &'static str {
    info.description.pattern.name()
}

pub(super) fn payload_name(info: &ServiceInfo) -> String {
    match &info.description.pattern {
        Pattern::PublishSubscribe { payload, .. } => payload.type_name.clone(),
        Pattern::RequestResponse {
            request, response, ..
        } => format!("{} -> {}", request.type_name, response.type_name),
        Pattern::Blackboard { entries, .. } => match entries.len() {
            1 => "1 entry".into(),
            n => format!("{n} entries"),
        },
        _ => "-".into(),
    }
}

/// (first table's name, second table's name) for the pattern.
pub(super) fn port_names(info: &ServiceInfo) -> (&'static str, &'static str) {
    match info.description.pattern {
        Pattern::PublishSubscribe { .. } => ("publishers", "subscribers"),
        Pattern::RequestResponse { .. } => ("clients", "servers"),
        Pattern::Blackboard { .. } => ("writers", "readers"),
        _ => ("notifiers", "listeners"),
    }
}

/// Ports of live nodes (a dead node's ports stay in the tables until its
/// death is noticed or `hako clean` runs: they are not counted as there).
pub(super) fn live(ports: &[inspect::PortInfo]) -> usize {
    ports.iter().filter(|p| p.node_alive).count()
}

/// Ports, of either kind, whose node is dead.
pub(super) fn dead(s: &inspect::ServiceInfo) -> usize {
    s.publishers
        .iter()
        .chain(&s.subscribers)
        .filter(|p| !p.node_alive)
        .count()
}
