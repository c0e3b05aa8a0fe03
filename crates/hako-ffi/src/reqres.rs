//! Request/response: services, clients with their pending responses,
//! servers with their active requests. Loans and received responses are
//! caller-owned structs, as samples are (see `sample.rs`); pending
//! responses and active requests are handles, tied to their port: a
//! client or server with some still live refuses to drop
//! (`HAKO_ERROR_MISUSE`).

use std::ffi::{c_char, c_void};
use std::mem::{align_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hako::{
    ActiveRequest, Client, PendingResponse, ReqResService, RequestMutUninit, Response,
    ResponseMutUninit, Server, TypeDetails,
};

use crate::error::{guard, hako_status, Failure, ToFailure, HAKO_ERROR_MISUSE};
use crate::handle::{get, get_mut, give, put, take, text};
use crate::node::{hako_node, hako_open_mode, hako_wait_strategy, HAKO_FOREVER};
use crate::pubsub::{hako_backpressure, hako_payload_type};
use crate::sample::{load, load_at, store, store_at, LIVE, TAG, VALUE_WORDS};

type Req<'c> = RequestMutUninit<'c, [u8], [u8]>;

/// Layout of a `hako_message_mut`'s `_private`: the loan in the first
/// `M_VALUE` words, its port in `M_OWNER`, the live mark in `M_TAG`, a
/// request's client in `M_CLIENT`.
const M_VALUE: usize = 8;
const M_OWNER: usize = 8;
const M_TAG: usize = 9;
const M_CLIENT: usize = 10;

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
    svc: ReqResService<[u8], [u8]>,
    req_size: usize,
    resp_size: usize,
}

/// A client. Owning handle; one thread at a time, with its pending
/// responses.
pub struct hako_client {
    client: Client<[u8], [u8]>,
    req_size: usize,
    resp_size: usize,
    /// Loans and pending responses that borrow it.
    live: AtomicUsize,
}

/// A server. Owning handle; one thread at a time, with its active
/// requests.
pub struct hako_server {
    server: Server<[u8], [u8]>,
    req_size: usize,
    resp_size: usize,
    /// Active requests that borrow it.
    live: AtomicUsize,
}

/// A request sent and its responses to come. Owning handle, used from its
/// client's thread; drop it before its client.
pub struct hako_pending {
    pending: PendingResponse<'static, [u8], [u8]>,
    client: *const hako_client,
}

/// A request a server received, to answer. Owning handle, used from its
/// server's thread; dropping it ends the response stream.
pub struct hako_active_request {
    active: ActiveRequest<'static, [u8], [u8]>,
    server: *const hako_server,
    id: u64,
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
const REQUEST_MARK: u64 = 1 << 63;

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
            E::ServerGone | E::ServersGone(_) => hako_status::HAKO_ERROR_PEER_GONE,
            E::ExceedsMaxBorrowed(_) => HAKO_ERROR_MISUSE,
            _ => hako_status::HAKO_ERROR_CORRUPTED,
        }
    }
}

/// `t` as a Rust process's type describes itself.
///
/// # Safety
/// `t.type_name` is NUL-terminated.
unsafe fn details(t: &hako_payload_type, what: &str) -> Result<TypeDetails, Failure> {
    // SAFETY: the caller's promise.
    let element = unsafe { text(t.type_name, what) }?;
    Ok(TypeDetails {
        type_name: if t.slice {
            format!("[{element}]")
        } else {
            element.to_owned()
        },
        size: t.size,
        align: t.align,
        slice: t.slice,
    })
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

fn strategy(o: &hako_port_options) -> hako::BackpressureStrategy {
    match o.backpressure {
        hako_backpressure::HAKO_BACKPRESSURE_BLOCK => hako::BackpressureStrategy::Block,
        hako_backpressure::HAKO_BACKPRESSURE_RETRY => hako::BackpressureStrategy::Retry(o.retries),
        hako_backpressure::HAKO_BACKPRESSURE_DISCARD => hako::BackpressureStrategy::Discard,
    }
}

/// Creates a client. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_create(
    service: *const hako_reqres_service,
    options: *const hako_port_options,
    out: *mut *mut hako_client,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get(service, "the service") }?;
        let mut b = s.svc.client_builder();
        // SAFETY: NULL or valid.
        if let Some(o) = unsafe { options.as_ref() } {
            if o.max_slice_len != 0 {
                b = b.max_slice_len(o.max_slice_len);
            }
            if o.max_loans != 0 {
                b = b.max_loaned_requests(o.max_loans);
            }
            b = b.backpressure(strategy(o)).wait_strategy(o.wait.into());
        }
        let c = hako_client {
            client: b.create()?,
            req_size: s.req_size,
            resp_size: s.resp_size,
            live: AtomicUsize::new(0),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, c) }
    })
}

