//! `hako bench`: runs the benchmark suite, the program `hako-bench`, with
//! the arguments given (`hako bench --help` is its help).
//!
//! The suite is a program of its own so that the administration commands
//! of `hako` link none of the libraries it measures. It is found as
//! `$HAKO_BENCH` if set, else as `hako-bench` beside this program (where
//! cargo builds and installs both), else on `PATH`.

use std::ffi::OsString;

use clap::Args;

use crate::common::CliError;
use crate::companion::Companion;

/// Environment variable naming the `hako-bench` program to run.
pub const BENCH_ENV: &str = "HAKO_BENCH";

/// `hako bench`: everything after `bench` goes to `hako-bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Arguments of the suite (see `hako bench --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// The suite's program.
const SUITE: Companion = Companion {
    name: "hako-bench",
    env: BENCH_ENV,
    build: "`cargo build --release -p hako-bench --features peers,bridge` (or ./scripts/bench)",
    what: "the benchmark suite",
    usage: "Measure hako against the kernel's IPC and peer libraries\n\n\
            Usage: hako bench [--patterns ...] [--sizes ...] [--transports ...] [--quick] [--json FILE]\n\n\
            See docs/benchmark.md.",
};

/// The parsed form of [`forward`] (reached only through `hako --json bench`
/// or similar, where `bench` is not the first argument).
pub fn run(a: BenchArgs) -> Result<(), CliError> {
    forward(&a.args)
}

/// Replaces this process with `hako-bench ARGS` (its exit code is the
/// command's); returns only if it cannot be started.
pub fn forward(args: &[OsString]) -> Result<(), CliError> {
    SUITE.exec(args)
}
