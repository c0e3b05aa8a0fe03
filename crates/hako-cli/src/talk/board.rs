//! `hako board get|set|watch`: a blackboard's entries from a terminal.
//! Values are numbers for the primitive types and arrays of them, hex for
//! any other (`values.rs`).

use std::time::Duration;

use clap::{Args, Subcommand};
use hako::{BlackboardService, EntryDescription, Node, ServiceName, TypeDetails};
use serde_json::json;

use super::open::{node, open_error, service_name};
use super::payload::{hex, parse_hex};
use super::values::{decode, encode};
use crate::common::{CliError, DomainArgs};

/// `hako board`.
#[derive(Debug, Args)]
pub struct BoardArgs {
    #[command(subcommand)]
    cmd: BoardCmd,
}

#[derive(Debug, Subcommand)]
enum BoardCmd {
    /// Print entries with their versions (all, or the keys given).
    Get(GetArgs),
    /// Publish a new value of an entry, as its writer (refused while
    /// another writer lives).
    Set(SetArgs),
    /// Print an entry's value each time it changes, until Ctrl-C (sleeps
    /// between changes: no polling).
    Watch(WatchArgs),
}

#[derive(Debug, Args)]
struct GetArgs {
    /// The blackboard service.
    service: String,
    /// Keys to print (default: every entry).
    keys: Vec<String>,
    #[command(flatten)]
    domain: DomainArgs,
}

#[derive(Debug, Args)]
struct SetArgs {
    /// The blackboard service.
    service: String,
    /// The entry.
    key: String,
    /// The value: a number (or numbers separated by commas for an array)
    /// for a primitive type; leave it out and give --hex for any type.
    value: Option<String>,
    /// The value's bytes in hex (`0a000000`), for any type.
    #[arg(long, conflicts_with = "value")]
    hex: Option<String>,
    #[command(flatten)]
    domain: DomainArgs,
}

#[derive(Debug, Args)]
struct WatchArgs {
    /// The blackboard service.
    service: String,
    /// The entry.
    key: String,
    /// Exit after this many changes (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    #[command(flatten)]
    domain: DomainArgs,
}

/// Runs `hako board`.
pub fn board(a: BoardArgs) -> Result<(), CliError> {
    match a.cmd {
        BoardCmd::Get(a) => get(a),
        BoardCmd::Set(a) => set(a),
        BoardCmd::Watch(a) => watch(a),
    }
}

/// The blackboard `name`, opened (the tool never creates one: it cannot
/// make up entries).
fn open(node: &Node, name: &ServiceName) -> Result<BlackboardService, CliError> {
    node.service_builder(name)
        .blackboard()
        .open()
        .map_err(|e| open_error(name, e))
}

/// The entry `key` of `board`, or an error listing the keys there are.
fn described<'a>(
    board: &'a BlackboardService,
    key: &str,
) -> Result<&'a EntryDescription, CliError> {
    board
        .entries()
        .iter()
        .find(|e| e.key == key)
        .ok_or_else(|| {
            let keys: Vec<&str> = board.entries().iter().map(|e| e.key.as_str()).collect();
            CliError::usage(format!(
                "blackboard {:?} has no entry {key:?}; its entries: {}",
                board.name().as_str(),
                keys.join(", ")
            ))
        })
}

fn details(e: &EntryDescription) -> TypeDetails {
    TypeDetails {
        type_name: e.value.type_name.clone(),
        size: e.value.size,
        align: e.value.align,
        slice: false,
    }
}

fn failure(e: impl std::fmt::Display) -> CliError {
    CliError::failure(e.to_string())
}

/// One entry's value as a line, or as a JSON object.
fn show(json: bool, key: &str, type_name: &str, version: u64, bytes: &[u8]) {
    let value = decode(type_name, bytes);
    if json {
        println!(
            "{}",
            json!({ "key": key, "version": version, "type": type_name, "value": value, "hex": hex(bytes, "") })
        );
    } else {
        let shown = value.map_or_else(|| hex(bytes, " "), |v| v.to_string());
        println!("{key}  version {version}  {type_name}  {shown}");
    }
}

fn get(a: GetArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "board")?;
    let board = open(&node, &name)?;
    let keys: Vec<String> = if a.keys.is_empty() {
        board.entries().iter().map(|e| e.key.clone()).collect()
    } else {
        a.keys.clone()
    };
    let reader = board.reader_builder().create().map_err(failure)?;
    for key in &keys {
        let d = described(&board, key)?;
        let entry = reader.entry_described(key, details(d)).map_err(failure)?;
        let mut bytes = vec![0; entry.size()];
        let version = entry.get_bytes(&mut bytes).map_err(failure)?;
        show(a.domain.json(), key, &d.value.type_name, version, &bytes);
    }
    Ok(())
}

fn set(a: SetArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "board")?;
    let board = open(&node, &name)?;
    let d = described(&board, &a.key)?;
    let bytes = match (&a.value, &a.hex) {
        (Some(v), _) => encode(&d.value.type_name, d.value.size, v)?,
        (None, Some(h)) => parse_hex(h)?,
        (None, None) => {
            return Err(CliError::usage("give a value, or its bytes with --hex"));
        }
    };
    let writer = board.writer_builder().create().map_err(failure)?;
    let mut entry = writer
        .entry_described(&a.key, details(d))
        .map_err(|e| match e {
            e @ hako::BlackboardError::WrongSize { .. } => CliError::usage(e.to_string()),
            e => failure(e),
        })?;
    let version = entry.update_bytes(&bytes).map_err(|e| match e {
        e @ hako::BlackboardError::WrongSize { .. } => CliError::usage(e.to_string()),
        e => failure(e),
    })?;
    show(a.domain.json(), &a.key, &d.value.type_name, version, &bytes);
    Ok(())
}

fn watch(a: WatchArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "board")?;
    let board = open(&node, &name)?;
    let d = described(&board, &a.key)?.clone();
    let reader = board
        .reader_builder()
        .wait_strategy(hako::WaitStrategy::Park)
        .create()
        .map_err(failure)?;
    let entry = reader
        .entry_described(&a.key, details(&d))
        .map_err(failure)?;
    let term = crate::common::termination_flag();
    let mut bytes = vec![0; entry.size()];
    let version = entry.get_bytes(&mut bytes).map_err(failure)?;
    show(a.domain.json(), &a.key, &d.value.type_name, version, &bytes);
    let mut changes = 0;
    while a.count.is_none_or(|c| changes < c) {
        // Relaxed: a flag the signal handler sets; nothing else rides on it.
        if term.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        // A slice at a time, to see Ctrl-C.
        if entry
            .wait_for_change(Some(Duration::from_millis(100)))
            .map_err(failure)?
            .is_some()
        {
            let version = entry.get_bytes(&mut bytes).map_err(failure)?;
            show(a.domain.json(), &a.key, &d.value.type_name, version, &bytes);
            changes += 1;
        }
    }
    Ok(())
}
