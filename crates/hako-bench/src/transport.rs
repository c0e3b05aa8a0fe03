//! What a benchmarked transport provides.
//!
//! A transport moves messages of `size` bytes from a leader process to one
//! or more follower processes. The harness builds both sides for each row of
//! a table:
//!
//! 1. the leader calls [`Transport::leader`] (it creates shared resources),
//! 2. each follower calls [`Transport::follower`] (it opens them),
//! 3. the leader calls [`Leader::connect`] (it waits until all are linked),
//! 4. all run messages numbered 1, 2, … — first untimed warm-up ones,
//!    then timed ones.
//!
//! What step 4 does depends on the row's [`Pattern`]:
//!
//! * [`Pattern::PingPong`] — one follower; the leader sends a message and
//!   waits for an answer of the same size ([`Leader::round_trip`],
//!   [`Follower::serve_one`]).
//! * [`Pattern::Throughput`] — one follower; the leader sends messages one
//!   way as fast as the transport's own flow control lets it
//!   ([`Leader::send`]), the follower receives and checks each
//!   ([`Follower::receive`]).
//! * [`Pattern::FanOut`] — as throughput, with `followers` receivers: every
//!   message reaches each of them (one publisher and N subscribers, or N
//!   connections the leader writes in turn).
//! * [`Pattern::RequestResponse`] — one follower, the server; the leader, the
//!   client, keeps up to [`RowSpec::depth`] requests in flight
//!   ([`Leader::pipeline`], usually through [`pipeline`]) and the follower
//!   answers each in turn ([`Follower::serve_one`]). With a depth of 1 this
//!   is a ping-pong.
//!
//! How much of each message the sides touch is the row's [`PayloadMode`]:
//! `touch` writes and checks the first and last byte, `full` writes every
//! byte and reads every byte back into a checksum.
//!
//! Sequence numbers let each side check that it got the message it expects,
//! so a transport that loses or reorders messages fails loudly instead of
//! producing a fast number.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::Result;

/// How long a side waits for its peer before it gives up on it.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);

/// How messages flow in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Pattern {
    /// Round trips between the leader and one follower.
    #[default]
    PingPong,
    /// One way, leader to one follower, back to back.
    Throughput,
    /// One way, leader to every follower, back to back.
    FanOut,
    /// Requests from the leader, each answered by the follower, with up to
    /// [`RowSpec::depth`] of them in flight.
    RequestResponse,
    /// Request/response through the async transports ([`crate::aio`]) and
    /// their blocking counterparts: a group of the suite, whose rows run
    /// as [`Pattern::RequestResponse`].
    Async,
    /// hako through two `hako-bridge` processes against plain Zenoh (the
    /// `bridge` feature): a group of the suite, whose rows run as
    /// [`Pattern::PingPong`].
    Bridge,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 6] = [
        Pattern::PingPong,
        Pattern::Throughput,
        Pattern::FanOut,
        Pattern::RequestResponse,
        Pattern::Async,
        Pattern::Bridge,
    ];

    /// `pingpong`, `throughput`, `fanout`, `reqres`, `async`, `bridge`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PingPong => "pingpong",
            Pattern::Throughput => "throughput",
            Pattern::FanOut => "fanout",
            Pattern::RequestResponse => "reqres",
            Pattern::Async => "async",
            Pattern::Bridge => "bridge",
        }
    }

    /// The pattern called `name`.
    pub fn parse(name: &str) -> Result<Pattern, String> {
        let name = name.trim();
        Pattern::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown pattern {name:?}; known: pingpong, throughput, fanout, reqres, async, \
                     bridge"
                )
            })
    }

    /// Whether messages flow one way only (no answers).
    pub fn one_way(self) -> bool {
        matches!(self, Pattern::Throughput | Pattern::FanOut)
    }
}

/// How much of each message the sending and the receiving side touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PayloadMode {
    /// The sender writes the first and last byte, the receiver checks them
    /// (the iceperf method): the cost of moving a message, whatever it holds.
    #[default]
    Touch,
    /// The sender writes every byte, the receiver reads every byte into a
    /// checksum and compares it: the cost of producing and consuming the data
    /// as well.
    Full,
}

impl PayloadMode {
    /// Both modes.
    pub const ALL: [PayloadMode; 2] = [PayloadMode::Touch, PayloadMode::Full];

