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

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use hako::{
    BackpressureStrategy, EventId, EventPortCreateError, EventService, Listener, ListenerError,
    LoanError, Node, NodeBuilder, NodeWaitError, NotifyError, OverflowPolicy, Payload,
    PubSubService, Publisher, ReceiveError, Sample, ServiceError, ServiceName, Subscriber,
    WaitEvent, WaitOutcome, WaitSet, WaitSetError, WaitStrategy,
};
use hako_tests::{exit, ImpostorMsg, OtherMsg, TestMsg};

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
    Publish(PublishArgs),
    /// Receive --expect TestMsgs and verify them.
    Subscribe(SubscribeArgs),
    /// Open a service, optionally create a port, wait to be released.
    Hold(HoldArgs),
    /// Open a service and exit.
    Open(OpenArgs),
    /// Validate names (and use them when valid).
    Name(NameArgs),
    /// Loan samples without sending them.
    Loans(LoansArgs),
    /// Repeat: node, open_or_create, port, one message, drop everything.
    Churn(ChurnArgs),
    /// Notify --count times.
    Notify(NotifyArgs),
    /// Wait until --expect-total notifications arrived.
    Listen(ListenArgs),
    /// Receive --expect TestMsgs with blocking_receive.
    Recv(RecvArgs),
    /// One side of a ping-pong (events or publish/subscribe).
    Ping(PingArgs),
    /// A waitset on several sources fed by other processes.
    Waitset(WaitsetArgs),
    /// A waiting loop that only SIGTERM/SIGINT ends.
    Sigwait(SigwaitArgs),
    /// Waits with a zero timeout.
    ZeroTimeouts(ZeroArgs),
    /// Open an event service and create a port.
    EventPort(EventPortArgs),
    /// Publish or subscribe while the service's files are truncated.
    Endure(endure::EndureArgs),
}

#[path = "hako-test-helper/endure.rs"]
mod endure;

#[derive(Args, Debug, Clone)]
struct SvcArgs {
    /// Service name.
    #[arg(long, default_value = "it/service")]
    service: String,
    /// How to get the service.
    #[arg(long, value_enum, default_value_t = Mode::OpenOrCreate)]
    mode: Mode,
    #[arg(long)]
    max_publishers: Option<u32>,
    #[arg(long)]
    max_subscribers: Option<u32>,
    #[arg(long)]
    max_nodes: Option<u32>,
    /// subscriber_max_buffer_size.
    #[arg(long)]
    buffer: Option<u32>,
    /// subscriber_max_borrowed_samples.
    #[arg(long)]
    borrowed: Option<u32>,
    /// history_size.
    #[arg(long)]
    history: Option<u32>,
    #[arg(long, value_enum)]
    overflow: Option<Overflow>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Create,
    Open,
    OpenOrCreate,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    DropOldest,
    Backpressure,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PayloadKind {
    /// TestMsg (64 bytes).
    Test,
    /// OtherMsg: another type name.
    Other,
    /// ImpostorMsg: named as TestMsg ("hako_tests::TestMsg"), but 72 bytes.
    Impostor,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PortKind {
    None,
    Publisher,
    Subscriber,
}

#[derive(Args, Debug)]
struct PublishArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Logical publisher id written into every message.
    #[arg(long, default_value_t = 0)]
    id: u64,
    /// Messages to send.
    #[arg(long)]
    count: u64,
    /// Backpressure strategy: block, discard or retry:<n>.
    #[arg(long, default_value = "block", value_parser = parse_strategy)]
    strategy: BackpressureStrategy,
    /// max_loaned_samples of the publisher.
    #[arg(long)]
    max_loans: Option<u32>,
    /// Create this file once the publisher exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Before sending, wait until this many subscribers are connected.
    #[arg(long, default_value_t = 0)]
    wait_subscribers: usize,
    /// Before sending, wait for this file.
    #[arg(long)]
    wait_file: Option<PathBuf>,
    /// After sending this many messages, wait for --pause-file.
    #[arg(long, requires = "pause_file")]
    pause_at: Option<u64>,
    #[arg(long)]
    pause_file: Option<PathBuf>,
    /// Create this file when pausing at --pause-at.
    #[arg(long)]
    paused_file: Option<PathBuf>,
    /// Create this file once everything is sent.
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// After sending, call update_connections() until this many subscribers
    /// are connected (late joiners get the history then).
    #[arg(long, default_value_t = 0)]
    wait_subscribers_after: usize,
    /// Before exiting, wait until no subscriber is connected any more (so
    /// that queued samples stay reachable until they are read).
    #[arg(long)]
    linger: bool,
    /// Before exiting, wait for this file.
    #[arg(long)]
    release_file: Option<PathBuf>,
    /// Print every send's return value (deliveries=1,1,0,...).
    #[arg(long)]
    print_deliveries: bool,
    /// Sleep this many microseconds after each send (pacing, so that a
    /// reader sees the messages spread over time).
    #[arg(long, default_value_t = 0)]
    pace_us: u64,
}

#[derive(Args, Debug)]
struct SubscribeArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Messages to receive (in total, from all publishers) before finishing.
    #[arg(long)]
    expect: u64,
    /// Create this file once the subscriber exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Receive and keep this many samples first, then try one more receive
    /// (reported as after_hold=...), then create --held-file.
    #[arg(long, default_value_t = 0)]
    hold: usize,
    #[arg(long)]
    held_file: Option<PathBuf>,
    /// Before reading (after the hold phase), wait for this file. Held
    /// samples are released after it appears.
    #[arg(long)]
    wait_file: Option<PathBuf>,
    /// Sleep this many microseconds after each message (a slow reader).
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
    /// After --expect messages, require that receive() returns nothing more.
    #[arg(long)]
    check_empty: bool,
}

#[derive(Args, Debug)]
struct HoldArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = PayloadKind::Test)]
    payload: PayloadKind,
    /// Port to create after opening the service.
    #[arg(long, value_enum, default_value_t = PortKind::None)]
    port: PortKind,
    /// Create this file on arrival at the start barrier.
    #[arg(long)]
    arrived_file: Option<PathBuf>,
    /// Wait for this file before opening the service (a start barrier).
    #[arg(long)]
    start_file: Option<PathBuf>,
    /// Create this file once the service (and port) exist.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Wait for this file, then wait until the port sees --peers ports of
    /// the other kind, print RESULT and create --done-file.
    #[arg(long)]
    check_file: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    peers: usize,
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// Exit once this file exists.
    #[arg(long)]
    release_file: PathBuf,
}

#[derive(Args, Debug)]
struct OpenArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = PayloadKind::Test)]
    payload: PayloadKind,
}

#[derive(Args, Debug)]
struct NameArgs {
    /// A node name to validate.
    #[arg(long)]
    node: Option<String>,
    /// A service name to validate.
    #[arg(long)]
    service: Option<String>,
}

