//! `hako list` and `hako nodes`: the services and the nodes of a domain.

use clap::Args;
use hako::inspect::{self, DomainView};
use hako::{Change, Watcher};
use serde_json::json;

use super::view::{dead, live, open_view, pattern_name, payload_name, port_names, ReadTrust};
use crate::common::{CliError, DomainArgs};

/// `hako list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Then print each change of the domain as it happens (services
    /// created and removed; nodes and ports that come, leave, die and are
    /// reclaimed), until Ctrl-C; with --json, only the changes, one JSON
    /// object a line, after a first line `{"watching": ROOT}` printed once
    /// the watch is set.
    #[arg(long)]
    watch: bool,
    /// With --watch: stop after this many changes.
    #[arg(long, requires = "watch")]
    count: Option<u64>,
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

/// A change as `hako list --watch` prints it.
fn change_line(c: &Change) -> String {
    let port = |p: &hako::PortChange, what: &str| {
        format!(
            "{what}: {} {:016x} of {} (node {:016x})",
            p.role.name(),
            p.port,
            p.service,
            p.node
        )
    };
    match c {
        Change::ServiceCreated { service, pattern } => {
            format!("service created: {service} ({})", pattern.replace('_', "/"))
        }
        Change::ServiceRemoved { service } => format!("service removed: {service}"),
        Change::NodeJoined { node, pid, name } => format!(
            "node joined: {node:016x} ({name}, pid {})",
            pid.map_or_else(|| "?".to_owned(), |p| p.to_string())
        ),
        Change::NodeLeft { node } => format!("node left: {node:016x}"),
        Change::NodeDied { node } => format!("node DIED: {node:016x}"),
        Change::NodeReclaimed { node } => format!("node reclaimed: {node:016x}"),
        Change::PortAdded(p) => port(p, "port added"),
        Change::PortRemoved(p) => port(p, "port removed"),
        Change::PortDied(p) => port(p, "port DIED"),
        Change::PortReclaimed(p) => port(p, "port reclaimed"),
        c => format!("{c:?}"),
    }
}

/// `hako list --watch`: the changes, as they happen.
fn watch(a: &ListArgs, cfg: &hako::Config) -> Result<(), CliError> {
    if a.trust.untrusted() {
        return Err(CliError::usage(
            "--watch reads only a domain root it trusts: leave out --untrusted",
        ));
    }
    let mut watcher = Watcher::new(cfg).map_err(|e| CliError::io(&cfg.root, e))?;
    if a.domain.json() {
        // Said once the watch is set: what follows is every change.
        println!("{}", json!({ "watching": cfg.root }));
        let _ = std::io::Write::flush(&mut std::io::stdout());
    }
    let term = crate::common::termination_flag();
    let mut seen = 0u64;
    while !term.load(std::sync::atomic::Ordering::Relaxed) {
        let changes = watcher
            .wait(Some(std::time::Duration::from_millis(100)))
            .map_err(|e| CliError::io(&cfg.root, e))?;
        for c in changes {
            if a.domain.json() {
                println!("{}", serde_json::to_string(&c).expect("JSON"));
            } else {
                println!("{}", change_line(&c));
            }
            seen += 1;
            if a.count.is_some_and(|n| seen >= n) {
                return Ok(());
            }
        }
        let _ = std::io::Write::flush(&mut std::io::stdout());
    }
    Ok(())
}

/// Runs `hako list`.
pub fn list(a: ListArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    if a.watch && a.domain.json() {
        return watch(&a, &cfg);
    }
    show(&a, &cfg)?;
    if a.watch {
        println!();
        watch(&a, &cfg)?;
    }
    Ok(())
}

/// The list, as a table or JSON.
fn show(a: &ListArgs, cfg: &hako::Config) -> Result<(), CliError> {
    let view = open_view(cfg, &a.trust)?;
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
    println!(" blackboards: PUBS = its writer, SUBS = readers, PAYLOAD = its entries (`hako inspect` lists them);");
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
