//! `hako list`, `hako nodes`, `hako inspect`, `hako clean` and
//! `hako monitor`: what a domain holds, from the outside.
//!
//! They read the domain's files through [`hako::inspect`] and never join it
//! (no node is created), so they work on a domain whose processes are all
//! gone, too. `clean` reclaims what dead processes left behind
//! ([`hako::reclaim_dead_nodes`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Args;
use hako::inspect::{self, DomainView, PortCounters, PortInfo, ServiceInfo};
use hako::{Pattern, ServiceName};
use serde_json::json;

use crate::common::{exit, CliError, DomainArgs};

/// How far the reading commands trust a domain root.
#[derive(Debug, Args)]
pub struct ReadTrust {
    /// Read a domain root that another user could have filled (say, as
    /// root, a user's domain): its owner and mode, and those of the
    /// directories above it, are not judged (links are still refused).
    /// Nothing is written or removed; `hako clean` has no such flag.
    #[arg(long)]
    untrusted: bool,
}

/// `hako list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

/// `hako nodes`.
#[derive(Debug, Args)]
pub struct NodesArgs {
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

/// `hako inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The service, e.g. `My/Funk/ServiceName`.
    service: String,
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

/// `hako clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only say what would be removed.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    domain: DomainArgs,
}

/// `hako monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Milliseconds between two reports.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    interval: u64,
    /// Stop after this many reports (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

/// The error of a domain root that does not exist: nothing of hako's ran
/// there, or the path is mistyped.
fn no_root(cfg: &hako::Config) -> CliError {
    CliError {
        code: exit::NOT_FOUND,
        message: format!(
            "no hako domain at {}: no hako program has used it yet (or the path is \
             mistyped; the root comes from --root, HAKO_ROOT or HAKO_CONFIG's `root`)",
            cfg.root.display()
        ),
    }
}

/// The domain root of `cfg`, held open for reading; one that does not
/// exist is an error ([`no_root`]), and one the user cannot trust is
/// refused unless `--untrusted`.
fn open_view(cfg: &hako::Config, trust: &ReadTrust) -> Result<DomainView, CliError> {
    opened_view(cfg, trust)?.ok_or_else(|| no_root(cfg))
}

/// [`open_view`], `None` if there is no root.
fn opened_view(cfg: &hako::Config, trust: &ReadTrust) -> Result<Option<DomainView>, CliError> {
    let opened = if trust.untrusted {
        DomainView::open_untrusted(cfg)
    } else {
        DomainView::open(cfg)
    };
    opened.map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied && !trust.untrusted {
            CliError::failure(format!(
                "{e}; to read it anyway, without changing anything, add --untrusted"
            ))
        } else {
            CliError::io(&cfg.root, e)
        }
    })
}

fn pattern_name(info: &ServiceInfo) -> &'static str {
    info.description.pattern.name()
}

fn payload_name(info: &ServiceInfo) -> String {
    match &info.description.pattern {
        Pattern::PublishSubscribe { payload, .. } => payload.type_name.clone(),
        Pattern::RequestResponse {
            request, response, ..
        } => format!("{} -> {}", request.type_name, response.type_name),
        _ => "-".into(),
    }
}

/// (first table's name, second table's name) for the pattern.
fn port_names(info: &ServiceInfo) -> (&'static str, &'static str) {
    match info.description.pattern {
        Pattern::PublishSubscribe { .. } => ("publishers", "subscribers"),
        Pattern::RequestResponse { .. } => ("clients", "servers"),
        _ => ("notifiers", "listeners"),
    }
}

/// Ports of live nodes (a dead node's ports stay in the tables until its
/// death is noticed or `hako clean` runs: they are not counted as there).
fn live(ports: &[inspect::PortInfo]) -> usize {
    ports.iter().filter(|p| p.node_alive).count()
}

/// Ports, of either kind, whose node is dead.
fn dead(s: &inspect::ServiceInfo) -> usize {
    s.publishers
        .iter()
        .chain(&s.subscribers)
        .filter(|p| !p.node_alive)
        .count()
}

/// Ids of the domain's bridge nodes (`hako-bridge`, see
/// `inspect::BRIDGE_NODE_NAME`), alive or not.
fn bridge_nodes(view: &DomainView) -> Vec<u64> {
    view.nodes()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.name == inspect::BRIDGE_NODE_NAME)
        .map(|n| n.id)
        .collect()
}

/// Whether a live port of the service belongs to a bridge: the service is
/// carried to and from other hosts (or made here for another host's).
fn bridged(s: &inspect::ServiceInfo, bridges: &[u64]) -> bool {
    s.publishers
        .iter()
        .chain(&s.subscribers)
        .any(|p| p.node_alive && bridges.contains(&p.node))
}

