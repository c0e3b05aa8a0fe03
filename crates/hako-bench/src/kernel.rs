//! Kernel mechanisms that copy the message: pipes, a unix socket, a POSIX
//! message queue.
//!
//! For message `seq` each side writes a whole `size`-byte buffer (its first
//! and last byte tagged, as in the other transports) and reads a whole one:
//! the kernel copies every byte twice per direction (into its buffers and
//! out again), and a reader sleeps in the kernel until the data is there.
//! Kernel defaults are kept (pipe capacity, socket buffer sizes), as a
//! program that just uses the mechanism would have them.
//!
//! * [`Pipe`] — two named pipes (FIFOs) in the run's root: one per
//!   direction. A FIFO is a pipe with a name, so the follower, started before
//!   the row, can open it; the names are removed once both ends are open.
//!   Reads and writes go through the same `pipe_read`/`pipe_write` as an
//!   anonymous pipe's.
//! * [`UnixSocket`] — a `SOCK_STREAM` unix socket bound in the run's root;
//!   the follower connects, the leader accepts, the name is then removed. A
//!   stream has no message boundaries: each side reads until it has `size`
//!   bytes.
//! * [`MessageQueue`] — two POSIX message queues (`mq_open`), one per
//!   direction, each holding one message of `size` bytes. A message arrives
//!   whole or not at all. Sizes above `/proc/sys/fs/mqueue/msgsize_max` are
//!   skipped ([`Transport::skip_reason`]).
//!
//! A side whose peer died sees end-of-file (pipe, socket) or a receive that
//! times out after [`PEER_TIMEOUT`] (message queue).

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::{fcntl_getfl, fcntl_setfl, mkfifoat, open, Mode, OFlags, CWD};

use crate::transport::PEER_TIMEOUT;
use crate::transport::{check_tagged, tag, Follower, Leader, RowSpec, Transport, Waiting};
use crate::Result;

/// The two buffers of one side: what it writes, what it reads into.
#[derive(Debug)]
struct Buffers {
    out: Vec<u8>,
    inp: Vec<u8>,
}

impl Buffers {
    fn new(size: usize) -> Result<Self> {
        if size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        // Zero-filled now, so that no page fault lands in the timing.
        Ok(Self {
            out: vec![0; size],
            inp: vec![0; size],
        })
    }

    /// The outgoing message, tagged `t`.
    #[inline]
    fn tagged(&mut self, t: u8) -> &[u8] {
        let n = self.out.len();
        self.out[0] = t;
        self.out[n - 1] = t;
        &self.out
    }

    #[inline]
    fn check(&self, t: u8, what: &str) -> Result<()> {
        check_tagged(&self.inp, self.inp.len(), t, what)
    }
}

/// Clears `O_NONBLOCK` (the FIFOs are opened non-blocking so that opening
/// does not wait for the other end).
fn set_blocking(fd: &OwnedFd) -> Result<()> {
    let flags = fcntl_getfl(fd)?;
    fcntl_setfl(fd, flags - OFlags::NONBLOCK)?;
    Ok(())
}

