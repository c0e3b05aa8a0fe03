//! The leader's [`Session`]: the follower processes it starts and the rows
//! it runs with them; [`RunRow`], a transport as the session sees it.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::followers::{parse_done, FollowerProc, FollowerReport};
use super::rows::{OneWay, OneWayResult, RowResult};
use super::stats::Stats;
use crate::error::Result;
use crate::sys::clock::monotonic_ns;
use crate::sys::cpu::{self, CpuTime};
use crate::transport::{Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting};

/// First argument that makes a binary of this crate act as the follower.
pub const FOLLOWER_ARG: &str = "__hako-bench-follower";

/// How to start a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The run's domain root (see [`crate::sys::rundir`]).
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
    /// Follower processes to start (at least 1): as many as the widest
    /// fan-out row needs. All run on `follower_cpu`.
    pub followers: u32,
}

/// The leader's end of a benchmark run: follower processes and the rows run
/// with them. Dropping it kills the followers that are still there.
#[derive(Debug)]
pub struct Session {
    followers: Vec<FollowerProc>,
    root: PathBuf,
    next_row: u64,
    dump_dir: Option<PathBuf>,
    /// A row failed halfway; a follower may be stuck in it.
    broken: bool,
}

impl Session {
    /// Starts the followers (which pin themselves), pins the calling thread
    /// and waits for the followers' greetings.
    pub fn start(cfg: &SessionConfig) -> Result<Self> {
        // The followers are spawned before the leader pins itself, so they
        // do not start out crowded onto the leader's CPU.
        let program = match &cfg.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()?,
        };
        let mut s = Self {
            followers: Vec::new(),
            root: cfg.root.clone(),
            next_row: 0,
            dump_dir: cfg.dump_dir.clone(),
            broken: false,
        };
        for _ in 0..cfg.followers.max(1) {
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
            let (Some(to_child), Some(from_child)) = (child.stdin.take(), child.stdout.take())
            else {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the follower's stdin/stdout were not captured".into());
            };
            s.followers.push(FollowerProc {
                child,
                to_child,
                from_child: BufReader::new(from_child),
                cpu: None,
            });
        }
        if let Some(c) = cfg.leader_cpu {
            cpu::pin_to(c)?;
        }
        for f in &mut s.followers {
            let hello = f.read_reply()?;
            match hello.strip_prefix("hello ") {
                Some(c) => f.cpu = c.parse().ok(),
                None => {
                    return Err(format!("unexpected greeting from a follower: {hello:?}").into())
                }
            }
        }
        Ok(s)
    }

    /// The CPU the first follower reported running on when it started.
    pub fn follower_cpu(&self) -> Option<usize> {
        self.followers.first().and_then(|f| f.cpu)
    }

    /// How many follower processes the session has.
    pub fn followers(&self) -> u32 {
        self.followers.len() as u32
    }

    /// The run's domain root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Builds the leader's side of a new row and tells followers
    /// `0..row.followers` to build theirs; returns once all are ready.
    fn open_row<T: Transport>(
        &mut self,
        transport: &T,
        mut row: RowSpec,
        warmup: u64,
        iterations: u64,
    ) -> Result<T::Leader> {
        if self.broken {
            return Err("an earlier row failed; start a new session".into());
        }
        let n = row.followers.max(1);
        if n > self.followers() {
            return Err(format!(
                "the row needs {n} followers, the session has {}",
                self.followers()
            )
            .into());
        }
        self.broken = true;
        row.row_id = self.next_row;
        self.next_row += 1;
        let leader = transport.leader(&row)?;
        for (k, f) in self.followers.iter_mut().take(n as usize).enumerate() {
            f.send(&format!(
                "row {} {} {} {} {warmup} {iterations} {} {n} {k} {}",
                transport.name(),
                row.pattern.name(),
                row.payload.name(),
                row.size,
                row.row_id,
                row.depth,
            ))?;
        }
        for f in self.followers.iter_mut().take(n as usize) {
            f.expect("ready")?;
        }
        Ok(leader)
    }

    /// `result`, or its error with what followers `0..n` said went wrong.
    fn with_follower_errors<R>(&mut self, result: Result<R>, n: u32) -> Result<R> {
        result.map_err(|e| {
            let theirs: Vec<String> = self
                .followers
                .iter_mut()
                .take(n as usize)
                .filter_map(FollowerProc::error_soon)
                .collect();
            if theirs.is_empty() {
                e
            } else {
                format!("{e} ({})", theirs.join("; ")).into()
            }
        })
    }

    /// Collects the `done` lines of followers `0..n`.
    fn collect(&mut self, n: u32) -> Result<Vec<FollowerReport>> {
        let mut reports = Vec::with_capacity(n as usize);
        for f in self.followers.iter_mut().take(n as usize) {
            let done = f.read_reply()?;
            reports.push(parse_done(&done)?);
        }
        Ok(reports)
    }

    /// Runs one ping-pong row: `warmup` (at least one) untimed and
    /// `iterations` timed round trips of `size`-byte messages through
    /// `transport`.
    pub fn run<T: Transport>(
        &mut self,
        transport: &T,
        size: usize,
        payload: PayloadMode,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult> {
        let row = RowSpec {
            payload,
            ..RowSpec::ping_pong(self.root.clone(), 0, size)
        };
        // The last warm-up round trip starts the clock (see measure).
        let warmup = warmup.max(1);
        let mut leader = self.open_row(transport, row, warmup, iterations)?;
        let row_id = self.next_row - 1;
        let timed = leader
            .connect()
            .and_then(|()| leader.round_trips(warmup, iterations));
        let (samples, leader_cpu) = self.with_follower_errors(timed, 1)?;
        let follower_cpu = self.collect(1)?[0].cpu;
        drop(leader);
        self.broken = false;
        if let Some(dir) = &self.dump_dir {
            let path = dir.join(format!("{row_id}_{}_{size}.txt", transport.name()));
            let text: String = samples.iter().map(|s| format!("{s}\n")).collect();
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(RowResult {
            transport: transport.name(),
            size,
            payload,
            stats: Stats::from_samples(&samples)?,
            samples,
            leader_cpu,
            follower_cpu,
        })
    }

    /// Runs one one-way row: the leader sends `spec.warmup` untimed, then
    /// `spec.messages` timed messages to `spec.followers` receivers as fast
    /// as the transport lets it; the time runs until the last receiver has
    /// checked the last message. A request/response row sends as many
    /// requests to one follower, `spec.depth` in flight, and the time runs
    /// until the leader has checked the last answer.
    pub fn run_one_way<T: Transport>(
        &mut self,
        transport: &T,
        spec: OneWay,
    ) -> Result<OneWayResult> {
        if spec.pattern == Pattern::PingPong {
            return Err("run_one_way runs one-way and request/response rows".into());
        }
        let reqres = spec.pattern == Pattern::RequestResponse;
        let followers = if reqres { 1 } else { spec.followers.max(1) };
        let depth = if reqres { spec.depth.max(1) } else { 1 };
        let row = RowSpec {
            pattern: spec.pattern,
            payload: spec.payload,
            followers,
            depth,
            ..RowSpec::ping_pong(self.root.clone(), 0, spec.size)
        };
        let mut leader = self.open_row(transport, row, spec.warmup, spec.messages)?;
        let timed = (|| {
            leader.connect()?;
            let (warm, timed) = (
                1..=spec.warmup,
                spec.warmup + 1..=spec.warmup + spec.messages,
            );
            if reqres {
                if !warm.is_empty() {
                    leader.pipeline(warm, depth as usize)?;
                }
            } else {
                let (start, cpu) = leader.send_timed(spec.warmup, spec.messages)?;
                return Ok((start, None, cpu));
            }
            let cpu_before = CpuTime::now()?;
            let start = monotonic_ns();
            leader.pipeline(timed, depth as usize)?;
            let end = Some(monotonic_ns());
            Ok((start, end, CpuTime::now()?.since(cpu_before)))
        })();
        let (start, end, leader_cpu) = self.with_follower_errors(timed, followers)?;
        let reports = self.collect(followers)?;
        drop(leader);
        self.broken = false;
        let last = end.unwrap_or_else(|| reports.iter().map(|r| r.last_ns).max().unwrap_or(start));
        Ok(OneWayResult {
            transport: transport.name(),
            spec,
            elapsed_ns: last.saturating_sub(start),
            leader_cpu,
            follower_cpu: reports
                .iter()
                .fold(CpuTime::default(), |acc, r| acc + r.cpu),
        })
    }

    /// Tells the followers to exit and waits for them.
    pub fn finish(mut self) -> Result<()> {
        let broken = self.broken;
        let mut first_error = None;
        for f in &mut self.followers {
            if !broken {
                f.send("quit")?;
            }
        }
        for f in &mut self.followers {
            let status = f.child.wait()?;
            if !broken && !status.success() && first_error.is_none() {
                first_error = Some(format!("a follower exited with {status}"));
            }
        }
        match first_error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Still running: `finish` was not reached (a row failed, or the
        // caller bailed out). Kill and reap them; never leave one spinning.
        for f in &mut self.followers {
            if let Ok(None) = f.child.try_wait() {
                let _ = f.child.kill();
                let _ = f.child.wait();
            }
        }
    }
}

/// A [`Transport`] as the leader's [`Session`] and the follower process see
/// it, so that rows of different transports can be listed together and a
/// transport found by name. Implemented for every `Transport`.
pub trait RunRow {
    /// [`Transport::name`].
    fn row_name(&self) -> &'static str;

    /// [`Transport::waiting`].
    fn row_waiting(&self) -> Waiting;

    /// [`Transport::skip_reason`].
    fn row_skip_reason(&self, size: usize, pattern: Pattern) -> Option<String>;

    /// [`Session::run`].
    fn run_row(
        &self,
        session: &mut Session,
        size: usize,
        payload: PayloadMode,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult>;

    /// [`Session::run_one_way`].
    fn run_one_way(&self, session: &mut Session, spec: OneWay) -> Result<OneWayResult>;

    /// [`Transport::one_way_warmup`].
    fn row_one_way_warmup(&self, size: usize) -> u64;

    /// [`Transport::in_flight_skip`].
    fn row_in_flight_skip(&self, size: usize, depth: u32) -> Option<String>;

    /// In the follower process: builds the follower's side of `row`, calls
    /// `ready`, then serves (ping-pong) or receives (one-way) `warmup`
    /// untimed and `iterations` timed messages; returns what it measured
    /// of the timed ones, and the side itself: the caller drops it only
    /// once the leader has moved on (its next command), because closing a
    /// connection may overtake the last answer still on its way (shmipc's
    /// close does).
    fn follow(
        &self,
        row: &RowSpec,
        warmup: u64,
        iterations: u64,
        ready: &mut dyn FnMut() -> Result<()>,
    ) -> Result<(FollowerReport, Box<dyn std::any::Any>)>;
}

impl<T: Transport> RunRow for T
where
    T::Follower: 'static,
{
    fn row_name(&self) -> &'static str {
        self.name()
    }

    fn row_waiting(&self) -> Waiting {
        self.waiting()
    }

    fn row_skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        self.skip_reason(size, pattern)
    }

    fn run_row(
        &self,
        session: &mut Session,
        size: usize,
        payload: PayloadMode,
        warmup: u64,
        iterations: u64,
    ) -> Result<RowResult> {
        session.run(self, size, payload, warmup, iterations)
    }

    fn run_one_way(&self, session: &mut Session, spec: OneWay) -> Result<OneWayResult> {
        session.run_one_way(self, spec)
    }

    fn row_one_way_warmup(&self, size: usize) -> u64 {
        self.one_way_warmup(size)
    }

    fn row_in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        self.in_flight_skip(size, depth)
    }

    fn follow(
        &self,
        row: &RowSpec,
        warmup: u64,
        iterations: u64,
        ready: &mut dyn FnMut() -> Result<()>,
    ) -> Result<(FollowerReport, Box<dyn std::any::Any>)> {
        let mut side = self.follower(row)?;
        ready()?;
        let one_way = row.pattern.one_way();
        let (last_ns, cpu) = side.serve_timed(warmup, iterations, one_way)?;
        let report = FollowerReport { cpu, last_ns };
        Ok((report, Box::new(side)))
    }
}