/// Drops a client and sets `*client` to NULL; refused
/// (`HAKO_ERROR_MISUSE`) while loans or pending responses of it live.
///
/// # Safety
/// `client` is NULL or points to NULL or a client handle.
#[no_mangle]
pub unsafe extern "C" fn hako_client_drop(client: *mut *mut hako_client) -> hako_status {
    guard(|| {
        // SAFETY: NULL or a readable slot (the caller's promise).
        if let Some(c) = unsafe { client.as_ref().and_then(|p| p.as_ref()) } {
            // Relaxed: the counter is the client's own thread's.
            let n = c.live.load(Ordering::Relaxed);
            if n > 0 {
                return Err(Failure::new(
                    HAKO_ERROR_MISUSE,
                    format!("{n} loans or pending responses of this client live: drop them first"),
                ));
            }
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { take(client, "the client") }.map(drop)
    })
}

fn busy(what: &str) -> Failure {
    Failure::new(
        HAKO_ERROR_MISUSE,
        format!("{what} holds a live message: send or drop it first (it would leak)"),
    )
}

/// Loans a request of `len` elements (1 unless requests are slices) into
/// `*out`, which must not hold a live message.
///
/// # Safety
/// `client` is a client handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_loan(
    client: *mut hako_client,
    len: usize,
    out: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let c: &'static hako_client = unsafe { get(client, "the client") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[M_TAG] == LIVE {
            return Err(busy("the out message"));
        }
        // The loan borrows the client; the client refuses to drop while it
        // lives (`live`), which is what 'static stands for here.
        let mut loan: Req<'static> = c.client.loan_slice_uninit(len)?;
        out.data = loan.as_mut_ptr().cast();
        out.len = len;
        out.size = len * c.req_size;
        out._private[M_OWNER] = c.client.id() | REQUEST_MARK;
        out._private[M_CLIENT] = c as *const hako_client as u64;
        store_at(&mut out._private, M_VALUE, M_TAG, loan);
        // Relaxed: the client's own thread's counter.
        c.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// Sends a loaned request through the client that loaned it, marks it
/// consumed, and gives the pending response in `*pending`.
///
/// # Safety
/// `client` is a client handle; `request` was filled by
/// `hako_client_loan`; `pending` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_send(
    client: *mut hako_client,
    request: *mut hako_message_mut,
    pending: *mut *mut hako_pending,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let c: &'static hako_client = unsafe { get(client, "the client") }?;
        // SAFETY: as above.
        let m = unsafe { get_mut(request, "the request") }?;
        if pending.is_null() {
            return Err(Failure::null("the pending pointer"));
        }
        if m._private[M_TAG] != LIVE {
            return Err(Failure::null("the request"));
        }
        if m._private[M_OWNER] != c.client.id() | REQUEST_MARK {
            return Err(Failure::new(
                HAKO_ERROR_MISUSE,
                "the request was loaned by another client (or is a response)",
            ));
        }
        // SAFETY: live request words hold a request loan (hako_client_loan).
        let loan = unsafe { load_at::<Req<'static>>(&mut m._private, M_VALUE, M_TAG) }
            .ok_or_else(|| Failure::null("the request"))?;
        m.data = std::ptr::null_mut();
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        let sent = unsafe { loan.assume_init() }.send();
        let p = match sent {
            Ok(p) => p,
            Err(e) => {
                // The loan is gone (given back by send).
                // Relaxed: the client's own thread's counter.
                c.live.fetch_sub(1, Ordering::Relaxed);
                return Err(e.into());
            }
        };
        // The loan's count passes to the pending response.
        let h = hako_pending {
            pending: p,
            client: c,
        };
        // SAFETY: writable, checked above.
        unsafe { give(pending, h) }
    })
}

