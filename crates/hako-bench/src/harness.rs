//! Leader and follower processes, and the timing of round trips.
//!
//! The leader (the process the user started) starts the follower as a child
//! process of the *same binary*, with [`FOLLOWER_ARG`] as its first argument;
//! such a binary hands control to [`follower_main`] before parsing anything
//! else. The two talk over the child's stdin/stdout, one line per message,
//! only between rows (never while timing):
//!
//! ```text
//!  follower → leader   hello <cpu>                        (after pinning)
//!  leader → follower   row <transport> <size> <warmup> <iterations> <row id>
//!  follower → leader   ready                              (its side is built)
//!                      … <warmup> + <iterations> round trips …
//!  follower → leader   done <user ns> <system ns> <sleeps> (of the timed part)
//!  leader → follower   quit
//!  follower → leader   error <message>                    (instead of any reply)
//! ```
//!
//! Both processes take their CPU time (`getrusage(RUSAGE_SELF)`, user and
//! system) and their count of voluntary context switches (sleeps) around
//! the timed round trips only; the follower's figures come back in its
//! `done` line.
//!
//! The follower dies with the leader: it asks the kernel for `SIGKILL` when
//! its parent exits (`PR_SET_PDEATHSIG`), and [`Session`]'s `Drop` kills and
//! reaps it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::cpu::{self, CpuTime};
use crate::transport::{Follower, Leader, RowSpec, Transport, Waiting};
use crate::Result;

/// First argument that makes a binary of this crate act as the follower.
pub const FOLLOWER_ARG: &str = "__hako-bench-follower";

/// A [`Transport`] as the follower process sees it: found by name, built and
/// served in one call. Implemented for every `Transport`.
pub trait DynTransport: Send + Sync {
    /// [`Transport::name`].
    fn dyn_name(&self) -> &'static str;

    /// Builds the follower's side of `row`, calls `ready`, then serves
    /// `warmup` untimed and `iterations` timed messages; returns the CPU
    /// time this process used for the timed ones.
    fn follow(
        &self,
        row: &RowSpec,
        warmup: u64,
        iterations: u64,
        ready: &mut dyn FnMut() -> Result<()>,
    ) -> Result<CpuTime>;
}

impl<T: Transport> DynTransport for T {
    fn dyn_name(&self) -> &'static str {
        self.name()
    }

    fn follow(
        &self,
        row: &RowSpec,
        warmup: u64,
        iterations: u64,
        ready: &mut dyn FnMut() -> Result<()>,
    ) -> Result<CpuTime> {
        let mut side = self.follower(row)?;
        ready()?;
        for seq in 1..=warmup {
            side.serve_one(seq)?;
        }
        let before = CpuTime::now()?;
        for seq in warmup + 1..=warmup + iterations {
            side.serve_one(seq)?;
        }
        Ok(CpuTime::now()?.since(before))
    }
}

/// How to start a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The run's domain root (see [`crate::rundir`]).
    pub root: PathBuf,
    /// CPU for the leader (the calling thread), or `None` to leave it alone.
    pub leader_cpu: Option<usize>,
    /// CPU for the follower, or `None` to leave it alone.
    pub follower_cpu: Option<usize>,
    /// Program to run as the follower; `None`: this binary.
    pub program: Option<PathBuf>,
    /// Write every row's round-trip times (nanoseconds, one per line, in
    /// order) to `<dir>/<row id>_<transport>_<size>.txt`, to see whether the
    /// floor or the transport changed speed within a row.
    pub dump_dir: Option<PathBuf>,
}

/// Round-trip times of one row, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Timed round trips.
    pub count: u64,
    /// Fastest.
    pub min: u64,
    /// Median.
    pub median: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Slowest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

impl Stats {
    /// Summarises round-trip times (nanoseconds) through an HDR histogram
    /// with three significant digits.
    pub fn from_samples(samples: &[u64]) -> Result<Self> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)?;
        for &s in samples {
            h.record(s.max(1))?;
        }
        Ok(Self {
            count: h.len(),
            min: h.min(),
            median: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        })
    }
}