fn open_fifo(path: &Path, access: OFlags) -> Result<File> {
    let fd = open(
        path,
        access | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open the FIFO {}: {e}", path.display()))?;
    set_blocking(&fd)?;
    Ok(File::from(fd))
}

// ---------------------------------------------------------------- pipes --

/// Two pipes (named, so the follower can open them): one per direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pipe;

fn fifo_paths(row: &RowSpec) -> [PathBuf; 2] {
    [
        row.root.join(format!("pipe_{}_ping", row.row_id)),
        row.root.join(format!("pipe_{}_pong", row.row_id)),
    ]
}

/// The leader's side of [`Pipe`]: writes "ping", reads "pong".
#[derive(Debug)]
pub struct PipeLeader {
    /// Opened read-write (Linux allows that for a FIFO, and it never
    /// blocks): so the FIFO has a writer from the start, and the follower
    /// does not read a premature end-of-file before the first ping. The
    /// leader never reads from it.
    ping: File,
    pong: File,
    paths: [PathBuf; 2],
    bufs: Buffers,
}

/// The follower's side of [`Pipe`]: reads "ping", writes "pong".
#[derive(Debug)]
pub struct PipeFollower {
    ping: File,
    pong: File,
    bufs: Buffers,
}

impl Transport for Pipe {
    type Leader = PipeLeader;
    type Follower = PipeFollower;

    fn name(&self) -> &'static str {
        "pipe"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<PipeLeader> {
        let bufs = Buffers::new(row.size)?;
        let paths = fifo_paths(row);
        for p in &paths {
            mkfifoat(CWD, p, Mode::from_raw_mode(0o600))
                .map_err(|e| format!("cannot create the FIFO {}: {e}", p.display()))?;
        }
        let ping = open(&paths[0], OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| format!("cannot open the FIFO {}: {e}", paths[0].display()))?;
        Ok(PipeLeader {
            ping: File::from(ping),
            pong: open_fifo(&paths[1], OFlags::RDONLY)?,
            paths,
            bufs,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<PipeFollower> {
        let bufs = Buffers::new(row.size)?;
        let [ping, pong] = fifo_paths(row);
        Ok(PipeFollower {
            ping: open_fifo(&ping, OFlags::RDONLY)?,
            // The leader holds the read end already.
            pong: open_fifo(&pong, OFlags::WRONLY)?,
            bufs,
        })
    }
}

impl Leader for PipeLeader {
    fn connect(&mut self) -> Result<()> {
        // Both ends of both pipes are open: the names are no longer needed.
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.ping
            .write_all(self.bufs.tagged(t))
            .map_err(|e| format!("pipe: writing ping {seq}: {e}"))?;
        self.pong
            .read_exact(&mut self.bufs.inp)
            .map_err(|e| format!("pipe: reading pong {seq}: {e}"))?;
        self.bufs.check(t.wrapping_add(1), "pipe pong")
    }
}

impl Follower for PipeFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.ping
            .read_exact(&mut self.bufs.inp)
            .map_err(|e| format!("pipe: reading ping {seq}: {e}"))?;
        self.bufs.check(t, "pipe ping")?;
        self.pong
            .write_all(self.bufs.tagged(t.wrapping_add(1)))
            .map_err(|e| format!("pipe: writing pong {seq}: {e}"))?;
        Ok(())
    }
}

impl Drop for PipeLeader {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

// --------------------------------------------------------- unix socket --

/// A `SOCK_STREAM` unix domain socket, bound to a name in the run's root.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnixSocket;

fn socket_path(row: &RowSpec) -> PathBuf {
    row.root.join(format!("unix_{}.sock", row.row_id))
}

/// The leader's side of [`UnixSocket`]: listens, accepts in `connect`.
#[derive(Debug)]
pub struct UnixLeader {
    listener: UnixListener,
    stream: Option<UnixStream>,
    path: PathBuf,
    bufs: Buffers,
}

/// The follower's side of [`UnixSocket`].
#[derive(Debug)]
pub struct UnixFollower {
    stream: UnixStream,
    bufs: Buffers,
}

impl Transport for UnixSocket {
    type Leader = UnixLeader;
    type Follower = UnixFollower;

    fn name(&self) -> &'static str {
        "unix"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<UnixLeader> {
        let bufs = Buffers::new(row.size)?;
        let path = socket_path(row);
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
        Ok(UnixLeader {
            listener,
            stream: None,
            path,
            bufs,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<UnixFollower> {
        let bufs = Buffers::new(row.size)?;
        let path = socket_path(row);
        // Completes through the listen backlog; the leader accepts later.
        let stream = UnixStream::connect(&path)
            .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
        Ok(UnixFollower { stream, bufs })
    }
}

impl Leader for UnixLeader {
    fn connect(&mut self) -> Result<()> {
        let (stream, _) = self.listener.accept()?;
        self.stream = Some(stream);
        let _ = std::fs::remove_file(&self.path);
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let stream = self.stream.as_mut().ok_or("the socket is not connected")?;
        stream
            .write_all(self.bufs.tagged(t))
            .map_err(|e| format!("unix: writing ping {seq}: {e}"))?;
        stream
            .read_exact(&mut self.bufs.inp)
            .map_err(|e| format!("unix: reading pong {seq}: {e}"))?;
        self.bufs.check(t.wrapping_add(1), "unix pong")
    }
}

impl Follower for UnixFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.stream
            .read_exact(&mut self.bufs.inp)
            .map_err(|e| format!("unix: reading ping {seq}: {e}"))?;
        self.bufs.check(t, "unix ping")?;
        self.stream
            .write_all(self.bufs.tagged(t.wrapping_add(1)))
            .map_err(|e| format!("unix: writing pong {seq}: {e}"))?;
        Ok(())
    }
}

impl Drop for UnixLeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

// ------------------------------------------------------- message queue --

/// Where the kernel says how large a POSIX message may be.
pub const MSGSIZE_MAX_PATH: &str = "/proc/sys/fs/mqueue/msgsize_max";

/// Two POSIX message queues, one per direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageQueue;

/// `/proc/sys/fs/mqueue/msgsize_max`, if readable.
pub fn msgsize_max() -> Option<usize> {
    std::fs::read_to_string(MSGSIZE_MAX_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Queue names: `/<run root, '/' → '_'>-<row>-ping` and `…-pong`. POSIX
/// queues live in one namespace per machine (IPC namespace), not in the
/// run's root, so the root's path (which holds the leader's pid) keeps runs
/// and sessions apart.
fn queue_names(row: &RowSpec) -> Result<[CString; 2]> {
    let root = row
        .root
        .to_str()
        .ok_or_else(|| format!("run root {} is not UTF-8", row.root.display()))?
        .trim_matches('/')
        .replace('/', "_");
    let name = |dir: &str| -> Result<CString> {
        let name = format!("/{root}-{}-{dir}", row.row_id);
        // NAME_MAX, less the leading '/'.
        if name.len() > 255 {
            return Err(format!("queue name {name} is too long: use a shorter --shm-dir").into());
        }
        CString::new(name).map_err(|_| "queue name holds a NUL byte".into())
    };
    Ok([name("ping")?, name("pong")?])
}

/// An open message queue descriptor; closed on drop.
#[derive(Debug)]
struct Mq(libc::mqd_t);

impl Mq {
    /// Opens (`attr: Some`: creates, exclusively) the queue `name`.
    fn open(name: &CString, access: libc::c_int, attr: Option<&libc::mq_attr>) -> Result<Self> {
        let flags = access | libc::O_CLOEXEC;
        let mqd = match attr {
            Some(attr) => {
                let mode: libc::mode_t = 0o600;
                // SAFETY: `name` is a NUL-terminated string and `attr` a valid
                // `mq_attr`, both alive for the call; with O_CREAT, mq_open
                // reads exactly these two extra (variadic) arguments.
                unsafe {
                    libc::mq_open(
                        name.as_ptr(),
                        flags | libc::O_CREAT | libc::O_EXCL,
                        mode,
                        attr as *const libc::mq_attr,
                    )
                }
            }
            // SAFETY: `name` is a NUL-terminated string alive for the call.
            None => unsafe { libc::mq_open(name.as_ptr(), flags) },
        };
        if mqd == -1 {
            return Err(format!(
                "mq_open({}): {}",
                name.to_string_lossy(),
                std::io::Error::last_os_error()
            )
            .into());
        }
        Ok(Self(mqd))
    }

    #[inline]
    fn send(&self, msg: &[u8], what: &str) -> Result<()> {
        loop {
            // SAFETY: `msg` is valid for reads of `msg.len()` bytes; the
            // kernel copies them out during the call.
            let rc = unsafe { libc::mq_send(self.0, msg.as_ptr().cast(), msg.len(), 0) };
            if rc == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("mq_send ({what}): {e}").into());
            }
        }
    }

    /// Receives one message into `buf` (at least the queue's message size);
    /// returns its length. Fails after [`PEER_TIMEOUT`] without one.
    #[inline]
    fn receive(&self, buf: &mut [u8], what: &str) -> Result<usize> {
        let mut deadline = std::mem::MaybeUninit::<libc::timespec>::zeroed();
        // SAFETY: `deadline` is a valid, writable timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, deadline.as_mut_ptr()) } != 0 {
            return Err(format!("clock_gettime: {}", std::io::Error::last_os_error()).into());
        }
        // SAFETY: clock_gettime succeeded and filled it (it was zeroed too).
        let mut deadline = unsafe { deadline.assume_init() };
        deadline.tv_sec += PEER_TIMEOUT.as_secs() as libc::time_t;
        loop {
            let mut prio: libc::c_uint = 0;
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes, `prio`
            // and `deadline` are valid for the call; the kernel writes at
            // most `buf.len()` bytes and fails with EMSGSIZE if that is less
            // than the queue's message size.
            let n = unsafe {
                libc::mq_timedreceive(
                    self.0,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    &mut prio,
                    &deadline,
                )
            };
            if let Ok(n) = usize::try_from(n) {
                return Ok(n);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ETIMEDOUT) => {
                    return Err(format!(
                        "gave up after {PEER_TIMEOUT:?} waiting for {what}; the peer died or a message was lost"
                    )
                    .into())
                }
                _ => return Err(format!("mq_timedreceive ({what}): {e}").into()),
            }
        }
    }
}

impl Drop for Mq {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::mq_close(self.0) };
    }
}

