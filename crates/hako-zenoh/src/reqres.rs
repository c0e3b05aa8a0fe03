//! A bridged request/response service, one way or the other:
//!
//! * **Serve** (this domain has servers of its own): a Zenoh queryable on
//!   the service's key takes each remote request, a local client of the
//!   bridge's sends it to a local server, and every response goes back as
//!   one reply to the query; the query ends with the response stream.
//! * **Forward** (only other domains have servers): a local server of the
//!   bridge's takes each request of a local client and sends it as a Zenoh
//!   query; every reply becomes one response, and the stream ends when the
//!   query does. A query that gets no reply within the query timeout (the
//!   remote host vanished, or nobody serves) ends with the stream aborted,
//!   so the client gets an error instead of a silent end.
//!
//! A domain with servers of its own never forwards: its clients have
//! servers here, and a bridge that did both could send a request round
//! in a circle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hako::{Client, PayloadDescription, ReqResQos, Server, ServiceName};
use zenoh::query::{ConsolidationMode, Query};
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::keys::is_end;
use crate::link::{from_domain, Ctx, LinkError, Refused, Worker, POLL};
use crate::open;
use crate::payload::{copy_in, copy_out, Shape};

/// Which way a request/response link carries requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Remote requests to local servers.
    Serve,
    /// Local requests to remote servers.
    Forward,
    /// Nothing to carry (no servers anywhere yet).
    Idle,
}

impl Mode {
    /// The mode for a service whose servers are here (`local_servers`) or
    /// elsewhere (`remote_servers`).
    pub(crate) fn of(local_servers: bool, remote_servers: bool) -> Self {
        if local_servers {
            Self::Serve
        } else if remote_servers {
            Self::Forward
        } else {
            Self::Idle
        }
    }
}

/// A request/response service carried one way.
pub(crate) struct ReqResLink {
    pub(crate) mode: Mode,
    _worker: Option<Worker>,
    _queryable: Option<zenoh::query::Queryable<()>>,
}

/// What the thread of a link moves bytes with.
#[derive(Clone, Copy)]
struct Shapes {
    request: Shape,
    response: Shape,
}

impl ReqResLink {
    /// Bridges service `name` in `mode` (made from the types and `qos` if
    /// `create` and it does not exist).
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        types: (&PayloadDescription, &PayloadDescription),
        qos: &ReqResQos,
        create: bool,
        mode: Mode,
        refused: &Refused,
    ) -> Result<Self, LinkError> {
        let service = open::reqres(&ctx.node, name, types, qos, create)?;
        tracing::debug!(service = %name, ?mode, create, "request/response link");
        let too_large = LinkError::Unsupported("payload too large");
        let shapes = Shapes {
            request: Shape::of(types.0).ok_or(too_large)?,
            response: Shape::of(types.1).ok_or(LinkError::Unsupported("payload too large"))?,
        };
        let label = name.as_str().to_owned();
        let key = ctx.keys.rpc(name.as_str());
        let thread_name = format!("rpc {label}");
        let (worker, queryable) = match mode {
            Mode::Idle => (None, None),
            Mode::Serve => {
                let client = service
                    .client_builder()
                    .max_slice_len(1 << 20)
                    .create()
                    .map_err(LinkError::port)?;
                let (tx, rx) = mpsc::channel::<Query>();
                let me = ctx.domain;
                let refused = refused.clone();
                let queryable = ctx
                    .session
                    .declare_queryable(key.clone())
                    .allowed_origin(Locality::Remote)
                    .callback(move |query| {
                        if crate::link::refused(query.attachment(), &refused) {
                            let _ = query
                                .reply_err(
                                    "this host's service differs from yours (see its bridge's log)",
                                )
                                .wait();
                        } else if !from_domain(query.attachment(), me) {
                            let _ = tx.send(query);
                        }
                    })
                    .wait()
                    .map_err(LinkError::zenoh)?;
                let att = (me.attachment(), me.end_attachment());
                let timeout = ctx.query_timeout;
                let w = Worker::spawn(thread_name, move |stop| {
                    serve_loop(&client, &rx, shapes, stop, att, timeout, &label)
                })?;
                (Some(w), Some(queryable))
            }
            Mode::Forward => {
                let server = service.server_builder().create().map_err(LinkError::port)?;
                let session = ctx.session.clone();
                let refused = refused.clone();
                let (att, timeout) = (ctx.domain.attachment(), ctx.query_timeout);
                let w = Worker::spawn(thread_name, move |stop| {
                    let f = Forward {
                        server: &server,
                        session: &session,
                        key: &key,
                        refused: &refused,
                    };
                    forward_loop(&f, shapes, stop, att, timeout, &label)
                })?;
                (Some(w), None)
            }
        };
        Ok(Self {
            mode,
            _worker: worker,
            _queryable: queryable,
        })
    }
}

