//! `hako pub`, `hako sub`, `hako notify` and `hako listen`: talking to a
//! service from a terminal, for debugging and scripts.
//!
//! `pub` and `sub` use services whose payload is a byte slice (`[u8]`); a
//! service of another payload type is refused with the type error the
//! library gives. Every command opens an existing service and creates one
//! (with the default settings) only with `--create`: a service a command
//! made up would later refuse the program it belongs to, whose settings
//! differ. Messages are the
//! command-line arguments, or the lines of standard input; `sub` prints each
//! payload as UTF-8 (invalid bytes replaced), or as hex with `--hex`.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use clap::Args;
use hako::{EventId, EventService, Node, NodeBuilder, PubSubService, ServiceName, WaitStrategy};

use crate::{exit, CliError, DomainArgs};

/// `hako pub`.
#[derive(Debug, Args)]
pub struct PubArgs {
    /// The service (payload `[u8]`).
    service: String,
    /// Messages to send, one sample each; none: the lines of stdin.
    messages: Vec<String>,
    /// Send each message this many times.
    #[arg(long, default_value_t = 1)]
    repeat: u64,
    /// Milliseconds to wait between two samples.
    #[arg(long, default_value_t = 0)]
    interval: u64,
    /// Before sending, wait until this many subscribers are connected.
    #[arg(long, default_value_t = 0)]
    wait_subscribers: usize,
    /// Give up waiting for subscribers after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Largest message in bytes.
    #[arg(long, default_value_t = 65536)]
    max_len: usize,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// `hako sub`.
#[derive(Debug, Args)]
pub struct SubArgs {
    /// The service (payload `[u8]`).
    service: String,
    /// Exit after this many samples (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Exit with code 4 if no sample came for this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Print payloads as hex instead of UTF-8.
    #[arg(long)]
    hex: bool,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// `hako notify`.
#[derive(Debug, Args)]
pub struct NotifyArgs {
    /// The event service.
    service: String,
    /// Event id to send.
    #[arg(long, default_value_t = 0)]
    id: u64,
    /// Send it this many times.
    #[arg(long, default_value_t = 1)]
    repeat: u64,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// `hako listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// The event service.
    service: String,
    /// Exit after this many wake-ups (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Exit with code 4 if no event came for this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// Whether a command may create the service it names.
#[derive(Debug, Clone, Copy, Args)]
pub struct CreateArg {
    /// Create the service, with the default settings, if it does not exist
    /// (without it a missing service is an error: start the program that
    /// owns the service first).
    #[arg(long)]
    pub create: bool,
}

/// The error of opening `name`: a missing service says how to go on.
pub(crate) fn open_error(name: &ServiceName, e: hako::ServiceError) -> CliError {
    match e {
        hako::ServiceError::DoesNotExist(_) => CliError {
            code: exit::NOT_FOUND,
            message: format!(
                "service {:?} does not exist; start the program that creates it, or \
                 pass --create to make it with the default settings",
                name.as_str()
            ),
        },
        e => CliError::failure(e.to_string()),
    }
}

/// The `[u8]` publish/subscribe service `name`: opened, or made when
/// `create` allows it.
fn bytes_service(
    node: &Node,
    name: &ServiceName,
    create: CreateArg,
) -> Result<PubSubService<[u8]>, CliError> {
    let b = node.service_builder(name).publish_subscribe::<[u8]>();
    if create.create {
        b.open_or_create()
    } else {
        b.open()
    }
    .map_err(|e| open_error(name, e))
}

/// The event service `name`: opened, or made when `create` allows it.
fn event_service(
    node: &Node,
    name: &ServiceName,
    create: CreateArg,
) -> Result<EventService, CliError> {
    let b = node.service_builder(name).event();
    if create.create {
        b.open_or_create()
    } else {
        b.open()
    }
    .map_err(|e| open_error(name, e))
}

pub(crate) fn node(d: &DomainArgs, role: &str) -> Result<Node, CliError> {
    let cfg = d.config()?;
    NodeBuilder::new()
        .name(&format!("hako-{role}"))
        .map_err(|e| CliError::failure(e.to_string()))?
        .config(&cfg)
        // The commands watch their own termination flag between waits.
        .signal_handling(false)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))
}

fn service_name(s: &str) -> Result<ServiceName, CliError> {
    ServiceName::new(s).map_err(|e| CliError::usage(e.to_string()))
}

pub(crate) fn seconds(s: f64, what: &str) -> Result<Duration, CliError> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| CliError::usage(format!("{what} must be a non-negative number of seconds")))
}