/// One service's line of `hako monitor`.
struct Rates {
    service: String,
    /// Ports of live processes (publishers, notifiers, clients).
    publishers: usize,
    /// Ports of live processes (subscribers, listeners, servers).
    subscribers: usize,
    /// Ports of dead processes not yet reclaimed.
    dead: usize,
    sent: f64,
    delivered: f64,
    /// Deliveries lost to overflow per second.
    dropped: f64,
    corrupted: usize,
}

/// Runs `hako list`.
pub fn list(a: ListArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let view = open_view(&cfg, &a.trust)?;
    let all = view.services().map_err(|e| CliError::io(&cfg.root, e))?;
    let bridges = bridge_nodes(&view);
    if a.domain.json() {
        let rows: Vec<_> = all
            .iter()
            .map(|r| match r {
                Ok(s) => json!({
                    "name": s.name,
                    "pattern": pattern_name(s),
                    "payload": payload_name(s),
                    port_names(s).0: live(&s.publishers),
                    port_names(s).1: live(&s.subscribers),
                    "dead_ports": dead(s),
                    "nodes": s.nodes.len(),
                    "bridged": bridged(s, &bridges),
                }),
                Err(e) => json!({ "error": e.to_string() }),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("JSON"));
        return Ok(());
    }
    if all.is_empty() {
        println!("no services in {}", cfg.root.display());
        return Ok(());
    }
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for r in &all {
        match r {
            Ok(s) => rows.push(vec![
                s.name.to_string(),
                pattern_name(s).to_string(),
                payload_name(s).to_string(),
                live(&s.publishers).to_string(),
                live(&s.subscribers).to_string(),
                dead(s).to_string(),
                s.nodes.len().to_string(),
                if bridged(s, &bridges) { "yes" } else { "" }.to_string(),
            ]),
            Err(e) => unreadable.push(format!("(unreadable) {e}")),
        }
    }
    crate::table::print(
        &[
            "SERVICE", "PATTERN", "PAYLOAD", "PUBS", "SUBS", "DEAD", "NODES", "BRIDGED",
        ],
        &rows,
    );
    for line in unreadable {
        println!("{line}");
    }
    println!("(events: PUBS = notifiers, SUBS = listeners; request/response: PUBS = clients, SUBS = servers;");
    println!(" DEAD: ports of dead processes, not yet reclaimed: `hako clean`;");
    println!(" BRIDGED: carried to and from other hosts by `hako bridge`)");
    Ok(())
}

/// Runs `hako nodes`.
pub fn nodes(a: NodesArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let nodes = open_view(&cfg, &a.trust)?
        .nodes()
        .map_err(|e| CliError::io(&cfg.root, e))?;
    if a.domain.json() {
        println!("{}", serde_json::to_string_pretty(&nodes).expect("JSON"));
        return Ok(());
    }
    if nodes.is_empty() {
        println!("no nodes in {}", cfg.root.display());
        return Ok(());
    }
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            vec![
                // Ids are hex everywhere; a letter first keeps them left.
                format!("{:016x}", n.id),
                n.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                if n.alive { "alive" } else { "dead" }.to_owned(),
                if n.name.is_empty() {
                    "(unnamed)".to_owned()
                } else {
                    n.name.to_string()
                },
            ]
        })
        .collect();
    crate::table::print(&["NODE", "PID", "STATE", "NAME"], &rows);
    if nodes.iter().any(|n| !n.alive) {
        println!("dead nodes are reclaimed by `hako clean` (or by the next process that joins)");
    }
    Ok(())
}

fn port_line(p: &PortInfo) -> String {
    let state = if p.retired {
        "left, samples queued"
    } else if p.node_alive {
        "alive"
    } else {
        "DEAD"
    };
    if let Some(what) = &p.corrupted {
        return format!(
            "{:016x}  node {:016x} ({state})  CORRUPTED data segment: {what}; \
             its peers ignore it",
            p.id, p.node
        );
    }
    let counters = match p.counters {
        PortCounters::Publisher {
            sent,
            deliveries,
            dropped,
            loans,
            chunks_in_use,
            pool_size,
        } => format!(
            "sent {sent}, delivered {deliveries}, dropped {dropped}, loans {loans}, \
             chunks in use {chunks_in_use}/{pool_size}"
        ),
        PortCounters::Subscriber { received, dropped } => {
            let lossy = if p.lossy {
                " (lossy: never waited for)"
            } else {
                ""
            };
            format!("received {received}, lost to overflow {dropped}{lossy}")
        }
        PortCounters::Client {
            requests_sent,
            requests_in_use,
            pool_size,
        } => format!(
            "requests sent {requests_sent}, in flight or held {requests_in_use}/{pool_size}"
        ),
        PortCounters::Server {
            requests_received,
            responses_sent,
            responses_in_use,
            pool_size,
        } => format!(
            "requests received {requests_received}, responses sent {responses_sent}, \
             responses in use {responses_in_use}/{pool_size}"
        ),
        _ => String::new(),
    };
    format!("{:016x}  node {:016x} ({state})  {counters}", p.id, p.node)
}