#[derive(Args, Debug)]
struct LoansArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// max_loaned_samples of the publisher.
    #[arg(long)]
    max_loans: u32,
    /// Samples to loan (and hold).
    #[arg(long)]
    count: usize,
}

#[derive(Args, Debug)]
struct ChurnArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Port to create in each iteration.
    #[arg(long, value_enum)]
    port: PortKind,
    /// Iterations.
    #[arg(long)]
    iterations: u64,
    /// Wait for this file before the first iteration (a start barrier).
    #[arg(long)]
    start_file: Option<PathBuf>,
    /// Publishers send one message per iteration (it may still be queued
    /// when the publisher leaves).
    #[arg(long)]
    send: bool,
}

fn parse_strategy(s: &str) -> Result<BackpressureStrategy, String> {
    match s {
        "block" => Ok(BackpressureStrategy::Block),
        "discard" => Ok(BackpressureStrategy::Discard),
        _ => match s.strip_prefix("retry:").map(str::parse::<u32>) {
            Some(Ok(n)) => Ok(BackpressureStrategy::Retry(n)),
            _ => Err(format!("{s:?}: expected block, discard or retry:<n>")),
        },
    }
}

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
        Cmd::Publish(a) => publish(a),
        Cmd::Subscribe(a) => subscribe(a),
        Cmd::Hold(a) => match a.payload {
            PayloadKind::Test => hold::<TestMsg>(a),
            PayloadKind::Other => hold::<OtherMsg>(a),
            PayloadKind::Impostor => hold::<ImpostorMsg>(a),
        },
        Cmd::Open(a) => match a.payload {
            PayloadKind::Test => open::<TestMsg>(a),
            PayloadKind::Other => open::<OtherMsg>(a),
            PayloadKind::Impostor => open::<ImpostorMsg>(a),
        },
        Cmd::Name(a) => name(a),
        Cmd::Loans(a) => loans(a),
        Cmd::Churn(a) => churn(a),
        Cmd::Notify(a) => notify(a),
        Cmd::Listen(a) => listen(a),
        Cmd::Recv(a) => recv(a),
        Cmd::Ping(a) => match a.transport {
            Transport::Event => ping_event(a),
            Transport::Pubsub => ping_pubsub(a),
        },
        Cmd::Waitset(a) => waitset(a),
        Cmd::Sigwait(a) => sigwait(a),
        Cmd::ZeroTimeouts(a) => zero_timeouts(a),
        Cmd::EventPort(a) => event_port(a),
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

// ---------------------------------------------------------------- errors

/// Unwinding payload of an intended exit: `main` exits with this code once
/// everything on the way up has been dropped.
struct Exit(i32);

/// Prints an `ERROR` line and exits with `code` (after unwinding).
fn die(code: i32, kind: &str, msg: impl std::fmt::Display) -> ! {
    println!("ERROR {kind}: {msg}");
    std::panic::panic_any(Exit(code));
}

fn die_verify(msg: impl std::fmt::Display) -> ! {
    println!("VERIFY FAILED: {msg}");
    eprintln!("VERIFY FAILED: {msg}");
    std::panic::panic_any(Exit(exit::VERIFY));
}

fn die_service(e: ServiceError) -> ! {
    let (code, kind) = match &e {
        ServiceError::IncompatibleType { field, .. } => (
            exit::INCOMPATIBLE_TYPE,
            format!("IncompatibleType field={field}"),
        ),
        ServiceError::IncompatibleQos { field, .. } => (
            exit::INCOMPATIBLE_QOS,
            format!("IncompatibleQos field={field}"),
        ),
        ServiceError::Corrupted { .. } => (exit::CORRUPTED, "Corrupted".into()),
        ServiceError::DoesNotExist(_) => (exit::DOES_NOT_EXIST, "DoesNotExist".into()),
        ServiceError::AlreadyExists(_) => (exit::ALREADY_EXISTS, "AlreadyExists".into()),
        ServiceError::IncompatiblePattern { .. } => {
            (exit::INCOMPATIBLE_PATTERN, "IncompatiblePattern".into())
        }
        other => (exit::OTHER_SERVICE, format!("ServiceError({other:?})")),
    };
    die(code, &kind, e)
}

fn die_loan(e: LoanError) -> ! {
    match e {
        LoanError::ExceedsMaxLoans(_) => die(exit::EXCEEDS_MAX_LOANS, "ExceedsMaxLoans", e),
        LoanError::OutOfMemory(_) => die(exit::OUT_OF_MEMORY, "OutOfMemory", e),
        other => die(exit::FAILURE, "LoanError", other),
    }
}

fn die_receive(e: ReceiveError) -> ! {
    match e {
        ReceiveError::ExceedsMaxBorrowed(_) => {
            die(exit::EXCEEDS_MAX_BORROWED, "ExceedsMaxBorrowed", e)
        }
        ReceiveError::CorruptedPublisher { .. } => {
            die(exit::CORRUPTED_PUBLISHER, "CorruptedPublisher", e)
        }
        ReceiveError::PublishersGone(_) => die(exit::PUBLISHERS_GONE, "PublishersGone", e),
        other => die(exit::FAILURE, "ReceiveError", other),
    }
}

// ---------------------------------------------------------------- plumbing

fn node() -> Node {
    let name = format!("it-{}", std::process::id());
    match NodeBuilder::new().name(&name) {
        Ok(b) => b
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e)),
        Err(e) => die(exit::NAME, "NameError", e),
    }
}

fn service<T: Payload + ?Sized>(node: &Node, a: &SvcArgs) -> PubSubService<T> {
    let name = ServiceName::new(&a.service).unwrap_or_else(|e| die(exit::NAME, "NameError", e));
    let mut b = node.service_builder(&name).publish_subscribe::<T>();
    if let Some(v) = a.max_publishers {
        b = b.max_publishers(v);
    }
    if let Some(v) = a.max_subscribers {
        b = b.max_subscribers(v);
    }
    if let Some(v) = a.max_nodes {
        b = b.max_nodes(v);
    }
    if let Some(v) = a.buffer {
        b = b.subscriber_max_buffer_size(v);
    }
    if let Some(v) = a.borrowed {
        b = b.subscriber_max_borrowed_samples(v);
    }
    if let Some(v) = a.history {
        b = b.history_size(v);
    }
    if let Some(o) = a.overflow {
        b = b.overflow_policy(match o {
            Overflow::DropOldest => OverflowPolicy::DropOldest,
            Overflow::Backpressure => OverflowPolicy::Backpressure,
        });
    }
    let r = match a.mode {
        Mode::Create => b.create(),
        Mode::Open => b.open(),
        Mode::OpenOrCreate => b.open_or_create(),
    };
    r.unwrap_or_else(|e| die_service(e))
}

/// Creates a signal file.
fn touch(path: &Option<PathBuf>) {
    if let Some(p) = path {
        std::fs::write(p, b"")
            .unwrap_or_else(|e| die(exit::FAILURE, "signal", format!("{}: {e}", p.display())));
    }
}

