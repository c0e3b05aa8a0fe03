//! CloudWeGo shmipc: byte streams over shared memory, driven by tokio.
//!
//! The leader is the server: it listens on a unix socket in the run's root
//! (`shmipc_<row>.sock`) and accepts one stream per follower; each follower
//! is a client (`SessionManager` with one session) that opens a stream and
//! says hello with one byte, so the server's `accept` returns. Messages are
//! written in place into the stream's shared-memory send buffer
//! (`Stream::reserve`, then `flush`), read in place
//! (`read_exact_bytes`, zero-copy while a message lies in one buffer slice)
//! and released (`release_previous_read`). The protocol is V4 with
//! eventfd wake-ups, which shmipc recommends for low latency; shared memory
//! is a memfd (nothing in `/dev/shm`). Buffer slices are sized for the
//! row's message (plus room for shmipc's own small messages); the shared
//! memory holds 8-32 MiB, room for 4 messages or more (a bigger one makes
//! every row slower to set up: a 16-message buffer took seconds per 4 MiB
//! row here).
//!
//! **One-way rows wait for shared memory.** When its shared memory is full,
//! shmipc 0.2.1 quietly reserves heap memory instead and sends that message
//! through its unix socket, and the stream stays on the socket from then on.
//! Socket and shared-memory messages reach the reader by separate paths
//! with no common order, so a message sent through the socket can overtake
//! those still queued in shared memory: in one-way rows, with the sender
//! running ahead, receivers here got a later message in place of the next
//! within a few hundred messages. So the sender gives back a reservation
//! that is not in shared memory and tries again (the back-pressure shmipc's
//! streams lack; see `write_msg`), and a stream that fell back anyway
//! fails its row. Ping-pong never fills the shared memory.
//!
//! Each side runs a tokio runtime with one worker thread for shmipc's
//! background tasks and blocks on it for each message from its main thread. A sender
//! whose queue is full (`QueueFull`) waits and tries again:
//! shmipc's flow control as its own benchmark uses it (sleep 1 µs, flush
//! again). In fan-out the leader
//! writes each message into every follower's stream (streams are
//! point-to-point).

use std::os::unix::net::SocketAddr;

use shmipc::buffer::{BufferReader, BufferWriter};
use shmipc::config::{Config, SizePercentPair};
use shmipc::session::{SessionManager, SessionManagerConfig};
use shmipc::stream::Stream;
use shmipc::transport::{DefaultUnixConnect, DefaultUnixListen};
use shmipc::{Error as ShmError, Listener};
use tokio::runtime::Runtime;

use crate::error::Result;
use crate::transport::{
    pipeline, tag, Follower, Leader, PayloadMode, RowSpec, Transport, Waiting, PEER_TIMEOUT,
};

/// shmipc streams.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shmipc;

fn err(what: &str, e: impl std::fmt::Display) -> crate::error::BoxError {
    format!("shmipc: {what}: {e}").into()
}

/// A tokio runtime with one worker thread for shmipc's background tasks
/// (its session reads wake-ups and flushes queues there, also while this
/// side is busy elsewhere); the messages themselves are written and read on
/// the calling thread (`block_on`). Shut down without waiting: a plain drop
/// waits up to a second for shmipc's background work.
struct Rt(Option<Runtime>);