    /// `touch` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            PayloadMode::Touch => "touch",
            PayloadMode::Full => "full",
        }
    }

    /// The mode called `name`.
    pub fn parse(name: &str) -> Result<PayloadMode, String> {
        match name.trim() {
            "touch" => Ok(PayloadMode::Touch),
            "full" => Ok(PayloadMode::Full),
            other => Err(format!(
                "unknown payload mode {other:?}; known: touch, full"
            )),
        }
    }

    /// Writes message tag `t` into `buf` (touch: its first and last byte;
    /// full: every byte).
    #[inline]
    pub fn write(self, buf: &mut [u8], t: u8) {
        let n = buf.len();
        if n == 0 {
            return;
        }
        match self {
            PayloadMode::Touch => {
                buf[0] = t;
                buf[n - 1] = t;
            }
            PayloadMode::Full => buf.fill(t),
        }
    }

    /// [`Self::write`] into memory that may be uninitialised (a loaned
    /// sample). In touch mode only the first and last byte are written.
    #[inline]
    pub fn write_uninit(self, buf: &mut [MaybeUninit<u8>], t: u8) {
        let n = buf.len();
        if n == 0 {
            return;
        }
        match self {
            PayloadMode::Touch => {
                buf[0].write(t);
                buf[n - 1].write(t);
            }
            PayloadMode::Full => buf.fill(MaybeUninit::new(t)),
        }
    }

    /// Checks that `bytes` is a whole `size`-byte message tagged `t`: its
    /// first and last byte, and in full mode the sum of all its bytes
    /// (`t × size`), so a message written only in part, or read only in
    /// part, fails. `what` names the message in the error.
    #[inline]
    pub fn check(self, bytes: &[u8], size: usize, t: u8, what: &str) -> Result<()> {
        check_tagged(bytes, size, t, what)?;
        if self == PayloadMode::Full {
            let sum = byte_sum(bytes);
            let want = u64::from(t) * size as u64;
            if sum != want {
                return Err(format!(
                    "{what}: the checksum of {size} bytes tagged {t} is {sum}, expected {want}"
                )
                .into());
            }
        }
        Ok(())
    }
}

/// The sum of all bytes, read 8 at a time: each 16-bit lane of an
/// accumulator adds two bytes per word, and is folded into the total every
/// 1 KiB (128 words, at most 65 280 per lane), so the loop vectorises and
/// runs at memory speed.
#[inline]
pub fn byte_sum(bytes: &[u8]) -> u64 {
    const LANES: u64 = 0x00ff_00ff_00ff_00ff;
    let fold =
        |acc: u64| (acc & 0xffff) + ((acc >> 16) & 0xffff) + ((acc >> 32) & 0xffff) + (acc >> 48);
    let mut total = 0u64;
    let mut blocks = bytes.chunks_exact(1024);
    for block in &mut blocks {
        let mut acc = 0u64;
        for word in block.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let w = u64::from_le_bytes(w);
            acc += (w & LANES) + ((w >> 8) & LANES);
        }
        total += fold(acc);
    }
    total
        + blocks
            .remainder()
            .iter()
            .map(|&b| u64::from(b))
            .sum::<u64>()
}

/// What both sides of one row know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpec {
    /// The domain root of this run (a private directory on a tmpfs).
    pub root: PathBuf,
    /// Unique per row within a run; names files and services of the row.
    pub row_id: u64,
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// How messages flow.
    pub pattern: Pattern,
    /// How much of each message is written and read.
    pub payload: PayloadMode,
    /// Followers (receivers) of the row: 1 unless the pattern is fan-out.
    pub followers: u32,
    /// Which follower this is, `0..followers` (0 on the leader's side).
    pub index: u32,
    /// Requests the leader keeps in flight: 1 unless the pattern is
    /// request/response.
    pub depth: u32,
}

impl RowSpec {
    /// A ping-pong row in touch mode.
    pub fn ping_pong(root: PathBuf, row_id: u64, size: usize) -> Self {
        Self {
            root,
            row_id,
            size,
            pattern: Pattern::PingPong,
            payload: PayloadMode::Touch,
            followers: 1,
            index: 0,
            depth: 1,
        }
    }

    /// The queue depth of a one-way row for a transport whose deepest queue
    /// is `most` messages: `most`, except in full mode, where at most
    /// [`FULL_IN_FLIGHT`] bytes of payload (and at least 2 messages, if
    /// `most` allows) may be in flight. Every byte of a full-mode payload is written and read, so
    /// the messages in flight are the working set the caches must hold; a
    /// touch-mode message touches two cache lines whatever its size.
    pub fn stream_depth(&self, most: usize) -> usize {
        match self.payload {
            PayloadMode::Touch => most,
            PayloadMode::Full => (FULL_IN_FLIGHT / self.size.max(1)).max(2).min(most.max(1)),
        }
    }
}

