//! Test-side harness: a private domain per test, helper processes under a
//! watchdog, and the parsing of what the helpers print.
//!
//! ```no_run
//! use hako_tests::harness::Domain;
//! let d = Domain::new("example", "/path/to/hako-test-helper");
//! let sub = d.spawn("sub", &["subscribe", "--expect", "10"]);
//! let publ = d.spawn("pub", &["publish", "--count", "10", "--wait-subscribers", "1", "--linger"]);
//! let out = d.wait_all(vec![sub, publ]);
//! assert_eq!(out[0].result().get("seqs"), "0:0-9");
//! d.finish(); // asserts that the domain root is empty, then removes it
//! ```
//!
//! Every helper's stdout and stderr go to files in the test's temp directory
//! (no pipes that could fill up and stall a child). A [`Proc`] that is
//! dropped while its child still runs kills the child, so a failing test
//! never leaves processes behind; [`Domain`]'s drop removes the root and the
//! temp directory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Generous bound on a helper's lifetime (and on any wait of a test). Only
/// hangs exceed it; it is not a statement about speed.
pub const WATCHDOG: Duration = Duration::from_secs(120);

/// A private domain: a root under /dev/shm for the helpers' `HAKO_ROOT`, and
/// a temp directory for synchronisation files and captured output.
#[derive(Debug)]
pub struct Domain {
    /// The test's name (part of both paths).
    pub name: String,
    /// The domain root (`/dev/shm/hako-it-<name>-<pid>`).
    pub root: PathBuf,
    /// Temp directory for files that are not part of the domain.
    pub tmp: PathBuf,
    helper: PathBuf,
}

