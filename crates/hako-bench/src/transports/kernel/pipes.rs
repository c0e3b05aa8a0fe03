//! Anonymous pipes and FIFOs.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rustix::fs::{mkfifoat, Mode, OFlags, CWD};
use rustix::pipe::{pipe_with, PipeFlags};

use super::channel::{open_fifo, Buffers, KernelFollower, KernelLeader};
use crate::error::Result;
use crate::transport::{RowSpec, Transport, Waiting};

// ---------------------------------------------------------------- pipes --

/// Anonymous pipes, one per direction and follower.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pipe;

impl Transport for Pipe {
    type Leader = KernelLeader<File>;
    type Follower = KernelFollower<File>;

    fn name(&self) -> &'static str {
        "pipe"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let pong = if !row.pattern.one_way() {
            let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
            side.inp = Some(File::from(r));
            Some(w)
        } else {
            None
        };
        for k in 0..row.followers.max(1) {
            let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
            side.outs.push(File::from(w));
            let back = match (&pong, k) {
                (Some(w), 0) => w.as_raw_fd().to_string(),
                _ => "-".to_owned(),
            };
            let path = row.path("pipe", &k.to_string());
            std::fs::write(&path, format!("{} {back}\n", r.as_raw_fd()))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            side.paths.push(path);
            side.keep.push(r);
        }
        side.keep.extend(pong);
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let bufs = Buffers::new(row)?;
        let path = row.path("pipe", &row.index.to_string());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let leader = rustix::process::getppid()
            .ok_or("the leader is gone")?
            .as_raw_nonzero()
            .get();
        let proc_fd = |fd: &str| PathBuf::from(format!("/proc/{leader}/fd/{fd}"));
        let mut words = text.split_whitespace();
        let (Some(ping), Some(pong)) = (words.next(), words.next()) else {
            return Err(format!("{} holds {text:?}", path.display()).into());
        };
        Ok(KernelFollower {
            name: self.name(),
            inp: open_fifo(&proc_fd(ping), OFlags::RDONLY)?,
            out: match pong {
                "-" => None,
                fd => Some(open_fifo(&proc_fd(fd), OFlags::WRONLY)?),
            },
            bufs,
        })
    }
}

// ---------------------------------------------------------------- FIFOs --

/// Named pipes (FIFOs) in the run's root, one per direction and follower.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl Transport for Fifo {
    type Leader = KernelLeader<File>;
    type Follower = KernelFollower<File>;

    fn name(&self) -> &'static str {
        "fifo"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let mkfifo = |p: &Path| {
            mkfifoat(CWD, p, Mode::from_raw_mode(0o600))
                .map_err(|e| format!("cannot create the FIFO {}: {e}", p.display()))
        };
        let mut pings = Vec::new();
        for k in 0..row.followers.max(1) {
            let path = row.path("fifo", &format!("{k}_ping"));
            mkfifo(&path)?;
            // Held open read-write (Linux allows that for a FIFO, and it
            // never blocks) until `connect`, so the FIFO has a writer from
            // the start and the follower does not read a premature
            // end-of-file. `connect` opens it write-only (the follower is
            // reading by then), so a follower that dies shows up as a broken
            // pipe, not as a pipe that fills up.
            side.keep.push(open_fifo(&path, OFlags::RDWR)?.into());
            side.paths.push(path.clone());
            pings.push(path);
        }
        let mut next = pings.into_iter();
        side.accept = Some((
            Box::new(move || {
                let path = next.next().ok_or("no FIFO left to open")?;
                Ok((open_fifo(&path, OFlags::WRONLY)?, None))
            }),
            row.followers.max(1) as usize,
        ));
        if !row.pattern.one_way() {
            let path = row.path("fifo", "pong");
            mkfifo(&path)?;
            side.inp = Some(open_fifo(&path, OFlags::RDONLY)?);
            side.paths.push(path);
        }
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        Ok(KernelFollower {
            name: self.name(),
            inp: open_fifo(
                &row.path("fifo", &format!("{}_ping", row.index)),
                OFlags::RDONLY,
            )?,
            // The leader holds the read end already.
            out: if row.pattern.one_way() {
                None
            } else {
                Some(open_fifo(&row.path("fifo", "pong"), OFlags::WRONLY)?)
            },
            bufs: Buffers::new(row)?,
        })
    }
}