/// Gives a loaned request or response back unsent and marks it consumed.
///
/// # Safety
/// `message` is NULL or was filled by `hako_client_loan` or
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_message_mut_drop(message: *mut hako_message_mut) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let m = unsafe { get_mut(message, "the message") }?;
        if m._private[M_TAG] != LIVE {
            return Err(Failure::null("the message"));
        }
        if m._private[M_OWNER] & REQUEST_MARK != 0 {
            let client = m._private[M_CLIENT] as *const hako_client;
            // SAFETY: live request words hold a request loan.
            let loan = unsafe { load_at::<Req<'static>>(&mut m._private, M_VALUE, M_TAG) };
            drop(loan);
            // SAFETY: the loan's client, which refuses to drop while the
            // loan lived (its count).
            if let Some(c) = unsafe { client.as_ref() } {
                // Relaxed: the client's own thread's counter.
                c.live.fetch_sub(1, Ordering::Relaxed);
            }
        } else {
            // SAFETY: live response words hold a response loan.
            drop(unsafe { load_at::<ResponseMutUninit<[u8]>>(&mut m._private, M_VALUE, M_TAG) });
        }
        m.data = std::ptr::null_mut();
        Ok(())
    })
}

/// Takes the next response to `pending` into `*out` (which must not hold a
/// live one): at once (`timeout_us` 0), waiting up to `timeout_us`
/// microseconds, or until one comes or the stream ends (`HAKO_FOREVER`).
/// `out->data` is NULL if none came; then `*ended` (may be NULL) tells
/// whether the stream has ended. `HAKO_ERROR_PEER_GONE` when the server
/// went without ending it.
///
/// # Safety
/// `pending` is a pending response handle; `out` is writable; `ended` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_pending_receive(
    pending: *mut hako_pending,
    timeout_us: u64,
    out: *mut hako_response,
    ended: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get_mut(pending, "the pending response") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[TAG] == LIVE {
            return Err(busy("the out response"));
        }
        let got = match timeout_us {
            0 => p.pending.receive()?,
            HAKO_FOREVER => p.pending.blocking_receive()?,
            us => p.pending.receive_timeout(Duration::from_micros(us))?,
        };
        // SAFETY: the pending response's client, alive while it is.
        let resp_size = unsafe { (*p.client).resp_size };
        match got {
            Some(r) => {
                out.data = r.as_ptr().cast();
                out.len = r.len();
                out.size = out.len * resp_size;
                out.server_id = r.server_id();
                store(&mut out._private, r);
                // SAFETY: NULL or writable.
                unsafe { put(ended, false) };
            }
            None => {
                out.data = std::ptr::null();
                out.size = 0;
                out.len = 0;
                out.server_id = 0;
                out._private[TAG] = 0;
                // SAFETY: NULL or writable.
                unsafe { put(ended, p.pending.is_finished()) };
            }
        }
        Ok(())
    })
}

/// Gives a received response back and marks it consumed.
///
/// # Safety
/// `response` is NULL or was filled by `hako_pending_receive`.
#[no_mangle]
pub unsafe extern "C" fn hako_response_drop(response: *mut hako_response) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let r = unsafe { get_mut(response, "the response") }?;
        // SAFETY: live response words hold a Response.
        let v = unsafe { load::<Response<[u8]>>(&mut r._private) }
            .ok_or_else(|| Failure::null("the response"))?;
        r.data = std::ptr::null();
        drop(v);
        Ok(())
    })
}

