//! What a benchmarked transport provides.
//!
//! A transport moves a message of `size` bytes from a leader process to a
//! follower process and an answer of the same size back. The harness builds
//! both sides for each row of a table:
//!
//! 1. the leader calls [`Transport::leader`] (it creates shared resources),
//! 2. the follower calls [`Transport::follower`] (it opens them),
//! 3. the leader calls [`Leader::connect`] (it waits until both are linked),
//! 4. both run `rounds` exchanges numbered 1, 2, …: the leader with
//!    [`Leader::round_trip`], the follower with [`Follower::serve_one`].
//!
//! Sequence numbers let each side check that it got the message it expects,
//! so a transport that loses or reorders messages fails loudly instead of
//! producing a fast number.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::Result;

/// How long a side busy-polls for its peer before it gives up on it.
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

/// A way of moving messages between two processes.
pub trait Transport: Send + Sync {
    /// The leader's side.
    type Leader: Leader;
    /// The follower's side.
    type Follower: Follower;

    /// Short name, unique among the transports of a binary; the follower
    /// process finds the transport by it.
    fn name(&self) -> &'static str;

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
