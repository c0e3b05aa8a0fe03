//! `hako clean`: what dead processes left behind, reclaimed.

use clap::Args;
use hako::inspect::DomainView;
use serde_json::json;

use super::view::no_root;
use crate::common::{CliError, DomainArgs};

/// `hako clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only say what would be removed.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    domain: DomainArgs,
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