impl Rt {
    fn new() -> Result<Self> {
        Ok(Self(Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?,
        )))
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        match &self.0 {
            Some(rt) => rt.block_on(f),
            // Only `drop` takes the runtime.
            None => unreachable!("the runtime is gone"),
        }
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

fn socket(row: &RowSpec) -> Result<SocketAddr> {
    let path = row.root.join(format!("shmipc_{}.sock", row.row_id));
    Ok(SocketAddr::from_pathname(path)?)
}

/// Fewest messages in flight the shared memory has room for.
const IN_FLIGHT: u64 = 4;
/// Messages in flight the shared memory should hold when that fits in
/// [`MOST_SHM`] (one-way rows of 1 MiB streamed 2.5x faster with 22 slices
/// than with 5).
const WANT_IN_FLIGHT: u64 = 32;
/// Least and most shared memory, unless [`IN_FLIGHT`] messages need more.
/// shmipc prepares every slice of it when a session starts: 32 MiB of
/// 320-byte slices took about 0.2-0.5 s per one-way row of 64 B messages
/// here, 8 MiB a fifth of that, at the same rate.
const LEAST_SHM: u64 = 8 << 20;
const MOST_SHM: u64 = 32 << 20;

/// The size of a buffer slice for `size`-byte messages, and the shared
/// memory's capacity: 70 % of it is in slices of that size (see [`config`]).
fn slice_and_cap(size: usize) -> (u32, u64) {
    let slice = u32::try_from(size + 256).unwrap_or(u32::MAX);
    let room = |n: u64| u64::from(slice) * n * 100 / 70;
    let cap = room(WANT_IN_FLIGHT)
        .clamp(LEAST_SHM, MOST_SHM)
        .max(room(IN_FLIGHT))
        .min(3 << 30);
    (slice, cap)
}

/// A configuration whose buffer slices hold a whole `size`-byte message.
fn config(row: &RowSpec) -> Config {
    let mut c = Config::default().with_v4_eventfd();
    let (slice, cap) = slice_and_cap(row.size);
    c.share_memory_buffer_cap = cap as u32;
    c.buffer_slice_sizes = vec![
        SizePercentPair {
            size: slice,
            percent: 70,
        },
        SizePercentPair {
            size: 16 << 10,
            percent: 20,
        },
        SizePercentPair {
            size: 64 << 10,
            percent: 10,
        },
    ];
    // memfd shared memory; these paths name it only.
    let path = |what: &str| {
        row.root
            .join(format!("shmipc_{}_{what}", row.row_id))
            .to_string_lossy()
            .into_owned()
    };
    c.share_memory_path_prefix = path("shm");
    c.queue_path = path("queue");
    c
}

/// Writes message tag `t` into `stream` in place and flushes it, waiting
/// while shmipc's shared memory or queue is full.
///
/// When its shared memory is full, shmipc's `reserve` quietly hands out heap
/// memory, and `flush` then sends that message (and every later one on the
/// stream) through its unix socket, where it can overtake messages still
/// queued in shared memory: the receiver gets them out of order. So a
/// reservation that did not come from shared memory is given back and tried
/// again a moment later (the back-pressure shmipc's streams lack), and a
/// stream that fell back anyway is an error.
async fn write_msg(stream: &mut Stream, size: usize, payload: PayloadMode, t: u8) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        let buf = stream
            .send_buf()
            .reserve(size)
            .map_err(|e| err("reserve", e))?;
        if stream.send_buf().is_from_share_memory() {
            payload.write(buf, t);
            break;
        }
        stream.send_buf().recycle();
        if start.elapsed() >= PEER_TIMEOUT {
            return Err(format!(
                "shmipc: no shared memory for a {size}-byte message within {PEER_TIMEOUT:?}"
            )
            .into());
        }
        // Not a sleep: tokio's timer counts in milliseconds, and receivers
        // free slices much sooner. The thread yields too: shmipc's worker
        // thread shares this CPU and may have work to do for the sender.
        std::thread::yield_now();
        tokio::task::yield_now().await;
    }
    loop {
        match stream.flush(false).await {
            Ok(()) => break,
            // As shmipc's own benchmark does: wait a moment and flush again.
            Err(ShmError::QueueFull) if start.elapsed() < PEER_TIMEOUT => {
                tokio::time::sleep(std::time::Duration::from_micros(1)).await;
            }
            Err(e) => return Err(err("flush", e)),
        }
    }
    if stream.fallback_state() {
        return Err(FELL_BACK.into());
    }
    Ok(())
}

/// Why a stream that went over shmipc's unix socket is an error.
const FELL_BACK: &str = "shmipc: the stream fell back to its unix socket, where messages may \
overtake those in shared memory";

