//! The event roles: `notify`, `listen` and `event-port` (a port of an event
//! service, for the error cases).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use hako::{EventId, EventService, Node};

use crate::errors::{die_event_port, die_listener, die_notify, die_service, die_verify};
use crate::plumbing::{
    account, id_counts, listener, node, service_name, touch, wait_for, Mode, Strategy,
};

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

#[derive(Args, Debug)]
pub struct NotifyArgs {
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
pub struct ListenArgs {
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

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum EvPort {
    None,
    Notifier,
    Listener,
}

#[derive(Args, Debug)]
pub struct EventPortArgs {
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

// ---------------------------------------------------------------- notify

pub fn notify(a: NotifyArgs) {
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

pub fn listen(a: ListenArgs) {
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

// ---------------------------------------------------------------- event-port

pub fn event_port(a: EventPortArgs) {
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
