//! What a benchmarked transport provides.
//!
//! A transport moves messages of `size` bytes from a leader process to one
//! or more follower processes. The harness builds both sides for each row of
//! a table:
//!
//! 1. the leader calls [`Transport::leader`] (it creates shared resources),
//! 2. each follower calls [`Transport::follower`] (it opens them),
//! 3. the leader calls [`Leader::connect`] (it waits until all are linked),
//! 4. all run messages numbered 1, 2, … — first untimed warm-up ones,
//!    then timed ones.
//!
//! What step 4 does depends on the row's [`Pattern`]:
//!
//! * [`Pattern::PingPong`] — one follower; the leader sends a message and
//!   waits for an answer of the same size ([`Leader::round_trip`],
//!   [`Follower::serve_one`]).
//! * [`Pattern::Throughput`] — one follower; the leader sends messages one
//!   way as fast as the transport's own flow control lets it
//!   ([`Leader::send`]), the follower receives and checks each
//!   ([`Follower::receive`]).
//! * [`Pattern::FanOut`] — as throughput, with `followers` receivers: every
//!   message reaches each of them (one publisher and N subscribers, or N
//!   connections the leader writes in turn).
//! * [`Pattern::RequestResponse`] — one follower, the server; the leader, the
//!   client, keeps up to [`RowSpec::depth`] requests in flight
//!   ([`Leader::pipeline`], usually through [`pipeline`]) and the follower
//!   answers each in turn ([`Follower::serve_one`]). With a depth of 1 this
//!   is a ping-pong.
//!
//! How much of each message the sides touch is the row's [`PayloadMode`]:
//! `touch` writes and checks the first and last byte, `full` writes every
//! byte and reads every byte back into a checksum.
//!
//! Sequence numbers let each side check that it got the message it expects,
//! so a transport that loses or reorders messages fails loudly instead of
//! producing a fast number.
//!
//! The rows' description and the checks of their messages are in `row.rs`
//! ([`Pattern`], [`PayloadMode`], [`RowSpec`], [`tag`], [`check_tagged`]),
//! the busy-polling a receiving side does in `polling.rs` ([`poll`]); both
//! are re-exported here.

mod polling;
mod row;
pub mod timed;

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use crate::error::Result;

pub use polling::{poll, prefetch, set_yield_when_idle, PEER_TIMEOUT};
pub use row::{
    byte_sum, check_reached, check_tagged, tag, Pattern, PayloadMode, RowSpec, FULL_IN_FLIGHT,
};

/// The leader's side of a row.
pub trait Leader {
    /// Waits until the follower's side is linked, so the first message
    /// cannot be lost. Default: nothing to wait for.
    fn connect(&mut self) -> Result<()> {
        Ok(())
    }

    /// Sends message `seq`, calls `sent` as soon as the message is on its
    /// way, and waits for the follower's answer to it. The harness reads
    /// the clock in `sent`, while the message travels, so the clock read is
    /// not on the round trip's path (see [`measure`](crate::transport::timed::measure)).
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()>;

    /// One-way patterns: sends message `seq` to every follower, waiting as
    /// the transport's flow control says when a receiver is behind.
    /// Default: the transport does only ping-pong.
    fn send(&mut self, seq: u64) -> Result<()> {
        let _ = seq;
        Err(ONE_WAY_UNSUPPORTED.into())
    }

    /// One-way rows: sends messages `1..=warmup` untimed, then
    /// `warmup + 1..=warmup + messages` timed, in order ([`Self::send`]);
    /// returns the monotonic time ([`crate::sys::clock::monotonic_ns`]) just
    /// before the first timed one, and the CPU time this side used for the
    /// timed ones. Default: one [`send`](Self::send) at a time in this
    /// process; a transport whose sender is another program has it send
    /// them all and report both.
    fn send_timed(
        &mut self,
        warmup: u64,
        messages: u64,
    ) -> Result<(u64, crate::sys::cpu::CpuTime)> {
        for seq in 1..=warmup {
            self.send(seq)?;
        }
        let before = crate::sys::cpu::CpuTime::now()?;
        let start = crate::sys::clock::monotonic_ns();
        for seq in warmup + 1..=warmup + messages {
            self.send(seq)?;
        }
        Ok((start, crate::sys::cpu::CpuTime::now()?.since(before)))
    }

