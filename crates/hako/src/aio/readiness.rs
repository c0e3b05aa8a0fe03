//! Waiting for a port under tokio: the port's FIFO registered with tokio's
//! reactor, and the arm / re-check / sleep / disarm protocol of the port's
//! wake block (see `core::park`) around it.
//!
//! A poll first tries to take what the port has: while the reader keeps
//! up, that is all, with no system call and nothing registered. When
//! nothing is there it spins as the port's [`WaitStrategy`] says:
//! `BusySpin` never sleeps (it spins up to [`ASYNC_BUSY_SLICE`] within one
//! poll, then lets the runtime run its other tasks and is polled again at
//! once), `SpinThenPark` spins for the port's adaptive budget (as its
//! blocking wait does, without the yields), `Park` not at all. Then it
//! arms the port (a waiter count in the wake block that senders read after
//! each send, then a fence and a re-check), and only then do senders write
//! a byte to the port's FIFO, which wakes the task through tokio. A wake-up
//! disarms (and drains the FIFO) before the next try, so a reader that
//! keeps up again costs senders nothing.
//!
//! A peer that dies cannot write to the FIFO: while armed, a tokio timer
//! also wakes the task every [`LIVENESS_TICK`] to ask whether the peers are
//! still there, as the blocking waits do after each timed-out sleep; a
//! busy-spinning task asks as often, by the clock. Should this process's
//! sleepers be unable to put their barrier into the senders (see
//! `core::sync::sleepers_degraded`), the timer comes every
//! `DEGRADED_SLICE` instead and the task tries again each time, so that a
//! missed wake-up costs at most that, as in the blocking waits.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::error::AsyncError;
use crate::core::park::DEGRADED_SLICE;
use crate::port::wait::{spin, Adaptive, WaitStrategy, ASYNC_BUSY_SLICE};

/// How often a task that waits on a port asks whether its peers are alive.
pub(crate) const LIVENESS_TICK: Duration = Duration::from_millis(100);

/// A port that can be waited on: the three steps of the protocol, and what
/// it does when its peers died.
pub(crate) trait Waitable {
    /// The port's errors.
    type Error;
    /// Registers interest with a fence; true if something is there now.
    fn arm(&self) -> bool;
    /// Withdraws the interest and empties the FIFO.
    fn disarm(&self);
    /// Whether a peer is registered (a cheap look at the table).
    fn peers_registered(&self) -> bool;
    /// After a while asleep: an error if every peer seen during the wait
    /// (`saw`, kept here) is gone and nothing is queued.
    fn peers_gone(&self, saw: &mut bool) -> Result<(), Self::Error>;
    /// The port's wait strategy and its adaptive spin budget.
    fn spin_policy(&self) -> (WaitStrategy, &Adaptive);
}

/// The port's FIFO as the reactor sees it: a raw descriptor the port owns
/// (the port outlives the registration, see [`Readiness`]).
struct Fifo(RawFd);

impl AsRawFd for Fifo {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// A port's registration with tokio and its waiting state. Must be dropped
/// before the port whose FIFO it registered (the async ports declare it
/// first).
pub(crate) struct Readiness {
    fd: AsyncFd<Fifo>,
    /// The port's interest is registered in its wake block.
    armed: bool,
    /// A peer was seen during the current wait.
    saw_peer: bool,
    /// The next liveness check, while armed.
    tick: Option<Pin<Box<tokio::time::Sleep>>>,
    /// When the current wait began (its first empty look), while one runs.
    began: Option<Instant>,
    /// The current wait has spun as its strategy allows (`SpinThenPark`),
    /// or slept: from now on it sleeps.
    spun: bool,
    /// The current wait's last look at its peers (when it began to
    /// sleep or spin, or its last liveness check).
    checked: Option<Instant>,
}

impl Readiness {
    /// Registers `fifo` with the reactor of the current tokio runtime.
    ///
    /// # Panics
    /// Outside a tokio runtime (as tokio's own I/O types do).
    ///
    /// # Safety
    /// `fifo` stays open, the same open file, until the result is dropped
    /// (its owner declares the result before the port that owns `fifo`,
    /// so that it drops first).
    pub(crate) unsafe fn new(fifo: BorrowedFd<'_>) -> io::Result<Self> {
        // SAFETY: tokio's condition for the registration, which is ours
        // (above): the descriptor stays valid and the same while it lasts.
        let fd = unsafe {
            AsyncFd::register_with_interest(Fifo(fifo.as_raw_fd()), Interest::READABLE)?
        };
        Ok(Self {
            fd,
            armed: false,
            saw_peer: false,
            tick: None,
            began: None,
            spun: false,
            checked: None,
        })
    }

