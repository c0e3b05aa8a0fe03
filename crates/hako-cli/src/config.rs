//! `hako config show`: the configuration in effect, and where each value
//! came from (the built-in default, the file named by `HAKO_CONFIG`,
//! `HAKO_ROOT`, or `--root`).

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::common::{CliError, DomainArgs};

/// `hako config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the configuration in effect, each value with where it came
    /// from.
    Show(ShowArgs),
}

#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    domain: DomainArgs,
}

/// Runs `hako config`.
pub fn run(a: ConfigArgs) -> Result<(), CliError> {
    match a.command {
        ConfigCommand::Show(s) => show(s),
    }
}

/// The keys the file sets: its top level, and its `[defaults]` table.
fn file_keys(path: Option<&std::path::Path>) -> Result<(toml::Table, toml::Table), CliError> {
    let Some(path) = path else {
        return Ok((toml::Table::new(), toml::Table::new()));
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::failure(format!("cannot read {}: {e}", path.display())))?;
    let mut top: toml::Table = text
        .parse()
        // The parser's message without the text it quotes (the file may
        // have been named by mistake: /etc/shadow must not be shown).
        .map_err(|e: toml::de::Error| {
            CliError::failure(format!(
                "{}: not a config file: {}",
                path.display(),
                e.message()
            ))
        })?;
    let defaults = match top.remove("defaults") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    Ok((top, defaults))
}

fn show(a: ShowArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let path = std::env::var_os(hako::config::CONFIG_ENV).map(std::path::PathBuf::from);
    let (top, defaults) = file_keys(path.as_deref())?;
    let from_file = |set: bool| match (&path, set) {
        (Some(p), true) => format!("file {}", p.display()),
        _ => "default".to_owned(),
    };
    let root_source = if a.domain.root.is_some() {
        "--root".to_owned()
    } else if std::env::var_os(hako::config::ROOT_ENV).is_some() {
        hako::config::ROOT_ENV.to_owned()
    } else {
        from_file(top.contains_key("root"))
    };
    let mut rows: Vec<(String, Value, String)> = vec![
        ("root".into(), json!(cfg.root), root_source),
        (
            "group".into(),
            json!(cfg.group),
            from_file(top.contains_key("group")),
        ),
    ];
    let values = serde_json::to_value(&cfg.defaults).expect("the defaults serialise");
    for (key, value) in values.as_object().expect("a table") {
        rows.push((
            format!("defaults.{key}"),
            value.clone(),
            from_file(defaults.contains_key(key)),
        ));
    }
    if a.domain.json() {
        let v: Map<String, Value> = rows
            .into_iter()
            .map(|(k, v, s)| (k, json!({ "value": v, "source": s })))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|(k, v, _)| k.len() + v.to_string().len())
        .max()
        .unwrap_or(0)
        + 4;
    for (k, v, s) in rows {
        let shown = if v.is_null() {
            "(unset)".to_owned()
        } else {
            v.to_string()
        };
        let left = format!("{k} = {shown}");
        println!("{left:<width$}# {s}");
    }
    Ok(())
}
