//! Leader and follower processes, and the timing of round trips.
//!
//! The leader (the process the user started) starts one or more followers as
//! child processes of the *same binary*, with [`FOLLOWER_ARG`] as their first
//! argument; such a binary hands control to [`follower_main`] before parsing
//! anything else. Leader and followers talk over the children's
//! stdin/stdout, one line per message, only between rows (never while
//! timing):
//!
//! ```text
//!  follower → leader   hello <cpu>                        (after pinning)
//!  leader → follower   row <transport> <pattern> <payload> <size> <warmup>
//!                          <iterations> <row id> <followers> <index>
//!  follower → leader   ready                              (its side is built)
//!                      … <warmup> + <iterations> messages …
//!  follower → leader   done <user ns> <system ns> <sleeps> <last ns>
//!  leader → follower   quit
//!  follower → leader   error <message>                    (instead of any reply)
//! ```
//!
//! A ping-pong row runs with the first follower; a fan-out row with the
//! first `followers` of them, so a [`Session`] starts as many as its widest
//! row needs ([`SessionConfig::followers`]).
//!
//! All processes take their CPU time (`getrusage(RUSAGE_SELF)`, user and
//! system) and their count of voluntary context switches (sleeps) around
//! the timed messages only; the followers' figures come back in their
//! `done` lines, with (one-way patterns) the `CLOCK_MONOTONIC` time at which
//! they had checked the last message: the clock is the same in every
//! process, so the leader knows when the last receiver was through.
//!
//! Followers die with the leader: each asks the kernel for `SIGKILL` when
//! its parent exits (`PR_SET_PDEATHSIG`), and [`Session`]'s `Drop` kills and
//! reaps them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::cpu::{self, CpuTime};
use crate::transport::{
    set_yield_when_idle, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};
use crate::Result;

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every process of the
/// machine (and the one `Instant` reads).
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// What a follower measured of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FollowerReport {
    /// CPU time of the timed messages.
    pub cpu: CpuTime,
    /// One-way patterns: [`monotonic_ns`] once the last message was checked.
    pub last_ns: u64,
}

/// First argument that makes a binary of this crate act as the follower.
pub const FOLLOWER_ARG: &str = "__hako-bench-follower";

/// A [`Transport`] as the follower process sees it: found by name, built and
/// served in one call. Implemented for every `Transport`.
pub trait DynTransport: Send + Sync {
    /// [`Transport::name`].
    fn dyn_name(&self) -> &'static str;

    /// Builds the follower's side of `row`, calls `ready`, then serves
    /// (ping-pong) or receives (one-way) `warmup` untimed and `iterations`
    /// timed messages; returns what it measured of the timed ones, and the
    /// side itself: the caller drops it only once the leader has moved on
    /// (its next command), because closing a connection may overtake the
    /// last answer still on its way (shmipc's close does).
    fn follow(
        &self,
        row: &RowSpec,
        warmup: u64,
        iterations: u64,
        ready: &mut dyn FnMut() -> Result<()>,
    ) -> Result<(FollowerReport, Box<dyn std::any::Any>)>;
}

impl<T: Transport> DynTransport for T
where
    T::Follower: 'static,
{
    fn dyn_name(&self) -> &'static str {
        self.name()
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
        let mut step = |seq: u64| {
            if one_way {
                side.receive(seq)
            } else {
                side.serve_one(seq)
            }
        };
        for seq in 1..=warmup {
            step(seq)?;
        }
        let before = CpuTime::now()?;
        for seq in warmup + 1..=warmup + iterations {
            step(seq)?;
        }
        let last_ns = monotonic_ns();
        let report = FollowerReport {
            cpu: CpuTime::now()?.since(before),
            last_ns,
        };
        Ok((report, Box::new(side)))
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
    /// Follower processes to start (at least 1): as many as the widest
    /// fan-out row needs. All run on `follower_cpu`.
    pub followers: u32,
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
    /// Interquartile mean: the mean of the middle half of the round trips
    /// (from the 25th to the 75th percentile). Robust to outliers like the
    /// median, but not bound to the clock's resolution (10 ns on the VM this
    /// was written on, 6 % of a busy-polled round trip there): ratios between
    /// transports are taken of it.
    pub iqm: f64,
}

impl Stats {
    /// `count` round trips that all took `ns` (for tests of what reads
    /// the figures).
    pub fn uniform(count: u64, ns: u64) -> Self {
        Self {
            count,
            min: ns,
            median: ns,
            p99: ns,
            p999: ns,
            max: ns,
            mean: ns as f64,
            iqm: ns as f64,
        }
    }

