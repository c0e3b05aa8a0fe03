//! `hako list`, `hako nodes`, `hako inspect`, `hako clean` and
//! `hako monitor`: what a domain holds, from the outside.
//!
//! They read the domain's files through [`hako::inspect`] and never join it
//! (no node is created), so they work on a domain whose processes are all
//! gone, too. `clean` reclaims what dead processes left behind
//! ([`hako::reclaim_dead_nodes`]).
//!
//! `view.rs` (the root opened for reading, the names and counts of a
//! service's ports) is below the commands' files, `list.rs` (`list`,
//! `nodes`), `inspect.rs`, `clean.rs`, `prometheus.rs` (the counters as
//! OpenMetrics over HTTP) and `monitor.rs` (which serves them with
//! `--prometheus`); this file only
//! declares them and re-exports the commands.

mod clean;
mod inspect;
mod list;
mod monitor;
mod prometheus;
mod view;

pub use clean::{clean, CleanArgs};
pub use inspect::{inspect, InspectArgs};
pub use list::{list, nodes, ListArgs, NodesArgs};
pub use monitor::{monitor, MonitorArgs};
