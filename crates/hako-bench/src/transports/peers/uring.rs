//! Request/response over a unix socket on the io_uring runtimes: monoio
//! (`monoio-unix`) and tokio-uring (`tokio-uring-unix`).
//!
//! Each side runs its own runtime, as those runtimes' users run them: one
//! thread per core, `!Send` sockets owned by that thread, and buffers that
//! are moved into each operation and handed back when it completes (the
//! kernel reads and writes them while it runs). The whole timed loop of a
//! row runs inside one `block_on`, so nothing leaves the runtime between
//! messages.
//!
//! The leader is the client: it binds `<root>/<name>_<row>_sock`, and the
//! follower (the server) connects with a blocking call before both hand
//! their streams to their runtimes. Requests and answers are written and
//! read whole (`write_all`, and a read loop until the message is in).
//! Where io_uring cannot be set up (a kernel without it, or a seccomp
//! profile that blocks it, as container runtimes' default ones do) the
//! rows are skipped with the reason.

use std::collections::VecDeque;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::sys::clock::Ticks;
use crate::sys::cpu::CpuTime;
use crate::transport::{
    tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting, PEER_TIMEOUT,
};
use crate::transports::kernel::socket_in_flight_skip;

/// An io_uring runtime with unix-socket streams whose reads and writes take
/// owned buffers.
pub trait Ring: Sized + 'static {
    /// The transport's name.
    const NAME: &'static str;
    /// The runtime's stream.
    type Stream;
    /// A runtime for this thread.
    fn runtime() -> std::io::Result<Self>;
    /// Runs `f` to completion on the runtime.
    fn block_on<F: Future>(&mut self, f: F) -> F::Output;
    /// The connected `s`, handed to the runtime (inside `block_on`).
    fn adopt(s: UnixStream) -> std::io::Result<Self::Stream>;
    /// Writes `buf` whole; gives it back.
    fn put(s: &mut Self::Stream, buf: Vec<u8>) -> impl Future<Output = (Result<()>, Vec<u8>)>;
    /// Fills `buf` whole; gives it back.
    fn get(s: &mut Self::Stream, buf: Vec<u8>) -> impl Future<Output = (Result<()>, Vec<u8>)>;
}

/// monoio with its io_uring driver.
pub struct Monoio(monoio::Runtime<monoio::IoUringDriver>);

impl Ring for Monoio {
    const NAME: &'static str = "monoio-unix";
    type Stream = monoio::net::UnixStream;

    fn runtime() -> std::io::Result<Self> {
        monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
            .build()
            .map(Monoio)
    }

    fn block_on<F: Future>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }

    fn adopt(s: UnixStream) -> std::io::Result<Self::Stream> {
        monoio::net::UnixStream::from_std(s)
    }

    async fn put(s: &mut Self::Stream, buf: Vec<u8>) -> (Result<()>, Vec<u8>) {
        use monoio::io::AsyncWriteRentExt;
        let (r, buf) = s.write_all(buf).await;
        (r.map(drop).map_err(Into::into), buf)
    }

    async fn get(s: &mut Self::Stream, buf: Vec<u8>) -> (Result<()>, Vec<u8>) {
        use monoio::io::AsyncReadRentExt;
        // Fills up to the buffer's capacity: made with exactly the
        // message's (see Bufs).
        let (r, buf) = s.read_exact(buf).await;
        (r.map(drop).map_err(Into::into), buf)
    }
}

/// tokio-uring: a tokio current-thread runtime with an io_uring driver.
pub struct TokioUring(tokio_uring::Runtime);

impl Ring for TokioUring {
    const NAME: &'static str = "tokio-uring-unix";
    type Stream = tokio_uring::net::UnixStream;

    fn runtime() -> std::io::Result<Self> {
        tokio_uring::Runtime::new(&tokio_uring::builder()).map(TokioUring)
    }

    fn block_on<F: Future>(&mut self, f: F) -> F::Output {
        self.0.block_on(f)
    }

    fn adopt(s: UnixStream) -> std::io::Result<Self::Stream> {
        Ok(tokio_uring::net::UnixStream::from_std(s))
    }

