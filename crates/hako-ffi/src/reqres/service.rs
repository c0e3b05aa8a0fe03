//! The request/response service, and what its clients and servers share:
//! the handles' types, the layout of a loaned message's private words, the
//! errors of its ports, backpressure and the "busy" refusal. Below
//! `client.rs` and `server.rs`.

use std::ffi::{c_char, c_void};
use std::mem::{align_of, size_of};
use std::sync::atomic::AtomicUsize;

use hako::{
    ActiveRequest, Client, PendingResponse, ReqResService, RequestMutUninit, Response,
    ResponseMutUninit, Server,
};

use crate::error::{guard, hako_status, Failure, ToFailure, HAKO_ERROR_MISUSE};
use crate::handle::{get, give, take, text};
use crate::node::{hako_node, hako_open_mode, hako_wait_strategy};
use crate::pubsub::{details, hako_backpressure, hako_payload_type};
use crate::sample::VALUE_WORDS;

pub(super) type Req<'c> = RequestMutUninit<'c, [u8], [u8]>;

/// Layout of a `hako_message_mut`'s `_private`: the loan in the first
/// `M_VALUE` words, its port in `M_OWNER`, the live mark in `M_TAG`, a
/// request's client in `M_CLIENT`.
pub(super) const M_VALUE: usize = 8;
pub(super) const M_OWNER: usize = 8;
pub(super) const M_TAG: usize = 9;
pub(super) const M_CLIENT: usize = 10;

const _: () = {
    assert!(size_of::<Req<'static>>() <= M_VALUE * 8 && align_of::<Req<'static>>() <= 8);
    assert!(size_of::<ResponseMutUninit<[u8]>>() <= M_VALUE * 8);
    assert!(align_of::<ResponseMutUninit<[u8]>>() <= 8);
    assert!(size_of::<Response<[u8]>>() <= VALUE_WORDS * 8 && align_of::<Response<[u8]>>() <= 8);
};

/// Settings of a request/response service. Zero means: the configured
/// default on create, anything on open.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hako_reqres_options {
    /// Clients the service admits.
    pub max_clients: u32,
    /// Servers the service admits.
    pub max_servers: u32,
    /// Nodes that may hold it open at once.
    pub max_nodes: u32,
    /// Requests a client may have in flight.
    pub max_requests_in_flight: u32,
    /// Responses a client may hold or have queued per request.
    pub max_response_buffer: u32,
}

/// Settings of a client or a server. Zero means the default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_port_options {
    /// Most elements of a slice request (client) or response (server).
    pub max_slice_len: usize,
    /// Requests (client) or responses (server) loaned at once.
    pub max_loans: u32,
    /// When the other side's queue is full: block (default), retry, discard.
    pub backpressure: hako_backpressure,
    /// Tries of `HAKO_BACKPRESSURE_RETRY`.
    pub retries: u32,
    /// How its waits wait.
    pub wait: hako_wait_strategy,
}

/// A request/response service. Owning handle; any thread.
pub struct hako_reqres_service {
    pub(super) svc: ReqResService<[u8], [u8]>,
    pub(super) req_size: usize,
    pub(super) resp_size: usize,
}

/// A client. Owning handle; one thread at a time, with its pending
/// responses.
pub struct hako_client {
    pub(crate) client: Client<[u8], [u8]>,
    pub(super) req_size: usize,
    pub(super) resp_size: usize,
    /// Loans and pending responses that borrow it.
    pub(super) live: AtomicUsize,
    /// Waitsets it is attached to.
    pub(crate) attached: AtomicUsize,
}

/// A server. Owning handle; one thread at a time, with its active
/// requests.
pub struct hako_server {
    pub(crate) server: Server<[u8], [u8]>,
    pub(super) req_size: usize,
    pub(super) resp_size: usize,
    /// Active requests that borrow it.
    pub(super) live: AtomicUsize,
    /// Waitsets it is attached to.
    pub(crate) attached: AtomicUsize,
}

/// A request sent and its responses to come. Owning handle, used from its
/// client's thread; drop it before its client.
pub struct hako_pending {
    pub(super) pending: PendingResponse<'static, [u8], [u8]>,
    pub(super) client: *const hako_client,
}

/// A request a server received, to answer. Owning handle, used from its
/// server's thread; dropping it ends the response stream.
pub struct hako_active_request {
    pub(super) active: ActiveRequest<'static, [u8], [u8]>,
    pub(super) server: *const hako_server,
    pub(super) id: u64,
}

/// A loaned request or response, to fill and send: `size` bytes at
/// `data`. Owned by the caller, as a `hako_sample_mut`.
#[repr(C)]
#[derive(Debug)]
pub struct hako_message_mut {
    /// Where to write the payload (NULL once sent or dropped).
    pub data: *mut c_void,
    /// Bytes at `data`.
    pub size: usize,
    /// Elements.
    pub len: usize,
    /// hako's state; do not touch.
    pub _private: [u64; 11],
}

/// A response a client received: `size` bytes at `data`, valid until
/// `hako_response_drop`. Owned by the caller.
#[repr(C)]
#[derive(Debug)]
pub struct hako_response {
    /// The payload (NULL when none came, or once dropped).
    pub data: *const c_void,
    /// Bytes at `data`.
    pub size: usize,
    /// Elements.
    pub len: usize,
    /// The id of the server that sent it.
    pub server_id: u64,
    /// hako's state; do not touch.
    pub _private: [u64; 8],
}

