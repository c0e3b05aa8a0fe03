//! What every command shares: the exit codes, the domain arguments and the
//! global `--json`, the error a command ends with, counted nouns, and the
//! flag SIGINT and SIGTERM raise. The bottom layer of the program: it
//! imports no other file of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Exit codes scripts can rely on.
pub mod exit {
    /// It worked.
    pub const OK: u8 = 0;
    /// It failed (the message says why).
    pub const FAILURE: u8 = 1;
    /// Bad arguments (clap uses it too).
    pub const USAGE: u8 = 2;
    /// The service does not exist.
    pub const NOT_FOUND: u8 = 3;
    /// Nothing came (or not enough peers) within `--timeout`.
    pub const TIMED_OUT: u8 = 4;
}

/// Which domain, and how to print: shared by the subcommands that use one.
#[derive(Debug, Clone, clap::Args)]
pub struct DomainArgs {
    /// Domain root directory (default: HAKO_ROOT, else HAKO_CONFIG's, else
    /// the user's own /dev/shm/hako-<uid>).
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<std::path::PathBuf>,
}

/// Whether `--json` was given (a global flag: before or after the
/// subcommand).
static JSON_OUTPUT: AtomicBool = AtomicBool::new(false);

/// Records the global `--json`: called once by `main`, before any command
/// runs.
pub fn set_json(json: bool) {
    JSON_OUTPUT.store(json, Ordering::Relaxed);
}

impl DomainArgs {
    /// Whether to print JSON (the global `--json`).
    pub fn json(&self) -> bool {
        // Relaxed: set once in main before any command runs.
        JSON_OUTPUT.load(Ordering::Relaxed)
    }

    /// The config: the environment's, with `--root` applied.
    pub fn config(&self) -> Result<hako::Config, CliError> {
        let cfg = hako::Config::from_env().map_err(|e| CliError::failure(e.to_string()))?;
        Ok(match &self.root {
            Some(r) => cfg.with_root(r),
            None => cfg,
        })
    }
}

/// A subcommand's failure: the exit code and what to tell the user.
#[derive(Debug)]
pub struct CliError {
    /// One of [`exit`].
    pub code: u8,
    /// The message (printed after `hako: error: `).
    pub message: String,
}

impl CliError {
    /// A failure ([`exit::FAILURE`]).
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            code: exit::FAILURE,
            message: message.into(),
        }
    }

    /// Bad arguments ([`exit::USAGE`]).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: exit::USAGE,
            message: message.into(),
        }
    }

    /// An I/O failure on the domain root.
    pub fn io(root: &std::path::Path, e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::PermissionDenied
            && e.to_string().contains(&*root.to_string_lossy())
        {
            // hako's refusal of a root names it already.
            return Self::failure(e.to_string());
        }
        Self::failure(format!("cannot read domain root {}: {e}", root.display()))
    }
}

/// `n` and the noun in its number: "1 port", "2 ports".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Raised by SIGINT or SIGTERM, for subcommands that run until stopped.
pub fn termination_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}
