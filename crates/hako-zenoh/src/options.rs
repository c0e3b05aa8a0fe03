//! What a bridge is told: which domain, which services, which Zenoh.

use std::path::PathBuf;
use std::time::Duration;

/// Zenoh's side of a bridge, as the `hako-bridge` flags give it.
#[derive(Debug, Clone, Default)]
pub struct ZenohOptions {
    /// A Zenoh configuration file (JSON5), read first.
    pub config_file: Option<PathBuf>,
    /// `peer`, `client` or `router`.
    pub mode: Option<String>,
    /// Endpoints to connect to (`tcp/192.168.1.2:7447`).
    pub connect: Vec<String>,
    /// Endpoints to listen on (`tcp/0.0.0.0:7447`). None given: with
    /// `connect` endpoints, the bridge listens nowhere (unless the
    /// configuration file says where); without, where Zenoh's defaults
    /// say (every interface, so that peers found by scouting can connect).
    pub listen: Vec<String>,
    /// Turns multicast scouting off (then only `connect` finds peers).
    pub no_multicast_scouting: bool,
}

impl ZenohOptions {
    /// The Zenoh configuration: the file's (or Zenoh's defaults), then each
    /// flag given on top.
    pub fn config(&self) -> Result<zenoh::Config, String> {
        let mut c = match &self.config_file {
            Some(p) => zenoh::Config::from_file(p)
                .map_err(|e| format!("cannot read the Zenoh configuration {}: {e}", p.display()))?,
            None => zenoh::Config::default(),
        };
        // Where the file (or Zenoh's defaults) say to listen.
        let default_listen = endpoints(&c) == endpoints(&zenoh::Config::default());
        let mut set = |key: &str, value: String| {
            c.insert_json5(key, &value)
                .map_err(|e| format!("bad Zenoh setting {key} = {value}: {e}"))
        };
        if let Some(m) = &self.mode {
            if !matches!(m.as_str(), "peer" | "client" | "router") {
                return Err(format!(
                    "unknown Zenoh mode {m:?}: use peer, client or router"
                ));
            }
            set("mode", json_string(m))?;
        }
        if !self.connect.is_empty() {
            set("connect/endpoints", json_list(&self.connect))?;
        }
        if !self.listen.is_empty() {
            set("listen/endpoints", json_list(&self.listen))?;
        } else if !self.connect.is_empty() && default_listen {
            // Listen only where asked: a bridge that connects need not be
            // reachable (Zenoh's default is every interface).
            set("listen/endpoints", "[]".to_owned())?;
        }
        if self.no_multicast_scouting {
            set("scouting/multicast/enabled", "false".to_owned())?;
        }
        Ok(c)
    }
}

/// The listen endpoints of configuration `c`, as JSON (per mode, or one
/// list).
fn endpoints(c: &zenoh::Config) -> Option<String> {
    c.get_json("listen/endpoints").ok()
}

/// Where a session of configuration `c` listens: its endpoints for its
/// mode (Zenoh's defaults apply: `peer`).
pub(crate) fn listening(c: &zenoh::Config) -> Vec<String> {
    let mode = c
        .get_json("mode")
        .ok()
        .and_then(|m| serde_json::from_str::<Option<String>>(&m).ok().flatten())
        .unwrap_or_else(|| "peer".to_owned());
    let Some(v) = endpoints(c).and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok())
    else {
        return Vec::new();
    };
    let list = match &v {
        serde_json::Value::Object(per_mode) => per_mode.get(&mode).cloned(),
        other => Some(other.clone()),
    };
    list.and_then(|l| serde_json::from_value::<Vec<String>>(l).ok())
        .unwrap_or_default()
}

/// Whether endpoint `e` listens on every interface (`0.0.0.0`, `[::]`).
pub(crate) fn every_interface(e: &str) -> bool {
    let addr = e.split_once('/').map_or(e, |(_, a)| a);
    addr.starts_with("0.0.0.0:") || addr.starts_with("[::]:")
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn json_list(items: &[String]) -> String {
    serde_json::Value::Array(
        items
            .iter()
            .map(|s| serde_json::Value::String(s.clone()))
            .collect(),
    )
    .to_string()
}

/// Everything a bridge needs.
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    /// The local hako domain.
    pub hako: hako::Config,
    /// Which services to bridge: key expressions over service names
    /// (`robot/**`, `*/camera`); none means all.
    pub services: Vec<String>,
    /// The first chunk of every key expression the bridge uses (`hako`).
    pub prefix: String,
    /// The Zenoh side.
    pub zenoh: ZenohOptions,
    /// How often the bridge looks for services that came or went.
    pub scan_interval: Duration,
    /// How long a request forwarded to another host waits for responses,
    /// and a description for its answer.
    pub query_timeout: Duration,
    /// Services whose local ports the bridge polls instead of sleeping
    /// between messages (yielding the CPU between looks), as key
    /// expressions over their names (`**`: all): the lowest latency for
    /// small messages, at the cost of a CPU kept busy by each such
    /// service's waiting thread (see docs/bridge.md). None by default.
    pub low_latency: Vec<String>,
}

impl BridgeOptions {
    /// Defaults for the domain `hako`: every service, prefix `hako`,
    /// Zenoh's default configuration.
    pub fn new(hako: hako::Config) -> Self {
        Self {
            hako,
            services: Vec::new(),
            prefix: "hako".to_owned(),
            zenoh: ZenohOptions::default(),
            scan_interval: Duration::from_millis(200),
            query_timeout: Duration::from_secs(10),
            low_latency: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_zenoh_settings() {
        let o = ZenohOptions {
            mode: Some("peer".into()),
            connect: vec!["tcp/127.0.0.1:7447".into()],
            listen: vec!["tcp/127.0.0.1:0".into()],
            no_multicast_scouting: true,
            ..Default::default()
        };
        let c = o.config().unwrap();
        let text = format!("{c}");
        assert!(text.contains("127.0.0.1:7447"), "{text}");
        let bad = ZenohOptions {
            mode: Some("server".into()),
            ..Default::default()
        };
        assert!(bad.config().unwrap_err().contains("unknown Zenoh mode"));
        let missing = ZenohOptions {
            config_file: Some("/nonexistent/zenoh.json5".into()),
            ..Default::default()
        };
        assert!(missing.config().unwrap_err().contains("cannot read"));
    }

    #[test]
    fn a_bridge_listens_only_where_asked() {
        let default = ZenohOptions::default().config().unwrap();
        let everywhere = listening(&default);
        assert!(
            !everywhere.is_empty() && everywhere.iter().all(|e| every_interface(e)),
            "{everywhere:?}"
        );
        let connecting = ZenohOptions {
            connect: vec!["tcp/127.0.0.1:7447".into()],
            ..Default::default()
        };
        assert_eq!(
            listening(&connecting.config().unwrap()),
            Vec::<String>::new()
        );
        let both = ZenohOptions {
            connect: vec!["tcp/127.0.0.1:7447".into()],
            listen: vec!["tcp/127.0.0.1:7448".into()],
            ..Default::default()
        };
        assert_eq!(
            listening(&both.config().unwrap()),
            vec!["tcp/127.0.0.1:7448"]
        );
        assert!(!every_interface("tcp/127.0.0.1:7448"));
        assert!(every_interface("tcp/0.0.0.0:7447") && every_interface("tcp/[::]:0"));
    }
}