    /// Polls `take` on `port` until it yields, sleeping in between as the
    /// module doc says. Nothing is taken unless it is returned: a caller
    /// that stops polling (a dropped future) loses nothing, and calls
    /// [`cancel`](Self::cancel).
    pub(crate) fn poll_take<P: Waitable, R>(
        &mut self,
        port: &P,
        cx: &mut Context<'_>,
        mut take: impl FnMut(&P) -> Result<Option<R>, P::Error>,
    ) -> Poll<Result<R, AsyncError<P::Error>>> {
        let (strategy, adaptive) = port.spin_policy();
        loop {
            match take(port) {
                Ok(Some(r)) => {
                    if strategy == WaitStrategy::SpinThenPark {
                        if let Some(began) = self.began {
                            // Found after a sleep: as the blocking wait
                            // judges it (a longer spin would have caught a
                            // message this quick).
                            adaptive.slept(began.elapsed());
                        }
                    }
                    self.cancel(port);
                    return Poll::Ready(Ok(r));
                }
                Ok(None) => {}
                Err(e) => {
                    self.cancel(port);
                    return Poll::Ready(Err(AsyncError::Port(e)));
                }
            }
            if !self.armed {
                if let Some(ready) = self.spin_phase(port, cx, strategy, adaptive, &mut take) {
                    return ready;
                }
                self.armed = true;
                if self.checked.is_none() {
                    // A new wait: who is there now (no system call).
                    self.saw_peer = port.peers_registered();
                    self.checked = Some(Instant::now());
                }
                if port.arm() {
                    // It came between the try and the registration.
                    continue;
                }
            }
            match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => {
                    // Readiness is cleared before the FIFO is drained (in
                    // disarm): a byte written in between sets it again, and
                    // a byte drained was for data the next try finds.
                    guard.clear_ready();
                    port.disarm();
                    self.armed = false;
                    continue;
                }
                Poll::Ready(Err(e)) => {
                    self.cancel(port);
                    return Poll::Ready(Err(AsyncError::Runtime(e)));
                }
                Poll::Pending => {}
            }
            // When this process's sleepers cannot put their barrier into
            // the senders (see core::sync::sleepers_degraded), a wake-up
            // may be missed: the task then tries again every slice, as a
            // blocking wait does, and asks after the peers at the usual
            // pace.
            let degraded = crate::core::sync::sleepers_degraded();
            let period = if degraded { DEGRADED_SLICE } else { LIVENESS_TICK };
            let tick = self
                .tick
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(period)));
            if tick.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.tick = None;
            let now = Instant::now();
            if degraded && self.checked.is_some_and(|c| now.duration_since(c) < LIVENESS_TICK) {
                // A slice's retry only; the peers wait for their turn.
                continue;
            }
            self.checked = Some(now);
            if let Err(e) = port.peers_gone(&mut self.saw_peer) {
                self.cancel(port);
                return Poll::Ready(Err(AsyncError::Port(e)));
            }
            // Still there: try again, and sleep for another tick.
        }
    }

    /// The spin before a sleep, as `strategy` says (see the module doc):
    /// `Some` to return from the poll (what the spin found, an error, or
    /// `Pending` with the task woken again at once when it busy-spins),
    /// `None` to go on and sleep.
    fn spin_phase<P: Waitable, R>(
        &mut self,
        port: &P,
        cx: &mut Context<'_>,
        strategy: WaitStrategy,
        adaptive: &Adaptive,
        take: &mut impl FnMut(&P) -> Result<Option<R>, P::Error>,
    ) -> Option<Poll<Result<R, AsyncError<P::Error>>>> {
        let now = Instant::now();
        self.began.get_or_insert(now);
        let budget = match strategy {
            WaitStrategy::BusySpin => ASYNC_BUSY_SLICE,
            WaitStrategy::SpinThenPark if !self.spun => adaptive.spin_for(),
            _ => Duration::ZERO,
        };
        let found = match spin(budget, || take(port)) {
            Ok(found) => found,
            Err(e) => {
                self.cancel(port);
                return Some(Poll::Ready(Err(AsyncError::Port(e))));
            }
        };
        if let Some(r) = found {
            if strategy == WaitStrategy::SpinThenPark {
                adaptive.spun_ok();
            }
            self.reset();
            return Some(Poll::Ready(Ok(r)));
        }
        if strategy != WaitStrategy::BusySpin {
            self.spun = true;
            return None;
        }
        // Never asleep, so no timer: the peers are asked by the clock.
        match self.checked {
            None => {
                // A new wait: who is there now (no system call).
                self.saw_peer = port.peers_registered();
                self.checked = Some(now);
            }
            Some(checked) if now.duration_since(checked) >= LIVENESS_TICK => {
                self.checked = Some(now);
                if let Err(e) = port.peers_gone(&mut self.saw_peer) {
                    self.cancel(port);
                    return Some(Poll::Ready(Err(AsyncError::Port(e))));
                }
            }
            Some(_) => {}
        }
        cx.waker().wake_by_ref();
        Some(Poll::Pending)
    }

    /// Ends the current wait: withdraws the port's interest if registered,
    /// so that senders stop writing to the FIFO.
    pub(crate) fn cancel<P: Waitable>(&mut self, port: &P) {
        if self.armed {
            port.disarm();
            self.armed = false;
        }
        self.reset();
    }

    /// Forgets the current wait (nothing is armed).
    fn reset(&mut self) {
        self.tick = None;
        self.began = None;
        self.spun = false;
        self.checked = None;
    }
}
