//! Forward: local requests to remote servers, many at once. Each request
//! the bridge's local server takes goes out as a Zenoh query at once;
//! Zenoh's callbacks post every reply, and the end of each query, to the
//! link's mailbox, and one thread waits for both sides (a waitset over the
//! server and the mailbox, or polling both with `--low-latency`), so a
//! long stream or a silent host holds up no other request. A query that
//! ends without the stream's end (the remote host vanished, or nobody
//! serves) aborts its request, so the client gets an error instead of a
//! silent end.
//!
//! The server's responses are as long as the longest the other domains'
//! servers send (their bridges say). A response longer than that (a
//! server that came later) cannot be passed on: its request is aborted,
//! so the client sees an error, the bridge logs a warning, and the server
//! is made anew with room for it once no request is in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hako::{ActiveRequest, ReqResService, Server};
use zenoh::query::{ConsolidationMode, Reply};
use zenoh::sample::Locality;
use zenoh::Wait;

use super::common::{grown, Idle, Shapes};
use crate::keys::is_end;
use crate::link::{Refused, Room, Said};
use crate::mailbox::{Mailbox, Post};
use crate::payload::{copy_in, copy_out};

/// What a forwarding thread works with.
pub(super) struct Forward<'a> {
    pub service: &'a ReqResService<[u8], [u8]>,
    pub session: &'a zenoh::Session,
    pub key: &'a str,
    pub refused: &'a Refused,
    pub shapes: Shapes,
    /// The attachment of every query (this domain's id).
    pub att: [u8; 8],
    /// How long a query may wait for the end of its replies.
    pub timeout: Duration,
    /// The longest responses other domains' servers send.
    pub room: &'a Room,
    /// Poll instead of sleeping (`--low-latency`).
    pub spin: bool,
    pub name: &'a str,
}

/// What Zenoh's callbacks post about the query of a request.
enum Event {
    Reply(Reply),
    /// Zenoh let go of the query: no reply comes after this.
    Over,
}

/// Posts [`Event::Over`] for query `id` when Zenoh drops the callback that
/// holds it, which it does once the query is over (all replies in, or
/// the timeout).
struct OnOver {
    id: u64,
    post: Post<(u64, Event)>,
}

impl Drop for OnOver {
    fn drop(&mut self) {
        self.post.send((self.id, Event::Over));
    }
}

/// A local request forwarded, its replies on their way.
struct Open<'s> {
    request: ActiveRequest<'s, [u8], [u8]>,
    /// The remote server ended the stream.
    ended: bool,
    /// A response could not be passed on: the request is aborted.
    failed: bool,
}

/// The queries of one forwarding thread, across the servers it makes.
struct Queries {
    post: Post<(u64, Event)>,
    mailbox: Mailbox<(u64, Event)>,
}

/// Takes local requests and sends each to the remote servers until
/// `stop`, through a server as roomy as the responses need.
pub(super) fn forward_loop(f: &Forward<'_>, stop: &AtomicBool) {
    let (post, mailbox) = match Mailbox::new() {
        Ok(m) => m,
        Err(e) => return tracing::error!(service = f.name, "cannot make a mailbox: {e}"),
    };
    let q = Queries { post, mailbox };
    let mut next_id = 0;
    let mut len = super::common::first_len(f.shapes.response, f.room.readers());
    let (mut made, mut refused) = (0, usize::MAX);
    let mut said = Said::default();
    while !stop.load(Ordering::Relaxed) {
        let server = f.service.server_builder().max_slice_len(len).create();
        let server = match server {
            Ok(s) => s,
            Err(e) => {
                said.warn(
                    f.name,
                    format!("cannot make a server of {len} elements: {e}"),
                );
                refused = len;
                if made == 0 {
                    std::thread::sleep(Duration::from_millis(500));
                } else {
                    len = made;
                }
                continue;
            }
        };
        made = made.max(len);
        said.clear();
        tracing::debug!(service = f.name, elements = len, "server made");
        match forward_with(f, &server, (len, refused), (&q, &mut next_id), stop) {
            Some(need) => len = need,
            None => return,
        }
    }
}

/// Forwards the requests of `server` (responses of up to `len` elements)
/// until `stop` (`None`) or until a response needs more room and no
/// request is in flight (`Some`: the length of the next server).
fn forward_with(
    f: &Forward<'_>,
    server: &Server<[u8], [u8]>,
    (len, refused): (usize, usize),
    (q, next_id): (&Queries, &mut u64),
    stop: &AtomicBool,
) -> Option<usize> {
    let mut idle = match Idle::new(f.spin, |w| {
        w.attach_server(server)?;
        w.attach_fd(q.mailbox.fd())
    }) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(service = f.name, "cannot wait: {e}");
            return None;
        }
    };
    let mut open: HashMap<u64, Open<'_>> = HashMap::new();
    // The longest response that did not fit (or that the other domains'
    // servers send).
    let mut need = 0;
    while !stop.load(Ordering::Relaxed) {
        for (id, event) in q.mailbox.take() {
            match event {
                Event::Reply(reply) => {
                    if let Some(o) = open.get_mut(&id) {
                        match pass_on(f, o, &reply, len) {
                            Some(n) if n < refused => need = need.max(n),
                            _ => {}
                        }
                    }
                }
                Event::Over => {
                    if let Some(o) = open.remove(&id) {
                        if !o.ended || o.failed {
                            o.request.abort();
                        }
                        // Else it drops: the stream's end.
                    }
                }
            }
        }
        // A request that failed ends now (its query may still run).
        let failed: Vec<u64> = open
            .iter()
            .filter(|(_, o)| o.failed)
            .map(|(&id, _)| id)
            .collect();
        for id in failed {
            if let Some(o) = open.remove(&id) {
                o.request.abort();
            }
        }
        let known = f.room.readers();
        if known > len && known < refused {
            need = need.max(known);
        }
        take_requests(f, server, (q, &mut *next_id), &mut open);
        // Made anew at the first moment no request is in flight (one that
        // comes meanwhile is given up on: its client sees it aborted).
        if need > len && open.is_empty() {
            while let Ok(Some(request)) = server.receive() {
                request.abort();
            }
            return Some(grown(need, f.room.readers(), refused));
        }
        idle.wait(None, f.name);
    }
    // Stopping: what is still open was given up on.
    for (_, o) in open.drain() {
        o.request.abort();
    }
    None
}