/// Waits for a signal file (the test's watchdog bounds the wait).
fn wait_for(path: &Option<PathBuf>) {
    if let Some(p) = path {
        wait_path(p);
    }
}

fn wait_path(p: &Path) {
    while !p.exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Polls `cond` until it holds, backing off from spinning to sleeping.
fn poll_until(mut cond: impl FnMut() -> bool) {
    let mut backoff = Backoff::default();
    while !cond() {
        backoff.wait();
    }
}

/// Spin, then yield, then sleep briefly: polling that stays cheap when the
/// peer is slow (two cores are shared by all processes of a test).
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 32 {
            std::hint::spin_loop();
        } else if self.0 < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn reset(&mut self) {
        self.0 = 0;
    }
}

// ---------------------------------------------------------------- publish

fn publish(a: PublishArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let mut b = svc.publisher_builder().backpressure(a.strategy);
    if let Some(n) = a.max_loans {
        b = b.max_loaned_samples(n);
    }
    let publisher: Publisher<TestMsg> = b
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    touch(&a.ready_file);
    if a.wait_subscribers > 0 {
        poll_until(|| publisher.subscriber_count() >= a.wait_subscribers);
    }
    wait_for(&a.wait_file);

    let mut deliveries = Vec::new();
    let (mut delivered, mut zero) = (0u64, 0u64);
    for seq in 0..a.count {
        if a.pause_at == Some(seq) {
            touch(&a.paused_file);
            wait_for(&a.pause_file);
        }
        let sample = publisher.loan_uninit().unwrap_or_else(|e| die_loan(e));
        let n = sample.write_payload(TestMsg::new(a.id, seq)).send();
        delivered += n as u64;
        if n == 0 {
            zero += 1;
        }
        if a.print_deliveries {
            deliveries.push(n.to_string());
        }
        if a.pace_us > 0 {
            std::thread::sleep(Duration::from_micros(a.pace_us));
        }
    }
    touch(&a.done_file);

    if a.wait_subscribers_after > 0 {
        poll_until(|| {
            publisher.update_connections();
            publisher.subscriber_count() >= a.wait_subscribers_after
        });
    }
    if a.linger {
        poll_until(|| publisher.subscriber_count() == 0);
    }
    wait_for(&a.release_file);
    let mut line = format!(
        "RESULT role=publish id={} sent={} delivered={delivered} zero={zero} free={} pool={}",
        a.id,
        a.count,
        publisher.free_chunks(),
        publisher.pool_size()
    );
    if a.print_deliveries {
        line.push_str(&format!(" deliveries={}", deliveries.join(",")));
    }
    println!("{line}");
}

// ---------------------------------------------------------------- subscribe

/// Checks each received message and records, per publisher, the sequence
/// numbers seen as ranges.
#[derive(Default)]
struct Verifier {
    total: u64,
    per_publisher: BTreeMap<u64, Vec<(u64, u64)>>,
}

impl Verifier {
    fn check(&mut self, s: &Sample<TestMsg>) {
        // Copy out of shared memory first, then look at the copy.
        let m: TestMsg = **s;
        if !m.is_intact() {
            die_verify(format!(
                "corrupted payload (message #{}): {m:?}, checksum should be {:#x}",
                self.total,
                m.compute_checksum()
            ));
        }
        let ranges = self.per_publisher.entry(m.publisher).or_default();
        match ranges.last_mut() {
            Some((_, last)) if m.seq <= *last => die_verify(format!(
                "publisher {} sent seq {} after seq {} (message #{})",
                m.publisher, m.seq, last, self.total
            )),
            Some((_, last)) if m.seq == *last + 1 => *last = m.seq,
            _ => ranges.push((m.seq, m.seq)),
        }
        self.total += 1;
    }

    /// `0:0-9,20-29/1:0-4`: per publisher, the ranges of sequence numbers.
    fn seqs(&self) -> String {
        let per: Vec<String> = self
            .per_publisher
            .iter()
            .map(|(p, ranges)| {
                let r: Vec<String> = ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                format!("{p}:{}", r.join(","))
            })
            .collect();
        if per.is_empty() {
            "none".into()
        } else {
            per.join("/")
        }
    }
}

fn receive_one(sub: &Subscriber<TestMsg>) -> Option<Sample<TestMsg>> {
    sub.receive().unwrap_or_else(|e| die_receive(e))
}

fn subscribe(a: SubscribeArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let sub = svc
        .subscriber_builder()
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    touch(&a.ready_file);

    let mut v = Verifier::default();
    let mut held = Vec::new();
    let mut after_hold = String::from("none");
    if a.hold > 0 {
        let mut backoff = Backoff::default();
        while held.len() < a.hold {
            match receive_one(&sub) {
                Some(s) => {
                    v.check(&s);
                    held.push(s);
                    backoff.reset();
                }
                None => backoff.wait(),
            }
        }
        after_hold = match sub.receive() {
            Err(ReceiveError::ExceedsMaxBorrowed(n)) => format!("exceeds_max_borrowed({n})"),
            Err(e) => die_receive(e),
            Ok(Some(s)) => {
                v.check(&s);
                "sample".into()
            }
            Ok(None) => "none".into(),
        };
        touch(&a.held_file);
    }
    wait_for(&a.wait_file);
    drop(held);

    let mut backoff = Backoff::default();
    while v.total < a.expect {
        match receive_one(&sub) {
            Some(s) => {
                v.check(&s);
                drop(s);
                backoff.reset();
                if a.delay_us > 0 {
                    std::thread::sleep(Duration::from_micros(a.delay_us));
                }
            }
            None => backoff.wait(),
        }
    }
    if a.check_empty {
        if let Some(s) = receive_one(&sub) {
            die_verify(format!(
                "expected nothing after {} messages, got {:?}",
                a.expect, *s
            ));
        }
    }
    println!(
        "RESULT role=subscribe received={} publishers={} seqs={} after_hold={after_hold}",
        v.total,
        v.per_publisher.len(),
        v.seqs()
    );
}

// ---------------------------------------------------------------- hold

fn hold<T: Payload + ?Sized>(a: HoldArgs) {
    touch(&a.arrived_file);
    wait_for(&a.start_file);
    let node = node();
    let svc = service::<T>(&node, &a.svc);
    let publisher = (a.port == PortKind::Publisher).then(|| {
        svc.publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e))
    });
    let subscriber = (a.port == PortKind::Subscriber).then(|| {
        svc.subscriber_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e))
    });
    touch(&a.ready_file);
    if let Some(check) = &a.check_file {
        wait_path(check);
        let peers = if let Some(p) = &publisher {
            poll_until(|| p.subscriber_count() == a.peers);
            p.subscriber_count()
        } else if let Some(s) = &subscriber {
            poll_until(|| s.publisher_count() == a.peers);
            s.publisher_count()
        } else {
            0
        };
        let d = svc.description();
        let p = svc.payload();
        // One line that must be identical in every process of the domain.
        println!(
            "DESC name={} pattern={} type={} size={} align={} slice={} qos={:?}",
            d.name,
            d.pattern.name(),
            p.type_name,
            p.size,
            p.align,
            p.slice,
            svc.qos()
        );
        println!("RESULT role=hold port={:?} peers={peers}", a.port);
        touch(&a.done_file);
    } else {
        println!("RESULT role=hold port={:?}", a.port);
    }
    wait_path(&a.release_file);
}

