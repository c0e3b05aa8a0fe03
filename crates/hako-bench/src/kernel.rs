//! Kernel mechanisms that copy the message: pipes, FIFOs, unix and TCP
//! sockets, POSIX message queues.
//!
//! For message `seq` the sender writes a whole `size`-byte buffer (tagged,
//! or filled in full mode, as in the other transports) and the receiver
//! reads a whole one: the kernel copies every byte twice per direction (into
//! its buffers and out again), and a reader sleeps in the kernel until the
//! data is there. Kernel defaults are kept (pipe capacity, socket buffer
//! sizes), as a program that just uses the mechanism would have them, and a
//! sender that gets ahead blocks in `write` — the flow control each of them
//! has.
//!
//! * [`Pipe`] — anonymous pipes (`pipe2`), one per direction. The follower,
//!   started before the row, opens its ends through `/proc/<leader>/fd/<n>`
//!   (the numbers are in a small file in the run's root), which yields the
//!   very same pipe; the leader then closes its copies of those ends.
//! * [`Fifo`] — named pipes (`mkfifo`) in the run's root; the names are
//!   removed once both ends are open. Reads and writes go through the same
//!   `pipe_read`/`pipe_write` as an anonymous pipe's; only opening differs.
//! * [`UnixSocket`] — a `SOCK_STREAM` unix socket bound in the run's root;
//!   the follower connects, the leader accepts, the name is then removed.
//! * [`Tcp`] — a TCP connection over loopback (127.0.0.1, an ephemeral port
//!   written to a file in the run's root), `TCP_NODELAY` on both ends.
//! * [`MessageQueue`] — POSIX message queues (`mq_open`), one per direction
//!   and follower, each holding one message of `size` bytes (ping-pong) or a
//!   few (one-way). A message arrives whole or not at all. Sizes above
//!   `/proc/sys/fs/mqueue/msgsize_max` are skipped
//!   ([`Transport::skip_reason`]).
//!
//! A stream (pipe, FIFO, socket) has no message boundaries: each side reads
//! until it has `size` bytes. One-way rows use the leader→follower direction
//! only; in fan-out the leader writes each message to every follower's
//! channel in turn. All five share one leader and one follower side
//! ([`KernelLeader`], [`KernelFollower`]) over a [`Channel`].
//!
//! A side whose peer died sees end-of-file or a broken pipe (streams) or a
//! receive that times out after [`PEER_TIMEOUT`] (message queue).

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::fs::{fcntl_getfl, fcntl_setfl, mkfifoat, open, Mode, OFlags, CWD};
use rustix::pipe::{pipe_with, PipeFlags};

use crate::transport::PEER_TIMEOUT;
use crate::transport::{tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting};
use crate::Result;

/// The two buffers of one side: what it writes, what it reads into.
#[derive(Debug)]
struct Buffers {
    out: Vec<u8>,
    inp: Vec<u8>,
    payload: PayloadMode,
}

