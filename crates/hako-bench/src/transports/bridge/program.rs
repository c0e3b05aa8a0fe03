//! The `hako-bridge` program (crate `hako-zenoh`): where it is, and the
//! processes of it a row runs.
//!
//! The program is `$HAKO_BRIDGE` if that is set, else `hako-bridge` beside
//! the running program (where cargo builds it: `target/release`), else the
//! first on `PATH`, as `hako bridge` finds it. When there is none, the
//! `hako-bridge` rows are skipped with a message that says how to build it.
//!
//! The leader starts a row's two bridges and stops them when its side of
//! the row is dropped, whatever happened (SIGTERM, then SIGKILL after a
//! grace period). They die with the thread that started them too
//! (`PR_SET_PDEATHSIG`), so a leader killed outright leaves none running.
//! Each writes its log (level `warn`, or `$HAKO_LOG`) to a file of the row,
//! whose end a failure quotes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use rustix::thread::CpuSet;

use crate::error::Result;

/// The environment variable that names the program.
pub const BRIDGE_ENV: &str = "HAKO_BRIDGE";

/// The program's file name.
pub const BRIDGE_PROGRAM: &str = "hako-bridge";

/// How to build it, for the messages.
pub const BUILD_IT: &str = "build it with `cargo build --release -p hako-zenoh` (./scripts/bench \
                            does), or name it in $HAKO_BRIDGE";

/// How long a stopped bridge may take to exit before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// How often bridges look for services that came or went, in ms (their
/// default is 200: a shorter look gets a row's link up sooner).
const SCAN_INTERVAL_MS: &str = "50";

/// The `hako-bridge` program to run, or why there is none (see
/// [`crate::sys::program::find`]).
pub fn find() -> Result<PathBuf, String> {
    crate::sys::program::find(BRIDGE_ENV, BRIDGE_PROGRAM, BUILD_IT)
}

/// What one bridge of a row is told.
#[derive(Debug, Clone)]
pub(crate) struct BridgeSpec {
    /// Which bridge, in messages (`domain A`).
    pub what: &'static str,
    /// The domain's root.
    pub root: PathBuf,
    /// The first chunk of its key expressions.
    pub prefix: String,
    /// The port it listens on (127.0.0.1).
    pub listen: u16,
    /// The port of the bridge it connects to, if any.
    pub connect: Option<u16>,
    /// The CPUs it may run on (`None`: those of the thread starting it).
    pub cpus: Option<CpuSet>,
    /// Where its log goes.
    pub log: PathBuf,
    /// It polls its local ports (`--low-latency`).
    pub low_latency: bool,
}

/// One running bridge.
#[derive(Debug)]
struct BridgeProc {
    what: &'static str,
    child: Child,
    log: PathBuf,
}

/// The bridges of a row: stopped, and waited for, when dropped.
#[derive(Debug, Default)]
pub(crate) struct Bridges {
    procs: Vec<BridgeProc>,
}

impl Bridges {
    /// Starts `program` for each of `specs`, in order.
    pub(crate) fn start(program: &Path, specs: &[BridgeSpec]) -> Result<Self> {
        let mut bridges = Self::default();
        for spec in specs {
            let child = spawn(program, spec)
                .map_err(|e| format!("cannot start {} ({}): {e}", program.display(), spec.what))?;
            bridges.procs.push(BridgeProc {
                what: spec.what,
                child,
                log: spec.log.clone(),
            });
        }
        Ok(bridges)
    }

    /// An error if a bridge has exited, with the end of its log.
    pub(crate) fn check_running(&mut self) -> Result<()> {
        for p in &mut self.procs {
            if let Some(status) = p.child.try_wait()? {
                return Err(format!(
                    "the bridge of {} exited ({status}); its log ends:\n{}",
                    p.what,
                    log_tail(&p.log)
                )
                .into());
            }
        }
        Ok(())
    }

    /// The end of every bridge's log, for an error.
    pub(crate) fn logs(&self) -> String {
        self.procs
            .iter()
            .map(|p| format!("log of the bridge of {}:\n{}", p.what, log_tail(&p.log)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Bridges {
    fn drop(&mut self) {
        // All asked at once, so they shut down side by side.
        for p in &mut self.procs {
            if let Ok(None) = p.child.try_wait() {
                if let Some(pid) = i32::try_from(p.child.id()).ok().and_then(Pid::from_raw) {
                    let _ = kill_process(pid, Signal::TERM);
                }
            }
        }
        let end = Instant::now() + GRACE;
        for p in &mut self.procs {
            while Instant::now() < end && matches!(p.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if let Ok(None) = p.child.try_wait() {
                let _ = p.child.kill();
            }
            let _ = p.child.wait();
        }
    }
}

/// Starts one bridge.
fn spawn(program: &Path, spec: &BridgeSpec) -> std::io::Result<Child> {
    let log = std::fs::File::create(&spec.log)?;
    let mut cmd = Command::new(program);
    cmd.arg("--root")
        .arg(&spec.root)
        .args(["--prefix", &spec.prefix])
        .args(["--mode", "peer", "--no-multicast-scouting"])
        .args(["--listen", &super::common::endpoint(spec.listen)])
        .args(["--scan-interval", SCAN_INTERVAL_MS]);
    if let Some(port) = spec.connect {
        cmd.args(["--connect", &super::common::endpoint(port)]);
    }
    if spec.low_latency {
        cmd.arg("--low-latency");
    }
    if std::env::var_os("HAKO_LOG").is_none() {
        cmd.env("HAKO_LOG", OsString::from("warn"));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    crate::sys::program::tie_to_parent(&mut cmd, spec.cpus);
    cmd.spawn()
}

/// The last lines of a log file.
fn log_tail(path: &Path) -> String {
    const LINES: usize = 12;
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LINES)..];
            if tail.is_empty() {
                "(empty)".to_owned()
            } else {
                tail.join("\n")
            }
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_says_how_to_build_it() {
        // A name that is no file: the message names the fix. (The variable
        // is read by this test only; no other test of this crate sets it.)
        let e = std::env::var_os(BRIDGE_ENV);
        if e.is_none() {
            let why = find().err().unwrap_or_default();
            // Found beside the test or on PATH: nothing to check here.
            if !why.is_empty() {
                assert!(why.contains("cargo build --release -p hako-zenoh"), "{why}");
            }
        }
        assert!(log_tail(Path::new("/nonexistent/log")).contains("cannot read"));
    }
}