/// Most payload bytes in flight in a full-mode one-way row (see
/// [`RowSpec::stream_depth`]). With hako at 4 MiB here, 2 messages in flight
/// streamed 6.3k-6.9k messages/s, 32 of them (128 MiB, far beyond the
/// caches) 2.8k-3.3k; at 1 MiB, 8 or fewer 25k-28k, 32 13k-18k.
pub const FULL_IN_FLIGHT: usize = 8 << 20;

/// The leader's side of a row.
pub trait Leader {
    /// Waits until the follower's side is linked, so the first message
    /// cannot be lost. Default: nothing to wait for.
    fn connect(&mut self) -> Result<()> {
        Ok(())
    }

    /// Sends message `seq`, calls `sent` as soon as the message is on its
    /// way, and waits for the follower's answer to it. The harness reads
    /// the clock in `sent`, while the message travels, so the clock read is
    /// not on the round trip's path (see [`measure`](crate::harness::measure)).
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()>;

    /// One-way patterns: sends message `seq` to every follower, waiting as
    /// the transport's flow control says when a receiver is behind.
    /// Default: the transport does only ping-pong.
    fn send(&mut self, seq: u64) -> Result<()> {
        let _ = seq;
        Err(ONE_WAY_UNSUPPORTED.into())
    }

    /// Request/response rows: sends requests `seqs` in order, never more
    /// than `depth` of them unanswered, and returns once every answer is
    /// in and checked (see [`pipeline`]). Default: the transport answers one
    /// message at a time ([`Transport::in_flight_skip`] says so).
    fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let _ = (seqs, depth);
        Err(NO_PIPELINE.into())
    }

    /// A ping-pong row's round trips: `warmup` (at least one) untimed, then
    /// `iterations` timed; each one's time in nanoseconds, in order, and
    /// the CPU time of the timed ones. Default: [`measure`](crate::timing::measure),
    /// one [`round_trip`](Self::round_trip) at a time; transports whose
    /// loop must run elsewhere (in an async runtime) run it whole.
    fn round_trips(
        &mut self,
        warmup: u64,
        iterations: u64,
    ) -> Result<(Vec<u64>, crate::cpu::CpuTime)>
    where
        Self: Sized,
    {
        crate::timing::measure(self, warmup, iterations)
    }
}

const ONE_WAY_UNSUPPORTED: &str = "this transport measures ping-pong only";
const NO_PIPELINE: &str = "this transport answers one request at a time";

/// Sends requests `seqs` through `request`, keeping at most `depth` (at
/// least 1) without an answer, and waits for each answer, oldest first,
/// through `response`, which gets what `request` returned for it (a
/// pending response, say). `state` is what both work on. Returns once the
/// last answer is in.
#[inline]
pub fn pipeline<S, T>(
    state: &mut S,
    seqs: RangeInclusive<u64>,
    depth: usize,
    mut request: impl FnMut(&mut S, u64) -> Result<T>,
    mut response: impl FnMut(&mut S, u64, T) -> Result<()>,
) -> Result<()> {
    let depth = depth.max(1);
    let mut in_flight: VecDeque<(u64, T)> = VecDeque::with_capacity(depth);
    for seq in seqs {
        if in_flight.len() == depth {
            if let Some((s, t)) = in_flight.pop_front() {
                response(state, s, t)?;
            }
        }
        let t = request(state, seq)?;
        in_flight.push_back((seq, t));
    }
    while let Some((s, t)) = in_flight.pop_front() {
        response(state, s, t)?;
    }
    Ok(())
}

/// The follower's side of a row.
pub trait Follower {
    /// Waits for message `seq` and answers it.
    fn serve_one(&mut self, seq: u64) -> Result<()>;

    /// One-way patterns: waits for message `seq` and checks it.
    fn receive(&mut self, seq: u64) -> Result<()> {
        let _ = seq;
        Err(ONE_WAY_UNSUPPORTED.into())
    }

    /// Serves (or, `one_way`, receives) messages `seqs` in order. Default:
    /// one [`serve_one`](Self::serve_one) or [`receive`](Self::receive)
    /// at a time; transports whose loop must run elsewhere (in an async
    /// runtime) run it whole.
    fn serve_range(&mut self, seqs: RangeInclusive<u64>, one_way: bool) -> Result<()> {
        for seq in seqs {
            if one_way {
                self.receive(seq)?;
            } else {
                self.serve_one(seq)?;
            }
        }
        Ok(())
    }
}

