//! `hako-bench`: the IPC comparison suite, what `hako bench` runs.
//!
//! A program of its own so that the `hako` tool's administration commands
//! link none of the libraries measured (iceoryx2 and shmipc with the
//! `peers` feature, the C API, tokio's multi-threaded runtime). `hako bench
//! ARGS` runs `hako-bench ARGS`; both take the arguments of
//! [`BenchArgs`](hako_bench::cli::BenchArgs).
//!
//! The benchmark's follower processes are this same program, started with
//! a hidden first argument ([`hako_bench::harness::FOLLOWER_ARG`]) that
//! `main` checks before parsing anything else.

use std::process::ExitCode;

use clap::Parser;

use hako_bench::cli::BenchArgs;
use hako_bench::harness::follower;
use hako_bench::registry::Transports;

/// Measure hako against the kernel's IPC and peer libraries: latency,
/// throughput and fan-out across processes, from 64 B to 4 MiB.
#[derive(Debug, Parser)]
#[command(name = "hako bench", bin_name = "hako bench", version)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn main() -> ExitCode {
    // Arguments are not assumed UTF-8: clap reports what it cannot read.
    if let Some(args) = follower::follower_args() {
        let all = Transports::default();
        return match args.and_then(|a| follower::follower_main(&a, &all.for_follower())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hako bench follower: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    match hako_bench::cli::run(cli.args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hako bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}
