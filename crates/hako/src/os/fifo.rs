//! Named FIFOs: the pollable wake-up channel of a port.
//!
//! A port that a waitset may wait on creates a FIFO next to its service and
//! keeps it open read-write (so it never sees end-of-file and opening it for
//! writing never blocks). A sender that finds a waitset registered in the
//! port's wake block writes one byte; the waitset's epoll sees the FIFO
//! readable and drains it.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{mknodat, open, FileType, Mode, OFlags, CWD};

/// Creates the FIFO at `path` (with the permissions of `access`) and opens
/// it read-write, non-blocking.
pub fn create(path: &Path, access: super::shm::Access) -> io::Result<OwnedFd> {
    mknodat(
        CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(super::shm::FILE_MODE),
        0,
    )?;
    let fd = open_reader(path)?;
    if access != super::shm::Access::default() {
        if let Err(e) = access.apply(&fd, false) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
    }
    Ok(fd)
}

/// Opens an existing FIFO read-write, non-blocking (the owner's end).
pub fn open_reader(path: &Path) -> io::Result<OwnedFd> {
    Ok(open(
        path,
        OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens a FIFO for writing, non-blocking (a sender's end). Fails with
/// `ENXIO` when nobody holds it open for reading.
pub fn open_writer(path: &Path) -> io::Result<OwnedFd> {
    Ok(open(
        path,
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Writes one wake-up byte; a full FIFO is already readable, so `EAGAIN` is
/// success too.
pub fn poke(fd: &OwnedFd) {
    let _ = rustix::io::write(fd, &[1u8]);
}

/// Reads every pending byte.
pub fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 256];
    while let Ok(n) = rustix::io::read(fd, &mut buf) {
        if n < buf.len() {
            break;
        }
    }
}
