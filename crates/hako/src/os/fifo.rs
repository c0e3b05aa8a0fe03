//! Named FIFOs: the pollable wake-up channel of a port.
//!
//! A port that a waitset may wait on creates a FIFO in its service's
//! directory (`os::dir::Dir::make_fifo`) and keeps it open read-write (so it never sees end-of-file and opening it for
//! writing never blocks). A sender that finds a waitset registered in the
//! port's wake block writes one byte; the waitset's epoll sees the FIFO
//! readable and drains it.

use std::os::fd::OwnedFd;

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
