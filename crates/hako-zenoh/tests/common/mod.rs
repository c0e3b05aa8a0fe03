//! What the bridge's tests share: hako domains in /dev/shm, `hako-bridge`
//! processes joined over loopback TCP (multicast scouting off, so tests
//! running at once never meet), and a watchdog for things that must happen.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long something that must happen may take before the test fails:
/// generous, for a loaded 2-CPU machine. Not a speed check.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// A hako domain for one test, removed at the end.
pub struct Domain {
    pub root: PathBuf,
    pub node: hako::Node,
}

impl Domain {
    pub fn new(test: &str, name: &str) -> Self {
        let root = PathBuf::from(format!(
            "/dev/shm/hako-zenoh-{test}-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let node = hako::NodeBuilder::new()
            .config(&hako::Config::default().with_root(&root))
            .signal_handling(false)
            .create()
            .expect("a node");
        Self { root, node }
    }

    /// A second node of the domain (a program of its own).
    pub fn node(&self) -> hako::Node {
        hako::NodeBuilder::new()
            .config(&hako::Config::default().with_root(&self.root))
            .signal_handling(false)
            .create()
            .expect("a node")
    }

    /// Waits until the service `name` exists here (made by the bridge for
    /// another domain's).
    pub fn wait_for_service(&self, name: &str) {
        let cfg = hako::Config::default().with_root(&self.root);
        let n: hako::ServiceName = name.try_into().unwrap();
        wait_until(
            &format!("service {name} in {}", self.root.display()),
            || hako::inspect::service(&cfg, &n).is_ok(),
        );
    }
}

impl Domain {
    /// Waits until request/response service `name` has a server here (the
    /// bridge's, forwarding to another domain's).
    pub fn wait_for_server(&self, name: &str) {
        let cfg = hako::Config::default().with_root(&self.root);
        let n: hako::ServiceName = name.try_into().unwrap();
        wait_until(
            &format!("a server of {name} in {}", self.root.display()),
            || hako::inspect::service(&cfg, &n).is_ok_and(|s| !s.subscribers.is_empty()),
        );
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A free TCP port on loopback (free when asked; the bridge binds it soon
/// after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The endpoint of `port` on loopback.
pub fn endpoint(port: u16) -> String {
    format!("tcp/127.0.0.1:{port}")
}

/// A running `hako-bridge`, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct BridgeProc {
    pub child: Child,
    pub port: u16,
}

/// Starts a bridge for `domain`, listening on `port`, connecting to
/// `connect`, with key expressions under `prefix`, and `extra` flags.
pub fn bridge(
    domain: &Domain,
    prefix: &str,
    port: u16,
    connect: &[u16],
    extra: &[&str],
) -> BridgeProc {
    bridge_with(domain, prefix, port, connect, extra, Stdio::inherit())
}

/// As [`bridge`], its log (warnings and up) going to `stderr`.
pub fn bridge_with(
    domain: &Domain,
    prefix: &str,
    port: u16,
    connect: &[u16],
    extra: &[&str],
    stderr: Stdio,
) -> BridgeProc {
    let log = std::env::var("HAKO_LOG").unwrap_or_else(|_| "warn".into());
    bridge_logged(domain, prefix, (port, connect), extra, (stderr, &log))
}

/// As [`bridge`], logging at level `log` to `stderr`; listening nowhere if
/// `port` is 0.
pub fn bridge_logged(
    domain: &Domain,
    prefix: &str,
    (port, connect): (u16, &[u16]),
    extra: &[&str],
    (stderr, log): (Stdio, &str),
) -> BridgeProc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hako-bridge"));
    cmd.arg("--root")
        .arg(&domain.root)
        .args([
            "--prefix",
            prefix,
            "--mode",
            "peer",
            "--no-multicast-scouting",
        ])
        .args(["--scan-interval", "50"])
        .args(extra)
        .env("HAKO_LOG", log)
        .stdin(Stdio::null())
        .stderr(stderr);
    if port != 0 {
        cmd.args(["--listen", &endpoint(port)]);
    }
    for p in connect {
        cmd.args(["--connect", &endpoint(*p)]);
    }
    BridgeProc {
        child: cmd.spawn().expect("hako-bridge starts"),
        port,
    }
}

impl BridgeProc {
    /// Kills the bridge the hard way (a crash) and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::forget(self);
    }

    /// Asks the bridge to stop (SIGTERM) and checks that it exits cleanly.
    pub fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let status = self.child.wait().unwrap();
        std::mem::forget(self);
        assert!(status.success(), "the bridge exited with {status}");
    }
}

impl Drop for BridgeProc {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (under the watchdog) until `cond` holds.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: {what} never happened"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A prefix of key expressions of one test, so that tests never see each
/// other's traffic.
pub fn prefix(test: &str) -> String {
    format!("t{}-{test}", std::process::id())
}

/// Publishes increasing numbers from `publisher` until `subscriber` gets
/// one (links take a moment to form), then `n` more; returns every number
/// `subscriber` got from the first on, after a quiet moment. (The tests'
/// queues hold more than a stream, so a reader slowed by a loaded machine
/// loses nothing.)
pub fn stream(
    publisher: &hako::Publisher<u64>,
    subscriber: &hako::Subscriber<u64>,
    n: u64,
) -> Vec<u64> {
    let mut got = Vec::new();
    let mut seq = 0;
    let start = Instant::now();
    while got.is_empty() {
        assert!(start.elapsed() < WATCHDOG, "watchdog: nothing crossed");
        publisher.send_copy(seq).unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(10));
        while let Some(s) = subscriber.receive().unwrap() {
            got.push(*s);
        }
    }
    for _ in 0..n {
        publisher.send_copy(seq).unwrap();
        seq += 1;
        // Paced: what is measured here is delivery, not the buffers.
        std::thread::sleep(Duration::from_micros(200));
        while let Some(s) = subscriber.receive().unwrap() {
            got.push(*s);
        }
    }
    let last = seq - 1;
    let start = Instant::now();
    while got.last() != Some(&last) {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: {last} never came; got {got:?}"
        );
        if let Some(s) = subscriber
            .receive_timeout(Duration::from_millis(10))
            .unwrap()
        {
            got.push(*s);
        }
    }
    // Anything more would be a duplicate.
    std::thread::sleep(Duration::from_millis(300));
    while let Some(s) = subscriber.receive().unwrap() {
        got.push(*s);
    }
    got
}

