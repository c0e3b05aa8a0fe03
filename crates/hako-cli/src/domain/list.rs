//! `hako list` and `hako nodes`: the services and the nodes of a domain.

use clap::Args;
use hako::inspect::{self, DomainView};
use serde_json::json;

use super::view::{dead, live, open_view, pattern_name, payload_name, port_names, ReadTrust};
use crate::common::{CliError, DomainArgs};

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