/// Which kind of loan a `hako_message_mut` holds (in `_private[OWNER]`'s
/// high bit: requests are marked, responses not).
pub(super) const REQUEST_MARK: u64 = 1 << 63;

impl ToFailure for hako::ReqResPortCreateError {
    fn status(&self) -> hako_status {
        use hako::ReqResPortCreateError as E;
        match self {
            E::TooMany { .. } => hako_status::HAKO_ERROR_TOO_MANY,
            E::InvalidSetting { .. } => hako_status::HAKO_ERROR_INVALID_ARGUMENT,
            E::Service(e) => e.status(),
            _ => hako_status::HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::RequestSendError {
    fn status(&self) -> hako_status {
        use hako::RequestSendError as E;
        match self {
            E::Loan(e) => e.status(),
            E::TooManyRequestsInFlight(_) => hako_status::HAKO_ERROR_OUT_OF_MEMORY,
            E::NoServer(_) | E::NotDelivered => hako_status::HAKO_ERROR_PEER_GONE,
            _ => hako_status::HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::ResponseSendError {
    fn status(&self) -> hako_status {
        use hako::ResponseSendError as E;
        match self {
            E::Loan(e) => e.status(),
            E::ClientGone => hako_status::HAKO_ERROR_PEER_GONE,
            E::NoResponseExpected | E::OtherRequest => HAKO_ERROR_MISUSE,
            _ => hako_status::HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::ReqResReceiveError {
    fn status(&self) -> hako_status {
        use hako::ReqResReceiveError as E;
        match self {
            E::ServerGone | E::ServersGone(_) | E::Aborted => hako_status::HAKO_ERROR_PEER_GONE,
            E::ExceedsMaxBorrowed(_) => HAKO_ERROR_MISUSE,
            E::TerminationRequest => hako_status::HAKO_ERROR_TERMINATED,
            _ => hako_status::HAKO_ERROR_CORRUPTED,
        }
    }
}

fn size_of_elem(d: &hako::PayloadDescription) -> Result<usize, Failure> {
    usize::try_from(d.size).map_err(|_| Failure::invalid("the payload size does not fit"))
}

/// Opens or creates (`mode`) the request/response service `name` with
/// requests of `request` and responses of `response`. `options` may be
/// NULL.
///
/// # Safety
/// `node` is a node handle; `name` and the types' names are
/// NUL-terminated; `options` is NULL or valid; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_reqres_service_open(
    node: *const hako_node,
    name: *const c_char,
    request: *const hako_payload_type,
    response: *const hako_payload_type,
    options: *const hako_reqres_options,
    mode: hako_open_mode,
    out: *mut *mut hako_reqres_service,
) -> hako_status {
    guard(|| {
        // SAFETY: a node handle (the caller's promise).
        let node = unsafe { get(node, "the node") }?;
        // SAFETY: NUL-terminated (the caller's promise).
        let name = unsafe { text(name, "the service name") }?;
        // SAFETY: valid types with NUL-terminated names (the caller's promise).
        let req = unsafe { details(get(request, "the request type")?, "the request type name") }?;
        // SAFETY: as above.
        let resp = unsafe {
            details(
                get(response, "the response type")?,
                "the response type name",
            )
        }?;
        // SAFETY: NULL or valid.
        let o = unsafe { options.as_ref() }.copied().unwrap_or_default();
        let mut b = node
            .node
            .service_builder(&name.try_into()?)
            .request_response::<[u8], [u8]>()
            .payload_types(req, resp);
        let set = |v: u32| (v != 0).then_some(v);
        if let Some(v) = set(o.max_clients) {
            b = b.max_clients(v);
        }
        if let Some(v) = set(o.max_servers) {
            b = b.max_servers(v);
        }
        if let Some(v) = set(o.max_nodes) {
            b = b.max_nodes(v);
        }
        if let Some(v) = set(o.max_requests_in_flight) {
            b = b.max_requests_in_flight(v);
        }
        if let Some(v) = set(o.max_response_buffer) {
            b = b.max_response_buffer(v);
        }
        let svc = match mode {
            hako_open_mode::HAKO_OPEN_OR_CREATE => b.open_or_create(),
            hako_open_mode::HAKO_CREATE => b.create(),
            hako_open_mode::HAKO_OPEN => b.open(),
        }?;
        let (req_size, resp_size) = (
            size_of_elem(svc.request_payload())?,
            size_of_elem(svc.response_payload())?,
        );
        let s = hako_reqres_service {
            svc,
            req_size,
            resp_size,
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, s) }
    })
}

/// Drops a request/response service handle and sets `*service` to NULL.
///
/// # Safety
/// `service` is NULL or points to NULL or a service handle.
#[no_mangle]
pub unsafe extern "C" fn hako_reqres_service_drop(
    service: *mut *mut hako_reqres_service,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(service, "the service") }.map(drop))
}

pub(super) fn strategy(o: &hako_port_options) -> hako::BackpressureStrategy {
    match o.backpressure {
        hako_backpressure::HAKO_BACKPRESSURE_BLOCK => hako::BackpressureStrategy::Block,
        hako_backpressure::HAKO_BACKPRESSURE_RETRY => hako::BackpressureStrategy::Retry(o.retries),
        hako_backpressure::HAKO_BACKPRESSURE_DISCARD => hako::BackpressureStrategy::Discard,
    }
}

pub(super) fn busy(what: &str) -> Failure {
    Failure::new(
        HAKO_ERROR_MISUSE,
        format!("{what} holds a live message: send or drop it first (it would leak)"),
    )
}
