//! `hako-test-helper`: the processes of hako's cross-process tests.
//!
//! Each subcommand plays one role and reports on stdout:
//!
//! * a `RESULT key=value ...` line when the role completed (the test parses it),
//! * an `ERROR <Kind> [field=<f>]: <Display of the error>` line, followed by
//!   an exit with the code from [`hako_tests::exit`], when the library
//!   returned an error (the tests provoke some on purpose),
//! * `VERIFY FAILED: ...` with exit code 3 when a received payload is corrupt,
//!   out of order or unexpected.
//!
//! Roles:
//!
//! * `publish` — sends `--count` [`TestMsg`]s numbered from 0.
//! * `subscribe` — receives `--expect` messages, checks checksums and
//!   per-publisher order, and prints the sequence numbers it got as ranges
//!   (`seqs=<publisher>:<from>-<to>,...`).
//! * `hold` — opens a service, optionally creates a port, and stays until told
//!   to go (holder for mismatch tests; contender for concurrent creation).
//! * `open` — opens a service with a given payload type and QoS, nothing more.
//! * `name` — validates a node and/or service name, and uses it if valid.
//! * `loans` — loans samples without sending them.
//! * `churn` — repeatedly opens-or-creates a service, creates a port (and
//!   sends or receives a little), and drops everything.
//!
//! Roles of the waiting features (events, blocking receive, waitset,
//! termination requests):
//!
//! * `notify` — creates a notifier and notifies `--count` times.
//! * `listen` — creates a listener and waits (blocking or with a timeout)
//!   until `--expect-total` notifications arrived; reports them per id.
//! * `recv` — a subscriber that waits in `blocking_receive` for each message.
//! * `ping` — one side of a ping-pong over two event services or two
//!   publish/subscribe services; the initiator reports the round-trip time.
//! * `waitset` — a waitset on a listener, a subscriber, a silent subscriber
//!   with a deadline, and an interval; counts what fired.
//! * `sigwait` — a `node.wait` or waitset loop that only SIGTERM/SIGINT ends.
//! * `endure` — a publisher or subscriber that keeps going while its service's
//!   files are truncated (see `hako-test-helper/endure.rs`).
//! * `zero-timeouts` — the waits with a zero timeout, before and after
//!   another process notified and sent.
//! * `event-port` — opens an event service and creates a port (for the
//!   error cases: too many ports, default id too large, wrong pattern).
//!
//! Synchronisation with the test and with other helpers goes through the
//! library (subscriber and publisher counts) and through signal files that
//! the test names (`--ready-file`, `--wait-file`, ...): a helper creates a
//! file to say it reached a point, and polls for a file to wait for one.
//! The domain root comes from `HAKO_ROOT` (via `Config::from_env`).
//!
//! This file parses the command line and runs the role; the roles live in
//! `hako-test-helper/`, by subject: `pubsub.rs` (publish, subscribe, recv),
//! `services.rs` (hold, open, name, loans, churn), `events.rs` (notify,
//! listen, event-port), `ping.rs`, `waitset.rs` (waitset, zero-timeouts),
//! `sigwait.rs` and `endure.rs`, with what they share in `plumbing.rs`
//! (nodes, services, signal files, polling, checking received messages)
//! and `errors.rs` (the `ERROR` lines and exit codes).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use clap::{Parser, Subcommand};
use hako_tests::{ImpostorMsg, OtherMsg, TestMsg};

use errors::Exit;
use ping::Transport;
use services::PayloadKind;

