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
//! Synchronisation with the test and with other helpers goes through the
//! library (subscriber and publisher counts) and through signal files that
//! the test names (`--ready-file`, `--wait-file`, ...): a helper creates a
//! file to say it reached a point, and polls for a file to wait for one.
//! The domain root comes from `HAKO_ROOT` (via `Config::from_env`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hako::{
    BackpressureStrategy, LoanError, Node, NodeBuilder, OverflowPolicy, Payload, PubSubService,
    Publisher, ReceiveError, Sample, ServiceError, ServiceName, Subscriber,
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
}

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
    /// ImpostorMsg: named "TestMsg", but 72 bytes.
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
    /// Print every send's return value (deliveries=1,1,0,...).
    #[arg(long)]
    print_deliveries: bool,
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
