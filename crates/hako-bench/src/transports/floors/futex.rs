//! The blocking floor: two processes ping-pong through one futex word.
//!
//! One `AtomicU32` at the start of a page of a tmpfs file, used as a futex
//! shared between processes (`FUTEX_WAIT` / `FUTEX_WAKE` without
//! `FUTEX_PRIVATE_FLAG`, as hako's own parking uses it). For message `seq`
//! the leader stores `2·seq − 1`, wakes the follower and sleeps until the
//! word reads `2·seq`; the follower sleeps until it reads `2·seq − 1`, stores
//! `2·seq` and wakes the leader. Neither side spins or keeps track of
//! sleepers: each stores, wakes and sleeps at once, so a round trip is two
//! kernel wake-ups and four system calls (one wait and one wake per side).
//! A transport whose waiters sleep in the kernel cannot do much less, so the
//! blocking transports are quoted against this as well. The message size is
//! ignored.
//!
//! A sleeper wakes every [`SLICE`] to notice a dead peer, and gives up after
//! [`PEER_TIMEOUT`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rustix::io::Errno;
use rustix::thread::futex;

use crate::error::Result;
use crate::sys::shm::SharedRegion;
use crate::transport::{Follower, Leader, RowSpec, Transport, Waiting, PEER_TIMEOUT};

/// Bytes of the shared file (one page).
const REGION: usize = 4096;

/// Longest single sleep.
pub const SLICE: Duration = Duration::from_millis(100);

/// The futex floor transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct FutexFloor;

fn path(row: &RowSpec) -> PathBuf {
    row.root.join(format!("futex_{}", row.row_id))
}

/// The leader's side: owns (and finally removes) the file.
#[derive(Debug)]
pub struct FutexLeader {
    region: SharedRegion,
    path: PathBuf,
}

/// The follower's side.
#[derive(Debug)]
pub struct FutexFollower {
    region: SharedRegion,
}

/// The word's value once message `seq` was sent (`answer == false`) or
/// answered. Truncation intended: neighbouring values differ.
#[inline]
fn value(seq: u64, answer: bool) -> u32 {
    (2 * seq - u64::from(!answer)) as u32
}

/// Stores `v` and wakes the peer, whether it sleeps or not.
#[inline]
fn post(word: &AtomicU32, v: u32) {
    // ORDERING: Release; pairs with the peer's Acquire load in wait_for():
    // what a real transport wrote before the store would be published by it.
    word.store(v, Ordering::Release);
    // Its result (how many were woken) does not matter; an error could only
    // be EFAULT on our own mapping.
    let _ = futex::wake(word, futex::Flags::empty(), 1);
}

/// Sleeps until `word` reads `want`.
#[inline]
fn wait_for(word: &AtomicU32, want: u32, what: &str) -> Result<()> {
    let slice = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(SLICE.subsec_nanos()),
    };
    let mut timeouts: u32 = 0;
    loop {
        // ORDERING: Acquire; pairs with the peer's Release store in post().
        let v = word.load(Ordering::Acquire);
        if v == want {
            return Ok(());
        }
        // The kernel sleeps only while the word still holds `v`, so a store
        // and wake between our load and the call make it return at once.
        // Woken, the word changed already (EAGAIN) or a signal (EINTR):
        // look again.
        if let Err(Errno::TIMEDOUT) = futex::wait(word, futex::Flags::empty(), v, Some(&slice)) {
            timeouts += 1;
            if SLICE * timeouts > PEER_TIMEOUT {
                return Err(format!(
                    "gave up after {PEER_TIMEOUT:?} waiting for {what}; the peer died or a message was lost"
                )
                .into());
            }
        }
    }
}

impl Transport for FutexFloor {
    type Leader = FutexLeader;
    type Follower = FutexFollower;

    fn name(&self) -> &'static str {
        "futex"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn ping_pong_only(&self) -> bool {
        true
    }

    fn leader(&self, row: &RowSpec) -> Result<FutexLeader> {
        let path = path(row);
        let region = SharedRegion::create(&path, REGION)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(FutexLeader { region, path })
    }

    fn follower(&self, row: &RowSpec) -> Result<FutexFollower> {
        let path = path(row);
        let region = SharedRegion::open(&path, REGION)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(FutexFollower { region })
    }
}

impl Leader for FutexLeader {
    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let word = self.region.atomic_u32(0);
        post(word, value(seq, false));
        sent();
        wait_for(word, value(seq, true), "the futex floor's answer")
    }
}

impl Follower for FutexFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let word = self.region.atomic_u32(0);
        wait_for(word, value(seq, false), "the futex floor's ping")?;
        post(word, value(seq, true));
        Ok(())
    }
}

impl Drop for FutexLeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_alternate() {
        assert_eq!(value(1, false), 1);
        assert_eq!(value(1, true), 2);
        assert_eq!(value(2, false), 3);
        // Wraps without colliding with its neighbours.
        let big = u64::from(u32::MAX);
        assert_ne!(value(big, false), value(big, true));
        assert_ne!(value(big, true), value(big + 1, false));
    }
}