/// The result of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    /// [`Transport::name`].
    pub transport: &'static str,
    /// Message size in bytes.
    pub size: usize,
    /// Round-trip times.
    pub stats: Stats,
    /// Every timed round trip in nanoseconds, in order.
    pub samples: Vec<u64>,
    /// CPU time the leader used for the timed round trips.
    pub leader_cpu: CpuTime,
    /// CPU time the follower used for the timed round trips.
    pub follower_cpu: CpuTime,
}

/// Average cost of one `Instant::now()` in nanoseconds. Every timed round
/// trip includes one.
pub fn clock_cost_ns() -> f64 {
    const N: u32 = 200_000;
    let start = Instant::now();
    let mut last = start;
    for _ in 0..N {
        last = std::hint::black_box(Instant::now());
    }
    last.duration_since(start).as_nanos() as f64 / f64::from(N)
}

/// Runs `warmup` untimed, then `iterations` timed round trips; returns the
/// time of each in nanoseconds and the CPU time this process used for the
/// timed ones. One clock read per round trip: each interval runs from the end
/// of the previous round trip to the end of this one.
pub fn measure<L: Leader>(
    leader: &mut L,
    warmup: u64,
    iterations: u64,
) -> Result<(Vec<u64>, CpuTime)> {
    for seq in 1..=warmup {
        leader.round_trip(seq)?;
    }
    // Written (not just reserved) now, so no page fault lands in the timing.
    let mut samples = vec![0u64; usize::try_from(iterations)?];
    let mut seq = warmup;
    let cpu_before = CpuTime::now()?;
    let mut t0 = Instant::now();
    for s in samples.iter_mut() {
        seq += 1;
        leader.round_trip(seq)?;
        let t1 = Instant::now();
        *s = u64::try_from(t1.duration_since(t0).as_nanos()).unwrap_or(u64::MAX);
        t0 = t1;
    }
    let cpu = CpuTime::now()?.since(cpu_before);
    Ok((samples, cpu))
}

/// The leader's end of a benchmark run: a follower process and the rows run
/// with it. Dropping it kills the follower if it is still there.
#[derive(Debug)]
pub struct Session {
    child: Child,
    to_child: ChildStdin,
    from_child: BufReader<ChildStdout>,
    root: PathBuf,
    next_row: u64,
    follower_cpu: Option<usize>,
    dump_dir: Option<PathBuf>,
    /// A row failed halfway; the follower may be stuck in it.
    broken: bool,
}

impl Session {
    /// Starts the follower (which pins itself), pins the calling thread and
    /// waits for the follower's greeting.
    pub fn start(cfg: &SessionConfig) -> Result<Self> {
        // The follower is spawned before the leader pins itself, so it does
        // not start out crowded onto the leader's CPU.
        let program = match &cfg.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()?,
        };
        let mut cmd = Command::new(&program);
        cmd.arg(FOLLOWER_ARG)
            .arg("--root")
            .arg(&cfg.root)
            .arg("--parent")
            .arg(std::process::id().to_string());
        if let Some(c) = cfg.follower_cpu {
            cmd.arg("--cpu").arg(c.to_string());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the follower {}: {e}", program.display()))?;
        let (Some(to_child), Some(from_child)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the follower's stdin/stdout were not captured".into());
        };
        let mut s = Self {
            child,
            to_child,
            from_child: BufReader::new(from_child),
            root: cfg.root.clone(),
            next_row: 0,
            follower_cpu: None,
            dump_dir: cfg.dump_dir.clone(),
            broken: false,
        };
        if let Some(c) = cfg.leader_cpu {
            cpu::pin_to(c)?;
        }
        let hello = s.read_reply()?;
        match hello.strip_prefix("hello ") {
            Some(c) => s.follower_cpu = c.parse().ok(),
            None => return Err(format!("unexpected greeting from the follower: {hello:?}").into()),
        }
        Ok(s)
    }

    /// The CPU the follower reported running on when it started.
    pub fn follower_cpu(&self) -> Option<usize> {
        self.follower_cpu
    }