// ---------------------------------------------------------------- open

fn open<T: Payload + ?Sized>(a: OpenArgs) {
    let node = node();
    let svc = service::<T>(&node, &a.svc);
    println!(
        "RESULT role=open type={} history={}",
        svc.payload().type_name,
        svc.qos().history_size
    );
}

// ---------------------------------------------------------------- name

fn name(a: NameArgs) {
    let mut b = NodeBuilder::new();
    if let Some(n) = &a.node {
        b = b
            .name(n)
            .unwrap_or_else(|e| die(exit::NAME, "NameError", e));
    }
    let service = a
        .service
        .as_ref()
        .map(|s| ServiceName::new(s).unwrap_or_else(|e| die(exit::NAME, "NameError", e)));
    // Valid names must also work.
    let node = b
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e));
    if let Some(s) = &service {
        let svc = node
            .service_builder(s)
            .publish_subscribe::<TestMsg>()
            .open_or_create()
            .unwrap_or_else(|e| die_service(e));
        let publisher = svc
            .publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
        let sub = svc
            .subscriber_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
        publisher
            .send_copy(TestMsg::new(0, 0))
            .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
        let got = receive_one(&sub).map(|s| s.seq);
        if got != Some(0) {
            die_verify(format!("sent seq 0 on {s}, received {got:?}"));
        }
    }
    println!("RESULT role=name ok=1");
}

// ---------------------------------------------------------------- loans

fn loans(a: LoansArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let publisher = svc
        .publisher_builder()
        .max_loaned_samples(a.max_loans)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    let mut held = Vec::new();
    for _ in 0..a.count {
        held.push(publisher.loan_uninit().unwrap_or_else(|e| die_loan(e)));
    }
    println!("RESULT role=loans loaned={}", held.len());
}

// ---------------------------------------------------------------- churn

fn churn(a: ChurnArgs) {
    wait_for(&a.start_file);
    let (mut received, mut delivered) = (0u64, 0u64);
    for i in 0..a.iterations {
        let node = node();
        let svc = service::<TestMsg>(&node, &a.svc);
        match a.port {
            PortKind::Publisher => {
                let p = svc
                    .publisher_builder()
                    .create()
                    .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
                if a.send {
                    let n = p
                        .send_copy(TestMsg::new(std::process::id().into(), i))
                        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
                    delivered += n as u64;
                }
            }
            PortKind::Subscriber => {
                let s = svc
                    .subscriber_builder()
                    .create()
                    .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
                // Whatever arrives must be intact; order across publisher
                // incarnations is not defined, so only checksums are checked.
                for _ in 0..4 {
                    if let Some(m) = receive_one(&s) {
                        if !m.is_intact() {
                            die_verify(format!("corrupted payload: {:?}", *m));
                        }
                        received += 1;
                    }
                }
            }
            PortKind::None => {}
        }
    }
    println!(
        "RESULT role=churn iterations={} delivered={delivered} received={received}",
        a.iterations
    );
}

// ================================================================ waiting
//
// Roles of the waiting features: events, blocking receive, waitsets and
// termination requests.

#[derive(Args, Debug, Clone)]
struct EvArgs {
    /// Event service name.
    #[arg(long, default_value = "it/events")]
    service: String,
    /// How to get the service.
    #[arg(long, value_enum, default_value_t = Mode::OpenOrCreate)]
    mode: Mode,
    #[arg(long)]
    event_id_max: Option<u64>,
    #[arg(long)]
    max_notifiers: Option<u32>,
    #[arg(long)]
    max_listeners: Option<u32>,
    #[arg(long)]
    max_nodes: Option<u32>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    BusySpin,
    SpinThenPark,
    Park,
}

impl From<Strategy> for WaitStrategy {
    fn from(s: Strategy) -> Self {
        match s {
            Strategy::BusySpin => WaitStrategy::BusySpin,
            Strategy::SpinThenPark => WaitStrategy::SpinThenPark,
            Strategy::Park => WaitStrategy::Park,
        }
    }
}

#[derive(Args, Debug)]
struct NotifyArgs {
    #[command(flatten)]
    ev: EvArgs,
    /// Notify this id with notify_with_id (else notify(), the default id).
    #[arg(long)]
    id: Option<u64>,
    /// The notifier's default event id.
    #[arg(long)]
    default_id: Option<u64>,
    /// Notifications to send.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Sleep this many microseconds after each notification (pacing).
    #[arg(long, default_value_t = 0)]
    pace_us: u64,
    /// Create this file once the notifier exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Before notifying, wait for this file.
    #[arg(long)]
    wait_file: Option<PathBuf>,
    /// Create this file once every notification is sent.
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// After notifying, keep the notifier until this file exists.
    #[arg(long)]
    release_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ListenArgs {
    #[command(flatten)]
    ev: EvArgs,
    #[arg(long, value_enum, default_value_t = Strategy::SpinThenPark)]
    strategy: Strategy,
    /// Notifications (summed over ids) to wait for.
    #[arg(long)]
    expect_total: u64,
    /// Use timed_wait with this timeout instead of blocking_wait.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Create this file once the listener exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Create this file after the first wait that returned events.
    #[arg(long)]
    progress_file: Option<PathBuf>,
    /// After the first wait that returned events, wait for this file before
    /// waiting again.
    #[arg(long)]
    pause_file: Option<PathBuf>,
    /// Create this file once --expect-total notifications arrived.
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// At the end, require that try_wait returns nothing more.
    #[arg(long)]
    check_empty: bool,
}

#[derive(Args, Debug)]
struct RecvArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = Strategy::SpinThenPark)]
    strategy: Strategy,
    /// Messages to receive.
    #[arg(long)]
    expect: u64,
    /// Create this file once the subscriber exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// After the n-th message (from 1), create the file `<prefix><n>`.
    #[arg(long)]
    got_prefix: Option<String>,
    /// After the first message, wait for this file before receiving again.
    #[arg(long)]
    pause_file: Option<PathBuf>,
    /// Build the subscriber with `end_when_publishers_gone(true)`.
    #[arg(long)]
    end_when_publishers_gone: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Event,
    Pubsub,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PingRole {
    /// Sends the pings and times the round trips.
    Initiator,
    /// Answers each ping.
    Responder,
}

