//! The floor: two processes ping-pong one cache line.
//!
//! One `AtomicU64` at the start of a page of a tmpfs file (so alone on its
//! cache line). For message `seq` the leader stores `2·seq − 1` and
//! busy-polls until it reads `2·seq`; the follower busy-polls until it reads
//! `2·seq − 1` and stores `2·seq`. One cache-line transfer each way: nothing
//! that moves data between two CPUs can do less, so every other transport is
//! quoted as a multiple of this. The message size is ignored.
//!
//! [`TwoLineFloor`] (`floor2`) is the same with a second cache line each
//! way: the sender writes a payload word on a line of its own, then the
//! doorbell; the receiver prefetches the payload line while it polls the
//! doorbell, then reads and checks the payload word. Nothing that hands
//! over a descriptor and a payload on separate lines (every zero-copy
//! design: the descriptor names a chunk) can do less.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::sys::shm::SharedRegion;
use crate::transport::{poll, prefetch, Follower, Leader, RowSpec, Transport, Waiting};

/// Bytes of the shared file (one page).
const REGION: usize = 4096;
/// [`TwoLineFloor`]: offsets of the ping's and the pong's payload word,
/// each on a line (pair) of its own, away from the doorbell at 0.
const PING_PAYLOAD: usize = 1024;
const PONG_PAYLOAD: usize = 2048;

/// The floor transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct Floor;

fn path(row: &RowSpec) -> PathBuf {
    row.root.join(format!("floor_{}", row.row_id))
}

/// The leader's side: owns (and finally removes) the file.
#[derive(Debug)]
pub struct FloorLeader {
    region: SharedRegion,
    path: PathBuf,
}

/// The follower's side.
#[derive(Debug)]
pub struct FloorFollower {
    region: SharedRegion,
}

impl Transport for Floor {
    type Leader = FloorLeader;
    type Follower = FloorFollower;

    fn name(&self) -> &'static str {
        "floor"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn ping_pong_only(&self) -> bool {
        true
    }

    fn leader(&self, row: &RowSpec) -> Result<FloorLeader> {
        let path = path(row);
        let region = SharedRegion::create(&path, REGION)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(FloorLeader { region, path })
    }

    fn follower(&self, row: &RowSpec) -> Result<FloorFollower> {
        let path = path(row);
        let region = SharedRegion::open(&path, REGION)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(FloorFollower { region })
    }
}

impl Leader for FloorLeader {
    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let word = self.region.atomic_u64(0);
        // ORDERING: Release; pairs with the follower's Acquire load: what a
        // real transport wrote before its doorbell would be published by it.
        word.store(2 * seq - 1, Ordering::Release);
        sent();
        poll("the floor's answer", || {
            // ORDERING: Acquire; pairs with the follower's Release store.
            Ok((word.load(Ordering::Acquire) == 2 * seq).then_some(()))
        })
    }
}

impl Follower for FloorFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let word = self.region.atomic_u64(0);
        poll("the floor's ping", || {
            // ORDERING: Acquire; pairs with the leader's Release store.
            Ok((word.load(Ordering::Acquire) == 2 * seq - 1).then_some(()))
        })?;
        // ORDERING: Release; pairs with the leader's Acquire load.
        word.store(2 * seq, Ordering::Release);
        Ok(())
    }
}

/// The two-line floor: a doorbell and a payload line each way.
#[derive(Debug, Clone, Copy, Default)]
pub struct TwoLineFloor;

/// The leader's side of [`TwoLineFloor`].
#[derive(Debug)]
pub struct TwoLineLeader(FloorLeader);

/// The follower's side of [`TwoLineFloor`].
#[derive(Debug)]
pub struct TwoLineFollower(FloorFollower);

impl Transport for TwoLineFloor {
    type Leader = TwoLineLeader;
    type Follower = TwoLineFollower;

    fn name(&self) -> &'static str {
        "floor2"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn ping_pong_only(&self) -> bool {
        true
    }

    fn leader(&self, row: &RowSpec) -> Result<TwoLineLeader> {
        Floor.leader(row).map(TwoLineLeader)
    }

    fn follower(&self, row: &RowSpec) -> Result<TwoLineFollower> {
        Floor.follower(row).map(TwoLineFollower)
    }
}

/// Waits until the doorbell holds `want`, prefetching `payload` each look,
/// then checks that `payload` holds `seq`.
fn await_two_lines(
    region: &SharedRegion,
    payload: usize,
    want: u64,
    seq: u64,
    what: &str,
) -> Result<()> {
    let (word, payload) = (region.atomic_u64(0), region.atomic_u64(payload));
    poll(what, || {
        prefetch(payload.as_ptr().cast_const().cast());
        // ORDERING: Acquire; pairs with the sender's Release store of the
        // doorbell, which publishes the payload word.
        Ok((word.load(Ordering::Acquire) == want).then_some(()))
    })?;
    // Relaxed: ordered by the Acquire load above.
    let got = payload.load(Ordering::Relaxed);
    if got != seq {
        return Err(format!("{what}: payload word {got}, expected {seq}").into());
    }
    Ok(())
}

impl Leader for TwoLineLeader {
    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let region = &self.0.region;
        // Relaxed: published by the Release store of the doorbell.
        region
            .atomic_u64(PING_PAYLOAD)
            .store(seq, Ordering::Relaxed);
        // ORDERING: Release; pairs with the follower's Acquire load.
        region.atomic_u64(0).store(2 * seq - 1, Ordering::Release);
        sent();
        await_two_lines(
            region,
            PONG_PAYLOAD,
            2 * seq,
            seq,
            "the two-line floor's answer",
        )
    }
}

impl Follower for TwoLineFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let region = &self.0.region;
        await_two_lines(
            region,
            PING_PAYLOAD,
            2 * seq - 1,
            seq,
            "the two-line floor's ping",
        )?;
        // Relaxed: published by the Release store of the doorbell.
        region
            .atomic_u64(PONG_PAYLOAD)
            .store(seq, Ordering::Relaxed);
        // ORDERING: Release; pairs with the leader's Acquire load.
        region.atomic_u64(0).store(2 * seq, Ordering::Release);
        Ok(())
    }
}

impl Drop for FloorLeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
