//! A bridge that carries hako services between hosts over
//! [Zenoh](https://zenoh.io).
//!
//! hako moves messages between processes of one machine through shared
//! memory. A system that spans machines (a robot and its base station, a
//! cluster of simulators) runs one bridge per machine and domain
//! (`hako bridge`, the program `hako-bridge`): each joins its local domain
//! to a Zenoh network, and the services it selects work across machines
//! as they do on one. Programs do not change: a service of another host
//! appears locally as an ordinary hako service, with the same payload type
//! and settings (only `hako list` tells, marking it bridged).
//!
//! What crosses, per pattern:
//!
//! * **publish/subscribe**: every sample of a local publisher goes to the
//!   subscribers of every other domain, and back;
//! * **events**: every event a local notifier raises is raised in every
//!   other domain, with its id and count;
//! * **request/response**: a client's request goes to a server on another
//!   host if its own host has none, and every response (a stream of them)
//!   comes back; when that host vanishes, the request ends with
//!   [`ReqResReceiveError::Aborted`](hako::ReqResReceiveError::Aborted).
//!
//! Nothing goes round: a message that came in through a bridge is never
//! sent out again (each message names its domain, and a bridge's own ports
//! are told apart from the programs'), so rings of domains and several
//! bridges on one host deliver each message once. A domain has one active
//! bridge; a second one started on it stands by and takes over when the
//! first goes.
//!
//! The key expressions and encodings, for plain Zenoh programs that want
//! to take part, are in [`keys`].
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::atomic::AtomicBool;
//! use hako_zenoh::{Bridge, BridgeOptions};
//!
//! let mut options = BridgeOptions::new(hako::Config::default());
//! options.services = vec!["robot/**".into()];
//! options.zenoh.connect = vec!["tcp/192.168.1.10:7447".into()];
//! let bridge = Bridge::new(options)?;
//! let stop = AtomicBool::new(false); // set it (from a signal handler) to end
//! bridge.run(&stop)?;
//! # Ok(()) }
//! ```

mod bridge;
mod discovery;
mod events;
pub mod keys;
mod link;
mod mailbox;
mod open;
mod options;
mod payload;
mod peers;
mod pubsub;
mod reqres;
mod settings;

pub use bridge::{Bridge, BridgeError, BRIDGE_NODE_NAME, LOCK_FILE, LOCK_NAME};
pub use link::LinkError;
pub use open::OpenError;
pub use options::{BridgeOptions, ZenohOptions};
pub use settings::{LowLatency, Settings};