fn unlink_queue(name: &CString) {
    // SAFETY: `name` is a NUL-terminated string alive for the call. Failure
    // (already unlinked) is fine.
    unsafe { libc::mq_unlink(name.as_ptr()) };
}

/// The leader's side of [`MessageQueue`]: creates both queues.
#[derive(Debug)]
pub struct MqLeader {
    ping: Mq,
    pong: Mq,
    names: [CString; 2],
    bufs: Buffers,
}

/// The follower's side of [`MessageQueue`].
#[derive(Debug)]
pub struct MqFollower {
    ping: Mq,
    pong: Mq,
    bufs: Buffers,
}

impl Transport for MessageQueue {
    type Leader = MqLeader;
    type Follower = MqFollower;

    fn name(&self) -> &'static str {
        "mq"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, size: usize) -> Option<String> {
        let max = msgsize_max()?;
        (size > max).then(|| format!("{size} B is above {MSGSIZE_MAX_PATH} ({max} B)"))
    }

    fn leader(&self, row: &RowSpec) -> Result<MqLeader> {
        let bufs = Buffers::new(row.size)?;
        let names = queue_names(row)?;
        // SAFETY: `mq_attr` is plain data; all-zero is a valid value.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = 1;
        attr.mq_msgsize = libc::c_long::try_from(row.size)?;
        for n in &names {
            // A leftover of a killed run with our pid and row.
            unlink_queue(n);
        }
        let ping = Mq::open(&names[0], libc::O_WRONLY, Some(&attr))?;
        let pong = match Mq::open(&names[1], libc::O_RDONLY, Some(&attr)) {
            Ok(q) => q,
            Err(e) => {
                unlink_queue(&names[0]);
                return Err(e);
            }
        };
        Ok(MqLeader {
            ping,
            pong,
            names,
            bufs,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<MqFollower> {
        let bufs = Buffers::new(row.size)?;
        let [ping, pong] = queue_names(row)?;
        Ok(MqFollower {
            ping: Mq::open(&ping, libc::O_RDONLY, None)?,
            pong: Mq::open(&pong, libc::O_WRONLY, None)?,
            bufs,
        })
    }
}

impl Leader for MqLeader {
    fn connect(&mut self) -> Result<()> {
        // Both sides have both queues open: remove the names now, so a
        // killed run leaves nothing behind.
        for n in &self.names {
            unlink_queue(n);
        }
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.ping.send(self.bufs.tagged(t), "ping")?;
        let n = self.pong.receive(&mut self.bufs.inp, "a pong")?;
        check_tagged(
            &self.bufs.inp[..n],
            self.bufs.inp.len(),
            t.wrapping_add(1),
            "mq pong",
        )
    }
}

impl Follower for MqFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let n = self.ping.receive(&mut self.bufs.inp, "a ping")?;
        check_tagged(&self.bufs.inp[..n], self.bufs.inp.len(), t, "mq ping")?;
        self.pong.send(self.bufs.tagged(t.wrapping_add(1)), "pong")
    }
}

impl Drop for MqLeader {
    fn drop(&mut self) {
        for n in &self.names {
            unlink_queue(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_follow_the_run_root() {
        let row = RowSpec {
            root: "/dev/shm/hako-bench-42/".into(),
            row_id: 7,
            size: 64,
        };
        let [ping, pong] = queue_names(&row).unwrap();
        assert_eq!(ping.to_str().unwrap(), "/dev_shm_hako-bench-42-7-ping");
        assert_eq!(pong.to_str().unwrap(), "/dev_shm_hako-bench-42-7-pong");
    }

    #[test]
    fn buffers_tag_and_check() {
        let mut b = Buffers::new(3).unwrap();
        assert_eq!(b.tagged(9), &[9, 0, 9]);
        b.inp.copy_from_slice(&[9, 0, 9]);
        b.check(9, "x").unwrap();
        assert!(b.check(8, "x").is_err());
        assert!(Buffers::new(0).is_err());
    }

    #[test]
    fn mq_skips_only_sizes_above_the_limit() {
        let Some(max) = msgsize_max() else { return };
        assert!(MessageQueue.skip_reason(max).is_none());
        assert!(MessageQueue.skip_reason(max + 1).is_some());
    }
}