impl Domain {
    /// A fresh domain for the test `name`; `helper` is the helper binary
    /// (`env!("CARGO_BIN_EXE_hako-test-helper")` in a test).
    pub fn new(name: &str, helper: &str) -> Self {
        let pid = std::process::id();
        let root = PathBuf::from(format!("/dev/shm/hako-it-{name}-{pid}"));
        let tmp = std::env::temp_dir().join(format!("hako-it-{name}-{pid}"));
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&root).expect("create the domain root");
        std::fs::create_dir_all(&tmp).expect("create the temp directory");
        Self {
            name: name.to_owned(),
            root,
            tmp,
            helper: PathBuf::from(helper),
        }
    }

    /// A node of this domain, in the test's own process.
    pub fn node(&self) -> hako::Node {
        hako::NodeBuilder::new()
            .config(&hako::Config::default().with_root(&self.root))
            .create()
            .expect("create a node of the test domain")
    }

    /// A path in the temp directory (for synchronisation files).
    pub fn file(&self, name: &str) -> PathBuf {
        self.tmp.join(name)
    }

    /// A path in the temp directory, as a string for a helper's arguments.
    pub fn arg(&self, name: &str) -> String {
        self.file(name).display().to_string()
    }

    /// Creates an (empty) file in the temp directory: a signal to helpers.
    pub fn touch(&self, name: &str) {
        std::fs::write(self.file(name), b"").expect("create a signal file");
    }

    /// Starts the helper with `args`, with `HAKO_ROOT` set to the domain root,
    /// under the default watchdog.
    pub fn spawn(&self, label: &str, args: &[&str]) -> Proc {
        self.spawn_bounded(label, args, WATCHDOG)
    }

    /// As [`spawn`](Self::spawn), with another watchdog bound.
    pub fn spawn_bounded(&self, label: &str, args: &[&str], bound: Duration) -> Proc {
        self.spawn_bin(&self.helper, label, args, bound)
    }

    /// As [`spawn_bounded`](Self::spawn_bounded), for another helper
    /// binary than the domain's own (a test that needs two kinds).
    pub fn spawn_bin(
        &self,
        bin: impl AsRef<std::ffi::OsStr>,
        label: &str,
        args: &[&str],
        bound: Duration,
    ) -> Proc {
        let mut cmd = Command::new(bin);
        cmd.env("HAKO_ROOT", &self.root).env_remove("HAKO_CONFIG");
        self.spawn_command(label, cmd, args, bound)
    }

    /// Starts `cmd` (a helper, or a wrapper that runs one) with `args` under
    /// the watchdog, its output captured like [`spawn`](Self::spawn)'s. The
    /// caller sets its environment.
    pub fn spawn_command(
        &self,
        label: &str,
        mut cmd: Command,
        args: &[&str],
        bound: Duration,
    ) -> Proc {
        let out = self.tmp.join(format!("{label}.stdout"));
        let err = self.tmp.join(format!("{label}.stderr"));
        let child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("create stdout file"))
            .stderr(std::fs::File::create(&err).expect("create stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        Proc {
            label: label.to_owned(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            child: Some(child),
            exited: None,
            started: Instant::now(),
            bound,
            stdout: out,
            stderr: err,
        }
    }

    /// Waits until every process in `procs` has exited. Fails the test at
    /// once if one exits with a non-zero code (the others are killed), or if
    /// one outlives its watchdog bound. Returns the outcomes in input order.
    pub fn wait_all(&self, mut procs: Vec<Proc>) -> Vec<Outcome> {
        let mut outcomes: Vec<Option<Outcome>> = procs.iter().map(|_| None).collect();
        loop {
            let mut running = false;
            for (i, p) in procs.iter_mut().enumerate() {
                if outcomes[i].is_some() {
                    continue;
                }
                match p.poll() {
                    Some(o) => {
                        if o.code != Some(0) {
                            panic!("{}", o.describe("exited with a failure"));
                        }
                        outcomes[i] = Some(o);
                    }
                    None => {
                        p.check_watchdog();
                        running = true;
                    }
                }
            }
            if !running {
                return outcomes.into_iter().map(Option::unwrap).collect();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until the file `name` exists in the temp directory. Fails the
    /// test if one of `procs` exits with a failure first (it would never come),
    /// or after [`WATCHDOG`].
    pub fn wait_file(&self, name: &str, procs: &mut [Proc]) {
        let path = self.file(name);
        let start = Instant::now();
        while !path.exists() {
            for p in procs.iter_mut() {
                p.fail_if_failed();
                p.check_watchdog();
            }
            if start.elapsed() > WATCHDOG {
                panic!(
                    "watchdog: {} did not appear within {WATCHDOG:?}{}",
                    path.display(),
                    procs.iter().fold(String::new(), |mut s, p| {
                        let _ = write!(s, "\n--- {} ---\n{}", p.label, p.output_so_far());
                        s
                    })
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until `cond(procs)` holds, polling. Fails the test if one of
    /// `procs` exits with a failure first, or after [`WATCHDOG`]; `what`
    /// names the condition in the failure message.
    ///
    /// ```no_run
    /// # let d = hako_tests::harness::Domain::new("doc", "helper");
    /// # let mut procs = vec![d.spawn("recv", &["recv", "--expect", "1"])];
    /// d.wait_until("the receiver parks", &mut procs, |p| p[0].parked_in_futex());
    /// ```
    pub fn wait_until(
        &self,
        what: &str,
        procs: &mut [Proc],
        mut cond: impl FnMut(&[Proc]) -> bool,
    ) {
        let start = Instant::now();
        while !cond(procs) {
            for p in procs.iter_mut() {
                p.fail_if_failed();
                p.check_watchdog();
            }
            if start.elapsed() > WATCHDOG {
                panic!(
                    "watchdog: {what} did not happen within {WATCHDOG:?}{}",
                    procs.iter().fold(String::new(), |mut s, p| {
                        let _ = write!(s, "\n--- {} ---\n{}", p.label, p.output_so_far());
                        s
                    })
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What is left in the domain root: its entries, and the entries of
    /// directories in it (`svc_<hash>/static.toml`).
    pub fn leftovers(&self) -> Vec<String> {
        let mut left = Vec::new();
        list(&self.root, "", &mut left);
        left
    }

    /// Asserts that the domain root is empty (every process has exited, so
    /// every node, service and segment file must be gone).
    pub fn assert_root_empty(&self) {
        let left = self.leftovers();
        assert!(
            left.is_empty(),
            "domain root {} is not empty after all processes exited: {left:?}",
            self.root.display()
        );
    }

    /// Ends the test: asserts the root is empty, then removes it and the temp
    /// directory.
    pub fn finish(self) {
        self.assert_root_empty();
        // Drop removes both directories.
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// A running helper process under a watchdog. Dropping it kills the child if
/// it still runs.
#[derive(Debug)]
pub struct Proc {
    label: String,
    args: Vec<String>,
    child: Option<Child>,
    /// How it ended, once reaped by a check that does not return it
    /// ([`fail_if_failed`](Self::fail_if_failed) during `wait_file`).
    exited: Option<Outcome>,
    started: Instant,
    bound: Duration,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Proc {
    /// The label given at spawn.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The process id (panics if the process was already reaped).
    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .expect("the process already exited")
            .id()
    }

    /// Sends `sig` to the process (SIGTERM, SIGINT, ...).
    pub fn signal(&self, sig: rustix::process::Signal) {
        let pid =
            rustix::process::Pid::from_raw(self.pid() as i32).expect("a child's pid is positive");
        rustix::process::kill_process(pid, sig)
            .unwrap_or_else(|e| panic!("cannot signal {}: {e}", self.label));
    }

    /// Whether the process (its main thread) is asleep in a futex wait,
    /// from `/proc/<pid>/stat` (state `S`) and `/proc/<pid>/wchan`. Where the
    /// kernel hides wchan (it reads `0`), the sleeping state alone counts.
    /// False once the process has exited.
    pub fn parked_in_futex(&self) -> bool {
        let Some(child) = self.child.as_ref() else {
            return false;
        };
        let pid = child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name, which is in parentheses.
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        if state != Some('S') {
            return false;
        }
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        wchan.contains("futex") || wchan.trim() == "0" || wchan.is_empty()
    }

    /// Waits for the process to exit (any code) under the watchdog.
    pub fn wait(mut self) -> Outcome {
        loop {
            if let Some(o) = self.poll() {
                return o;
            }
            self.check_watchdog();
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills the process with SIGKILL (a crash at an arbitrary instruction)
    /// and returns what it printed until then.
    pub fn kill(mut self) -> Outcome {
        let child = self.child.as_mut().expect("the process already exited");
        let _ = child.kill();
        let status = child.wait().expect("wait for a killed child");
        self.child = None;
        self.outcome(status.code(), status.to_string())
    }

    /// The outcome if the process has exited.
    fn poll(&mut self) -> Option<Outcome> {
        if let Some(o) = &self.exited {
            return Some(o.clone());
        }
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(self.outcome(status.code(), status.to_string()))
            }
            Ok(None) => None,
            Err(e) => panic!("cannot wait for {}: {e}", self.label),
        }
    }

    fn outcome(&self, code: Option<i32>, status: String) -> Outcome {
        Outcome {
            label: self.label.clone(),
            args: self.args.clone(),
            code,
            status,
            stdout: read_lossy(&self.stdout),
            stderr: read_lossy(&self.stderr),
        }
    }

    /// Fails the test if the process has exited with a non-zero code.
    fn fail_if_failed(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        if let Ok(Some(status)) = child.try_wait() {
            self.child = None;
            let o = self.outcome(status.code(), status.to_string());
            if o.code != Some(0) {
                panic!("{}", o.describe("exited with a failure"));
            }
            // Kept for poll(): a helper that finished while the test waited
            // for a file must not look like one that hangs.
            self.exited = Some(o);
        }
    }

    /// Kills the process and fails the test if it outlived its bound.
    fn check_watchdog(&mut self) {
        if self.child.is_none() || self.started.elapsed() <= self.bound {
            return;
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let o = self.outcome(None, "killed by the watchdog".into());
        panic!(
            "{}",
            o.describe(&format!(
                "did not finish within {:?} (a hang?); the watchdog killed it",
                self.bound
            ))
        );
    }

    fn output_so_far(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            read_lossy(&self.stdout),
            read_lossy(&self.stderr)
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn list(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("cannot list {}: {e}", dir.display()),
    };
    for e in rd.flatten() {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        if prefix.is_empty() && e.path().is_dir() {
            list(&e.path(), &format!("{name}/"), out);
        }
        out.push(name);
    }
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// How a helper process ended, and what it printed.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The label given at spawn.
    pub label: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// The exit status as text.
    pub status: String,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
}

impl Outcome {
    /// A readable account of the process, for failure messages.
    pub fn describe(&self, what: &str) -> String {
        format!(
            "helper `{}` {what} ({})\nargs: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.label, self.status, self.args, self.stdout, self.stderr
        )
    }

    /// Asserts that the process exited with `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "{}",
            self.describe(&format!("should have exited with code {code}"))
        );
        self
    }

    /// The first line that starts with `prefix` (panics if none).
    pub fn line(&self, prefix: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{}", self.describe(&format!("printed no {prefix:?} line"))))
    }

    /// The `ERROR ...` line the helper printed before exiting with an error code.
    pub fn error_line(&self) -> &str {
        self.line("ERROR ")
    }

    /// The key=value pairs of the `RESULT ...` line.
    pub fn result(&self) -> Report {
        let line = self.line("RESULT ");
        let map = line
            .split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Report {
            line: line.to_owned(),
            map,
        }
    }
}

/// The key=value pairs of a helper's `RESULT` line.
#[derive(Debug, Clone)]
pub struct Report {
    line: String,
    map: BTreeMap<String, String>,
}

impl Report {
    /// The value of `key` (panics if absent).
    pub fn get(&self, key: &str) -> &str {
        self.map
            .get(key)
            .unwrap_or_else(|| panic!("no {key}= in {:?}", self.line))
    }

    /// The value of `key` as a number.
    pub fn num(&self, key: &str) -> u64 {
        self.get(key)
            .parse()
            .unwrap_or_else(|e| panic!("{key}= in {:?} is not a number: {e}", self.line))
    }
}

/// Helper arguments: `base` followed by the service arguments `svc`.
pub fn with(base: &[&str], svc: &[&str]) -> Vec<String> {
    base.iter().chain(svc).map(|s| (*s).to_owned()).collect()
}

/// Borrowed views of owned arguments, as `Domain::spawn` takes them.
pub fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