    /// The run's domain root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.to_child, "{line}")
            .and_then(|()| self.to_child.flush())
            .map_err(|e| format!("cannot talk to the follower: {e}"))?;
        Ok(())
    }

    fn read_reply(&mut self) -> Result<String> {
        let mut line = String::new();
        let n = self.from_child.read_line(&mut line)?;
        if n == 0 {
            let status = self.child.wait()?;
            return Err(format!("the follower exited ({status})").into());
        }
        let line = line.trim_end().to_owned();
        if let Some(msg) = line.strip_prefix("error ") {
            return Err(format!("follower: {msg}").into());
        }
        Ok(line)
    }

    fn expect(&mut self, what: &str) -> Result<()> {
        let line = self.read_reply()?;
        if line != what {
            return Err(format!("expected {what:?} from the follower, got {line:?}").into());
        }
        Ok(())
    }

    /// Runs one row: `warmup` untimed and `iterations` timed round trips of
    /// `size`-byte messages through `transport`.
    pub fn run<T: Transport>(
        &mut self,
        transport: &T,
        size: usize,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult> {
        if self.broken {
            return Err("an earlier row failed; start a new session".into());
        }
        self.broken = true;
        let row = RowSpec {
            root: self.root.clone(),
            row_id: self.next_row,
            size,
        };
        self.next_row += 1;
        let mut leader = transport.leader(&row)?;
        self.send(&format!(
            "row {} {size} {warmup} {iterations} {}",
            transport.name(),
            row.row_id
        ))?;
        self.expect("ready")?;
        leader.connect()?;
        let (samples, leader_cpu) = measure(&mut leader, warmup, iterations)?;
        let done = self.read_reply()?;
        let follower_cpu = parse_done(&done)?;
        drop(leader);
        self.broken = false;
        if let Some(dir) = &self.dump_dir {
            let path = dir.join(format!("{}_{}_{size}.txt", row.row_id, transport.name()));
            let text: String = samples.iter().map(|s| format!("{s}\n")).collect();
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(RowResult {
            transport: transport.name(),
            size,
            stats: Stats::from_samples(&samples)?,
            samples,
            leader_cpu,
            follower_cpu,
        })
    }

    /// Tells the follower to exit and waits for it.
    pub fn finish(mut self) -> Result<()> {
        if !self.broken {
            self.send("quit")?;
        }
        let status = self.child.wait()?;
        if !self.broken && !status.success() {
            return Err(format!("the follower exited with {status}").into());
        }
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Still running: `finish` was not reached (a row failed, or the
        // caller bailed out). Kill and reap it; never leave it spinning.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The follower's `done <user ns> <system ns> <sleeps>` line.
fn parse_done(line: &str) -> Result<CpuTime> {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["done", user, system, sleeps] => Ok(CpuTime {
            user_ns: user.parse()?,
            system_ns: system.parse()?,
            sleeps: sleeps.parse()?,
        }),
        _ => Err(format!(
            "expected \"done <user ns> <system ns> <sleeps>\" from the follower, got {line:?}"
        )
        .into()),
    }
}

/// A [`Transport`] as the leader's [`Session`] sees it, so that rows of
/// different transports can be listed together. Implemented for every
/// `Transport`.
pub trait RunRow {
    /// [`Transport::name`].
    fn row_name(&self) -> &'static str;

    /// [`Transport::waiting`].
    fn row_waiting(&self) -> Waiting;

    /// [`Transport::skip_reason`].
    fn row_skip_reason(&self, size: usize) -> Option<String>;

    /// [`Session::run`].
    fn run_row(
        &self,
        session: &mut Session,
        size: usize,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult>;
}

impl<T: Transport> RunRow for T {
    fn row_name(&self) -> &'static str {
        self.name()
    }

    fn row_waiting(&self) -> Waiting {
        self.waiting()
    }

    fn row_skip_reason(&self, size: usize) -> Option<String> {
        self.skip_reason(size)
    }

    fn run_row(
        &self,
        session: &mut Session,
        size: usize,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult> {
        session.run(self, size, warmup, iterations)
    }
}

/// Follower arguments, as the leader passes them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FollowerArgs {
    root: PathBuf,
    parent: i32,
    cpu: Option<usize>,
}

fn parse_follower_args(args: &[String]) -> Result<FollowerArgs> {
    let (mut root, mut parent, mut cpu) = (None, None, None);
    let mut it = args.iter();
    while let Some(key) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("follower argument {key} needs a value"))?;
        match key.as_str() {
            "--root" => root = Some(PathBuf::from(value)),
            "--parent" => parent = Some(value.parse()?),
            "--cpu" => cpu = Some(value.parse()?),
            other => return Err(format!("unknown follower argument {other}").into()),
        }
    }
    Ok(FollowerArgs {
        root: root.ok_or("follower needs --root")?,
        parent: parent.ok_or("follower needs --parent")?,
        cpu,
    })
}

/// The follower process: call it when the first argument is
/// [`FOLLOWER_ARG`], passing the remaining arguments and every transport the
/// leader may ask for. Returns when the leader says `quit` or goes away.
pub fn follower_main(args: &[String], transports: &[&dyn DynTransport]) -> Result<()> {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};

    let args = parse_follower_args(args)?;
    set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("prctl(PR_SET_PDEATHSIG): {e}"))?;
    // The leader may have died before the line above took effect.
    if getppid().map(|p| p.as_raw_nonzero().get()) != Some(args.parent) {
        return Err("the leader is gone".into());
    }
    if let Some(c) = args.cpu {
        cpu::pin_to(c)?;
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut reply = |line: &str| -> Result<()> {
        writeln!(out, "{line}")?;
        out.flush()?;
        Ok(())
    };
    reply(&format!("hello {}", rustix::thread::sched_getcpu()))?;
    for line in stdin.lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["quit"] => return Ok(()),
            ["row", name, size, warmup, iterations, row_id] => {
                let result = (|| -> Result<CpuTime> {
                    let t = transports
                        .iter()
                        .find(|t| t.dyn_name() == *name)
                        .ok_or_else(|| format!("no transport named {name:?}"))?;
                    let row = RowSpec {
                        root: args.root.clone(),
                        row_id: row_id.parse()?,
                        size: size.parse()?,
                    };
                    t.follow(&row, warmup.parse()?, iterations.parse()?, &mut || {
                        reply("ready")
                    })
                })();
                match result {
                    Ok(cpu) => reply(&format!(
                        "done {} {} {}",
                        cpu.user_ns, cpu.system_ns, cpu.sleeps
                    ))?,
                    Err(e) => reply(&format!("error {}", e.to_string().replace('\n', " ")))?,
                }
            }
            _ => reply(&format!("error unknown command {line:?}"))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follower_args_round_trip() {
        let args: Vec<String> = ["--root", "/dev/shm/x", "--parent", "42", "--cpu", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            parse_follower_args(&args).unwrap(),
            FollowerArgs {
                root: "/dev/shm/x".into(),
                parent: 42,
                cpu: Some(1)
            }
        );
        assert!(parse_follower_args(&args[..2]).is_err());
        assert!(parse_follower_args(&["--root".to_string()]).is_err());
    }

    #[test]
    fn done_lines_parse() {
        assert_eq!(
            parse_done("done 12 34 5").unwrap(),
            CpuTime {
                user_ns: 12,
                system_ns: 34,
                sleeps: 5
            }
        );
        assert!(parse_done("done").is_err());
        assert!(parse_done("done 12 34").is_err());
        assert!(parse_done("done x 1 2").is_err());
        assert!(parse_done("ready 1 2 3").is_err());
    }

    #[test]
    fn stats_of_known_samples() {
        let samples: Vec<u64> = (1..=1000).collect();
        let s = Stats::from_samples(&samples).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1);
        assert_eq!(s.median, 500);
        assert_eq!(s.p99, 990);
        assert_eq!(s.max, 1000);
    }
}
