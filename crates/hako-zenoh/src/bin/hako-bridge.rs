//! `hako-bridge`: joins a hako domain to a Zenoh network, so that its
//! services work across hosts (see the crate's documentation). `hako
//! bridge ARGS` runs it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use hako_zenoh::{Bridge, BridgeOptions, ZenohOptions};

/// Carries hako services between hosts over Zenoh.
///
/// Run one on each host (for each domain) whose services should meet. It
/// announces the selected local services to the Zenoh network, makes the
/// services other hosts announce appear here, and carries their traffic
/// both ways, until SIGINT or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "hako-bridge", version)]
struct Args {
    /// The hako domain's configuration file (default: `$HAKO_CONFIG`, else
    /// the built-in defaults).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The domain's root directory (overrides the configuration).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Services to bridge, as key expressions over their names (`robot/**`,
    /// `*/camera`); repeat for more. Default: all.
    #[arg(long = "service", value_name = "PATTERN")]
    services: Vec<String>,
    /// The first chunk of every key expression used on Zenoh.
    #[arg(long, default_value = "hako")]
    prefix: String,
    /// A Zenoh configuration file (JSON5); the flags below go on top.
    #[arg(long, value_name = "FILE")]
    zenoh_config: Option<PathBuf>,
    /// Zenoh mode: peer, client or router.
    #[arg(long)]
    mode: Option<String>,
    /// A Zenoh endpoint to connect to (`tcp/10.0.0.2:7447`); repeatable.
    #[arg(long, value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// A Zenoh endpoint to listen on (`tcp/0.0.0.0:7447`); repeatable.
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// Do not look for peers by multicast (only `--connect` finds them).
    #[arg(long)]
    no_multicast_scouting: bool,
    /// How long a request forwarded to another host may wait for the end
    /// of its responses, in milliseconds.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    query_timeout: u64,
    /// How often to look for services that came or went, in milliseconds.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    scan_interval: u64,
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HAKO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run(Args::parse()) {
        eprintln!("hako-bridge: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<(), String> {
    let mut cfg = match &a.config {
        Some(p) => hako::Config::from_file(p).map_err(|e| e.to_string())?,
        None => hako::Config::from_env().map_err(|e| e.to_string())?,
    };
    if let Some(root) = a.root {
        cfg = cfg.with_root(root);
    }
    let mut options = BridgeOptions::new(cfg);
    options.services = a.services;
    options.prefix = a.prefix;
    options.query_timeout = Duration::from_millis(a.query_timeout);
    options.scan_interval = Duration::from_millis(a.scan_interval.max(1));
    options.zenoh = ZenohOptions {
        config_file: a.zenoh_config,
        mode: a.mode,
        connect: a.connect,
        listen: a.listen,
        no_multicast_scouting: a.no_multicast_scouting,
    };
    let bridge = Bridge::new(options).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    tracing::info!(domain = %bridge.domain(), "hako-bridge started");
    bridge.run(&stop).map_err(|e| e.to_string())
}