    async fn put(s: &mut Self::Stream, buf: Vec<u8>) -> (Result<()>, Vec<u8>) {
        let (r, buf) = s.write_all(buf).await;
        (r.map_err(Into::into), buf)
    }

    async fn get(s: &mut Self::Stream, buf: Vec<u8>) -> (Result<()>, Vec<u8>) {
        use tokio_uring::buf::BoundedBuf;
        // tokio-uring has no read_exact: read into the rest until full.
        let size = buf.len();
        let (mut buf, mut filled) = (buf, 0);
        while filled < size {
            let (r, slice) = s.read(buf.slice(filled..size)).await;
            buf = slice.into_inner();
            match r {
                Ok(0) => return (Err("the peer closed its socket".into()), buf),
                Ok(n) => filled += n,
                Err(e) => return (Err(e.into()), buf),
            }
        }
        (Ok(()), buf)
    }
}

/// Request/response over a unix socket on the runtime `R`.
pub struct UringUnix<R>(PhantomData<fn() -> R>);

impl<R> Clone for UringUnix<R> {
    fn clone(&self) -> Self {
        Self(PhantomData)
    }
}

impl<R> Default for UringUnix<R> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

/// Why io_uring cannot be used here, if it cannot: a ring is set up once
/// per process to find out.
fn unavailable() -> Option<&'static str> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        let ring = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new().build();
        ring.err().map(|e| format!("io_uring unavailable: {e}"))
    })
    .as_deref()
}

/// The row's request and answer buffers (capacity exactly the message's:
/// reads fill the capacity), and how the payload is written and checked.
struct Bufs {
    out: Vec<u8>,
    inp: Vec<u8>,
    payload: PayloadMode,
}

impl Bufs {
    fn new(row: &RowSpec) -> Self {
        let exact = || vec![0u8; row.size].into_boxed_slice().into_vec();
        Self {
            out: exact(),
            inp: exact(),
            payload: row.payload,
        }
    }
}

/// A side: its runtime, its stream, its buffers.
pub struct Side<R: Ring> {
    ring: R,
    stream: Option<R::Stream>,
    bufs: Bufs,
    /// The client's listener until the server connects, and its path.
    listening: Option<(UnixListener, PathBuf)>,
}

impl<R: Ring> Side<R> {
    async fn request(stream: &mut R::Stream, bufs: &mut Bufs, t: u8) -> Result<()> {
        bufs.payload.write(&mut bufs.out, t);
        let (r, out) = R::put(stream, std::mem::take(&mut bufs.out)).await;
        bufs.out = out;
        r
    }

    async fn answer(stream: &mut R::Stream, bufs: &mut Bufs, t: u8, what: &str) -> Result<()> {
        let (r, inp) = R::get(stream, std::mem::take(&mut bufs.inp)).await;
        bufs.inp = inp;
        r?;
        bufs.payload.check(&bufs.inp, bufs.inp.len(), t, what)
    }

    /// Runs `f` on the stream and the buffers inside the runtime.
    fn run<T>(&mut self, f: impl AsyncFnOnce(&mut R::Stream, &mut Bufs) -> Result<T>) -> Result<T> {
        let Self {
            ring, stream, bufs, ..
        } = self;
        let stream = stream.as_mut().ok_or("not connected")?;
        ring.block_on(f(stream, bufs))
    }
}