/// Runs `hako inspect`.
pub fn inspect(a: InspectArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let name = ServiceName::new(&a.service).map_err(|e| CliError::usage(e.to_string()))?;
    let view = open_view(&cfg, &a.trust)?;
    let info = match view.service(&name) {
        Ok(i) => i,
        Err(hako::ServiceError::DoesNotExist(_)) => {
            return Err(CliError {
                code: exit::NOT_FOUND,
                message: format!(
                    "no service {:?} in {} (`hako list` shows what is there)",
                    a.service,
                    cfg.root.display()
                ),
            })
        }
        Err(e) => return Err(CliError::failure(e.to_string())),
    };
    if a.domain.json() {
        println!("{}", serde_json::to_string_pretty(&info).expect("JSON"));
        return Ok(());
    }
    let (first, second) = port_names(&info);
    println!("service   {}", info.name);
    println!("pattern   {}", pattern_name(&info));
    // Settings as the config file and the JSON spell them (`key = value`),
    // sizes as `hako sub` prints them.
    match &info.description.pattern {
        Pattern::PublishSubscribe { payload, qos } => {
            println!(
                "payload   {} ({} B, align {})",
                payload_name(&info),
                payload.size,
                payload.align
            );
            println!(
                "qos       subscriber_max_buffer_size = {}, subscriber_max_borrowed_samples = {}, \
                 history_size = {}, overflow = {}, max_publishers = {}, max_subscribers = {}, \
                 max_nodes = {}",
                qos.subscriber_max_buffer_size,
                qos.subscriber_max_borrowed_samples,
                qos.history_size,
                json!(qos.overflow).as_str().unwrap_or("?"),
                qos.max_publishers,
                qos.max_subscribers,
                qos.max_nodes
            );
        }
        Pattern::Event { qos } => println!(
            "qos       max_notifiers = {}, max_listeners = {}, max_nodes = {}, event_id_max = {}",
            qos.max_notifiers, qos.max_listeners, qos.max_nodes, qos.event_id_max
        ),
        Pattern::RequestResponse {
            request,
            response,
            qos,
        } => {
            println!(
                "request   {} ({} B, align {})",
                request.type_name, request.size, request.align
            );
            println!(
                "response  {} ({} B, align {})",
                response.type_name, response.size, response.align
            );
            println!(
                "qos       max_requests_in_flight = {}, max_response_buffer = {}, \
                 max_clients = {}, max_servers = {}, max_nodes = {}",
                qos.max_requests_in_flight,
                qos.max_response_buffer,
                qos.max_clients,
                qos.max_servers,
                qos.max_nodes
            );
        }
        _ => {}
    }
    println!("directory {}", info.dir.display());
    println!("nodes     {}", info.nodes.len());
    for (title, ports) in [(first, &info.publishers), (second, &info.subscribers)] {
        println!("{title} ({})", ports.len());
        for p in ports {
            println!("  {}", port_line(p));
        }
    }
    Ok(())
}

