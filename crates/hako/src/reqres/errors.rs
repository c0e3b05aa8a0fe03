//! What can go wrong making a client or a server, sending a request or a
//! response, and receiving either.

use crate::domain::service::error::ServiceError;
use crate::port::sender::settings::LoanError;

/// Why a client or a server could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PortCreateError {
    /// The service admits no more ports of this kind.
    #[error("service {service:?} admits no more {kind} (max_{kind} = {max}); raise it when creating the service")]
    TooMany {
        /// The service.
        service: String,
        /// "clients" or "servers".
        kind: &'static str,
        /// The limit.
        max: u32,
    },
    /// A setting is out of range.
    #[error("invalid setting {field} = {value}: {rule}")]
    InvalidSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// The port's data segment or FIFO could not be created (for a full
    /// tmpfs: "No space left on device").
    #[error("cannot create the port's files: {0}")]
    Service(#[from] ServiceError),
}

/// Why a request could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestSendError {
    /// No request could be loaned.
    #[error(transparent)]
    Loan(#[from] LoanError),
    /// The client has `max_requests_in_flight` pending responses already.
    #[error("as many requests are in flight as the service allows ({0}, max_requests_in_flight); drop a PendingResponse, or finish or drop a Ticket, first")]
    TooManyRequestsInFlight(usize),
    /// No server is there to take it.
    #[error("service {0:?} has no server; start one, or retry later")]
    NoServer(String),
    /// The server's queue for this client stayed full (under a backpressure
    /// strategy that gives up), or the server left as the request went.
    #[error("the server did not take the request (it left, or its queue stayed full)")]
    NotDelivered,
}

/// Why [`Client::wait_for_server`](crate::Client::wait_for_server) gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerWaitError {
    /// No server came within the time given.
    #[error("no server of service {service:?} came within {waited:?}; start one")]
    NoServer {
        /// The service.
        service: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// SIGINT or SIGTERM arrived while it waited (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
}

/// Why a response could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseSendError {
    /// No response could be loaned.
    #[error(transparent)]
    Loan(#[from] LoanError),
    /// The request was sent fire-and-forget.
    #[error("the client asked for no response")]
    NoResponseExpected,
    /// The client left, died, or stopped reading (its queue stayed full).
    #[error("the client is gone or does not read its responses")]
    ClientGone,
    /// A response loaned from one request was given to another's
    /// `send_last`.
    #[error("the response was loaned from another request")]
    OtherRequest,
}

/// What [`ReqResReceiveError::Corrupted`] says of a request or response
/// whose bytes are not a value of its type (a `bool` other than 0 or 1, a
/// `char` that is no Unicode scalar value).
pub(crate) const INVALID_VALUE: &str = "bytes that are not a value of the payload type";

/// Why receiving a request or a response failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReqResReceiveError {
    /// The server of a pending response left or died before it ended the
    /// stream; responses it sent before are still delivered.
    #[error("the server of this request is gone; the response stream ended without its end")]
    ServerGone,
    /// The server gave up on the request before the stream's end (see
    /// [`ActiveRequest::abort`](crate::ActiveRequest::abort)): a bridge
    /// whose remote servers did not answer in time (the host vanished, or
    /// nobody serves there). Responses sent before are delivered first;
    /// the stream is over.
    #[error("the server gave up on this request (a remote host that vanished or did not answer); the response stream is over")]
    Aborted,
    /// Every server seen during a blocking receive is gone and nothing
    /// waits; waiting on could only hang.
    #[error("every server of service {0:?} is gone and nothing is queued")]
    ServersGone(String),
    /// The port holds as many samples as it may: for a client, responses
    /// of its other requests wait in its buffer; read or drop them.
    #[error("the port holds as many messages as it may ({0}); drop one (or read the other requests' responses) first")]
    ExceedsMaxBorrowed(usize),
    /// A peer wrote something the protocol cannot produce (a bad header or
    /// length); the message is dropped, the connection and other peers are
    /// unaffected.
    #[error("port {peer:016x} sent corrupted data ({what}); the message was dropped")]
    Corrupted {
        /// The peer's port id.
        peer: u64,
        /// What was wrong.
        what: &'static str,
    },
    /// The service's own file was truncated while mapped (see
    /// [`ReceiveError::CorruptedService`](crate::ReceiveError::CorruptedService)).
    #[error("service {0:?} is corrupted: its file was truncated while mapped")]
    CorruptedService(String),
    /// SIGINT or SIGTERM arrived while it waited (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
}

impl From<crate::port::wait::Terminated> for ReqResReceiveError {
    fn from(_: crate::port::wait::Terminated) -> Self {
        Self::TerminationRequest
    }
}

impl From<crate::port::receiver::settings::ReceiveError> for ReqResReceiveError {
    fn from(e: crate::port::receiver::settings::ReceiveError) -> Self {
        use crate::port::receiver::settings::ReceiveError as R;
        match e {
            R::PublishersGone(s) => Self::ServersGone(s),
            R::ExceedsMaxBorrowed(n) => Self::ExceedsMaxBorrowed(n),
            R::CorruptedPublisher { publisher, what } => Self::Corrupted {
                peer: publisher,
                what,
            },
            R::InvalidPayload { publisher, .. } => Self::Corrupted {
                peer: publisher,
                what: INVALID_VALUE,
            },
            R::CorruptedService(s) => Self::CorruptedService(s),
            R::TerminationRequest => Self::TerminationRequest,
        }
    }
}
