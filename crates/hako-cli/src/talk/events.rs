//! `hako notify` and `hako listen`: events from a terminal.

use std::time::{Duration, Instant};

use clap::Args;
use hako::{EventId, EventService, Node, ServiceName};

use super::open::{node, open_error, seconds, service_name, CreateArg};
use crate::common::{exit, CliError, DomainArgs};

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
    /// Before sending, wait until this many listeners are there (a bridge
    /// counts as one while another domain listens).
    #[arg(long, default_value_t = 0)]
    wait_listeners: usize,
    /// Give up waiting for listeners after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
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

/// Runs `hako notify`.
pub fn notify(a: NotifyArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "notify")?;
    let svc = event_service(&node, &name, a.create)?;
    let notifier = svc
        .notifier_builder()
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let timeout = seconds(a.timeout, "--timeout")?;
    let start = Instant::now();
    while notifier.listener_count() < a.wait_listeners {
        if start.elapsed() > timeout {
            return Err(CliError {
                code: exit::TIMED_OUT,
                message: format!(
                    "{} there after {timeout:?}, {} wanted",
                    crate::common::count(notifier.listener_count(), "listener", "listeners"),
                    a.wait_listeners
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..a.repeat {
        let n = notifier
            .notify_with_id(EventId(a.id))
            .map_err(|e| CliError::failure(e.to_string()))?;
        if a.domain.json() {
            println!("{}", serde_json::json!({ "id": a.id, "listeners": n }));
        } else {
            println!(
                "event {} to {}",
                a.id,
                crate::common::count(n, "listener", "listeners")
            );
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
    let term = crate::common::termination_flag();
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
                if a.domain.json() {
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
