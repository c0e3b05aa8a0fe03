//! What the kernel transports share: a [`Channel`] (a byte stream or a
//! message queue), buffers, and one leader and one follower side over it.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{fcntl_getfl, fcntl_setfl, open, Mode, OFlags};

use crate::error::Result;
#[cfg(doc)]
use crate::transport::Transport;
#[cfg(doc)]
use crate::transport::PEER_TIMEOUT;
use crate::transport::{pipeline, tag, Follower, Leader, PayloadMode, RowSpec};

/// The two buffers of one side: what it writes, what it reads into.
#[derive(Debug)]
pub(super) struct Buffers {
    pub(super) out: Vec<u8>,
    pub(super) inp: Vec<u8>,
    pub(super) payload: PayloadMode,
}

impl Buffers {
    pub(super) fn new(row: &RowSpec) -> Result<Self> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        // Zero-filled now, so that no page fault lands in the timing.
        Ok(Self {
            out: vec![0; row.size],
            inp: vec![0; row.size],
            payload: row.payload,
        })
    }

    /// The outgoing message, tagged `t`.
    #[inline]
    pub(super) fn tagged(&mut self, t: u8) -> &[u8] {
        self.payload.write(&mut self.out, t);
        &self.out
    }

    /// Checks the first `n` bytes received against tag `t`.
    #[inline]
    pub(super) fn check(&self, n: usize, t: u8, what: &str) -> Result<()> {
        self.payload.check(&self.inp[..n], self.inp.len(), t, what)
    }
}

/// One direction of a kernel mechanism, as one side sees it.
pub trait Channel {
    /// Sends the whole message `msg`, blocking while the kernel's buffers
    /// are full.
    fn put(&mut self, msg: &[u8]) -> Result<()>;

    /// Receives one whole message into `buf` (exactly `buf.len()` bytes of a
    /// stream); returns its length.
    fn get(&mut self, buf: &mut [u8]) -> Result<usize>;
}

impl<T: Read + Write> Channel for T {
    #[inline]
    fn put(&mut self, msg: &[u8]) -> Result<()> {
        Ok(self.write_all(msg)?)
    }

    #[inline]
    fn get(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.read_exact(buf)?;
        Ok(buf.len())
    }
}

/// Makes the leader's channel to the next follower once the followers have
/// built their side (sockets: accepts), and for ping-pong the one back.
type Accept<C> = Box<dyn FnMut() -> Result<(C, Option<C>)>>;

/// The leader's side of every kernel mechanism.
pub struct KernelLeader<C> {
    pub(super) name: &'static str,
    /// One channel to each follower (built in `connect` if `accept` is set).
    pub(super) outs: Vec<C>,
    /// From the follower (ping-pong).
    pub(super) inp: Option<C>,
    /// Makes the channel to the next follower (sockets: accepts), and for
    /// ping-pong the one back, from the same connection.
    pub(super) accept: Option<(Accept<C>, usize)>,
    /// Descriptors kept open only until the followers have opened theirs.
    pub(super) keep: Vec<OwnedFd>,
    /// Names removed once everybody is connected (and on drop).
    pub(super) paths: Vec<PathBuf>,
    pub(super) queues: Vec<CString>,
    pub(super) bufs: Buffers,
}

impl<C> std::fmt::Debug for KernelLeader<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelLeader")
            .field("name", &self.name)
            .field("outs", &self.outs.len())
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

impl<C> KernelLeader<C> {
    pub(super) fn new(name: &'static str, row: &RowSpec) -> Result<Self> {
        Ok(Self {
            name,
            outs: Vec::new(),
            inp: None,
            accept: None,
            keep: Vec::new(),
            paths: Vec::new(),
            queues: Vec::new(),
            bufs: Buffers::new(row)?,
        })
    }

    pub(super) fn remove_names(&mut self) {
        for p in self.paths.drain(..) {
            let _ = std::fs::remove_file(p);
        }
        for q in self.queues.drain(..) {
            unlink_queue(&q);
        }
    }
}

impl<C> Drop for KernelLeader<C> {
    fn drop(&mut self) {
        self.remove_names();
    }
}

/// The follower's side of every kernel mechanism.
#[derive(Debug)]
pub struct KernelFollower<C> {
    pub(super) name: &'static str,
    pub(super) inp: C,
    /// To the leader (ping-pong).
    pub(super) out: Option<C>,
    pub(super) bufs: Buffers,
}