/// Reads one `size`-byte message tagged `t` from `stream` and checks it.
async fn read_msg(
    stream: &mut Stream,
    size: usize,
    payload: PayloadMode,
    t: u8,
    what: &str,
) -> Result<()> {
    let read = tokio::time::timeout(PEER_TIMEOUT, stream.read_exact_bytes(size));
    let buf = read
        .await
        .map_err(|_| format!("gave up after {PEER_TIMEOUT:?} waiting for {what}"))?
        .map_err(|e| err("read", e))?;
    let checked = payload.check(&buf, size, t, what);
    drop(buf);
    // Hands the slice back to the sender's pool (what shmipc's own
    // benchmark server does; `release_read_and_reuse` would keep it for an
    // answer written in place, which one-way rows never write).
    stream.recv_buf().release_previous_read();
    checked
}

/// The leader's side: the server, with one stream per follower.
pub struct ShmipcLeader {
    // Field order is drop order: streams before the listener before the runtime.
    streams: Vec<Stream>,
    listener: Option<Listener>,
    rt: Rt,
    size: usize,
    payload: PayloadMode,
    followers: usize,
}

/// The follower's side: a client with one stream.
pub struct ShmipcFollower {
    stream: Stream,
    _manager: SessionManager<DefaultUnixConnect>,
    rt: Rt,
    size: usize,
    payload: PayloadMode,
}

impl Transport for Shmipc {
    type Leader = ShmipcLeader;
    type Follower = ShmipcFollower;