/// Runs `hako pub`.
pub fn publish(a: PubArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "pub")?;
    let svc = bytes_service(&node, &name, a.create)?;
    let publisher = svc
        .publisher_builder()
        .max_slice_len(a.max_len)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let timeout = seconds(a.timeout, "--timeout")?;
    let start = Instant::now();
    while publisher.subscriber_count() < a.wait_subscribers {
        if start.elapsed() > timeout {
            return Err(CliError {
                code: exit::TIMED_OUT,
                message: format!(
                    "{} subscribers connected after {:?}, {} wanted",
                    publisher.subscriber_count(),
                    timeout,
                    a.wait_subscribers
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let send = |msg: &[u8]| -> Result<(), CliError> {
        for _ in 0..a.repeat {
            let n = publisher
                .send_slice_copy(msg)
                .map_err(|e| CliError::failure(e.to_string()))?;
            if a.domain.json {
                println!(
                    "{}",
                    serde_json::json!({ "bytes": msg.len(), "subscribers": n })
                );
            }
            if a.interval > 0 {
                std::thread::sleep(Duration::from_millis(a.interval));
            }
        }
        Ok(())
    };
    let too_long = |len: usize| {
        CliError::usage(format!(
            "message of {len} bytes is longer than --max-len {}",
            a.max_len
        ))
    };
    if a.messages.is_empty() {
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(|e| CliError::failure(format!("reading stdin: {e}")))?;
            if line.len() > a.max_len {
                return Err(too_long(line.len()));
            }
            send(line.as_bytes())?;
        }
    } else {
        if let Some(m) = a.messages.iter().find(|m| m.len() > a.max_len) {
            return Err(too_long(m.len()));
        }
        for m in &a.messages {
            send(m.as_bytes())?;
        }
    }
    // Samples already queued stay readable after we leave.
    Ok(())
}

/// Runs `hako sub`.
pub fn subscribe(a: SubArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let timeout = a.timeout.map(|t| seconds(t, "--timeout")).transpose()?;
    let node = node(&a.domain, "sub")?;
    let svc = bytes_service(&node, &name, a.create)?;
    let sub = svc
        .subscriber_builder()
        .wait_strategy(WaitStrategy::Park)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let term = crate::termination_flag();
    let mut got = 0u64;
    let mut last = Instant::now();
    let mut out = std::io::stdout().lock();
    while a.count.is_none_or(|c| got < c) {
        if term.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        match sub.receive_timeout(Duration::from_millis(100)) {
            Ok(Some(s)) => {
                got += 1;
                last = Instant::now();
                let text = if a.hex {
                    s.iter().map(|b| format!("{b:02x}")).collect::<String>()
                } else {
                    String::from_utf8_lossy(&s).into_owned()
                };
                let line = if a.domain.json {
                    serde_json::json!({ "publisher": format!("{:016x}", s.publisher_id()), "bytes": s.len(), "payload": text })
                        .to_string()
                } else {
                    text
                };
                writeln!(out, "{line}")
                    .and_then(|()| out.flush())
                    .map_err(|e| CliError::failure(format!("writing stdout: {e}")))?;
            }
            Ok(None) | Err(hako::ReceiveError::PublishersGone(_)) => {}
            Err(e) => return Err(CliError::failure(e.to_string())),
        }
        if let Some(t) = timeout {
            if last.elapsed() > t {
                return Err(CliError {
                    code: exit::TIMED_OUT,
                    message: format!("no sample on {:?} for {t:?} ({got} received)", a.service),
                });
            }
        }
    }
    Ok(())
}

/// Runs `hako notify`.
pub fn notify(a: NotifyArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "notify")?;
    let svc = event_service(&node, &name, a.create)?;
    let notifier = svc
        .notifier_builder()
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    for _ in 0..a.repeat {
        let n = notifier
            .notify_with_id(EventId(a.id))
            .map_err(|e| CliError::failure(e.to_string()))?;
        if a.domain.json {
            println!("{}", serde_json::json!({ "id": a.id, "listeners": n }));
        } else {
            println!("event {} to {n} listeners", a.id);
        }
    }
    Ok(())
}

/// Runs `hako listen`.
pub fn listen(a: ListenArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let timeout = a.timeout.map(|t| seconds(t, "--timeout")).transpose()?;
    let node = node(&a.domain, "listen")?;
    let svc = event_service(&node, &name, a.create)?;
    let listener = svc
        .listener_builder()
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let term = crate::termination_flag();
    let mut got = 0u64;
    let mut last = Instant::now();
    while a.count.is_none_or(|c| got < c) {
        if term.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let events = match listener.timed_wait(Duration::from_millis(100)) {
            Ok(e) => e,
            Err(hako::ListenerError::NotifiersGone(_)) => Vec::new(),
            Err(e) => return Err(CliError::failure(e.to_string())),
        };
        if !events.is_empty() {
            got += 1;
            last = Instant::now();
            for (id, n) in events {
                if a.domain.json {
                    println!("{}", serde_json::json!({ "id": id.value(), "count": n }));
                } else {
                    println!("event {} x{n}", id.value());
                }
            }
        }
        if let Some(t) = timeout {
            if last.elapsed() > t {
                return Err(CliError {
                    code: exit::TIMED_OUT,
                    message: format!("no event on {:?} for {t:?}", a.service),
                });
            }
        }
    }
    Ok(())
}