impl<C: Channel> Leader for KernelLeader<C> {
    fn connect(&mut self) -> Result<()> {
        if let Some((mut accept, n)) = self.accept.take() {
            for _ in 0..n {
                let (out, inp) = accept()?;
                self.outs.push(out);
                if inp.is_some() {
                    self.inp = inp;
                }
            }
        }
        // Everybody has its ends open: the names and our copies of the
        // followers' ends are no longer needed.
        self.keep.clear();
        self.remove_names();
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let name = self.name;
        let out = self.outs.first_mut().ok_or("not connected")?;
        out.put(self.bufs.tagged(t))
            .map_err(|e| format!("{name}: writing ping {seq}: {e}"))?;
        sent();
        let inp = self.inp.as_mut().ok_or("this row is one-way")?;
        let n = inp
            .get(&mut self.bufs.inp)
            .map_err(|e| format!("{name}: reading pong {seq}: {e}"))?;
        self.bufs.check(n, t.wrapping_add(1), "pong")
    }

    fn pipeline(&mut self, seqs: std::ops::RangeInclusive<u64>, depth: usize) -> Result<()> {
        let name = self.name;
        pipeline(
            self,
            seqs,
            depth,
            |side, seq| {
                let out = side.outs.first_mut().ok_or("not connected")?;
                out.put(side.bufs.tagged(tag(seq)))
                    .map_err(|e| format!("{name}: writing request {seq}: {e}").into())
            },
            |side, seq, ()| {
                let inp = side.inp.as_mut().ok_or("this row is one-way")?;
                let n = inp
                    .get(&mut side.bufs.inp)
                    .map_err(|e| format!("{name}: reading response {seq}: {e}"))?;
                side.bufs.check(n, tag(seq).wrapping_add(1), "response")
            },
        )
    }

    #[inline]
    fn send(&mut self, seq: u64) -> Result<()> {
        let name = self.name;
        let msg = self.bufs.tagged(tag(seq));
        for out in &mut self.outs {
            out.put(msg)
                .map_err(|e| format!("{name}: writing message {seq}: {e}"))?;
        }
        Ok(())
    }
}

impl<C: Channel> Follower for KernelFollower<C> {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        self.receive(seq)?;
        let name = self.name;
        let out = self.out.as_mut().ok_or("this row is one-way")?;
        out.put(self.bufs.tagged(tag(seq).wrapping_add(1)))
            .map_err(|e| format!("{name}: writing pong {seq}: {e}").into())
    }

    #[inline]
    fn receive(&mut self, seq: u64) -> Result<()> {
        let name = self.name;
        let n = self
            .inp
            .get(&mut self.bufs.inp)
            .map_err(|e| format!("{name}: reading message {seq}: {e}"))?;
        self.bufs.check(n, tag(seq), "ping")
    }
}

/// Clears `O_NONBLOCK` (FIFOs are opened non-blocking so that opening does
/// not wait for the other end).
fn set_blocking(fd: &OwnedFd) -> Result<()> {
    let flags = fcntl_getfl(fd)?;
    fcntl_setfl(fd, flags - OFlags::NONBLOCK)?;
    Ok(())
}

/// Opens a FIFO (or a pipe through `/proc`) without waiting for the other
/// end, then makes it blocking.
pub(super) fn open_fifo(path: &Path, access: OFlags) -> Result<File> {
    let fd = open(
        path,
        access | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    set_blocking(&fd)?;
    Ok(File::from(fd))
}

/// Removes the message queue `name` (one already gone is fine).
pub(super) fn unlink_queue(name: &CString) {
    // SAFETY: `name` is a NUL-terminated string alive for the call. Failure
    // (already unlinked) is fine.
    unsafe { libc::mq_unlink(name.as_ptr()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_tag_and_check() {
        let row = RowSpec::ping_pong("/".into(), 0, 3);
        let mut b = Buffers::new(&row).unwrap();
        assert_eq!(b.tagged(9), &[9, 0, 9]);
        b.inp.copy_from_slice(&[9, 0, 9]);
        b.check(3, 9, "x").unwrap();
        assert!(b.check(3, 8, "x").is_err());
        assert!(b.check(2, 9, "x").is_err());
        assert!(Buffers::new(&RowSpec::ping_pong("/".into(), 0, 0)).is_err());
    }
}