#[derive(Args, Debug)]
struct PingArgs {
    #[arg(long, value_enum)]
    transport: Transport,
    #[arg(long, value_enum)]
    role: PingRole,
    /// Round trips.
    #[arg(long)]
    count: u64,
    #[arg(long, value_enum, default_value_t = Strategy::SpinThenPark)]
    strategy: Strategy,
    /// Prefix of the two services: `<prefix>/there` carries pings,
    /// `<prefix>/back` the answers.
    #[arg(long, default_value = "it/ping")]
    service: String,
    /// Pin this process to this CPU first.
    #[arg(long)]
    cpu: Option<usize>,
}

impl PingArgs {
    fn pin(&self) {
        if let Some(cpu) = self.cpu {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu);
            rustix::thread::sched_setaffinity(None, &set)
                .unwrap_or_else(|e| die(exit::FAILURE, "sched_setaffinity", e));
        }
    }
}

/// How often this process went to sleep so far (its voluntary context
/// switches, from /proc/self/status).
fn sleeps() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| die(exit::FAILURE, "/proc/self/status", e));
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            die(
                exit::FAILURE,
                "/proc/self/status",
                "no voluntary_ctxt_switches",
            )
        })
}

#[derive(Args, Debug)]
struct WaitsetArgs {
    /// The publish/subscribe service a publisher process feeds (--service).
    #[command(flatten)]
    svc: SvcArgs,
    /// The event service a notifier process feeds.
    #[arg(long)]
    events: String,
    /// A publish/subscribe service nobody sends on, watched by a deadline.
    #[arg(long)]
    silent: String,
    /// Notifications to wait for (summed).
    #[arg(long)]
    expect_events: u64,
    /// Samples to wait for.
    #[arg(long)]
    expect_samples: u64,
    /// Period of the interval.
    #[arg(long)]
    interval_ms: u64,
    /// Deadline on the silent subscriber.
    #[arg(long)]
    deadline_ms: u64,
    /// Keep waiting at least this long (from before the timers were
    /// attached), even once all data arrived.
    #[arg(long)]
    min_span_ms: u64,
    /// Create this file once every port is attached.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Create this file at the end.
    #[arg(long)]
    done_file: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum LoopKind {
    /// `while node.wait(cycle).is_ok() { .. }`
    Node,
    /// `wait_and_process` on a waitset with an interval and a listener,
    /// until `WaitOutcome::TerminationRequest`.
    Waitset,
    /// `blocking_receive` of a subscriber with no publisher, until
    /// `ReceiveError::TerminationRequest`.
    Subscriber,
    /// `blocking_wait` of a listener with no notifier, until
    /// `ListenerError::TerminationRequest`.
    Listener,
    /// A send blocked by backpressure (`Block`) on a subscriber that does
    /// not read, until SIGINT/SIGTERM ends it (the sample counts as
    /// dropped).
    Publisher,
}

#[derive(Args, Debug)]
struct SigwaitArgs {
    #[arg(long = "loop", value_enum)]
    kind: LoopKind,
    /// The node.wait cycle, or the waitset's interval.
    #[arg(long, default_value_t = 20)]
    cycle_ms: u64,
    /// Create this file once the signal handlers are installed.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Build the node with `signal_handling(false)` (subscriber and
    /// listener loops): then a signal keeps its default effect.
    #[arg(long)]
    no_signal_handling: bool,
}

#[derive(Args, Debug)]
struct ZeroArgs {
    /// The event service.
    #[arg(long)]
    events: String,
    /// The publish/subscribe service (--service).
    #[command(flatten)]
    svc: SvcArgs,
    /// Create this file after the first round (nothing pending).
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Wait for this file (another process notified and sent), then do the
    /// second round.
    #[arg(long)]
    wait_file: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum EvPort {
    None,
    Notifier,
    Listener,
}

#[derive(Args, Debug)]
struct EventPortArgs {
    #[command(flatten)]
    ev: EvArgs,
    #[arg(long, value_enum, default_value_t = EvPort::None)]
    port: EvPort,
    /// The notifier's default event id.
    #[arg(long)]
    default_id: Option<u64>,
    /// Create this file once the port exists.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Exit once this file exists (else at once).
    #[arg(long)]
    release_file: Option<PathBuf>,
}

// ---------------------------------------------------------------- plumbing

fn service_name(s: &str) -> ServiceName {
    ServiceName::new(s).unwrap_or_else(|e| die(exit::NAME, "NameError", e))
}

fn event_service(node: &Node, a: &EvArgs) -> EventService {
    let mut b = node.service_builder(&service_name(&a.service)).event();
    if let Some(v) = a.event_id_max {
        b = b.event_id_max(v);
    }
    if let Some(v) = a.max_notifiers {
        b = b.max_notifiers(v);
    }
    if let Some(v) = a.max_listeners {
        b = b.max_listeners(v);
    }
    if let Some(v) = a.max_nodes {
        b = b.max_nodes(v);
    }
    let r = match a.mode {
        Mode::Create => b.create(),
        Mode::Open => b.open(),
        Mode::OpenOrCreate => b.open_or_create(),
    };
    r.unwrap_or_else(|e| die_service(e))
}

/// An event service with default settings, opened or created.
fn event_named(node: &Node, name: &str) -> EventService {
    node.service_builder(&service_name(name))
        .event()
        .open_or_create()
        .unwrap_or_else(|e| die_service(e))
}

/// A `TestMsg` service with default settings, opened or created.
fn pubsub_named(node: &Node, name: &str) -> PubSubService<TestMsg> {
    node.service_builder(&service_name(name))
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap_or_else(|e| die_service(e))
}

fn die_event_port(e: EventPortCreateError) -> ! {
    match e {
        EventPortCreateError::TooMany { .. } => die(exit::TOO_MANY_PORTS, "TooMany", e),
        EventPortCreateError::EventIdOutOfRange { .. } => die(
            exit::DEFAULT_EVENT_ID_OUT_OF_RANGE,
            "EventPortCreateError::EventIdOutOfRange",
            e,
        ),
        EventPortCreateError::Service(s) => die_service(s),
        other => die(exit::FAILURE, "EventPortCreateError", other),
    }
}

fn die_notify(e: NotifyError) -> ! {
    match e {
        NotifyError::EventIdOutOfRange { .. } => die(
            exit::EVENT_ID_OUT_OF_RANGE,
            "NotifyError::EventIdOutOfRange",
            e,
        ),
        other => die(exit::FAILURE, "NotifyError", other),
    }
}

fn die_listener(e: ListenerError) -> ! {
    match e {
        ListenerError::NotifiersGone(_) => die(exit::NOTIFIERS_GONE, "NotifiersGone", e),
        other => die(exit::FAILURE, "ListenerError", other),
    }
}

fn die_waitset(e: WaitSetError) -> ! {
    die(exit::FAILURE, "WaitSetError", e)
}

fn listener(svc: &EventService, strategy: Strategy) -> Listener {
    svc.listener_builder()
        .wait_strategy(strategy.into())
        .create()
        .unwrap_or_else(|e| die_event_port(e))
}

fn subscriber(svc: &PubSubService<TestMsg>, strategy: Strategy) -> Subscriber<TestMsg> {
    svc.subscriber_builder()
        .wait_strategy(strategy.into())
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e))
}