#[derive(Parser, Debug)]
#[command(
    name = "hako-test-helper",
    about = "Roles for hako's cross-process tests"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Send --count TestMsgs numbered from 0.
    Publish(pubsub::PublishArgs),
    /// Receive --expect TestMsgs and verify them.
    Subscribe(pubsub::SubscribeArgs),
    /// Open a service, optionally create a port, wait to be released.
    Hold(services::HoldArgs),
    /// Open a service and exit.
    Open(services::OpenArgs),
    /// Validate names (and use them when valid).
    Name(services::NameArgs),
    /// Loan samples without sending them.
    Loans(services::LoansArgs),
    /// Repeat: node, open_or_create, port, one message, drop everything.
    Churn(services::ChurnArgs),
    /// Notify --count times.
    Notify(events::NotifyArgs),
    /// Wait until --expect-total notifications arrived.
    Listen(events::ListenArgs),
    /// Receive --expect TestMsgs with blocking_receive.
    Recv(pubsub::RecvArgs),
    /// One side of a ping-pong (events or publish/subscribe).
    Ping(ping::PingArgs),
    /// A waitset on several sources fed by other processes.
    Waitset(waitset::WaitsetArgs),
    /// A waiting loop that only SIGTERM/SIGINT ends.
    Sigwait(sigwait::SigwaitArgs),
    /// Waits with a zero timeout.
    ZeroTimeouts(waitset::ZeroArgs),
    /// Open an event service and create a port.
    EventPort(events::EventPortArgs),
    /// Publish or subscribe while the service's files are truncated.
    Endure(endure::EndureArgs),
}

#[path = "hako-test-helper/errors.rs"]
mod errors;
#[path = "hako-test-helper/plumbing.rs"]
mod plumbing;

#[path = "hako-test-helper/pubsub.rs"]
mod pubsub;
#[path = "hako-test-helper/services.rs"]
mod services;

#[path = "hako-test-helper/events.rs"]
mod events;
#[path = "hako-test-helper/ping.rs"]
mod ping;
#[path = "hako-test-helper/sigwait.rs"]
mod sigwait;
#[path = "hako-test-helper/waitset.rs"]
mod waitset;

#[path = "hako-test-helper/endure.rs"]
mod endure;

fn main() {
    let cli = Cli::parse();
    // Errors unwind (see `die`) so that nodes, services and ports are dropped
    // and remove their files, as in a program that returns an error.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<Exit>().is_none() {
            default_hook(info);
        }
    }));
    let run = std::panic::catch_unwind(move || match cli.cmd {
        Cmd::Publish(a) => pubsub::publish(a),
        Cmd::Subscribe(a) => pubsub::subscribe(a),
        Cmd::Hold(a) => match a.payload {
            PayloadKind::Test => services::hold::<TestMsg>(a),
            PayloadKind::Other => services::hold::<OtherMsg>(a),
            PayloadKind::Impostor => services::hold::<ImpostorMsg>(a),
        },
        Cmd::Open(a) => match a.payload {
            PayloadKind::Test => services::open::<TestMsg>(a),
            PayloadKind::Other => services::open::<OtherMsg>(a),
            PayloadKind::Impostor => services::open::<ImpostorMsg>(a),
        },
        Cmd::Name(a) => services::name(a),
        Cmd::Loans(a) => services::loans(a),
        Cmd::Churn(a) => services::churn(a),
        Cmd::Notify(a) => events::notify(a),
        Cmd::Listen(a) => events::listen(a),
        Cmd::Recv(a) => pubsub::recv(a),
        Cmd::Ping(a) => match a.transport {
            Transport::Event => ping::ping_event(a),
            Transport::Pubsub => ping::ping_pubsub(a),
        },
        Cmd::Waitset(a) => waitset::waitset(a),
        Cmd::Sigwait(a) => sigwait::sigwait(a),
        Cmd::ZeroTimeouts(a) => waitset::zero_timeouts(a),
        Cmd::EventPort(a) => events::event_port(a),
        Cmd::Endure(a) => endure::endure(a),
    });
    match run {
        Ok(()) => {}
        Err(payload) => match payload.downcast::<Exit>() {
            Ok(code) => std::process::exit(code.0),
            // A real panic: the default hook printed it; exit as Rust does.
            Err(_) => std::process::exit(101),
        },
    }
}
