//! What a benchmarked transport provides.
//!
//! A transport moves a message of `size` bytes from a leader process to a
//! follower process and an answer of the same size back. The harness builds
//! both sides for each row of a table:
//!
//! 1. the leader calls [`Transport::leader`] (it creates shared resources),
//! 2. the follower calls [`Transport::follower`] (it opens them),
//! 3. the leader calls [`Leader::connect`] (it waits until both are linked),
//! 4. both run exchanges numbered 1, 2, … — first untimed warm-up ones,
//!    then timed ones: the leader with [`Leader::round_trip`], the follower
//!    with [`Follower::serve_one`].
//!
//! Sequence numbers let each side check that it got the message it expects,
//! so a transport that loses or reorders messages fails loudly instead of
//! producing a fast number.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::Result;

/// How long a side waits for its peer before it gives up on it.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);

/// What both sides of one row know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpec {
    /// The domain root of this run (a private directory on a tmpfs).
    pub root: PathBuf,
    /// Unique per row within a run; names files and services of the row.
    pub row_id: u64,
    /// Message size in bytes (at least 1).
    pub size: usize,
}

/// The leader's side of a row.
pub trait Leader {
    /// Waits until the follower's side is linked, so the first message
    /// cannot be lost. Default: nothing to wait for.
    fn connect(&mut self) -> Result<()> {
        Ok(())
    }

    /// Sends message `seq` and waits for the follower's answer to it.
    fn round_trip(&mut self, seq: u64) -> Result<()>;
}

/// The follower's side of a row.
pub trait Follower {
    /// Waits for message `seq` and answers it.
    fn serve_one(&mut self, seq: u64) -> Result<()>;
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

    /// Why it cannot carry `size`-byte messages on this machine, if it
    /// cannot: the row is skipped and the reason shown. Default: it can.
    fn skip_reason(&self, size: usize) -> Option<String> {
        let _ = size;
        None
    }

    /// Builds the leader's side of a row; runs before [`Self::follower`].
    fn leader(&self, row: &RowSpec) -> Result<Self::Leader>;

    /// Builds the follower's side of a row.
    fn follower(&self, row: &RowSpec) -> Result<Self::Follower>;
}

/// Busy-polls `f` until it yields a value; fails after [`PEER_TIMEOUT`]
/// without one (the peer died or lost a message). `what` names the wait in
/// the error.
#[inline]
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let mut spins: u32 = 0;
    let mut since: Option<Instant> = None;
    loop {
        if let Some(v) = f()? {
            return Ok(v);
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