    /// Summarises round-trip times (nanoseconds) through an HDR histogram
    /// with three significant digits (the interquartile mean from the
    /// samples themselves).
    pub fn from_samples(samples: &[u64]) -> Result<Self> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)?;
        for &s in samples {
            h.record(s.max(1))?;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let quarter = sorted.len() / 4;
        let middle = &sorted[quarter..sorted.len() - quarter];
        let iqm = if middle.is_empty() {
            0.0
        } else {
            middle.iter().map(|&s| s as f64).sum::<f64>() / middle.len() as f64
        };
        Ok(Self {
            count: h.len(),
            min: h.min(),
            median: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            iqm,
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
    /// How much of each message was written and read.
    pub payload: PayloadMode,
    /// Round-trip times.
    pub stats: Stats,
    /// Every timed round trip in nanoseconds, in order.
    pub samples: Vec<u64>,
    /// CPU time the leader used for the timed round trips.
    pub leader_cpu: CpuTime,
    /// CPU time the follower used for the timed round trips.
    pub follower_cpu: CpuTime,
}

/// The clock round trips are timed with: the CPU's time-stamp counter
/// where it ticks at a constant rate whatever the CPU's frequency and power
/// state (x86-64 with the `constant_tsc` and `nonstop_tsc` flags; reading it
/// costs about 10 ns here), else `CLOCK_MONOTONIC` (about 27 ns here, through
/// the vDSO). [`measure`] converts ticks to nanoseconds with the
/// monotonic clock read at both ends of the timed round trips.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    tsc: bool,
}

impl Ticks {
    /// The clock of this machine.
    pub fn get() -> Self {
        static TSC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let tsc = *TSC.get_or_init(|| {
            cfg!(target_arch = "x86_64")
                && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
                    info.lines()
                        .find(|l| l.starts_with("flags"))
                        .is_some_and(|l| {
                            let has = |f: &str| l.split_whitespace().any(|x| x == f);
                            has("constant_tsc") && has("nonstop_tsc")
                        })
                })
        });
        Self { tsc }
    }

    /// The current count of ticks.
    #[inline(always)]
    pub fn now(self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc {
            // SAFETY: RDTSC reads the time-stamp counter and has no other
            // effect; every x86-64 CPU has it.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
        monotonic_ns()
    }
}

/// Average cost of one read of the clock round trips are timed with
/// ([`Ticks`]), in nanoseconds. Every timed round trip reads it once, while
/// its message travels (see [`measure`]).
pub fn clock_cost_ns() -> f64 {
    const N: u32 = 200_000;
    let clock = Ticks::get();
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(clock.now());
    }
    start.elapsed().as_nanos() as f64 / f64::from(N)
}

/// Runs `warmup` untimed, then `iterations` timed round trips; returns the
/// time of each in nanoseconds and the CPU time this process used for the
/// timed ones.
///
/// The clock ([`Ticks`]) is read once per round trip, just after the
/// message is sent ([`Leader::round_trip`]'s `sent`), while it travels to
/// the follower and the answer comes back, so the clock read is not part
/// of the time measured, as long as it and whatever else the sender does
/// after sending take less time than the way there and back. Each interval
/// runs from just after one message was sent to just after the next one
/// was: waiting for one answer and sending the next message, one full
/// round trip. The last warm-up round trip (there is at least one) starts
/// the first interval.
pub fn measure<L: Leader>(
    leader: &mut L,
    warmup: u64,
    iterations: u64,
) -> Result<(Vec<u64>, CpuTime)> {
    let warmup = warmup.max(1);
    for seq in 1..warmup {
        leader.round_trip(seq, || ())?;
    }
    // Written (not just reserved) now, so no page fault lands in the timing.
    let mut samples = vec![0u64; usize::try_from(iterations)?];
    let clock = Ticks::get();
    // Before the round trip that starts the clock: a system call in an
    // interval would be timed. The CPU time so covers one round trip more
    // than the timed ones; it is scaled down below.
    let cpu_before = CpuTime::now()?;
    let (start, start_ticks) = (Instant::now(), clock.now());
    let mut t0 = 0;
    leader.round_trip(warmup, || t0 = clock.now())?;
    let mut seq = warmup;
    for s in samples.iter_mut() {
        seq += 1;
        leader.round_trip(seq, || {
            let t1 = clock.now();
            // Saturating: counters of different CPUs may disagree a little
            // if the leader is not pinned and moves.
            *s = t1.saturating_sub(t0);
            t0 = t1;
        })?;
    }
    let (elapsed, ticks) = (start.elapsed(), clock.now().saturating_sub(start_ticks));
    let cpu = CpuTime::now()?
        .since(cpu_before)
        .scaled(iterations, iterations + 1);
    // Ticks to nanoseconds, at the rate seen over the whole run.
    let ns_per_tick = elapsed.as_nanos() as f64 / ticks.max(1) as f64;
    for s in &mut samples {
        *s = (*s as f64 * ns_per_tick).round() as u64;
    }
    Ok((samples, cpu))
}