impl<R: Ring> Drop for Side<R> {
    fn drop(&mut self) {
        if let Some((_, path)) = &self.listening {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl<R: Ring> Leader for Side<R> {
    fn connect(&mut self) -> Result<()> {
        let (listener, _) = self.listening.as_ref().ok_or("accepted already")?;
        let deadline = Instant::now() + PEER_TIMEOUT;
        let s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err("the server did not connect".into());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e.into()),
            }
        };
        s.set_nonblocking(true)?;
        self.stream = Some(self.ring.block_on(async { R::adopt(s) })?);
        Ok(())
    }

    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        sent();
        let t = tag(seq);
        self.run(async |s, b| {
            Self::request(s, b, t).await?;
            Self::answer(s, b, t.wrapping_add(1), "response").await
        })
    }

    fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let depth = depth.max(1);
        self.run(async |s, b| {
            let mut in_flight: VecDeque<u64> = VecDeque::with_capacity(depth);
            for seq in seqs {
                if in_flight.len() == depth {
                    if let Some(o) = in_flight.pop_front() {
                        Self::answer(s, b, tag(o).wrapping_add(1), "response").await?;
                    }
                }
                Self::request(s, b, tag(seq)).await?;
                in_flight.push_back(seq);
            }
            while let Some(o) = in_flight.pop_front() {
                Self::answer(s, b, tag(o).wrapping_add(1), "response").await?;
            }
            Ok(())
        })
    }

    fn round_trips(&mut self, warmup: u64, iterations: u64) -> Result<(Vec<u64>, CpuTime)> {
        let before = CpuTime::now()?;
        let (mut samples, ticks, elapsed) = self.run(async |s, b| {
            // Each round trip timed from the end of the one before, the
            // clock read between them, all inside the runtime.
            let one = async |s: &mut R::Stream, b: &mut Bufs, seq: u64| {
                let t = tag(seq);
                Self::request(s, b, t).await?;
                Self::answer(s, b, t.wrapping_add(1), "response").await
            };
            for seq in 1..=warmup.max(1) {
                one(s, b, seq).await?;
            }
            let mut samples = vec![0u64; usize::try_from(iterations)?];
            let clock = Ticks::get();
            let (start, start_ticks) = (Instant::now(), clock.now());
            let mut t0 = start_ticks;
            let mut seq = warmup.max(1);
            for sample in samples.iter_mut() {
                seq += 1;
                one(s, b, seq).await?;
                let t1 = clock.now();
                *sample = t1.saturating_sub(t0);
                t0 = t1;
            }
            Ok((
                samples,
                clock.now().saturating_sub(start_ticks),
                start.elapsed(),
            ))
        })?;
        let cpu = CpuTime::now()?.since(before);
        let ns_per_tick = elapsed.as_nanos() as f64 / ticks.max(1) as f64;
        for s in &mut samples {
            *s = (*s as f64 * ns_per_tick) as u64;
        }
        Ok((samples, cpu.scaled(iterations, iterations + warmup.max(1))))
    }
}

impl<R: Ring> Follower for Side<R> {
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        self.serve_range(seq..=seq, false)
    }

    fn serve_range(&mut self, seqs: RangeInclusive<u64>, one_way: bool) -> Result<()> {
        if one_way {
            return Err("request/response only".into());
        }
        self.run(async |s, b| {
            for seq in seqs {
                let t = tag(seq);
                Self::answer(s, b, t, "request").await?;
                Self::request(s, b, t.wrapping_add(1)).await?;
            }
            Ok(())
        })
    }
}

impl<R: Ring> UringUnix<R> {
    fn side(row: &RowSpec) -> Result<Side<R>> {
        let ring = R::runtime().map_err(|e| format!("{}: io_uring: {e}", R::NAME))?;
        Ok(Side {
            ring,
            stream: None,
            bufs: Bufs::new(row),
            listening: None,
        })
    }
}

impl<R: Ring> Transport for UringUnix<R> {
    type Leader = Side<R>;
    type Follower = Side<R>;

    fn name(&self) -> &'static str {
        R::NAME
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        let _ = size;
        if let Some(why) = unavailable() {
            return Some(why.to_owned());
        }
        pattern
            .one_way()
            .then(|| "request/response only (an async runtime's rows)".to_owned())
    }

    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        socket_in_flight_skip(size, depth)
    }

    fn leader(&self, row: &RowSpec) -> Result<Side<R>> {
        let mut side = Self::side(row)?;
        let path = row.path(R::NAME, "sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
        listener.set_nonblocking(true)?;
        side.listening = Some((listener, path));
        Ok(side)
    }

    fn follower(&self, row: &RowSpec) -> Result<Side<R>> {
        let mut side = Self::side(row)?;
        let path = row.path(R::NAME, "sock");
        let s = UnixStream::connect(&path)
            .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
        s.set_nonblocking(true)?;
        side.stream = Some(side.ring.block_on(async { R::adopt(s) })?);
        Ok(side)
    }
}
