//! `hako-bridge`: joins a hako domain to a Zenoh network, so that its
//! services work across hosts (see the crate's documentation). `hako
//! bridge ARGS` runs it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use hako_zenoh::{Bridge, BridgeOptions, Settings, ZenohOptions};

/// Carries hako services between hosts over Zenoh.
///
/// Run one on each host (for each domain) whose services should meet. It
/// announces the selected local services to the Zenoh network, makes the
/// services other hosts announce appear here, and carries their traffic
/// both ways, until SIGINT or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "hako-bridge", version)]
struct Args {
    /// A settings file (TOML): a key for each flag below, which win over
    /// it (see docs/bridge.md).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
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
    /// The first chunk of every key expression used on Zenoh [default:
    /// hako].
    #[arg(long)]
    prefix: Option<String>,
    /// A Zenoh configuration file (JSON5); the flags below go on top.
    #[arg(long, value_name = "FILE")]
    zenoh_config: Option<PathBuf>,
    /// Zenoh mode: peer, client or router.
    #[arg(long)]
    mode: Option<String>,
    /// A Zenoh endpoint to connect to (`tcp/10.0.0.2:7447`); repeatable.
    /// Without --listen, the bridge then listens nowhere.
    #[arg(long, value_name = "ENDPOINT")]
    connect: Vec<String>,
    /// A Zenoh endpoint to listen on (`tcp/10.0.0.1:7447`; `tcp/0.0.0.0:7447`
    /// is every interface); repeatable.
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// Do not look for peers by multicast (only `--connect` finds them).
    #[arg(long)]
    no_multicast_scouting: bool,
    /// How long a request forwarded to another host may wait for the end
    /// of its responses, in milliseconds [default: 10000].
    #[arg(long, value_name = "MS")]
    query_timeout: Option<u64>,
    /// How often to look for services that came or went, in milliseconds
    /// [default: 200].
    #[arg(long, value_name = "MS")]
    scan_interval: Option<u64>,
    /// Poll the local ports of the services PATTERN selects (all without
    /// PATTERN) instead of sleeping between messages, yielding the CPU
    /// between looks: the lowest latency for small messages, at the cost
    /// of one CPU kept busy per such service; repeatable.
    #[arg(long, value_name = "PATTERN", num_args = 0..=1, default_missing_value = "**")]
    low_latency: Vec<String>,
}

fn main() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("HAKO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a terminal: not in a log file or a journal.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if let Err(e) = run(Args::parse()) {
        eprintln!("hako-bridge: {e}");
        std::process::exit(1);
    }
}

/// The flags, on top of the settings file's keys.
fn options(a: Args) -> Result<BridgeOptions, String> {
    let s = match &a.settings {
        Some(p) => Settings::from_file(p)?,
        None => Settings::default(),
    };
    let or = |flag: Vec<String>, file: Vec<String>| if flag.is_empty() { file } else { flag };
    let mut cfg = match a.config.or(s.config) {
        Some(p) => hako::Config::from_file(&p).map_err(|e| e.to_string())?,
        None => hako::Config::from_env().map_err(|e| e.to_string())?,
    };
    if let Some(root) = a.root.or(s.root) {
        cfg = cfg.with_root(root);
    }
    let mut options = BridgeOptions::new(cfg);
    options.services = or(a.services, s.services);
    if let Some(p) = a.prefix.or(s.prefix) {
        options.prefix = p;
    }
    if let Some(ms) = a.query_timeout.or(s.query_timeout) {
        options.query_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = a.scan_interval.or(s.scan_interval) {
        options.scan_interval = Duration::from_millis(ms.max(1));
    }
    options.low_latency = or(
        a.low_latency,
        s.low_latency.map(|l| l.patterns()).unwrap_or_default(),
    );
    options.zenoh = ZenohOptions {
        config_file: a.zenoh_config.or(s.zenoh_config),
        mode: a.mode.or(s.mode),
        connect: or(a.connect, s.connect),
        listen: or(a.listen, s.listen),
        no_multicast_scouting: a.no_multicast_scouting || s.no_multicast_scouting == Some(true),
    };
    Ok(options)
}

fn run(a: Args) -> Result<(), String> {
    let bridge = Bridge::new(options(a)?).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    tracing::info!(domain = %bridge.domain(), "hako-bridge started");
    bridge.run(&stop).map_err(|e| e.to_string())
}