/// A one-way row to run: see [`Session::run_one_way`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneWay {
    /// [`Pattern::Throughput`] or [`Pattern::FanOut`].
    pub pattern: Pattern,
    /// How much of each message is written and read.
    pub payload: PayloadMode,
    /// Message size in bytes.
    pub size: usize,
    /// Receivers (1 for throughput).
    pub followers: u32,
    /// Untimed messages first.
    pub warmup: u64,
    /// Timed messages.
    pub messages: u64,
}

/// The result of one one-way row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneWayResult {
    /// [`Transport::name`].
    pub transport: &'static str,
    /// What ran.
    pub spec: OneWay,
    /// From the leader's first timed send to the moment the last receiver
    /// had checked the last message, in nanoseconds.
    pub elapsed_ns: u64,
    /// CPU time the leader used for the timed messages.
    pub leader_cpu: CpuTime,
    /// CPU time the followers used for the timed messages, added up.
    pub follower_cpu: CpuTime,
}

impl OneWayResult {
    /// Messages per second, each delivered to every receiver.
    pub fn messages_per_s(&self) -> f64 {
        self.spec.messages as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }

    /// Payload bytes per second delivered, counting each receiver's copy.
    pub fn bytes_per_s(&self) -> f64 {
        self.messages_per_s() * self.spec.size as f64 * f64::from(self.spec.followers)
    }
}

/// One follower process and its pipes.
#[derive(Debug)]
struct FollowerProc {
    child: Child,
    to_child: ChildStdin,
    from_child: BufReader<ChildStdout>,
    cpu: Option<usize>,
}

impl FollowerProc {
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