/// Serve: takes remote queries and answers them through a local server.
fn serve_loop(
    client: &Client<[u8], [u8]>,
    queries: &mpsc::Receiver<Query>,
    shapes: Shapes,
    stop: &AtomicBool,
    att: ([u8; 8], [u8; 9]),
    timeout: Duration,
    name: &str,
) {
    while !stop.load(Ordering::Relaxed) {
        let query = match queries.recv_timeout(POLL) {
            Ok(q) => q,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        if let Err(e) = serve_one(client, &query, shapes, stop, att, timeout) {
            tracing::debug!(service = name, "a remote request failed: {e}");
            let _ = query.reply_err(e).wait();
        }
    }
}

/// Sends one remote request to a local server and replies with every
/// response; `Err` with what to tell the remote client.
fn serve_one(
    client: &Client<[u8], [u8]>,
    query: &Query,
    shapes: Shapes,
    stop: &AtomicBool,
    (att, end): ([u8; 8], [u8; 9]),
    timeout: Duration,
) -> Result<(), String> {
    let bytes = query.payload().map(|p| p.to_bytes()).unwrap_or_default();
    let elements = shapes.request.elements(bytes.len()).ok_or_else(|| {
        format!(
            "a request of {} bytes does not fit the request type",
            bytes.len()
        )
    })?;
    let mut loan = client
        .loan_slice_uninit(elements)
        .map_err(|e| format!("cannot send the request: {e}"))?;
    // SAFETY: the loan holds `elements` request elements, `bytes.len()`
    // bytes (checked above); `bytes` is Zenoh's buffer.
    unsafe { copy_in(loan.as_mut_ptr(), &bytes) };
    // SAFETY: every byte was written just above.
    let pending = unsafe { loan.assume_init() }
        .send()
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("the bridge is stopping".into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no end of the response stream within {timeout:?}"));
        }
        match pending.receive_timeout(left.min(POLL)) {
            Ok(Some(r)) => {
                // SAFETY: a response holds `len` elements of the response
                // size at `as_ptr` while it lives (checked at receive).
                let out = unsafe { copy_out(r.as_ptr(), r.len(), shapes.response) };
                drop(r);
                query
                    .reply(query.key_expr().clone(), out)
                    .attachment(att.to_vec())
                    .wait()
                    .map_err(|e| format!("cannot reply: {e}"))?;
            }
            Ok(None) if pending.is_finished() => {
                return query
                    .reply(query.key_expr().clone(), Vec::<u8>::new())
                    .attachment(end.to_vec())
                    .wait()
                    .map_err(|e| format!("cannot reply: {e}"));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("the local server failed: {e}")),
        }
    }
}

/// What a forwarding thread works with.
struct Forward<'a> {
    server: &'a Server<[u8], [u8]>,
    session: &'a zenoh::Session,
    key: &'a str,
    refused: &'a Refused,
}

/// Forward: takes local requests and sends each to the remote servers.
fn forward_loop(
    f: &Forward<'_>,
    shapes: Shapes,
    stop: &AtomicBool,
    att: [u8; 8],
    timeout: Duration,
    name: &str,
) {
    let (server, session, key) = (f.server, f.session, f.key);
    while !stop.load(Ordering::Relaxed) {
        let request = match server.receive_timeout(POLL) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(service = name, "local receive failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        // SAFETY: a request holds `len` elements of the request size at
        // `as_ptr` while it lives (checked at receive).
        let bytes = unsafe { copy_out(request.as_ptr(), request.len(), shapes.request) };
        if !request.expects_response() {
            let _ = session
                .get(key)
                .payload(bytes)
                .attachment(att.to_vec())
                .allowed_destination(Locality::Remote)
                .timeout(timeout)
                .wait();
            continue;
        }
        let replies = match session
            .get(key)
            .payload(bytes)
            .attachment(att.to_vec())
            .allowed_destination(Locality::Remote)
            .consolidation(ConsolidationMode::None)
            .timeout(timeout)
            .wait()
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(service = name, "cannot forward a request: {e}");
                request.abort();
                continue;
            }
        };
        let mut ended = false;
        while let Ok(reply) = replies.recv() {
            match reply.result() {
                Ok(sample) if crate::link::refused(sample.attachment(), f.refused) => {}
                Ok(sample) if sample.attachment().is_some_and(|a| is_end(&a.to_bytes())) => {
                    ended = true;
                }
                Ok(sample) => {
                    let bytes = sample.payload().to_bytes();
                    let Some(n) = shapes.response.elements(bytes.len()) else {
                        tracing::warn!(
                            service = name,
                            "dropped a remote response that does not fit the response type"
                        );
                        continue;
                    };
                    match request.loan_slice_uninit(n) {
                        Ok(mut loan) => {
                            // SAFETY: the loan holds `n` response elements,
                            // `bytes.len()` bytes; `bytes` is Zenoh's buffer.
                            unsafe { copy_in(loan.as_mut_ptr(), &bytes) };
                            // SAFETY: every byte was written just above.
                            if let Err(e) = unsafe { loan.assume_init() }.send() {
                                tracing::debug!(service = name, "cannot pass a response on: {e}");
                            }
                        }
                        Err(e) => tracing::debug!(service = name, "cannot pass a response on: {e}"),
                    }
                }
                Err(e) => {
                    let why = String::from_utf8_lossy(&e.payload().to_bytes()).into_owned();
                    tracing::debug!(service = name, "a remote server failed: {why}");
                }
            }
        }
        if !ended {
            // The stream did not come to its end in time (the serving
            // host vanished, or nobody serves): the client learns that
            // its request was given up on.
            request.abort();
        }
    }
}
