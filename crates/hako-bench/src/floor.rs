//! The floor: two processes ping-pong one cache line.
//!
//! One `AtomicU64` at the start of a page of a tmpfs file (so alone on its
//! cache line). For message `seq` the leader stores `2·seq − 1` and
//! busy-polls until it reads `2·seq`; the follower busy-polls until it reads
//! `2·seq − 1` and stores `2·seq`. One cache-line transfer each way: nothing
//! that moves data between two CPUs can do less, so every other transport is
//! quoted as a multiple of this. The message size is ignored.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::shm::SharedRegion;
use crate::transport::{poll, Follower, Leader, RowSpec, Transport, Waiting};
use crate::Result;

/// Bytes of the shared file (one page).
const REGION: usize = 4096;

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

impl Drop for FloorLeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