/// Drops a pending response and sets `*pending` to NULL: responses still
/// on their way go back to the server unread.
///
/// # Safety
/// `pending` is NULL or points to NULL or a pending response handle.
#[no_mangle]
pub unsafe extern "C" fn hako_pending_drop(pending: *mut *mut hako_pending) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let p = unsafe { take(pending, "the pending response") }?;
        let client = p.client;
        drop(p);
        // SAFETY: its client, which refuses to drop while this lived.
        if let Some(c) = unsafe { client.as_ref() } {
            // Relaxed: the client's own thread's counter.
            c.live.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

/// Creates a server. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_server_create(
    service: *const hako_reqres_service,
    options: *const hako_port_options,
    out: *mut *mut hako_server,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get(service, "the service") }?;
        let mut b = s.svc.server_builder();
        // SAFETY: NULL or valid.
        if let Some(o) = unsafe { options.as_ref() } {
            if o.max_slice_len != 0 {
                b = b.max_slice_len(o.max_slice_len);
            }
            if o.max_loans != 0 {
                b = b.max_loaned_responses(o.max_loans);
            }
            b = b.backpressure(strategy(o)).wait_strategy(o.wait.into());
        }
        let h = hako_server {
            server: b.create()?,
            req_size: s.req_size,
            resp_size: s.resp_size,
            live: AtomicUsize::new(0),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, h) }
    })
}

/// Drops a server and sets `*server` to NULL; refused
/// (`HAKO_ERROR_MISUSE`) while active requests of it live.
///
/// # Safety
/// `server` is NULL or points to NULL or a server handle.
#[no_mangle]
pub unsafe extern "C" fn hako_server_drop(server: *mut *mut hako_server) -> hako_status {
    guard(|| {
        // SAFETY: NULL or a readable slot (the caller's promise).
        if let Some(s) = unsafe { server.as_ref().and_then(|p| p.as_ref()) } {
            // Relaxed: the server's own thread's counter.
            let n = s.live.load(Ordering::Relaxed);
            if n > 0 {
                return Err(Failure::new(
                    HAKO_ERROR_MISUSE,
                    format!("{n} active requests of this server live: drop them first"),
                ));
            }
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { take(server, "the server") }.map(drop)
    })
}

/// Takes the next request: at once (`timeout_us` 0), waiting up to
/// `timeout_us` microseconds, or until one comes (`HAKO_FOREVER`).
/// `*out` is the active request, or NULL if none came in time.
///
/// # Safety
/// `server` is a server handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_server_receive(
    server: *mut hako_server,
    timeout_us: u64,
    out: *mut *mut hako_active_request,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s: &'static hako_server = unsafe { get(server, "the server") }?;
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // The request borrows the server, which refuses to drop while it
        // lives (`live`): what 'static stands for here.
        let got = match timeout_us {
            0 => s.server.receive()?,
            HAKO_FOREVER => Some(s.server.blocking_receive()?),
            us => s.server.receive_timeout(Duration::from_micros(us))?,
        };
        match got {
            Some(active) => {
                // Relaxed: the server's own thread's counter.
                s.live.fetch_add(1, Ordering::Relaxed);
                let a = hako_active_request {
                    active,
                    server: s,
                    id: ACTIVE_IDS.fetch_add(1, Ordering::Relaxed),
                };
                // SAFETY: writable.
                unsafe { give(out, a) }
            }
            None => {
                // SAFETY: writable.
                unsafe { put(out, std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// Ids of active request handles, to tell whose loan a response is.
static ACTIVE_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The request's payload (in the client's shared memory); NULL for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_data(
    request: *const hako_active_request,
) -> *const c_void {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { request.as_ref() }.map_or(std::ptr::null(), |a| a.active.as_ptr().cast())
}

/// The request's payload size in bytes; 0 for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_size(request: *const hako_active_request) -> usize {
    // SAFETY: NULL or live; its server outlives it.
    unsafe { request.as_ref() }.map_or(0, |a| a.active.len() * unsafe { (*a.server).req_size })
}

/// The id of the client that sent the request; 0 for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_client_id(request: *const hako_active_request) -> u64 {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { request.as_ref() }.map_or(0, |a| a.active.client_id())
}

/// Loans a response of `len` elements (1 unless responses are slices) to
/// this request into `*out`, which must not hold a live message.
///
/// # Safety
/// `request` is an active request handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_loan(
    request: *mut hako_active_request,
    len: usize,
    out: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let a = unsafe { get(request, "the request") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[M_TAG] == LIVE {
            return Err(busy("the out message"));
        }
        let mut loan = a.active.loan_slice_uninit(len)?;
        out.data = loan.as_mut_ptr().cast();
        out.len = len;
        // SAFETY: its server outlives it.
        out.size = len * unsafe { (*a.server).resp_size };
        out._private[M_OWNER] = a.id;
        store_at(&mut out._private, M_VALUE, M_TAG, loan);
        Ok(())
    })
}

