//! A sender's private state of one connection, and the clock that tells
//! whether its samples take long to fill.

use std::os::fd::OwnedFd;

use super::settings::Withdrawal;
use crate::core::park::WakeBlock;
use crate::core::pool::Outstanding;
use crate::core::returns::Returns;
use crate::core::ring::{Producer, Submission};

/// One connection block of the segment: fixed views of its rings and words
/// plus the publisher's private state of the connection. The 'static
/// lifetimes point into the publisher's own mapping and the service's
/// dynamic segment, both kept alive by the `SenderInner` that holds this
/// state; they are only used while it lives.
pub(super) struct ConnState {
    pub(super) sub: Submission<'static>,
    pub(super) returns: Returns<'static>,
    pub(super) connected: &'static std::sync::atomic::AtomicU64,
    /// The subscriber's wake block in the service's port table.
    pub(super) wake: &'static WakeBlock,
    /// The connection's overflow counter (for inspectors) and its value.
    pub(super) dropped_word: &'static std::sync::atomic::AtomicU64,
    pub(super) dropped: u64,
    /// Subscriber port served on this slot (0 = none).
    pub(super) sub_port: u64,
    pub(super) producer: Producer,
    pub(super) outstanding: Outstanding,
    /// The subscriber wrote garbage; it gets nothing more.
    pub(super) broken: bool,
    /// Got the sample being sent (wake it if it sleeps).
    pub(super) delivered: bool,
    /// Write end of the subscriber's wake-up FIFO, opened when first needed.
    pub(super) fifo: Option<OwnedFd>,
    /// The receiver's withdrawal words (a server's connection to a client;
    /// empty for others).
    pub(super) withdrawn: &'static [std::sync::atomic::AtomicU64],
    /// The receiver is never waited for: its oldest goes when its queue is
    /// full, whatever the overflow policy (see `PORT_LOSSY`).
    pub(super) lossy: bool,
}

impl ConnState {
    /// Whether the receiver withdrew the message `w` names.
    pub(super) fn is_withdrawn(&self, w: Withdrawal) -> bool {
        self.withdrawn
            .get(w.key as usize)
            // Relaxed: a hint the receiver writes, published with nothing.
            .is_some_and(|word| word.load(std::sync::atomic::Ordering::Relaxed) == w.value)
    }
}

/// How long a publisher with large chunks takes to fill a sample, from
/// loan to send, measured on every [`FillClock::EVERY`]th loan.
///
/// A publisher without history loans the chunk freed last; in a lockstep
/// exchange (request/response, ping-pong) that is the chunk sent the time
/// before last, because the one sent last comes back only after the next
/// send's take-back. Payloads then cycle through two chunks per direction,
/// and with large chunks that footprint outgrows the caches: at 4 MiB on
/// the machine this was measured on, a round trip that writes and reads
/// every byte took 1.1x-1.2x as long as with the chunk sent last loaned
/// again. Checking at the loan whether that chunk came back costs a cache
/// miss (the subscriber wrote its return word just before answering),
/// which is noise beside filling megabytes but 0.05-0.1 µs, a quarter of
/// the round trip, when only a few bytes are written. So a publisher
/// checks only while its samples take long to fill.
#[derive(Debug, Default)]
pub(super) struct FillClock {
    /// Loans until the next measured one.
    pub(super) countdown: u32,
    /// When the measured loan was made, until its send.
    pub(super) started: Option<std::time::Instant>,
    /// The last measured sample took at least [`FillClock::SLOW`] to fill.
    pub(super) slow: bool,
}

impl FillClock {
    /// One loan in this many is timed (a clock read costs 20-30 ns here).
    const EVERY: u32 = 16;
    /// Filling a sample this long makes a cache miss per loan negligible.
    const SLOW: std::time::Duration = std::time::Duration::from_micros(10);

    #[inline]
    pub(super) fn on_loan(&mut self) {
        if self.countdown == 0 {
            self.countdown = Self::EVERY;
            self.started = Some(std::time::Instant::now());
        }
        self.countdown -= 1;
    }

    /// With several samples loaned at once this times the measured loan to
    /// whichever send comes next: a rough figure, which is all it needs.
    #[inline]
    pub(super) fn on_send(&mut self) {
        if let Some(t) = self.started.take() {
            self.slow = t.elapsed() >= Self::SLOW;
        }
    }
}

/// Chunks from this size up are large enough that a publisher filling
/// them slowly loans the chunk it sent last again (see [`FillClock`]):
/// beyond a core's private cache (1-2 MiB on current x86 server cores).
/// At 1 MiB two chunks per direction measured as fast as one here.
pub(super) const REUSE_MIN_CHUNK: u64 = 2 << 20;