/// Runs `hako clean`.
pub fn clean(a: CleanArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    if matches!(DomainView::open_untrusted(&cfg), Ok(None)) {
        return Err(no_root(&cfg));
    }
    let r = hako::reclaim_dead_nodes(&cfg, a.dry_run).map_err(|e| CliError::io(&cfg.root, e))?;
    if a.domain.json() {
        let v = json!({
            "dry_run": a.dry_run,
            "dead_nodes": r.dead_nodes.iter().map(|n| json!({
                "id": format!("{:016x}", n.id), "pid": n.pid, "name": n.name,
            })).collect::<Vec<_>>(),
            "ports": r.ports,
            "services": r.services,
            "files": r.files,
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    let verb = if a.dry_run { "would remove" } else { "removed" };
    if r.is_empty() {
        println!("nothing to clean in {}", cfg.root.display());
        return Ok(());
    }
    for n in &r.dead_nodes {
        println!(
            "dead node {:016x} (pid {}, {:?})",
            n.id,
            n.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
            n.name
        );
    }
    println!(
        "{verb}: {} of dead nodes, {} nobody uses, {}",
        crate::common::count(r.ports, "port", "ports"),
        crate::common::count(r.services.len(), "service", "services"),
        crate::common::count(r.files.len(), "file", "files")
    );
    for f in &r.files {
        println!("  {}", f.display());
    }
    Ok(())
}

/// Runs `hako monitor`.
pub fn monitor(a: MonitorArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let interval = Duration::from_millis(a.interval);
    let term = crate::common::termination_flag();
    // Per port: sent (or requests, responses), deliveries, dropped.
    let mut last: BTreeMap<(String, u64), (u64, u64, u64)> = BTreeMap::new();
    let mut last_at = Instant::now();
    let mut reports = 0u64;
    let mut primed = false;
    loop {
        let now = Instant::now();
        let secs = now.duration_since(last_at).as_secs_f64().max(1e-9);
        last_at = now;
        let all = open_view(&cfg, &a.trust)?
            .services()
            .map_err(|e| CliError::io(&cfg.root, e))?;
        let mut rows = Vec::new();
        let mut seen = BTreeMap::new();
        for s in all.iter().flatten() {
            let (mut sent_rate, mut deliv_rate, mut dropped) = (0.0, 0.0, 0.0);
            for p in &s.publishers {
                if let PortCounters::Publisher {
                    sent,
                    deliveries,
                    dropped: d,
                    ..
                } = p.counters
                {
                    let key = (s.name.clone(), p.id);
                    if let Some((ls, ld, ldr)) = last.get(&key) {
                        sent_rate += sent.saturating_sub(*ls) as f64 / secs;
                        deliv_rate += deliveries.saturating_sub(*ld) as f64 / secs;
                        dropped += d.saturating_sub(*ldr) as f64 / secs;
                    }
                    seen.insert(key, (sent, deliveries, d));
                }
            }
            // Request/response: requests per second as sent, responses per
            // second (ends of streams included) as delivered.
            for p in s.publishers.iter().chain(&s.subscribers) {
                let (count, requests) = match p.counters {
                    PortCounters::Client { requests_sent, .. } => (requests_sent, true),
                    PortCounters::Server { responses_sent, .. } => (responses_sent, false),
                    _ => continue,
                };
                let key = (s.name.clone(), p.id);
                if let Some((ls, _, _)) = last.get(&key) {
                    let rate = count.saturating_sub(*ls) as f64 / secs;
                    if requests {
                        sent_rate += rate;
                    } else {
                        deliv_rate += rate;
                    }
                }
                seen.insert(key, (count, 0, 0));
            }
            let corrupted = s
                .publishers
                .iter()
                .chain(&s.subscribers)
                .filter(|p| p.corrupted.is_some())
                .count();
            rows.push(Rates {
                service: s.name.to_string(),
                publishers: live(&s.publishers),
                subscribers: live(&s.subscribers),
                dead: dead(s),
                sent: sent_rate,
                delivered: deliv_rate,
                dropped,
                corrupted,
            });
        }
        last = seen;
        // Rates need two samples: the first one only primes them, and the
        // first report comes one interval later (so `--count 1` gives real
        // rates too).
        if primed {
            if a.domain.json() {
                let v: Vec<_> = rows
                    .iter()
                    .map(|r| {
                        json!({"service": r.service, "publishers": r.publishers,
                               "subscribers": r.subscribers, "dead_ports": r.dead,
                               "sent_per_s": r.sent, "delivered_per_s": r.delivered,
                               "dropped_per_s": r.dropped, "corrupted_ports": r.corrupted})
                    })
                    .collect();
                println!("{}", serde_json::to_string(&v).expect("JSON"));
            } else {
                let cells: Vec<Vec<String>> = rows
                    .iter()
                    .map(|r| {
                        vec![
                            r.service.clone(),
                            r.publishers.to_string(),
                            r.subscribers.to_string(),
                            r.dead.to_string(),
                            format!("{:.1}", r.sent),
                            format!("{:.1}", r.delivered),
                            format!("{:.1}", r.dropped),
                        ]
                    })
                    .collect();
                crate::table::print(
                    &[
                        "SERVICE",
                        "PUBS",
                        "SUBS",
                        "DEAD",
                        "SENT/S",
                        "DELIVERED/S",
                        "DROPPED/S",
                    ],
                    &cells,
                );
                for r in rows.iter().filter(|r| r.corrupted > 0) {
                    println!(
                        "  {}: {} port(s) with a CORRUPTED data segment: see `hako inspect {}`",
                        r.service, r.corrupted, r.service
                    );
                }
                if rows.is_empty() {
                    println!("(no services in {})", cfg.root.display());
                }
                if all
                    .iter()
                    .flatten()
                    .any(|s| matches!(s.description.pattern, Pattern::RequestResponse { .. }))
                {
                    println!("(request/response: SENT = requests, DELIVERED = responses)");
                }
                println!();
            }
            reports += 1;
            if a.count.is_some_and(|c| reports >= c) {
                return Ok(());
            }
        }
        primed = true;
        let until = Instant::now() + interval;
        while Instant::now() < until {
            if term.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10).min(interval));
        }
    }
}