/// Checks that `got` is every number from its first to its last, once
/// each, in order.
pub fn exactly_once(got: &[u64]) {
    let bad = got.windows(2).find(|w| w[1] != w[0] + 1);
    assert!(
        bad.is_none(),
        "each sample once, in order; {bad:?} in {got:?}"
    );
}

/// Domains `a` and `b` of test `test`, joined by two bridges: A's listens,
/// B's (with `b_extra` flags) connects to it; they stop as the bridges
/// drop.
pub fn joined(test: &str, b_extra: &[&str]) -> (Domain, Domain, [BridgeProc; 2]) {
    joined_with(test, &[], b_extra)
}

/// As [`joined`], A's bridge given `a_extra` flags.
pub fn joined_with(
    test: &str,
    a_extra: &[&str],
    b_extra: &[&str],
) -> (Domain, Domain, [BridgeProc; 2]) {
    let p = prefix(test);
    let (a, b) = (Domain::new(test, "a"), Domain::new(test, "b"));
    let (pa, pb) = (free_port(), free_port());
    let ba = bridge(&a, &p, pa, &[], a_extra);
    let bb = bridge(&b, &p, pb, &[pa], b_extra);
    (a, b, [ba, bb])
}

/// A plain Zenoh session (no hako) connected to the bridge listening on
/// `port`.
pub fn plain_session(port: u16) -> zenoh::Session {
    use zenoh::Wait;
    let mut config = zenoh::Config::default();
    config
        .insert_json5("connect/endpoints", &format!("[\"{}\"]", endpoint(port)))
        .unwrap();
    config
        .insert_json5("scouting/multicast/enabled", "false")
        .unwrap();
    config.insert_json5("listen/endpoints", "[]").unwrap();
    zenoh::open(config).wait().unwrap()
}

/// The lines a bridge writes to its log (started with `Stdio::piped()`),
/// as they come.
pub fn log_lines(b: &mut BridgeProc) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let log = std::io::BufReader::new(b.child.stderr.take().expect("a piped log"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in log.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits (under the watchdog) for a log line that `want` accepts; returns
/// it.
pub fn wait_for_line(
    lines: &std::sync::mpsc::Receiver<String>,
    what: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let start = Instant::now();
    loop {
        let left = WATCHDOG.saturating_sub(start.elapsed());
        assert!(!left.is_zero(), "watchdog: the bridge never logged {what}");
        if let Ok(line) = lines.recv_timeout(left.min(Duration::from_millis(100))) {
            if want(&line) {
                return line;
            }
        }
    }
}