/// How a transport's sides wait for each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// They never sleep: each polls memory until the peer's message is
    /// there. Two such processes on one CPU hand over only when the
    /// scheduler preempts the spinning one, milliseconds per message.
    BusyPoll,
    /// They may sleep in the kernel until the peer wakes them.
    Blocking,
}

/// A way of moving messages between two processes.
pub trait Transport: Send + Sync {
    /// The leader's side.
    type Leader: Leader;
    /// The follower's side.
    type Follower: Follower;

    /// Short name, unique among the transports of a binary; the follower
    /// process finds the transport by it.
    fn name(&self) -> &'static str;

    /// How its sides wait.
    fn waiting(&self) -> Waiting;

    /// Why it cannot carry `size`-byte messages in `pattern` on this
    /// machine, if it cannot: the row is skipped and the reason shown.
    /// Default: it can, except one way if it is [`Self::ping_pong_only`].
    fn skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        let _ = size;
        (pattern.one_way() && self.ping_pong_only()).then(|| "a floor: ping-pong only".to_owned())
    }

    /// Why it cannot keep `depth` requests of `size` bytes in flight in a
    /// request/response row, if it cannot. Default: it answers one message
    /// at a time (no [`Leader::pipeline`]).
    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        let _ = (size, depth);
        Some(NO_PIPELINE.to_owned())
    }

    /// Whether it only measures round trips (the floors). Default: no.
    fn ping_pong_only(&self) -> bool {
        false
    }

    /// The fewest untimed messages a one-way run of `size`-byte messages
    /// needs to pass once through the buffers it cycles, when those fault
    /// in as they are first written (and the first pass would measure page
    /// faults). Default: 1.
    fn one_way_warmup(&self, size: usize) -> u64 {
        let _ = size;
        1
    }

    /// Builds the leader's side of a row; runs before [`Self::follower`].
    fn leader(&self, row: &RowSpec) -> Result<Self::Leader>;

    /// Builds the follower's side of a row.
    fn follower(&self, row: &RowSpec) -> Result<Self::Follower>;
}

/// Whether [`poll`] gives up the CPU after each empty look.
static YIELD_WHEN_IDLE: AtomicBool = AtomicBool::new(false);

/// Makes [`poll`] yield the CPU (`sched_yield`) after each empty look, or
/// stop doing so. Fan-out followers that share one CPU set it: a receiver
/// that only spins would keep the others (and, on a small machine, the
/// sender) off the CPU until the scheduler preempts it.
pub fn set_yield_when_idle(on: bool) {
    // Relaxed: read by the same process only; no data is published by it.
    YIELD_WHEN_IDLE.store(on, Ordering::Relaxed);
}

/// Asks the CPU to fetch the cache line holding `p` for reading, without
/// waiting for it: what a polling receiver does for the lines it expects to
/// read next.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    // SAFETY: a prefetch is a hint: it cannot fault on any address and
    // changes no memory.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
}

/// Busy-polls `f` until it yields a value; fails after [`PEER_TIMEOUT`]
/// without one (the peer died or lost a message). `what` names the wait in
/// the error. See [`set_yield_when_idle`].
#[inline]
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let mut spins: u32 = 0;
    let mut since: Option<Instant> = None;
    // Relaxed: a setting of this process, not shared data.
    let yield_when_idle = YIELD_WHEN_IDLE.load(Ordering::Relaxed);
    loop {
        if let Some(v) = f()? {
            return Ok(v);
        }
        if yield_when_idle {
            std::thread::yield_now();
        }
        spins = spins.wrapping_add(1);
        if spins & 0xffff == 0 {
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() > PEER_TIMEOUT {
                return Err(format!(
                    "gave up after {PEER_TIMEOUT:?} waiting for {what}; the peer died or a message was lost"
                )
                .into());
            }
        }
        std::hint::spin_loop();
    }
}

/// Checks that message `seq` (`what`: "ping", "pong", "message") reached
/// `want` receivers, as a publisher's `send` reports.
#[inline]
pub fn check_reached(what: &str, seq: u64, reached: usize, want: usize) -> Result<()> {
    if reached != want {
        return Err(format!("{what} {seq} reached {reached} subscribers, expected {want}").into());
    }
    Ok(())
}

/// The tag a message with sequence number `seq` carries (in its first and
/// last byte); answers carry `tag(seq).wrapping_add(1)`.
#[inline]
pub fn tag(seq: u64) -> u8 {
    // Truncation intended: neighbouring messages differ in the low byte.
    (seq % 251) as u8
}

