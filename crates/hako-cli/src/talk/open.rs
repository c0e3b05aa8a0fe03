//! What the talking commands share: opening the node they talk through,
//! the service's name, `--create`, the error of a service they cannot
//! open, and durations in seconds. Below every other file of `talk/`.

use std::time::Duration;

use clap::Args;
use hako::{Node, NodeBuilder, ServiceName};

use crate::common::{exit, CliError, DomainArgs};

/// Whether a command may create the service it names.
#[derive(Debug, Clone, Copy, Args)]
pub struct CreateArg {
    /// Create the service, with the default settings, if it does not exist
    /// (without it a missing service is an error: start the program that
    /// owns the service first).
    #[arg(long)]
    pub create: bool,
}

/// The error of opening `name`: a missing service says how to go on.
pub(super) fn open_error(name: &ServiceName, e: hako::ServiceError) -> CliError {
    match e {
        hako::ServiceError::DoesNotExist(_) => CliError {
            code: exit::NOT_FOUND,
            message: format!(
                "service {:?} does not exist; start the program that creates it, or \
                 pass --create to make it with the default settings",
                name.as_str()
            ),
        },
        hako::ServiceError::IncompatiblePattern {
            service, actual, ..
        } => CliError::failure(format!(
            "service {service:?} is a {} service: talk to it with {}",
            actual.replace('_', "/"),
            match actual.as_str() {
                "request_response" => "`hako call` (or `hako serve`)",
                "event" => "`hako notify` and `hako listen`",
                "blackboard" => "`hako board get`, `set` and `watch`",
                _ => "`hako pub` and `hako sub`",
            }
        )),
        e => CliError::failure(e.to_string()),
    }
}

/// A node of the domain of `d`, named `hako-ROLE`, that leaves the signals
/// to the command.
pub(super) fn node(d: &DomainArgs, role: &str) -> Result<Node, CliError> {
    let cfg = d.config()?;
    NodeBuilder::new()
        .name(&format!("hako-{role}"))
        .map_err(|e| CliError::failure(e.to_string()))?
        .config(&cfg)
        // The commands watch their own termination flag between waits.
        .signal_handling(false)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))
}

/// A service name from the command line (a bad one is a usage error).
pub(super) fn service_name(s: &str) -> Result<ServiceName, CliError> {
    ServiceName::new(s).map_err(|e| CliError::usage(e.to_string()))
}

/// `--timeout` and the like: seconds, not negative.
pub(super) fn seconds(s: f64, what: &str) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| CliError::usage(format!("{what} must be a non-negative number of seconds")))
}
