//! What the async transports share: the runtime flavours, the runtime of a
//! side, the client and server sides a backend makes, and one leader and
//! one follower over them.

use std::future::Future;
use std::ops::RangeInclusive;

use tokio::runtime::Runtime;

use crate::error::Result;
use crate::sys::clock::Ticks;
use crate::sys::cpu::CpuTime;
use crate::transport::{Follower, Leader, Pattern, RowSpec, Transport, Waiting};

/// The tokio runtime a side runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `new_current_thread`: the side's loop runs on its main thread.
    CurrentThread,
    /// `new_multi_thread` with two workers: the loop is a spawned task.
    MultiThread,
}

impl Flavor {
    /// Both flavours.
    pub const ALL: [Flavor; 2] = [Flavor::CurrentThread, Flavor::MultiThread];

    /// Workers of a multi-threaded runtime here.
    pub const WORKERS: usize = 2;

    /// How the tables call it.
    pub fn label(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current-thread",
            Flavor::MultiThread => "multi-thread",
        }
    }
}

/// A side's runtime, shut down without waiting for stray tasks.
struct Rt {
    rt: Option<Runtime>,
    flavor: Flavor,
}

impl Rt {
    fn new(flavor: Flavor) -> Result<Self> {
        let mut b = match flavor {
            Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Flavor::MultiThread => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(Flavor::WORKERS);
                b
            }
        };
        Ok(Self {
            rt: Some(b.enable_all().build()?),
            flavor,
        })
    }

    fn rt(&self) -> &Runtime {
        match &self.rt {
            Some(rt) => rt,
            // Only `drop` takes it.
            None => unreachable!("the runtime is gone"),
        }
    }

    /// Runs `op` on the side in `slot`: driven by `block_on` on a
    /// current-thread runtime, as a spawned task (the side moved into it
    /// and back) on a multi-threaded one.
    fn run<S, O, F, R>(&self, slot: &mut Option<S>, op: O) -> Result<R>
    where
        S: Send + 'static,
        R: Send + 'static,
        O: FnOnce(S) -> F + Send + 'static,
        F: Future<Output = (S, Result<R>)> + Send + 'static,
    {
        let side = slot.take().ok_or("an earlier step of this side failed")?;
        let (side, r) = match self.flavor {
            Flavor::CurrentThread => self.rt().block_on(op(side)),
            Flavor::MultiThread => {
                let task = self.rt().spawn(op(side));
                self.rt()
                    .block_on(task)
                    .map_err(|e| format!("the side's task failed: {e}"))?
            }
        };
        *slot = Some(side);
        r
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The client's side of an async transport.
pub trait ClientSide: Send + 'static {
    /// Waits until the server's side is linked.
    fn connect(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Sends request `seq` and awaits its checked answer.
    fn round_trip(&mut self, seq: u64) -> impl Future<Output = Result<()>> + Send;
    /// Sends requests `seqs` with at most `depth` unanswered, and awaits
    /// every answer, oldest first.
    fn pipeline(
        &mut self,
        seqs: RangeInclusive<u64>,
        depth: usize,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// The server's side of an async transport.
pub trait ServerSide: Send + 'static {
    /// Awaits request `seq`, checks it and answers it.
    fn serve_one(&mut self, seq: u64) -> impl Future<Output = Result<()>> + Send;
}

/// What makes the sides of an async transport.
pub trait Backend: Send + Sync {
    /// The client.
    type Client: ClientSide;
    /// The server.
    type Server: ServerSide;
    /// The transport's name.
    fn name(&self) -> &'static str;
    /// The runtime both sides run in.
    fn flavor(&self) -> Flavor;
    /// Whether a waiting side keeps its CPU busy.
    fn waiting(&self) -> Waiting;
    /// Why it cannot keep `depth` requests of `size` bytes in flight.
    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String>;
    /// Builds the client, inside the runtime (first of the two).
    fn client(&self, row: &RowSpec) -> Result<Self::Client>;
    /// Builds the server, inside the runtime.
    fn server(&self, row: &RowSpec) -> Result<Self::Server>;
}

/// The leader's side of an async row: the client in its runtime.
pub struct AsyncLeader<C> {
    // Field order is drop order: the side (its ports, registered with the
    // runtime's reactor) before the runtime.
    side: Option<C>,
    rt: Rt,
}

/// The follower's side of an async row: the server in its runtime.
pub struct AsyncFollower<S> {
    side: Option<S>,
    rt: Rt,
}

impl<C> std::fmt::Debug for AsyncLeader<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncLeader")
            .field("flavor", &self.rt.flavor)
            .finish_non_exhaustive()
    }
}

