//! What a sending port is made of: the settings its pattern gives it, what
//! it does when a receiver's queue is full, and why a loan can fail.

use crate::domain::config::OverflowPolicy;
use crate::domain::service::tables::PortKind;

/// What a publisher does, under [`OverflowPolicy::Backpressure`], when a
/// subscriber's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackpressureStrategy {
    /// Wait until the subscriber makes room (or goes away, or its process
    /// dies). SIGINT or SIGTERM ends the wait, as it ends blocking
    /// receives, when the node handles signals
    /// ([`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling))
    /// and a wait of the process installed its handlers: the sample then
    /// skips the subscribers still full (counted as dropped), the send
    /// returns, and the program's next blocking receive or wait reports the
    /// termination request.
    Block,
    /// Try again up to this many times, yielding the CPU in between, then
    /// skip this subscriber for this sample.
    Retry(u32),
    /// Skip this subscriber for this sample at once.
    Discard,
}

/// Why a sample could not be loaned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoanError {
    /// The publisher already has `max_loaned_samples` samples loaned out.
    #[error("the publisher has loaned as many samples as it may ({0}, max_loaned_samples); send or drop one first")]
    ExceedsMaxLoans(usize),
    /// Every chunk of the pool is in use by subscribers, history and loans.
    #[error("the publisher's pool is exhausted: every one of its {0} chunks is in use; subscribers must release samples")]
    OutOfMemory(u32),
    /// The requested slice length exceeds the publisher's maximum.
    #[error("slice of {requested} elements requested; this publisher allows at most {max} (max_slice_len)")]
    SliceTooLong {
        /// Requested length.
        requested: usize,
        /// The maximum.
        max: usize,
    },
}

/// The settings of a sending port, from its pattern's service settings and
/// its builder; checked by the pattern before the port is made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SenderSettings {
    /// What happens when a receiver's queue is full.
    pub overflow: OverflowPolicy,
    /// Under backpressure: block, retry or discard.
    pub strategy: BackpressureStrategy,
    /// Samples kept for receivers that connect later.
    pub history_size: u32,
    /// Samples a receiver's queue holds.
    pub buffer: u64,
    /// Samples a receiver may hold at once.
    pub borrowed: u64,
    /// Receivers (entries of the service's second table).
    pub max_receivers: u32,
    /// Senders of this kind the service admits.
    pub max_senders: u32,
    /// Samples loaned at once.
    pub max_loans: u32,
    /// Elements of the largest slice (1 for a single value).
    pub max_len: u64,
    /// Bytes and alignment of one payload element.
    pub elem_size: u64,
    /// Alignment of the payload.
    pub align: u64,
    /// Chunks of the pool.
    pub chunk_count: u64,
    /// Tagged rings: every send carries a [`Tag`](crate::core::ring::Tag)
    /// (request/response); plain ones carry none.
    pub tagged: bool,
    /// Carry each payload in the ring slot beside its descriptor when the
    /// largest one fits (see `core::ring`); the sender's choice, which its
    /// segment header tells the receivers.
    pub inline: bool,
    /// Withdrawal words per connection block: a server's, the clients'
    /// requests in flight (see [`Withdrawal`]); 0 for others.
    pub withdrawals: u64,
    /// The table of the sender's own entry, and the table whose entries it
    /// sends to (publishers: the first, subscribers: the second).
    pub own: PortKind,
    pub peers: PortKind,
    /// `None`: the sender registers an entry of its own and, when it goes,
    /// removes it or leaves it retired (publish/subscribe). `Some(id)`: its
    /// pattern registers the entry under this id after the sender's segment
    /// exists and removes it itself; the sender only makes and removes its
    /// segment file.
    pub shared_id: Option<u64>,
}

/// Why a sending port could not be made.
#[derive(Debug)]
pub(crate) enum SenderCreateError {
    /// The service admits no more senders.
    TooMany,
    /// The segment would be too large.
    Geometry,
    /// The data segment (`size` bytes) could not be created or registered.
    Segment {
        size: u64,
        source: crate::domain::service::error::ServiceError,
    },
}

/// A message its receiver may withdraw while the sender waits for room:
/// a response, withdrawn when the client drops the request's pending
/// response. The receiver writes `value` (1 + the request's generation) to
/// withdrawal word `key` (the request's slot) of its connection block in
/// the sender's segment (see `core::layout`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Withdrawal {
    pub(crate) key: u32,
    pub(crate) value: u64,
}
