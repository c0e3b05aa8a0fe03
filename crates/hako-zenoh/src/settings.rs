//! A bridge's settings file (`hako-bridge --settings FILE`): TOML, with a
//! key for each of the program's flags (flags given on the command line
//! win). For a bridge run by a service manager, whose command line should
//! stay short, and for settings kept under version control.
//!
//! ```toml
//! services = ["robot/**"]
//! connect = ["tcp/10.0.0.2:7447"]
//! no_multicast_scouting = true
//! low_latency = ["robot/cmd"]   # or true: every service
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Services whose local ports the bridge polls: `true` (all), `false`
/// (none), or key expressions over their names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum LowLatency {
    /// Every bridged service, or none.
    All(bool),
    /// The services these key expressions select.
    Services(Vec<String>),
}

impl LowLatency {
    /// As [`BridgeOptions::low_latency`](crate::BridgeOptions::low_latency)
    /// takes it: key expressions (`**` for all).
    pub fn patterns(&self) -> Vec<String> {
        match self {
            Self::All(true) => vec!["**".to_owned()],
            Self::All(false) => Vec::new(),
            Self::Services(s) => s.clone(),
        }
    }
}

/// What a settings file may say; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The hako domain's configuration file.
    pub config: Option<PathBuf>,
    /// The domain's root directory.
    pub root: Option<PathBuf>,
    /// Services to bridge (key expressions).
    pub services: Vec<String>,
    /// The first chunk of every key expression.
    pub prefix: Option<String>,
    /// A Zenoh configuration file (JSON5).
    pub zenoh_config: Option<PathBuf>,
    /// Zenoh mode: peer, client or router.
    pub mode: Option<String>,
    /// Zenoh endpoints to connect to.
    pub connect: Vec<String>,
    /// Zenoh endpoints to listen on.
    pub listen: Vec<String>,
    /// No multicast scouting.
    pub no_multicast_scouting: Option<bool>,
    /// Milliseconds a forwarded request may wait for its stream's end.
    pub query_timeout: Option<u64>,
    /// Milliseconds between two looks for services that came or went.
    pub scan_interval: Option<u64>,
    /// Services whose local ports the bridge polls.
    pub low_latency: Option<LowLatency>,
}

impl Settings {
    /// Reads a settings file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the settings file {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("bad settings file {}: {e}", path.display()))
    }

    /// Parses settings from TOML text.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.message().to_owned() + &at(text, e.span()))
    }
}

/// Where in `text` a parse error is, as "line L, column C" (the text itself
/// is not repeated).
fn at(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(span) = span else {
        return String::new();
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!(" (line {line}, column {column})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_and_low_latency_takes_a_flag_or_services() {
        let s = Settings::parse(
            "services = [\"robot/**\"]\nconnect = [\"tcp/10.0.0.2:7447\"]\n\
             no_multicast_scouting = true\nquery_timeout = 500\nlow_latency = true\n",
        )
        .unwrap();
        assert_eq!(s.services, vec!["robot/**"]);
        assert_eq!(s.query_timeout, Some(500));
        assert_eq!(s.low_latency.unwrap().patterns(), vec!["**"]);
        let some = Settings::parse("low_latency = [\"robot/cmd\"]").unwrap();
        assert_eq!(some.low_latency.unwrap().patterns(), vec!["robot/cmd"]);
        let none = Settings::parse("low_latency = false").unwrap();
        assert!(none.low_latency.unwrap().patterns().is_empty());
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
    }

    #[test]
    fn an_unknown_key_or_a_wrong_type_is_an_error_that_says_where() {
        let e = Settings::parse("services = []\nlow_latnecy = true\n").unwrap_err();
        assert!(e.contains("low_latnecy") && e.contains("line 2"), "{e}");
        let e = Settings::parse("query_timeout = \"soon\"").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }
}