    /// Request/response rows: sends requests `seqs` in order, never more
    /// than `depth` of them unanswered, and returns once every answer is
    /// in and checked (see [`pipeline`]). Default: the transport answers one
    /// message at a time ([`Transport::in_flight_skip`] says so).
    fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let _ = (seqs, depth);
        Err(NO_PIPELINE.into())
    }

    /// A ping-pong row's round trips: `warmup` (at least one) untimed, then
    /// `iterations` timed; each one's time in nanoseconds, in order, and
    /// the CPU time of the timed ones. Default: [`measure`](timed::measure),
    /// one [`round_trip`](Self::round_trip) at a time; transports whose
    /// loop must run elsewhere (in an async runtime) run it whole.
    fn round_trips(
        &mut self,
        warmup: u64,
        iterations: u64,
    ) -> Result<(Vec<u64>, crate::sys::cpu::CpuTime)>
    where
        Self: Sized,
    {
        timed::measure(warmup, iterations, |seq, sent| self.round_trip(seq, sent))
    }
}

const ONE_WAY_UNSUPPORTED: &str = "this transport measures ping-pong only";
const NO_PIPELINE: &str = "this transport answers one request at a time";

/// Sends requests `seqs` through `request`, keeping at most `depth` (at
/// least 1) without an answer, and waits for each answer, oldest first,
/// through `response`, which gets what `request` returned for it (a
/// pending response, say). `state` is what both work on. Returns once the
/// last answer is in.
#[inline]
pub fn pipeline<S, T>(
    state: &mut S,
    seqs: RangeInclusive<u64>,
    depth: usize,
    mut request: impl FnMut(&mut S, u64) -> Result<T>,
    mut response: impl FnMut(&mut S, u64, T) -> Result<()>,
) -> Result<()> {
    let depth = depth.max(1);
    let mut in_flight: VecDeque<(u64, T)> = VecDeque::with_capacity(depth);
    for seq in seqs {
        if in_flight.len() == depth {
            if let Some((s, t)) = in_flight.pop_front() {
                response(state, s, t)?;
            }
        }
        let t = request(state, seq)?;
        in_flight.push_back((seq, t));
    }
    while let Some((s, t)) = in_flight.pop_front() {
        response(state, s, t)?;
    }
    Ok(())
}

/// The follower's side of a row.
pub trait Follower {
    /// Waits for message `seq` and answers it.
    fn serve_one(&mut self, seq: u64) -> Result<()>;

    /// One-way patterns: waits for message `seq` and checks it.
    fn receive(&mut self, seq: u64) -> Result<()> {
        let _ = seq;
        Err(ONE_WAY_UNSUPPORTED.into())
    }

    /// Serves (or, `one_way`, receives) messages `seqs` in order. Default:
    /// one [`serve_one`](Self::serve_one) or [`receive`](Self::receive)
    /// at a time; transports whose loop must run elsewhere (in an async
    /// runtime) run it whole.
    fn serve_range(&mut self, seqs: RangeInclusive<u64>, one_way: bool) -> Result<()> {
        for seq in seqs {
            if one_way {
                self.receive(seq)?;
            } else {
                self.serve_one(seq)?;
            }
        }
        Ok(())
    }

    /// Serves (or, `one_way`, receives) messages `1..=warmup` untimed,
    /// then `warmup + 1..=warmup + messages` timed; returns the monotonic
    /// time just after the last and the CPU time this side used for the
    /// timed ones. Default: [`serve_timed`] in this process; a transport
    /// whose follower is another program has it report both.
    fn serve_timed(
        &mut self,
        warmup: u64,
        messages: u64,
        one_way: bool,
    ) -> Result<(u64, crate::sys::cpu::CpuTime)> {
        serve_timed(self, warmup, messages, one_way)
    }
}

