//! The companion programs `hako` runs for commands whose libraries it does
//! not link (`hako bench` runs `hako-bench`, `hako bridge` runs
//! `hako-bridge`): found as the program an environment variable names, else
//! beside `hako` (where cargo builds and installs them), else on `PATH`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use crate::common::CliError;

/// A program `hako` hands a whole command over to.
pub struct Companion {
    /// Its file name (`hako-bench`).
    pub name: &'static str,
    /// The environment variable that may name it instead (`HAKO_BENCH`).
    pub env: &'static str,
    /// How to build it, for the error when it is missing.
    pub build: &'static str,
    /// What it does, for that error (`the benchmark suite`).
    pub what: &'static str,
    /// Its usage, shown by `--help` when the program is not there.
    pub usage: &'static str,
}

impl Companion {
    /// The program to run.
    pub fn program(&self) -> PathBuf {
        if let Some(p) = std::env::var_os(self.env).filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|d| d.join(self.name)));
        match beside {
            Some(p) if p.is_file() => p,
            _ => PathBuf::from(self.name),
        }
    }

    /// Replaces this process with the program run with `args` (its exit
    /// code is the command's); returns only if it cannot be started.
    pub fn exec(&self, args: &[OsString]) -> Result<(), CliError> {
        let program = self.program();
        let e = std::process::Command::new(&program).args(args).exec();
        let get = format!(
            "it is the program {}: `./scripts/install` (in hako's checkout) builds and \
             installs it with `hako` and the others, or build it alone with {}; put it beside \
             hako, on PATH, or name it in {}",
            self.name, self.build, self.env
        );
        if args.iter().any(|a| a == "--help" || a == "-h") {
            // The help says what the command is and how to get it.
            println!(
                "{}\n\n{} is not here ({}: {e}); {get}",
                self.usage,
                self.name,
                program.display()
            );
            return Ok(());
        }
        Err(CliError::failure(format!(
            "cannot run {} {} ({e}): {get}",
            self.what,
            program.display()
        )))
    }
}
