//! # `hako` — the command-line tool of hako
//!
//! One binary with subcommands, each in its own module with its own `clap`
//! arguments and `--help`:
//!
//! * `hako bench` — the IPC comparison suite: hako against the floors (a
//!   cache line, a futex), the kernel's pipes, FIFOs, unix and TCP sockets
//!   and POSIX message queues, and the peer libraries iceoryx2 and shmipc,
//!   as a table, JSON, Markdown and an SVG plot. It is the program
//!   `hako-bench` (crate `hako-bench`), which this one runs ([`bench`]), so
//!   that the administration commands link none of the libraries measured.
//! * `hako bridge` — carries the domain's services to and from other hosts
//!   over Zenoh: the program `hako-bridge` (crate `hako-zenoh`), which this
//!   one runs ([`bridge`]), so that the other commands do not link Zenoh.
//! * `hako list`, `hako nodes`, `hako inspect SERVICE`, `hako clean`,
//!   `hako monitor` — what a domain holds, seen from outside ([`domain`]).
//! * `hako pub`, `hako sub`, `hako hz`, `hako record`, `hako replay`,
//!   `hako notify`, `hako listen`, `hako call`,
//!   `hako serve --echo` — talking to a service from a terminal
//!   ([`talk`]).
//!
//! The domain is the one of `HAKO_CONFIG` / `HAKO_ROOT` (as for every hako
//! program), or `--root`. `--json` (a global flag, before or after the
//! subcommand) prints machine-readable output, errors included. Exit codes
//! ([`common::exit`]): 0 success, 1 failure, 2 bad usage, 3 no such
//! service, 4 timed out.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use common::CliError;

pub mod bench;
pub mod bridge;
pub mod common;
pub mod companion;
pub mod config;
pub mod domain;
pub mod table;
pub mod talk;

/// hako: zero-copy shared-memory IPC for Linux.
#[derive(Debug, Parser)]
#[command(name = "hako", version)]
struct Cli {
    /// Machine-readable output: JSON on stdout, and errors as one JSON
    /// object (`{"error": ..., "code": ...}`) on stderr.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Measure hako against the kernel's IPC and peer libraries: latency,
    /// throughput and fan-out across processes, from 64 B to 4 MiB (runs
    /// the hako-bench program; `hako bench --help` lists its options).
    #[command(disable_help_flag = true)]
    Bench(bench::BenchArgs),
    /// Carry the domain's services to and from other hosts over Zenoh
    /// (runs the hako-bridge program; `hako bridge --help` lists its
    /// options).
    #[command(disable_help_flag = true)]
    Bridge(bridge::BridgeArgs),
    /// List the services of a domain: pattern, payload type, port counts.
    List(domain::ListArgs),
    /// List the nodes of a domain: id, pid, name, alive or dead.
    Nodes(domain::NodesArgs),
    /// Show a service: QoS, nodes, ports and their counters.
    Inspect(domain::InspectArgs),
    /// Remove what dead processes left behind (their ports, files and
    /// nodes; samples they held go back to their publishers).
    Clean(domain::CleanArgs),
    /// Print per-service message rates, live.
    Monitor(domain::MonitorArgs),
    /// Publish messages on a publish/subscribe service of any payload type:
    /// text on a `[u8]` service, hex (--hex) or raw bytes from stdin
    /// (--binary) on any.
    Pub(talk::PubArgs),
    /// Print the messages of a publish/subscribe service: a `[u8]` payload
    /// as text (or --hex), any other type as a hex dump headed by its name,
    /// size and alignment.
    Sub(talk::SubArgs),
    /// How often a publish/subscribe service's samples arrive: rate, and the
    /// mean, min, max and standard deviation of the intervals over a
    /// sliding window, with the samples missed (a lossy subscriber: it
    /// never holds a publisher back).
    Hz(talk::HzArgs),
    /// Record every sample of publish/subscribe services, with its receive
    /// time and its publisher, into an MCAP file (lossy unless --no-loss:
    /// a recording never holds a publisher back; what it missed is counted
    /// in the file).
    Record(talk::RecordArgs),
    /// Publish the samples of a recording again with the recorded timing
    /// (--rate, --loop, --service), opening or creating the services with
    /// the recorded payload types.
    Replay(talk::ReplayArgs),
    /// Send an event.
    Notify(talk::NotifyArgs),
    /// Print the events of an event service.
    Listen(talk::ListenArgs),
    /// The configuration in effect (`config show`).
    Config(config::ConfigArgs),
    /// Send requests (bytes / UTF-8) to a `[u8] → [u8]` request/response
    /// service and print every response.
    Call(talk::CallArgs),
    /// Answer the requests of a `[u8] → [u8]` service (`--echo`).
    Serve(talk::ServeArgs),
    /// Read, write and watch a blackboard's entries: numbers for the
    /// primitive types and arrays of them, hex for any other.
    Board(talk::BoardArgs),
}

/// Runs the subcommand asked for.
fn main() -> ExitCode {
    // `hako bench ARGS` is `hako-bench ARGS`: passed on unparsed (the suite
    // has options of its own, `--json FILE` among them).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "bench") {
        return report(bench::forward(&args[2..]), false);
    }
    if args.get(1).is_some_and(|a| a == "bridge") {
        return report(bridge::forward(&args[2..]), false);
    }
    // In JSON mode usage errors are JSON too (help and version stay text).
    let json = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json");
    // Arguments are not assumed UTF-8: clap reports what it cannot read.
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if json && e.use_stderr() => {
            // Clap's first line, without its `error: `.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            let message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
            return report(Err(CliError::usage(message)), true);
        }
        Err(e) => e.exit(),
    };
    common::set_json(cli.json);
    let result = match cli.command {
        // `hako --json bench ...`: the suite has a `--json FILE` of its own.
        Command::Bench(_) if cli.json => Err(CliError::usage(
            "the benchmark suite takes no global --json: write its JSON report with \
             `hako bench --json FILE`",
        )),
        Command::Bench(a) => bench::run(a),
        Command::Bridge(a) => bridge::run(a),
        Command::List(a) => domain::list(a),
        Command::Nodes(a) => domain::nodes(a),
        Command::Inspect(a) => domain::inspect(a),
        Command::Clean(a) => domain::clean(a),
        Command::Monitor(a) => domain::monitor(a),
        Command::Pub(a) => talk::publish(a),
        Command::Sub(a) => talk::subscribe(a),
        Command::Hz(a) => talk::hz(a),
        Command::Record(a) => talk::record(a),
        Command::Replay(a) => talk::replay(a),
        Command::Notify(a) => talk::notify(a),
        Command::Listen(a) => talk::listen(a),
        Command::Config(a) => config::run(a),
        Command::Call(a) => talk::call(a),
        Command::Board(a) => talk::board(a),
        Command::Serve(a) => talk::serve(a),
    };
    report(result, cli.json)
}

/// The exit code of `result`, after printing its error: one JSON object on
/// stderr in JSON mode, else `hako: error: ...`.
fn report(result: Result<(), CliError>, json: bool) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json {
                eprintln!(
                    "{}",
                    serde_json::json!({ "error": e.message, "code": e.code })
                );
            } else {
                eprintln!("hako: error: {}", e.message);
            }
            ExitCode::from(e.code)
        }
    }
}