/// [`Follower::serve_timed`] in this process: [`Follower::serve_range`]
/// over the warm-up messages, then over the timed ones between two readings
/// of the clocks.
pub fn serve_timed<F: Follower + ?Sized>(
    side: &mut F,
    warmup: u64,
    messages: u64,
    one_way: bool,
) -> Result<(u64, crate::sys::cpu::CpuTime)> {
    side.serve_range(1..=warmup, one_way)?;
    let before = crate::sys::cpu::CpuTime::now()?;
    side.serve_range(warmup + 1..=warmup + messages, one_way)?;
    let last = crate::sys::clock::monotonic_ns();
    Ok((last, crate::sys::cpu::CpuTime::now()?.since(before)))
}

/// How a transport's sides wait for each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// They never sleep: each polls memory until the peer's message is
    /// there. Two such processes on one CPU hand over only when the
    /// scheduler preempts the spinning one, milliseconds per message.
    BusyPoll,
    /// They may sleep in the kernel until the peer wakes them.
    Blocking,
}

/// A way of moving messages between two processes.
pub trait Transport: Send + Sync {
    /// The leader's side.
    type Leader: Leader;
    /// The follower's side.
    type Follower: Follower;

    /// Short name, unique among the transports of a binary; the follower
    /// process finds the transport by it.
    fn name(&self) -> &'static str;

    /// How its sides wait.
    fn waiting(&self) -> Waiting;

    /// Why it cannot carry `size`-byte messages in `pattern` on this
    /// machine, if it cannot: the row is skipped and the reason shown.
    /// Default: it can, except one way if it is [`Self::ping_pong_only`].
    fn skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        let _ = size;
        (pattern.one_way() && self.ping_pong_only()).then(|| "a floor: ping-pong only".to_owned())
    }

    /// Why it cannot keep `depth` requests of `size` bytes in flight in a
    /// request/response row, if it cannot. Default: it answers one message
    /// at a time (no [`Leader::pipeline`]).
    fn in_flight_skip(&self, size: usize, depth: u32) -> Option<String> {
        let _ = (size, depth);
        Some(NO_PIPELINE.to_owned())
    }

    /// Whether it only measures round trips (the floors). Default: no.
    fn ping_pong_only(&self) -> bool {
        false
    }

    /// The fewest untimed messages a one-way run of `size`-byte messages
    /// needs to pass once through the buffers it cycles, when those fault
    /// in as they are first written (and the first pass would measure page
    /// faults). Default: 1.
    fn one_way_warmup(&self, size: usize) -> u64 {
        let _ = size;
        1
    }

    /// Builds the leader's side of a row; runs before [`Self::follower`].
    fn leader(&self, row: &RowSpec) -> Result<Self::Leader>;

    /// Builds the follower's side of a row.
    fn follower(&self, row: &RowSpec) -> Result<Self::Follower>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_keeps_at_most_depth_in_flight_and_answers_in_order() {
        for depth in [0, 1, 3, 16] {
            // (in flight now, most in flight, answered in order)
            let mut st = (0usize, 0usize, Vec::new());
            pipeline(
                &mut st,
                5..=14,
                depth,
                |st, seq| {
                    st.0 += 1;
                    st.1 = st.1.max(st.0);
                    Ok(seq * 10)
                },
                |st, seq, t| {
                    assert_eq!(t, seq * 10);
                    st.0 -= 1;
                    st.2.push(seq);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(st.0, 0);
            assert_eq!(st.1, depth.clamp(1, 10));
            assert_eq!(st.2, (5..=14).collect::<Vec<u64>>());
        }
        // An error stops it.
        let e = pipeline(
            &mut (),
            1..=3,
            2,
            |_, s| Ok(s),
            |_, s, _| {
                if s == 2 {
                    Err("lost".into())
                } else {
                    Ok(())
                }
            },
        );
        assert!(e.is_err());
    }
}
