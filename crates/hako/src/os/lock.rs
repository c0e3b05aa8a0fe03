//! `flock`-based locks: the domain lock and node liveness locks.
//!
//! The kernel releases a `flock` when the last descriptor of the open file
//! goes away, which includes the death of the process: a lock held by a dead
//! process never blocks anyone.

use std::io;
use std::os::fd::OwnedFd;
use rustix::fs::{flock, FlockOperation};

use super::dir::Dir;

/// Exclusive lock on a domain root directory, held while port tables and
/// service files are changed. Released on drop (or on process death).
#[derive(Debug)]
pub struct DomainLock {
    _fd: OwnedFd,
}

impl DomainLock {
    /// Blocks until the lock on the directory `dir` is ours (through a
    /// description of its own, so that threads of this process exclude
    /// each other too).
    pub fn acquire(dir: &Dir) -> io::Result<Self> {
        let fd = dir.reopen()?;
        loop {
            match flock(&fd, FlockOperation::LockExclusive) {
                Ok(()) => return Ok(Self { _fd: fd }),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Tries to take an exclusive lock on `fd` without blocking; `Ok(false)` if
/// another open file description holds it.
pub fn try_lock(fd: &OwnedFd) -> io::Result<bool> {
    match flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