/// `0:10/3:2`: notifications per id.
fn id_counts(counts: &BTreeMap<u64, u64>) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    let v: Vec<String> = counts.iter().map(|(id, n)| format!("{id}:{n}")).collect();
    v.join("/")
}

/// Adds what a wait returned to `counts`; returns the sum. Every id must be
/// in range and every count positive.
fn account(events: &[(EventId, u64)], counts: &mut BTreeMap<u64, u64>) -> u64 {
    let mut sum = 0;
    for &(id, n) in events {
        if n == 0 {
            die_verify(format!("a wait reported id {} with count 0", id.value()));
        }
        *counts.entry(id.value()).or_default() += n;
        sum += n;
    }
    sum
}

// ---------------------------------------------------------------- notify

fn notify(a: NotifyArgs) {
    let node = node();
    let svc = event_service(&node, &a.ev);
    let mut b = svc.notifier_builder();
    if let Some(id) = a.default_id {
        b = b.default_event_id(EventId(id));
    }
    let notifier = b.create().unwrap_or_else(|e| die_event_port(e));
    touch(&a.ready_file);
    wait_for(&a.wait_file);
    let (mut delivered, mut zero) = (0u64, 0u64);
    for _ in 0..a.count {
        let r = match a.id {
            Some(id) => notifier.notify_with_id(EventId(id)),
            None => notifier.notify(),
        };
        let n = r.unwrap_or_else(|e| die_notify(e));
        delivered += n as u64;
        if n == 0 {
            zero += 1;
        }
        if a.pace_us > 0 {
            std::thread::sleep(Duration::from_micros(a.pace_us));
        }
    }
    touch(&a.done_file);
    wait_for(&a.release_file);
    println!(
        "RESULT role=notify sent={} delivered={delivered} zero={zero}",
        a.count
    );
}

// ---------------------------------------------------------------- listen

fn listen(a: ListenArgs) {
    let node = node();
    let svc = event_service(&node, &a.ev);
    let listener = listener(&svc, a.strategy);
    touch(&a.ready_file);
    let mut counts = BTreeMap::new();
    let (mut total, mut waits, mut empty) = (0u64, 0u64, 0u64);
    while total < a.expect_total {
        let r = match a.timeout_ms {
            Some(ms) => listener.timed_wait(Duration::from_millis(ms)),
            None => listener.blocking_wait(),
        };
        let events = r.unwrap_or_else(|e| die_listener(e));
        if events.is_empty() {
            if a.timeout_ms.is_none() {
                die_verify("blocking_wait returned no events");
            }
            empty += 1;
            continue;
        }
        waits += 1;
        total += account(&events, &mut counts);
        if waits == 1 {
            touch(&a.progress_file);
            wait_for(&a.pause_file);
        }
    }
    touch(&a.done_file);
    if a.check_empty {
        let more = listener.try_wait();
        if !more.is_empty() {
            die_verify(format!(
                "expected nothing after {total} notifications, got {more:?}"
            ));
        }
    }
    println!(
        "RESULT role=listen total={total} waits={waits} timeouts={empty} counts={}",
        id_counts(&counts)
    );
}

// ---------------------------------------------------------------- recv

fn recv(a: RecvArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let sub = svc
        .subscriber_builder()
        .wait_strategy(a.strategy.into())
        .end_when_publishers_gone(a.end_when_publishers_gone)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    touch(&a.ready_file);
    let mut v = Verifier::default();
    while v.total < a.expect {
        let s = sub.blocking_receive().unwrap_or_else(|e| die_receive(e));
        v.check(&s);
        drop(s);
        if let Some(prefix) = &a.got_prefix {
            touch(&Some(PathBuf::from(format!("{prefix}{}", v.total))));
        }
        if v.total == 1 {
            wait_for(&a.pause_file);
        }
    }
    let changes = sub.take_publisher_changes();
    println!(
        "RESULT role=recv received={} publishers={} seqs={} connected={} departed={}",
        v.total,
        v.per_publisher.len(),
        v.seqs(),
        changes.connected,
        changes.departed
    );
}

// ---------------------------------------------------------------- ping

/// Checks that a wait of the ping-pong returned exactly one notification of
/// id 0: one is outstanding at a time, so nothing may coalesce or get lost.
fn expect_one(events: &[(EventId, u64)], round: u64) {
    if events != [(EventId(0), 1)] {
        die_verify(format!(
            "round {round}: expected exactly [(EventId(0), 1)], got {events:?}"
        ));
    }
}

fn ping_event(a: PingArgs) {
    a.pin();
    let node = node();
    let there = event_named(&node, &format!("{}/there", a.service));
    let back = event_named(&node, &format!("{}/back", a.service));
    match a.role {
        PingRole::Initiator => {
            // The listener for the answers exists before the first ping.
            let answers = listener(&back, a.strategy);
            let pings = there
                .notifier_builder()
                .create()
                .unwrap_or_else(|e| die_event_port(e));
            // The first ping goes out once the responder listens (a
            // notification nobody listens to reaches no one: returns 0).
            poll_until(|| pings.notify().unwrap_or_else(|e| die_notify(e)) == 1);
            let (start, slept) = (Instant::now(), sleeps());
            for round in 0..a.count {
                if round > 0 {
                    let n = pings.notify().unwrap_or_else(|e| die_notify(e));
                    if n != 1 {
                        die_verify(format!("round {round}: ping reached {n} listeners"));
                    }
                }
                let ev = answers.blocking_wait().unwrap_or_else(|e| die_listener(e));
                expect_one(&ev, round);
            }
            report_ping("event", a.strategy, a.count, start.elapsed(), slept);
        }
        PingRole::Responder => {
            // The answering notifier exists before the listener, so the
            // initiator's first ping (which waits for the listener) finds
            // it there.
            let answers = back
                .notifier_builder()
                .create()
                .unwrap_or_else(|e| die_event_port(e));
            let pings = listener(&there, a.strategy);
            for round in 0..a.count {
                let ev = pings.blocking_wait().unwrap_or_else(|e| die_listener(e));
                expect_one(&ev, round);
                let n = answers.notify().unwrap_or_else(|e| die_notify(e));
                if n != 1 {
                    die_verify(format!("round {round}: answer reached {n} listeners"));
                }
            }
            println!("RESULT role=ping side=responder count={}", a.count);
        }
    }
}

