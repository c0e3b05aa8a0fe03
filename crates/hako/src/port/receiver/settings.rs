//! What a receiving port is made of, and why receiving can fail.

use crate::domain::service::tables::PortKind;
use crate::port::wait::WaitStrategy;

/// What [`ReceiveError::CorruptedPublisher`] says of a bad descriptor.
pub(super) const GARBAGE_IN_QUEUE: &str = "garbage in the submission queue";

/// What [`ReceiveError::CorruptedPublisher`] says of a segment whose file
/// was truncated while mapped.
pub(super) const TRUNCATED: &str = "its segment file was truncated while mapped";

/// Why `receive` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// Every publisher seen during a blocking receive has left or died and
    /// nothing is queued. Only for subscribers built with
    /// [`end_when_publishers_gone(true)`](crate::SubscriberBuilder::end_when_publishers_gone);
    /// the others wait on for a publisher to come back.
    #[error("every publisher of service {0:?} is gone and nothing is queued")]
    PublishersGone(String),
    /// The subscriber already holds `subscriber_max_borrowed_samples` samples.
    #[error("the subscriber holds as many samples as it may ({0}, subscriber_max_borrowed_samples); drop one before receiving more")]
    ExceedsMaxBorrowed(usize),
    /// A publisher wrote something the protocol cannot produce (a bad
    /// descriptor or segment header). Its connection is closed;
    /// other publishers are unaffected and `receive` may be called again.
    #[error("publisher {publisher:016x} sent corrupted data ({what}); its connection is closed")]
    CorruptedPublisher {
        /// The publisher's port id.
        publisher: u64,
        /// What was wrong.
        what: &'static str,
    },
    /// The service's own file (its tables) was truncated while mapped: it
    /// reads zeros now (the process survived the fault). The service is
    /// broken for good: recreate it (`hako clean` removes it once its
    /// processes are gone).
    #[error("service {0:?} is corrupted: its file was truncated while mapped")]
    CorruptedService(String),
    /// A sample whose bytes are not a value of the payload type (a `bool`
    /// that is neither 0 nor 1, a `char` that is no Unicode scalar value):
    /// the publisher broke the type's contract. The sample was dropped;
    /// `receive` may be called again. Only types with such invalid bit
    /// patterns are checked ([`ShmSafe::CHECKED`](crate::ShmSafe::CHECKED)).
    #[error("publisher {publisher:016x} sent a sample that is not a valid {type_name}; it was dropped")]
    InvalidPayload {
        /// The publisher's port id.
        publisher: u64,
        /// The payload type.
        type_name: String,
    },
    /// SIGINT or SIGTERM arrived while it waited (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
}

impl From<crate::port::wait::Terminated> for ReceiveError {
    fn from(_: crate::port::wait::Terminated) -> Self {
        Self::TerminationRequest
    }
}

/// The settings of a receiving port, from its pattern's service settings
/// and its builder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReceiverSettings {
    /// Bytes of one payload element.
    pub elem_size: u64,
    /// Alignment of the payload.
    pub align: u64,
    /// Whether the payload is a slice (else its length must be 1).
    pub slice: bool,
    /// Receivers of the service (entries of its second table).
    pub max_receivers: u32,
    /// Samples a queue holds.
    pub buffer: u64,
    /// Samples this port may hold at once per sender (as the senders'
    /// segments record it).
    pub borrowed: u64,
    /// Samples this port may hold at once over all senders.
    pub max_held: usize,
    /// The queues are under backpressure: this port is their only consumer.
    pub backpressure: bool,
    /// The senders' rings are tagged (request/response); a segment that
    /// says otherwise is refused.
    pub tagged: bool,
    /// Withdrawal words the senders' connection blocks must have (a
    /// client's: its requests in flight; see `Receiver::withdraw`); 0 for
    /// others.
    pub withdrawals: u64,
    /// How the blocking calls wait.
    pub strategy: WaitStrategy,
    /// A wait ends with [`ReceiveError::PublishersGone`] once every sender
    /// it saw is gone (else it waits on for new ones).
    pub end_when_gone: bool,
    /// Takes nothing from senders of its own node (and marks its entry so
    /// that they send it nothing).
    pub skip_own_node: bool,
    /// Senders never wait for this receiver under backpressure: they drop
    /// its oldest when its queue is full (it marks its entry so; its
    /// queues then have a second consumer, the sender reclaiming).
    pub lossy: bool,
    /// The table of the receiver's own entry, and the table whose entries
    /// send to it (subscribers: the second, publishers: the first).
    pub own: PortKind,
    pub peers: PortKind,
    /// `None`: the receiver registers an entry of its own (publish/subscribe).
    /// `Some((port id, index))`: its pattern registered the entry, shared
    /// with a sender of the same port, and hands it over. Either way the
    /// receiver removes the entry once it and every sample it handed out
    /// are gone.
    pub shared: Option<(u64, usize)>,
}