/// Checks that `bytes` is a whole `size`-byte message tagged `t` in its
/// first and last byte; `what` names the message in the error.
#[inline]
pub fn check_tagged(bytes: &[u8], size: usize, t: u8, what: &str) -> Result<()> {
    if size == 0 || bytes.len() != size || bytes[0] != t || bytes[size - 1] != t {
        return Err(format!(
            "{what}: expected {size} bytes tagged {t}, got {} bytes tagged {} / {}",
            bytes.len(),
            bytes.first().copied().unwrap_or(0),
            bytes.last().copied().unwrap_or(0),
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_mode_streams_keep_the_bytes_in_flight_within_the_caches() {
        let row = |size, payload| RowSpec {
            pattern: Pattern::Throughput,
            payload,
            ..RowSpec::ping_pong(PathBuf::new(), 0, size)
        };
        assert_eq!(row(4 << 20, PayloadMode::Touch).stream_depth(32), 32);
        assert_eq!(row(64, PayloadMode::Full).stream_depth(32), 32);
        assert_eq!(row(256 << 10, PayloadMode::Full).stream_depth(32), 32);
        assert_eq!(row(1 << 20, PayloadMode::Full).stream_depth(32), 8);
        assert_eq!(row(4 << 20, PayloadMode::Full).stream_depth(32), 2);
        assert_eq!(row(64 << 20, PayloadMode::Full).stream_depth(32), 2);
        assert_eq!(row(64 << 20, PayloadMode::Full).stream_depth(1), 1);
    }

    #[test]
    fn byte_sum_matches_a_plain_sum() {
        for n in [0usize, 1, 7, 8, 1023, 1024, 1025, 4096 + 13] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + 250) as u8).collect();
            let plain: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
            assert_eq!(byte_sum(&bytes), plain, "{n}");
        }
        assert_eq!(byte_sum(&[255; 1 << 20]), 255 << 20);
    }

    #[test]
    fn payload_modes_write_and_check() {
        for mode in PayloadMode::ALL {
            let mut buf = vec![0u8; 100];
            mode.write(&mut buf, 9);
            mode.check(&buf, 100, 9, "x").unwrap();
            assert!(mode.check(&buf, 100, 8, "x").is_err());
            assert!(mode.check(&buf[..99], 100, 9, "x").is_err());
            assert_eq!(PayloadMode::parse(mode.name()), Ok(mode));
        }
        // Full mode sees a message written only in part.
        let mut buf = vec![0u8; 100];
        PayloadMode::Touch.write(&mut buf, 9);
        PayloadMode::Touch.check(&buf, 100, 9, "x").unwrap();
        let e = PayloadMode::Full.check(&buf, 100, 9, "x").unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
        let mut un = vec![MaybeUninit::new(0u8); 10];
        PayloadMode::Full.write_uninit(&mut un, 3);
        assert!(un.iter().all(|b| {
            // SAFETY: every byte was initialised above.
            let v = unsafe { b.assume_init() };
            v == 3
        }));
    }

    #[test]
    fn patterns_parse() {
        for p in Pattern::ALL {
            assert_eq!(Pattern::parse(p.name()), Ok(p));
        }
        assert!(Pattern::parse("carrier").is_err());
        assert!(!Pattern::PingPong.one_way());
        assert!(!Pattern::RequestResponse.one_way());
        assert!(Pattern::FanOut.one_way());
    }

    #[test]
    fn a_pipeline_keeps_at_most_depth_in_flight_and_answers_in_order() {
        for depth in [0, 1, 3, 16] {
            // (in flight now, most in flight, answered in order)
            let mut st = (0usize, 0usize, Vec::new());
            pipeline(
                &mut st,
                5..=14,
                depth,
                |st, seq| {
                    st.0 += 1;
                    st.1 = st.1.max(st.0);
                    Ok(seq * 10)
                },
                |st, seq, t| {
                    assert_eq!(t, seq * 10);
                    st.0 -= 1;
                    st.2.push(seq);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(st.0, 0);
            assert_eq!(st.1, depth.clamp(1, 10));
            assert_eq!(st.2, (5..=14).collect::<Vec<u64>>());
        }
        // An error stops it.
        let e = pipeline(
            &mut (),
            1..=3,
            2,
            |_, s| Ok(s),
            |_, s, _| {
                if s == 2 {
                    Err("lost".into())
                } else {
                    Ok(())
                }
            },
        );
        assert!(e.is_err());
    }
}