fn ping_pubsub(a: PingArgs) {
    a.pin();
    let node = node();
    let there = pubsub_named(&node, &format!("{}/there", a.service));
    let back = pubsub_named(&node, &format!("{}/back", a.service));
    let check = |s: &Sample<TestMsg>, from: u64, round: u64| {
        let m: TestMsg = **s;
        if !m.is_intact() || m.publisher != from || m.seq != round {
            die_verify(format!(
                "round {round}: expected seq {round} from {from}, got {m:?}"
            ));
        }
    };
    let send = |p: &Publisher<TestMsg>, from: u64, round: u64| {
        let n = p
            .send_copy(TestMsg::new(from, round))
            .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
        if n != 1 {
            die_verify(format!("round {round}: message reached {n} subscribers"));
        }
    };
    let publisher = |svc: &PubSubService<TestMsg>| {
        svc.publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e))
    };
    match a.role {
        PingRole::Initiator => {
            let answers = subscriber(&back, a.strategy);
            let pings = publisher(&there);
            poll_until(|| pings.subscriber_count() >= 1);
            let (start, slept) = (Instant::now(), sleeps());
            for round in 0..a.count {
                send(&pings, 0, round);
                let s = answers
                    .blocking_receive()
                    .unwrap_or_else(|e| die_receive(e));
                check(&s, 1, round);
            }
            report_ping("pubsub", a.strategy, a.count, start.elapsed(), slept);
        }
        PingRole::Responder => {
            let answers = publisher(&back);
            let pings = subscriber(&there, a.strategy);
            // The first ping comes when the initiator is ready: not counted.
            let mut slept = sleeps();
            if a.count > 0 {
                let s = pings.blocking_receive().unwrap_or_else(|e| die_receive(e));
                check(&s, 0, 0);
                drop(s);
                slept = sleeps();
                send(&answers, 1, 0);
            }
            for round in 1..a.count {
                let s = pings.blocking_receive().unwrap_or_else(|e| die_receive(e));
                check(&s, 0, round);
                drop(s);
                send(&answers, 1, round);
            }
            println!(
                "RESULT role=ping side=responder count={} sleeps={}",
                a.count,
                sleeps() - slept
            );
        }
    }
}

/// `slept`: [`sleeps`] when the timed loop began.
fn report_ping(transport: &str, strategy: Strategy, count: u64, elapsed: Duration, slept: u64) {
    println!(
        "RESULT role=ping side=initiator transport={transport} strategy={strategy:?} \
         count={count} elapsed_ms={} round_trip_ns={} sleeps={}",
        elapsed.as_millis(),
        elapsed.as_nanos() / u128::from(count.max(1)),
        sleeps() - slept
    );
}

// ---------------------------------------------------------------- waitset

fn waitset(a: WaitsetArgs) {
    let node = node();
    let events = event_named(&node, &a.events);
    let data = service::<TestMsg>(&node, &a.svc);
    let silent = pubsub_named(&node, &a.silent);
    let listener = listener(&events, Strategy::SpinThenPark);
    let sub = subscriber(&data, Strategy::SpinThenPark);
    let quiet = subscriber(&silent, Strategy::SpinThenPark);

    let start = Instant::now();
    let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
    let at_listener = ws
        .attach_listener(&listener)
        .unwrap_or_else(|e| die_waitset(e));
    let at_sub = ws
        .attach_subscriber(&sub)
        .unwrap_or_else(|e| die_waitset(e));
    let at_quiet = ws
        .attach_subscriber(&quiet)
        .unwrap_or_else(|e| die_waitset(e));
    let at_deadline = ws
        .attach_deadline(at_quiet, Duration::from_millis(a.deadline_ms))
        .unwrap_or_else(|e| die_waitset(e));
    let at_tick = ws.attach_interval(Duration::from_millis(a.interval_ms));
    touch(&a.ready_file);

    let mut counts = BTreeMap::new();
    let mut v = Verifier::default();
    let (mut notified, mut ticks, mut missed, mut quiet_ready, mut calls) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let min_span = Duration::from_millis(a.min_span_ms);
    loop {
        let outcome = ws
            .wait_and_process(|e| match e {
                WaitEvent::Ready(id) if id == at_listener => {
                    notified += account(&listener.try_wait(), &mut counts);
                }
                WaitEvent::Ready(id) if id == at_sub => {
                    while let Some(s) = receive_one(&sub) {
                        v.check(&s);
                    }
                }
                WaitEvent::Ready(id) if id == at_quiet => {
                    quiet_ready += 1;
                    while receive_one(&quiet).is_some() {}
                }
                WaitEvent::Tick(id) if id == at_tick => ticks += 1,
                WaitEvent::DeadlineMissed(id) if id == at_deadline => missed += 1,
                other => die_verify(format!("unexpected waitset event {other:?}")),
            })
            .unwrap_or_else(|e| die_waitset(e));
        calls += 1;
        match outcome {
            WaitOutcome::Processed(n) if n > 0 => {}
            other => die(
                exit::UNEXPECTED_WAKE,
                "UnexpectedOutcome",
                format!("wait_and_process returned {other:?}"),
            ),
        }
        if notified >= a.expect_events && v.total >= a.expect_samples && start.elapsed() >= min_span
        {
            break;
        }
    }
    let span = start.elapsed();
    touch(&a.done_file);
    println!(
        "RESULT role=waitset events={notified} counts={} samples={} seqs={} ticks={ticks} \
         deadline_missed={missed} silent_ready={quiet_ready} calls={calls} span_ms={}",
        id_counts(&counts),
        v.total,
        v.seqs(),
        span.as_millis()
    );
}

// ---------------------------------------------------------------- sigwait

fn sigwait(a: SigwaitArgs) {
    let node = node();
    let cycle = Duration::from_millis(a.cycle_ms);
    match a.kind {
        LoopKind::Node => {
            // The first wait installs the SIGINT/SIGTERM handlers; only then
            // may the test send a signal (before, it would kill us).
            if let Err(e) = node.wait(Duration::ZERO) {
                die(exit::UNEXPECTED_WAKE, "NodeWaitError", e);
            }
            touch(&a.ready_file);
            let mut cycles = 0u64;
            while node.wait(cycle).is_ok() {
                cycles += 1;
            }
            match node.wait(Duration::ZERO) {
                Err(NodeWaitError::TerminationRequest) => {}
                other => die(
                    exit::UNEXPECTED_WAKE,
                    "NodeWaitError",
                    format!("the loop ended, but a further wait returned {other:?}"),
                ),
            }
            println!("stopping: termination requested");
            println!("RESULT role=sigwait loop=node cycles={cycles}");
        }
        LoopKind::Waitset => {
            let events = event_named(&node, "it/sigwait");
            let listener = listener(&events, Strategy::SpinThenPark);
            // WaitSet::new installs the handlers.
            let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
            let at_listener = ws
                .attach_listener(&listener)
                .unwrap_or_else(|e| die_waitset(e));
            let tick = ws.attach_interval(cycle);
            touch(&a.ready_file);
            let mut ticks = 0u64;
            loop {
                let outcome = ws
                    .wait_and_process(|e| match e {
                        WaitEvent::Tick(id) if id == tick => ticks += 1,
                        WaitEvent::Ready(id) if id == at_listener => {
                            listener.try_wait();
                        }
                        other => die_verify(format!("unexpected waitset event {other:?}")),
                    })
                    .unwrap_or_else(|e| die_waitset(e));
                match outcome {
                    WaitOutcome::TerminationRequest => break,
                    WaitOutcome::Processed(_) => {}
                    WaitOutcome::TimedOut => die(
                        exit::UNEXPECTED_WAKE,
                        "UnexpectedOutcome",
                        "wait_and_process without timeout returned TimedOut",
                    ),
                }
            }
            println!("stopping: termination requested");
            println!("RESULT role=sigwait loop=waitset ticks={ticks}");
        }
        LoopKind::Subscriber | LoopKind::Listener => port_sigwait(a),
        LoopKind::Publisher => blocked_send_sigwait(a),
    }
}