/// Takes a live response loan of request `a` out of `m`.
fn response_of(
    a: &hako_active_request,
    m: &mut hako_message_mut,
) -> Result<ResponseMutUninit<[u8]>, Failure> {
    if m._private[M_TAG] != LIVE {
        return Err(Failure::null("the response"));
    }
    if m._private[M_OWNER] != a.id {
        return Err(Failure::new(
            HAKO_ERROR_MISUSE,
            "the response was loaned for another request (or is a request)",
        ));
    }
    // SAFETY: live words of this request's loan hold a response loan.
    let loan = unsafe { load_at::<ResponseMutUninit<[u8]>>(&mut m._private, M_VALUE, M_TAG) }
        .ok_or_else(|| Failure::null("the response"))?;
    m.data = std::ptr::null_mut();
    Ok(loan)
}

/// Sends a response loaned for this request, and marks it consumed; the
/// stream goes on.
///
/// # Safety
/// `request` is an active request handle; `response` was filled by
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_send(
    request: *mut hako_active_request,
    response: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let a = unsafe { get(request, "the request") }?;
        // SAFETY: as above.
        let m = unsafe { get_mut(response, "the response") }?;
        let loan = response_of(a, m)?;
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        unsafe { loan.assume_init() }.send()?;
        Ok(())
    })
}

/// Sends a response loaned for this request as the last of its stream (the
/// response and the end in one message), marks it consumed, and drops the
/// request (`*request` becomes NULL).
///
/// # Safety
/// `request` points to an active request handle; `response` was filled by
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_send_last(
    request: *mut *mut hako_active_request,
    response: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        if request.is_null() {
            return Err(Failure::null("the request"));
        }
        // SAFETY: a readable slot holding NULL or a live handle.
        let a = unsafe { get(*request, "the request") }?;
        // SAFETY: the caller's promise.
        let m = unsafe { get_mut(response, "the response") }?;
        let loan = response_of(a, m)?;
        // SAFETY: checked live above.
        let a = unsafe { take(request, "the request") }?;
        let server = a.server;
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        let sent = a.active.send_last(unsafe { loan.assume_init() });
        // SAFETY: its server, which refuses to drop while this lived.
        unsafe { (*server).live.fetch_sub(1, Ordering::Relaxed) };
        sent?;
        Ok(())
    })
}

/// Drops an active request and sets `*request` to NULL: its stream ends
/// (the client's pending response sees the end).
///
/// # Safety
/// `request` is NULL or points to NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_drop(
    request: *mut *mut hako_active_request,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { take(request, "the request") }?;
        let server = a.server;
        drop(a);
        // SAFETY: its server, which refuses to drop while this lived.
        unsafe { (*server).live.fetch_sub(1, Ordering::Relaxed) };
        Ok(())
    })
}