impl Buffers {
    fn new(row: &RowSpec) -> Result<Self> {
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
    fn tagged(&mut self, t: u8) -> &[u8] {
        self.payload.write(&mut self.out, t);
        &self.out
    }

    /// Checks the first `n` bytes received against tag `t`.
    #[inline]
    fn check(&self, n: usize, t: u8, what: &str) -> Result<()> {
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
    name: &'static str,
    /// One channel to each follower (built in `connect` if `accept` is set).
    outs: Vec<C>,
    /// From the follower (ping-pong).
    inp: Option<C>,
    /// Makes the channel to the next follower (sockets: accepts), and for
    /// ping-pong the one back, from the same connection.
    accept: Option<(Accept<C>, usize)>,
    /// Descriptors kept open only until the followers have opened theirs.
    keep: Vec<OwnedFd>,
    /// Names removed once everybody is connected (and on drop).
    paths: Vec<PathBuf>,
    queues: Vec<CString>,
    bufs: Buffers,
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
    fn new(name: &'static str, row: &RowSpec) -> Result<Self> {
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

    fn remove_names(&mut self) {
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
    name: &'static str,
    inp: C,
    /// To the leader (ping-pong).
    out: Option<C>,
    bufs: Buffers,
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
fn open_fifo(path: &Path, access: OFlags) -> Result<File> {
    let fd = open(
        path,
        access | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    set_blocking(&fd)?;
    Ok(File::from(fd))
}

/// A file of the row in the run's root: `<kind>_<row>_<what>`.
fn row_path(row: &RowSpec, kind: &str, what: &str) -> PathBuf {
    row.root.join(format!("{kind}_{}_{what}", row.row_id))
}

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
        let pong = if row.pattern == Pattern::PingPong {
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
            let path = row_path(row, "pipe", &k.to_string());
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
        let path = row_path(row, "pipe", &row.index.to_string());
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
            let path = row_path(row, "fifo", &format!("{k}_ping"));
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
        if row.pattern == Pattern::PingPong {
            let path = row_path(row, "fifo", "pong");
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
                &row_path(row, "fifo", &format!("{}_ping", row.index)),
                OFlags::RDONLY,
            )?,
            // The leader holds the read end already.
            out: match row.pattern {
                Pattern::PingPong => {
                    Some(open_fifo(&row_path(row, "fifo", "pong"), OFlags::WRONLY)?)
                }
                _ => None,
            },
            bufs: Buffers::new(row)?,
        })
    }
}

// --------------------------------------------------------------- sockets --

/// A `SOCK_STREAM` unix domain socket, bound to a name in the run's root.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnixSocket;

/// Both directions of one accepted or connected stream: for ping-pong a
/// second handle of it (`try_clone`) reads the answers.
fn duplex<S>(
    stream: S,
    row: &RowSpec,
    clone: impl Fn(&S) -> std::io::Result<S>,
) -> Result<(S, Option<S>)> {
    let back = match row.pattern {
        Pattern::PingPong => Some(clone(&stream)?),
        _ => None,
    };
    Ok((stream, back))
}

impl Transport for UnixSocket {
    type Leader = KernelLeader<UnixStream>;
    type Follower = KernelFollower<UnixStream>;

    fn name(&self) -> &'static str {
        "unix"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let path = row_path(row, "unix", "sock");
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
        side.paths.push(path);
        let spec = row.clone();
        side.accept = Some((
            Box::new(move || duplex(listener.accept()?.0, &spec, UnixStream::try_clone)),
            row.followers.max(1) as usize,
        ));
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let path = row_path(row, "unix", "sock");
        // Completes through the listen backlog; the leader accepts later.
        let stream = UnixStream::connect(&path)
            .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
        let (inp, out) = duplex(stream, row, UnixStream::try_clone)?;
        Ok(KernelFollower {
            name: self.name(),
            inp,
            out,
            bufs: Buffers::new(row)?,
        })
    }
}

/// TCP over loopback (127.0.0.1) with `TCP_NODELAY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl Transport for Tcp {
    type Leader = KernelLeader<TcpStream>;
    type Follower = KernelFollower<TcpStream>;

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let path = row_path(row, "tcp", "port");
        std::fs::write(&path, format!("{}\n", listener.local_addr()?.port()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        side.paths.push(path);
        let spec = row.clone();
        side.accept = Some((
            Box::new(move || {
                let (stream, _) = listener.accept()?;
                stream.set_nodelay(true)?;
                duplex(stream, &spec, TcpStream::try_clone)
            }),
            row.followers.max(1) as usize,
        ));
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let path = row_path(row, "tcp", "port");
        let port: u16 = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .trim()
            .parse()?;
        let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))?;
        stream.set_nodelay(true)?;
        let (inp, out) = duplex(stream, row, TcpStream::try_clone)?;
        Ok(KernelFollower {
            name: self.name(),
            inp,
            out,
            bufs: Buffers::new(row)?,
        })
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

/// Queue names: `/<run root, '/' → '_'>-<row>-<what>`. POSIX queues live in
/// one namespace per machine (IPC namespace), not in the run's root, so the
/// root's path (which holds the leader's pid) keeps runs and sessions apart.
fn queue_name(row: &RowSpec, what: &str) -> Result<CString> {
    let root = row
        .root
        .to_str()
        .ok_or_else(|| format!("run root {} is not UTF-8", row.root.display()))?
        .trim_matches('/')
        .replace('/', "_");
    let name = format!("/{root}-{}-{what}", row.row_id);
    // NAME_MAX, less the leading '/'.
    if name.len() > 255 {
        return Err(format!("queue name {name} is too long: use a shorter --shm-dir").into());
    }
    CString::new(name).map_err(|_| "queue name holds a NUL byte".into())
}

#[derive(Debug)]
/// An open message queue descriptor, as a [`Channel`]; closed on drop.
pub struct Mq(libc::mqd_t);

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

impl Channel for Mq {
    #[inline]
    fn put(&mut self, msg: &[u8]) -> Result<()> {
        self.send(msg, "a message")
    }

    #[inline]
    fn get(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.receive(buf, "a message")
    }
}

/// Messages a one-way queue holds: a few, as far as
/// `/proc/sys/fs/mqueue/msg_max` allows (10 by default).
fn one_way_depth() -> libc::c_long {
    let max = std::fs::read_to_string("/proc/sys/fs/mqueue/msg_max")
        .ok()
        .and_then(|t| t.trim().parse::<libc::c_long>().ok())
        .unwrap_or(10);
    max.clamp(1, 8)
}

impl Transport for MessageQueue {
    type Leader = KernelLeader<Mq>;
    type Follower = KernelFollower<Mq>;

    fn name(&self) -> &'static str {
        "mq"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, size: usize, _pattern: Pattern) -> Option<String> {
        let max = msgsize_max()?;
        (size > max).then(|| format!("{size} B is above {MSGSIZE_MAX_PATH} ({max} B)"))
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let mut side = KernelLeader::new(self.name(), row)?;
        // SAFETY: `mq_attr` is plain data; all-zero is a valid value.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = match row.pattern {
            Pattern::PingPong => 1,
            _ => one_way_depth(),
        };
        attr.mq_msgsize = libc::c_long::try_from(row.size)?;
        let mut create = |name: CString, access| -> Result<Mq> {
            // A leftover of a killed run with our pid and row.
            unlink_queue(&name);
            let q = Mq::open(&name, access, Some(&attr));
            // Named (and so removed on drop) even when opening failed half way.
            side.queues.push(name);
            q
        };
        let mut outs = Vec::new();
        for k in 0..row.followers.max(1) {
            outs.push(create(
                queue_name(row, &format!("ping{k}"))?,
                libc::O_WRONLY,
            )?);
        }
        let inp = match row.pattern {
            Pattern::PingPong => Some(create(queue_name(row, "pong")?, libc::O_RDONLY)?),
            _ => None,
        };
        side.outs = outs;
        side.inp = inp;
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        Ok(KernelFollower {
            name: self.name(),
            inp: Mq::open(
                &queue_name(row, &format!("ping{}", row.index))?,
                libc::O_RDONLY,
                None,
            )?,
            out: match row.pattern {
                Pattern::PingPong => {
                    Some(Mq::open(&queue_name(row, "pong")?, libc::O_WRONLY, None)?)
                }
                _ => None,
            },
            bufs: Buffers::new(row)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_follow_the_run_root() {
        let row = RowSpec::ping_pong("/dev/shm/hako-bench-42/".into(), 7, 64);
        let ping = queue_name(&row, "ping0").unwrap();
        assert_eq!(ping.to_str().unwrap(), "/dev_shm_hako-bench-42-7-ping0");
    }

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

    #[test]
    fn mq_skips_only_sizes_above_the_limit() {
        let Some(max) = msgsize_max() else { return };
        assert!(MessageQueue.skip_reason(max, Pattern::PingPong).is_none());
        assert!(MessageQueue.skip_reason(max + 1, Pattern::FanOut).is_some());
    }
}
