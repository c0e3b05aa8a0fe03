//! `hako bridge`: carries the domain's services to and from other hosts
//! over Zenoh. It is the program `hako-bridge` (crate `hako-zenoh`), run
//! with the arguments given (`hako bridge --help` is its help), so that the
//! administration commands do not link Zenoh. It is found as `$HAKO_BRIDGE`
//! if set, else beside `hako`, else on `PATH`.

use std::ffi::OsString;

use clap::Args;

use crate::common::CliError;
use crate::companion::Companion;

/// Environment variable naming the `hako-bridge` program to run.
pub const BRIDGE_ENV: &str = "HAKO_BRIDGE";

/// The bridge's program.
const BRIDGE: Companion = Companion {
    name: "hako-bridge",
    env: BRIDGE_ENV,
    build: "`cargo build --release -p hako-zenoh`",
    what: "the bridge",
    usage: "Carry the domain's services to and from other hosts over Zenoh\n\n\
            Usage: hako bridge [--connect ENDPOINT]... [--listen ENDPOINT]... [--service PATTERN]... [OPTIONS]\n\n\
            See docs/bridge.md for the whole guide.",
};

/// `hako bridge`: everything after `bridge` goes to `hako-bridge`.
#[derive(Debug, Args)]
pub struct BridgeArgs {
    /// Arguments of the bridge (see `hako bridge --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// The parsed form of [`forward`] (reached only when `bridge` is not the
/// first argument, as in `hako --json bridge`).
pub fn run(a: BridgeArgs) -> Result<(), CliError> {
    forward(&a.args)
}

/// Replaces this process with `hako-bridge ARGS`; returns only if it cannot
/// be started.
pub fn forward(args: &[OsString]) -> Result<(), CliError> {
    BRIDGE.exec(args)
}
