//! `hako pub`, `hako sub`, `hako notify`, `hako listen`, `hako call` and
//! `hako serve`: talking to a service from a terminal, for debugging and
//! scripts (request/response in `reqres.rs`).
//!
//! `pub` and `sub` work on publish/subscribe services of any payload type.
//! They read the type the service records (name, size, alignment, whether
//! it is a slice) and open the service with it, seeing each payload as its
//! bytes (`payload.rs`):
//!
//! * On a `[u8]` service, messages are text: the command-line arguments, or
//!   the lines of standard input; `sub` prints each payload as UTF-8
//!   (invalid bytes replaced), or as hex with `--hex`.
//! * On any other type, `sub` prints each sample as a hex dump headed by
//!   the type (`u64 (8 B, align 8): 0a 00 00 00 00 00 00 00`), and `pub`
//!   takes messages as hex (`--hex`, spaces allowed) or as raw bytes on
//!   standard input (`--binary`, cut into messages of the type's size; for
//!   a slice, all of it is one message). A message must fit the type:
//!   exactly its size, or for a slice a multiple of the element's size.
//!   `--hex` and `--binary` work on `[u8]` services too.
//!
//! Every command opens an existing service and creates one (with the
//! default settings) only with `--create`: a service a command made up
//! would later refuse the program it belongs to, whose settings differ.
//! `pub` and `sub` create only `[u8]` services (they cannot make up another
//! type), so `--create` on a service of another type is refused.

mod events;
mod payload;
mod publish;
pub mod reqres;
mod subscribe;

use std::time::Duration;

use clap::Args;
use hako::{Node, NodeBuilder, ServiceName};

use crate::common::{exit, CliError, DomainArgs};

pub use events::{listen, notify, ListenArgs, NotifyArgs};
pub use publish::{publish, PubArgs};
pub use subscribe::{subscribe, SubArgs};

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
pub(crate) fn open_error(name: &ServiceName, e: hako::ServiceError) -> CliError {
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
                _ => "`hako pub` and `hako sub`",
            }
        )),
        e => CliError::failure(e.to_string()),
    }
}

pub(crate) fn node(d: &DomainArgs, role: &str) -> Result<Node, CliError> {
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

fn service_name(s: &str) -> Result<ServiceName, CliError> {
    ServiceName::new(s).map_err(|e| CliError::usage(e.to_string()))
}

pub(crate) fn seconds(s: f64, what: &str) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| CliError::usage(format!("{what} must be a non-negative number of seconds")))
}
