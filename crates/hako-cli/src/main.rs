//! # `hako` — the command-line tool of hako
//!
//! One binary with subcommands. Today it has one:
//!
//! * `hako bench` — the IPC comparison suite ([`bench`](mod@bench)): hako against the
//!   floors (a cache line, a futex), the kernel's pipes, FIFOs, unix and TCP
//!   sockets and POSIX message queues, and (built with `--features peers`)
//!   the peer libraries iceoryx2 and shmipc, in ping-pong, throughput and
//!   fan-out between separate processes, as a table, JSON, Markdown and an
//!   SVG plot.
//!
//! Subcommands to list, inspect and clean services, and to publish and
//! subscribe from a terminal, will join it; each lives in its own module
//! and has its own `clap` arguments.
//!
//! The benchmark's follower processes are this same binary, started with a
//! hidden first argument ([`hako_bench::harness::FOLLOWER_ARG`]) that
//! [`main`] checks before parsing anything else.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use hako_bench::harness::{self, FOLLOWER_ARG};
use hako_bench::select::Transports;

pub mod bench;

/// hako: zero-copy shared-memory IPC for Linux.
#[derive(Debug, Parser)]
#[command(name = "hako", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Measure hako against the kernel's IPC and peer libraries: latency,
    /// throughput and fan-out across processes, from 64 B to 4 MiB.
    Bench(Box<bench::BenchArgs>),
}

/// Runs a follower (when started as one) or the subcommand asked for.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(FOLLOWER_ARG) {
        let all = Transports::default();
        return match harness::follower_main(&args[2..], &all.for_follower()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hako bench follower: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hako: error: {e}");
            ExitCode::FAILURE
        }
    }
}