/// A subscriber's or listener's blocking wait ended by SIGINT/SIGTERM.
fn port_sigwait(a: SigwaitArgs) {
    let node = NodeBuilder::new()
        .signal_handling(!a.no_signal_handling)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e));
    let short = Duration::from_millis(a.cycle_ms);
    // A first wait that sleeps installs the handlers (when the node handles
    // signals); only then may the test send one.
    let (kind, error) = if a.kind == LoopKind::Subscriber {
        let sub = subscriber(
            &pubsub_named(&node, "it/sigwait-sub"),
            Strategy::SpinThenPark,
        );
        if sub.receive_timeout(short).is_err() {
            die_verify("the first, timed wait failed".to_owned());
        }
        touch(&a.ready_file);
        let e = match sub.blocking_receive() {
            Ok(_) => die_verify("a sample came from nowhere".to_owned()),
            Err(e) => e,
        };
        if e != hako::ReceiveError::TerminationRequest {
            die_verify(format!("blocking_receive ended with {e:?}"));
        }
        // Later waits end at once while nothing is there.
        match sub.receive_timeout(Duration::from_secs(60)) {
            Err(hako::ReceiveError::TerminationRequest) => {}
            other => die_verify(format!("a further wait returned {other:?}")),
        }
        ("subscriber", e.to_string())
    } else {
        let l = listener(
            &event_named(&node, "it/sigwait-listen"),
            Strategy::SpinThenPark,
        );
        if l.timed_wait(short).is_err() {
            die_verify("the first, timed wait failed".to_owned());
        }
        touch(&a.ready_file);
        match l.blocking_wait() {
            Err(e @ ListenerError::TerminationRequest) => ("listener", e.to_string()),
            other => die_verify(format!("blocking_wait ended with {other:?}")),
        }
    };
    println!("stopping: {error}");
    println!("RESULT role=sigwait loop={kind}");
}

/// A send blocked by backpressure, ended by SIGINT/SIGTERM.
fn blocked_send_sigwait(a: SigwaitArgs) {
    let node = node();
    let svc = node
        .service_builder(&"it/sigwait-send".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(1)
        .open_or_create()
        .unwrap_or_else(|e| die(exit::FAILURE, "ServiceError", e));
    // A subscriber that never reads.
    let _stuck = svc
        .subscriber_builder()
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
    let publisher = svc
        .publisher_builder()
        .backpressure(BackpressureStrategy::Block)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    // A wait that sleeps installs the handlers; only then may the test
    // send a signal.
    if let Err(e) = node.wait(Duration::from_millis(1)) {
        die(exit::UNEXPECTED_WAKE, "NodeWaitError", e);
    }
    let first = publisher
        .send_copy(1)
        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
    touch(&a.ready_file);
    // The queue is full: this one waits, until the signal.
    let second = publisher
        .send_copy(2)
        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
    match node.wait(Duration::ZERO) {
        Err(NodeWaitError::TerminationRequest) => {}
        other => die_verify(format!("the send returned, but node.wait gave {other:?}")),
    }
    println!("stopping: termination requested");
    println!("RESULT role=sigwait loop=publisher first={first} second={second}");
}

// ---------------------------------------------------------------- zero-timeouts

fn zero_timeouts(a: ZeroArgs) {
    let node = node();
    let events = event_named(&node, &a.events);
    let data = service::<TestMsg>(&node, &a.svc);
    let listener = listener(&events, Strategy::SpinThenPark);
    let sub = subscriber(&data, Strategy::SpinThenPark);
    let mut ws = WaitSet::new().unwrap_or_else(|e| die_waitset(e));
    ws.attach_listener(&listener)
        .unwrap_or_else(|e| die_waitset(e));
    ws.attach_subscriber(&sub)
        .unwrap_or_else(|e| die_waitset(e));

    // Round 1: nothing is pending; every wait returns at once, empty.
    let t = Instant::now();
    let ev = listener
        .timed_wait(Duration::ZERO)
        .unwrap_or_else(|e| die_listener(e));
    let got = sub
        .receive_timeout(Duration::ZERO)
        .unwrap_or_else(|e| die_receive(e));
    let out = ws
        .wait_and_process_timeout(|_| {}, Duration::ZERO)
        .unwrap_or_else(|e| die_waitset(e));
    let idle_us = t.elapsed().as_micros();
    let idle = format!(
        "idle_listener={} idle_subscriber={} idle_waitset={out:?}",
        ev.len(),
        u8::from(got.is_some())
    );
    touch(&a.ready_file);

    // Round 2: another process notified and sent; zero timeouts take it.
    wait_for(&a.wait_file);
    let mut fired = 0;
    let out2 = ws
        .wait_and_process_timeout(|_| fired += 1, Duration::ZERO)
        .unwrap_or_else(|e| die_waitset(e));
    let ev = listener
        .timed_wait(Duration::ZERO)
        .unwrap_or_else(|e| die_listener(e));
    let mut counts = BTreeMap::new();
    account(&ev, &mut counts);
    let got = sub
        .receive_timeout(Duration::ZERO)
        .unwrap_or_else(|e| die_receive(e));
    let seq = got.map_or("none".to_owned(), |s| s.seq.to_string());
    println!(
        "RESULT role=zero-timeouts {idle} idle_us={idle_us} busy_waitset={out2:?} \
         busy_fired={fired} busy_listener={} busy_seq={seq}",
        id_counts(&counts)
    );
}

// ---------------------------------------------------------------- event-port

fn event_port(a: EventPortArgs) {
    let node = node();
    let svc = event_service(&node, &a.ev);
    let notifier = (a.port == EvPort::Notifier).then(|| {
        let mut b = svc.notifier_builder();
        if let Some(id) = a.default_id {
            b = b.default_event_id(EventId(id));
        }
        b.create().unwrap_or_else(|e| die_event_port(e))
    });
    let listener = (a.port == EvPort::Listener).then(|| listener(&svc, Strategy::SpinThenPark));
    touch(&a.ready_file);
    wait_for(&a.release_file);
    drop((notifier, listener));
    println!("RESULT role=event-port port={:?}", a.port);
}