/// Sends every request the server holds on to the remote servers.
fn take_requests<'s>(
    f: &Forward<'_>,
    server: &'s Server<[u8], [u8]>,
    (q, next_id): (&Queries, &mut u64),
    open: &mut HashMap<u64, Open<'s>>,
) {
    loop {
        match server.receive() {
            Ok(Some(request)) => {
                tracing::trace!(service = f.name, "request taken");
                *next_id += 1;
                if let Some(o) = send(f, request, *next_id, &q.post) {
                    open.insert(*next_id, o);
                }
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(service = f.name, "local receive failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        }
    }
}

/// Sends a local request to the remote servers as query `id`, whose replies
/// `post` takes; the request to keep until they come (none for a request
/// that expects no response, or one that could not go out, aborted).
fn send<'s>(
    f: &Forward<'_>,
    request: ActiveRequest<'s, [u8], [u8]>,
    id: u64,
    post: &Post<(u64, Event)>,
) -> Option<Open<'s>> {
    // SAFETY: a request holds `len` elements of the request size at
    // `as_ptr` while it lives (checked at receive).
    let bytes = unsafe { copy_out(request.as_ptr(), request.len(), f.shapes.request) };
    let get = f
        .session
        .get(f.key)
        .payload(bytes)
        .attachment(f.att.to_vec())
        .allowed_destination(Locality::Remote)
        .timeout(f.timeout);
    if !request.expects_response() {
        let _ = get.callback(|_| {}).wait();
        return None;
    }
    let on_over = OnOver {
        id,
        post: post.clone(),
    };
    let sent = get
        .consolidation(ConsolidationMode::None)
        .callback(move |reply| on_over.post.send((on_over.id, Event::Reply(reply))))
        .wait();
    match sent {
        Ok(()) => Some(Open {
            request,
            ended: false,
            failed: false,
        }),
        Err(e) => {
            tracing::warn!(service = f.name, "cannot forward a request: {e}");
            request.abort();
            None
        }
    }
}

/// Passes one reply on to the local client as a response (or notes the
/// stream's end). A response that cannot be passed on fails the request
/// (the client sees it aborted); `Some` with its elements if it was
/// longer than the server's `len`.
fn pass_on(f: &Forward<'_>, o: &mut Open<'_>, reply: &Reply, len: usize) -> Option<usize> {
    let name = f.name;
    if o.failed {
        return None;
    }
    match reply.result() {
        Ok(sample) if crate::link::refused(sample.attachment(), f.refused) => None,
        Ok(sample) if sample.attachment().is_some_and(|a| is_end(&a.to_bytes())) => {
            o.ended = true;
            None
        }
        Ok(sample) => {
            let bytes = sample.payload().to_bytes();
            let Some(n) = f.shapes.response.elements(bytes.len()) else {
                tracing::warn!(
                    service = name,
                    bytes = bytes.len(),
                    "a remote response does not fit the response type: its request is aborted"
                );
                o.failed = true;
                return None;
            };
            if n > len {
                tracing::warn!(
                    service = name,
                    elements = n,
                    room = len,
                    "a remote response is longer than the bridge's server holds: its request is aborted, and the server is made anew with room for it"
                );
                o.failed = true;
                return Some(n);
            }
            match o.request.loan_slice_uninit(n) {
                Ok(mut loan) => {
                    // SAFETY: the loan holds `n` response elements,
                    // `bytes.len()` bytes; `bytes` is Zenoh's buffer.
                    unsafe { copy_in(loan.as_mut_ptr(), &bytes) };
                    // SAFETY: every byte was written just above.
                    if let Err(e) = unsafe { loan.assume_init() }.send() {
                        tracing::warn!(
                            service = name,
                            "cannot pass a response on: {e}; its request is aborted"
                        );
                        o.failed = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        service = name,
                        "cannot pass a response on: {e}; its request is aborted"
                    );
                    o.failed = true;
                }
            }
            None
        }
        Err(e) => {
            let why = String::from_utf8_lossy(&e.payload().to_bytes()).into_owned();
            tracing::warn!(service = name, "a remote server failed: {why}");
            None
        }
    }
}