    /// After the leader's side of a row failed: the follower's own error,
    /// if it sends one within a moment (it often saw the cause first).
    fn error_soon(&mut self) -> Option<String> {
        use rustix::event::{poll, PollFd, PollFlags};
        if self.from_child.buffer().is_empty() {
            let mut fds = [PollFd::new(self.from_child.get_ref(), PollFlags::IN)];
            let wait = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 300_000_000,
            };
            if !matches!(poll(&mut fds, Some(&wait)), Ok(n) if n > 0) {
                return None;
            }
        }
        match self.read_reply() {
            Err(e) => Some(e.to_string()),
            Ok(_) => None,
        }
    }
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
                "row {} {} {} {} {warmup} {iterations} {} {n} {k}",
                transport.name(),
                row.pattern.name(),
                row.payload.name(),
                row.size,
                row.row_id
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
            .and_then(|()| measure(&mut leader, warmup, iterations));
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
    /// checked the last message.
    pub fn run_one_way<T: Transport>(
        &mut self,
        transport: &T,
        spec: OneWay,
    ) -> Result<OneWayResult> {
        if !spec.pattern.one_way() {
            return Err("run_one_way needs a one-way pattern".into());
        }
        let row = RowSpec {
            pattern: spec.pattern,
            payload: spec.payload,
            followers: spec.followers.max(1),
            ..RowSpec::ping_pong(self.root.clone(), 0, spec.size)
        };
        let mut leader = self.open_row(transport, row, spec.warmup, spec.messages)?;
        let timed = (|| {
            leader.connect()?;
            for seq in 1..=spec.warmup {
                leader.send(seq)?;
            }
            let cpu_before = CpuTime::now()?;
            let start = monotonic_ns();
            for seq in spec.warmup + 1..=spec.warmup + spec.messages {
                leader.send(seq)?;
            }
            Ok((start, CpuTime::now()?.since(cpu_before)))
        })();
        let (start, leader_cpu) = self.with_follower_errors(timed, spec.followers.max(1))?;
        let reports = self.collect(spec.followers.max(1))?;
        drop(leader);
        self.broken = false;
        let last = reports.iter().map(|r| r.last_ns).max().unwrap_or(start);
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

/// The follower's `done <user ns> <system ns> <sleeps> <last ns>` line.
fn parse_done(line: &str) -> Result<FollowerReport> {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["done", user, system, sleeps, last] => Ok(FollowerReport {
            cpu: CpuTime {
                user_ns: user.parse()?,
                system_ns: system.parse()?,
                sleeps: sleeps.parse()?,
            },
            last_ns: last.parse()?,
        }),
        _ => Err(format!(
            "expected \"done <user ns> <system ns> <sleeps> <last ns>\" from the follower, got {line:?}"
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
}

impl<T: Transport> RunRow for T {
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
    // The side of the last row, kept until the leader's next command.
    let mut last_side: Option<Box<dyn std::any::Any>> = None;
    for line in stdin.lock().lines() {
        let line = line?;
        last_side = None;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["quit"] => return Ok(()),
            ["row", name, pattern, payload, size, warmup, iterations, row_id, followers, index] => {
                let result = (|| -> Result<(FollowerReport, Box<dyn std::any::Any>)> {
                    let t = transports
                        .iter()
                        .find(|t| t.dyn_name() == *name)
                        .ok_or_else(|| format!("no transport named {name:?}"))?;
                    let row = RowSpec {
                        root: args.root.clone(),
                        row_id: row_id.parse()?,
                        size: size.parse()?,
                        pattern: Pattern::parse(pattern)?,
                        payload: PayloadMode::parse(payload)?,
                        followers: followers.parse()?,
                        index: index.parse()?,
                    };
                    // Several receivers on this machine's few CPUs: a
                    // busy-polling one must let the others run.
                    set_yield_when_idle(row.followers > 1);
                    let report = t.follow(&row, warmup.parse()?, iterations.parse()?, &mut || {
                        reply("ready")
                    });
                    set_yield_when_idle(false);
                    report
                })();
                match result {
                    Ok((r, side)) => {
                        last_side = Some(side);
                        reply(&format!(
                            "done {} {} {} {}",
                            r.cpu.user_ns, r.cpu.system_ns, r.cpu.sleeps, r.last_ns
                        ))?
                    }
                    Err(e) => reply(&format!("error {}", e.to_string().replace('\n', " ")))?,
                }
            }
            _ => reply(&format!("error unknown command {line:?}"))?,
        }
    }
    drop(last_side);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leader that waits `before` before its message is "sent" and
    /// `after` after it, and counts what the harness asked of it.
    struct Scripted {
        before: std::time::Duration,
        after: std::time::Duration,
        seqs: Vec<u64>,
        sent_calls: u64,
    }

    impl Leader for Scripted {
        fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
            self.seqs.push(seq);
            std::thread::sleep(self.before);
            sent();
            self.sent_calls += 1;
            std::thread::sleep(self.after);
            Ok(())
        }
    }

    #[test]
    fn the_clock_advances() {
        let clock = Ticks::get();
        let t0 = clock.now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(clock.now() > t0);
        assert!(clock_cost_ns() > 0.0);
    }

    #[test]
    fn measure_times_whole_cycles_from_send_to_send() {
        let ms = std::time::Duration::from_millis(1);
        for (warmup, before, after) in [(3, ms, ms), (0, 2 * ms, std::time::Duration::ZERO)] {
            let mut leader = Scripted {
                before,
                after,
                seqs: Vec::new(),
                sent_calls: 0,
            };
            let (samples, _) = measure(&mut leader, warmup, 5).unwrap();
            assert_eq!(samples.len(), 5);
            // Messages 1, 2, ... in order, at least one of them warm-up;
            // `sent` once per round trip.
            let total = warmup.max(1) + 5;
            assert_eq!(leader.seqs, (1..=total).collect::<Vec<_>>());
            assert_eq!(leader.sent_calls, total);
            // An interval runs from one send to the next, so it holds the
            // time after one send and the time before the next: both.
            for s in samples {
                assert!(s >= (before + after).as_nanos() as u64, "{s} ns");
            }
        }
    }

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
            parse_done("done 12 34 5 99").unwrap(),
            FollowerReport {
                cpu: CpuTime {
                    user_ns: 12,
                    system_ns: 34,
                    sleeps: 5
                },
                last_ns: 99
            }
        );
        assert!(parse_done("done").is_err());
        assert!(parse_done("done 12 34 5").is_err());
        assert!(parse_done("done x 1 2 3").is_err());
        assert!(parse_done("ready 1 2 3 4").is_err());
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
        // The middle half, 251..=750, and its mean.
        assert_eq!(s.iqm, 500.5);
        // Outliers do not move it; the clock's steps do not bind it.
        let mut steps = vec![100u64; 6];
        steps.extend([110, 110, 110, 1_000_000]);
        let s = Stats::from_samples(&steps).unwrap();
        assert_eq!(s.median, 100);
        assert!((s.iqm - 620.0 / 6.0).abs() < 1e-9, "{}", s.iqm);
        assert_eq!(Stats::from_samples(&[]).unwrap().iqm, 0.0);
        assert_eq!(Stats::from_samples(&[7]).unwrap().iqm, 7.0);
    }
}