impl<S> std::fmt::Debug for AsyncFollower<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncFollower")
            .field("flavor", &self.rt.flavor)
            .finish_non_exhaustive()
    }
}

/// `warmup` untimed round trips, then `iterations` timed ones, each timed
/// from the end of the one before (the clock read between them), in ticks.
async fn timed_round_trips<C: ClientSide>(
    side: &mut C,
    warmup: u64,
    iterations: u64,
) -> Result<(Vec<u64>, u64, std::time::Duration)> {
    for seq in 1..=warmup.max(1) {
        side.round_trip(seq).await?;
    }
    let mut samples = vec![0u64; usize::try_from(iterations)?];
    let clock = Ticks::get();
    let (start, start_ticks) = (std::time::Instant::now(), clock.now());
    let mut t0 = start_ticks;
    let mut seq = warmup.max(1);
    for s in samples.iter_mut() {
        seq += 1;
        side.round_trip(seq).await?;
        let t1 = clock.now();
        *s = t1.saturating_sub(t0);
        t0 = t1;
    }
    Ok((
        samples,
        clock.now().saturating_sub(start_ticks),
        start.elapsed(),
    ))
}

impl<C: ClientSide> Leader for AsyncLeader<C> {
    fn connect(&mut self) -> Result<()> {
        self.rt.run(&mut self.side, |mut s| async move {
            let r = s.connect().await;
            (s, r)
        })
    }

    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        // One at a time (the suite times whole loops: round_trips).
        sent();
        self.rt.run(&mut self.side, move |mut s| async move {
            let r = s.round_trip(seq).await;
            (s, r)
        })
    }

    fn round_trips(&mut self, warmup: u64, iterations: u64) -> Result<(Vec<u64>, CpuTime)> {
        let before = CpuTime::now()?;
        let (mut samples, ticks, elapsed) =
            self.rt.run(&mut self.side, move |mut s| async move {
                let r = timed_round_trips(&mut s, warmup, iterations).await;
                (s, r)
            })?;
        let cpu = CpuTime::now()?
            .since(before)
            .scaled(iterations, iterations + warmup.max(1));
        let ns_per_tick = elapsed.as_nanos() as f64 / ticks.max(1) as f64;
        for s in &mut samples {
            *s = (*s as f64 * ns_per_tick).round() as u64;
        }
        Ok((samples, cpu))
    }

    fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        self.rt.run(&mut self.side, move |mut s| async move {
            let r = s.pipeline(seqs, depth).await;
            (s, r)
        })
    }
}

impl<S: ServerSide> Follower for AsyncFollower<S> {
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        self.serve_range(seq..=seq, false)
    }

    fn serve_range(&mut self, seqs: RangeInclusive<u64>, one_way: bool) -> Result<()> {
        if one_way {
            return Err("an async transport answers requests only".into());
        }
        self.rt.run(&mut self.side, move |mut s| async move {
            let mut r = Ok(());
            for seq in seqs {
                r = s.serve_one(seq).await;
                if r.is_err() {
                    break;
                }
            }
            (s, r)
        })
    }
}

/// An async transport: `B`'s sides, each in its runtime.
#[derive(Debug, Clone, Copy)]
pub struct AsyncTransport<B>(pub B);

impl<B: Backend> Transport for AsyncTransport<B> {
    type Leader = AsyncLeader<B::Client>;
    type Follower = AsyncFollower<B::Server>;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn waiting(&self) -> Waiting {
        self.0.waiting()
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        pattern
            .one_way()
            .then(|| "async rows are request/response: every request is answered".to_owned())
    }

    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        self.0.in_flight_skip(size, depth)
    }

    fn leader(&self, row: &RowSpec) -> Result<Self::Leader> {
        let rt = Rt::new(self.0.flavor())?;
        let side = {
            let _in = rt.rt().enter();
            self.0.client(row)?
        };
        Ok(AsyncLeader {
            side: Some(side),
            rt,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<Self::Follower> {
        let rt = Rt::new(self.0.flavor())?;
        let side = {
            let _in = rt.rt().enter();
            self.0.server(row)?
        };
        Ok(AsyncFollower {
            side: Some(side),
            rt,
        })
    }
}