    fn name(&self) -> &'static str {
        "shmipc"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, size: usize, _pattern: crate::transport::Pattern) -> Option<String> {
        // Buffer slice sizes are u32, and IN_FLIGHT of them must fit its
        // u32 capacity.
        (size as u64 * IN_FLIGHT > 3 << 30)
            .then(|| format!("{size} B is more than shmipc's 32-bit buffer capacity holds"))
    }

    /// Requests in flight wait in the shared memory, and so may their
    /// answers: both must fit in its slices, or the client would wait for
    /// memory that only its own unread answers hold.
    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        let (slice, cap) = slice_and_cap(size);
        let slices = cap * 70 / 100 / u64::from(slice);
        (slices < 2 * u64::from(depth)).then(|| {
            format!("its shared memory holds {slices} messages of {size} B, fewer than {depth} requests and their answers")
        })
    }

    /// The slices of its shared memory, which faults in as it is first
    /// written: with 1-3 untimed messages its full-mode fan-out of 1 MiB to 4
    /// receivers measured 60-900 messages/s here, after a pass through every
    /// slice 3.6k-4.0k. At most 64 (small messages have many small slices,
    /// and a stream reuses the ones freed first).
    fn one_way_warmup(&self, size: usize) -> u64 {
        let (slice, cap) = slice_and_cap(size);
        (cap * 70 / 100 / u64::from(slice)).clamp(1, 64)
    }

    fn leader(&self, row: &RowSpec) -> Result<ShmipcLeader> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let rt = Rt::new()?;
        let listener = rt
            .block_on(Listener::new(DefaultUnixListen, socket(row)?, config(row)))
            .map_err(|e| err("listen", e))?;
        Ok(ShmipcLeader {
            streams: Vec::new(),
            listener: Some(listener),
            rt,
            size: row.size,
            payload: row.payload,
            followers: row.followers.max(1) as usize,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<ShmipcFollower> {
        let rt = Rt::new()?;
        let sm_config = SessionManagerConfig::new()
            .with_config(config(row))
            .with_session_num(1);
        let (manager, stream) = rt.block_on(async {
            let manager = SessionManager::new(sm_config, DefaultUnixConnect, socket(row)?)
                .await
                .map_err(|e| err("connect", e))?;
            let mut stream = manager.get_stream().map_err(|e| err("open a stream", e))?;
            // The server learns of a stream from its first bytes.
            write_msg(&mut stream, 1, PayloadMode::Touch, 0).await?;
            Ok::<_, crate::error::BoxError>((manager, stream))
        })?;
        Ok(ShmipcFollower {
            stream,
            _manager: manager,
            rt,
            size: row.size,
            payload: row.payload,
        })
    }
}

impl Leader for ShmipcLeader {
    fn connect(&mut self) -> Result<()> {
        let mut listener = self.listener.take().ok_or("connected already")?;
        let n = self.followers;
        let streams = self.rt.block_on(async {
            let mut streams = Vec::with_capacity(n);
            for _ in 0..n {
                let accept = tokio::time::timeout(PEER_TIMEOUT, listener.accept());
                let mut s = accept
                    .await
                    .map_err(|_| "shmipc: no follower connected")?
                    .map_err(|e| err("accept", e))?;
                read_msg(&mut s, 1, PayloadMode::Touch, 0, "a hello").await?;
                streams.push(s);
            }
            Ok::<_, crate::error::BoxError>(streams)
        })?;
        self.streams = streams;
        // The listener keeps the sessions alive; keep it with the streams.
        self.listener = Some(listener);
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let (size, payload) = (self.size, self.payload);
        let stream = self.streams.first_mut().ok_or("not connected")?;
        self.rt.block_on(async {
            write_msg(stream, size, payload, t).await?;
            sent();
            read_msg(stream, size, payload, t.wrapping_add(1), "a pong").await
        })
    }

    fn pipeline(&mut self, seqs: std::ops::RangeInclusive<u64>, depth: usize) -> Result<()> {
        let (size, payload) = (self.size, self.payload);
        let stream = self.streams.first_mut().ok_or("not connected")?;
        // One stream carries the requests in order and the answers back in
        // the same order (the server answers each before it reads the next).
        pipeline(
            &mut (stream, &self.rt),
            seqs,
            depth,
            |(stream, rt), seq| rt.block_on(write_msg(stream, size, payload, tag(seq))),
            |(stream, rt), seq, ()| {
                let t = tag(seq).wrapping_add(1);
                rt.block_on(read_msg(stream, size, payload, t, "a response"))
            },
        )
    }

    #[inline]
    fn send(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let (size, payload) = (self.size, self.payload);
        let streams = &mut self.streams;
        self.rt.block_on(async {
            for s in streams.iter_mut() {
                write_msg(s, size, payload, t).await?;
            }
            Ok(())
        })
    }
}

impl Drop for ShmipcLeader {
    fn drop(&mut self) {
        // Streams must be closed explicitly (shmipc's documentation); the
        // sessions end with the runtime. `Listener::close` would wait for
        // the followers' sessions to go, and they go only when the leader
        // has moved on.
        let streams = std::mem::take(&mut self.streams);
        self.rt.block_on(async {
            for mut s in streams {
                let _ = s.close().await;
            }
        });
    }
}

impl Follower for ShmipcFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let (size, payload) = (self.size, self.payload);
        let stream = &mut self.stream;
        self.rt.block_on(async {
            read_msg(stream, size, payload, t, "a ping").await?;
            write_msg(stream, size, payload, t.wrapping_add(1)).await
        })
    }

    #[inline]
    fn receive(&mut self, seq: u64) -> Result<()> {
        let (size, payload) = (self.size, self.payload);
        let stream = &mut self.stream;
        self.rt
            .block_on(read_msg(stream, size, payload, tag(seq), "a ping"))
    }
}

impl Drop for ShmipcFollower {
    fn drop(&mut self) {
        // As the leader: close the stream; the session ends with the runtime.
        let stream = &mut self.stream;
        self.rt.block_on(async {
            let _ = stream.close().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;

    #[test]
    fn one_way_runs_first_pass_through_every_slice() {
        // 32 MiB, 70 % of it in slices of 1 MiB + 256 B.
        assert_eq!(Shmipc.one_way_warmup(1 << 20), 22);
        // The most, 32 MiB: 5 slices of 4 MiB (room for 4 is the least).
        assert_eq!(Shmipc.one_way_warmup(4 << 20), 5);
        // Many small slices: capped.
        assert_eq!(Shmipc.one_way_warmup(64), 64);
        for size in [1, 4096, 64 << 10, 1 << 20, 4 << 20] {
            let (slice, cap) = slice_and_cap(size);
            assert!(slice as usize >= size && cap * 70 / 100 >= 4 * u64::from(slice));
        }
    }
}
