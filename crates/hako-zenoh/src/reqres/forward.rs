//! Forward: local requests to remote servers, many at once. Each request
//! the bridge's local server takes goes out as a Zenoh query at once;
//! Zenoh's callbacks post every reply, and the end of each query, to the
//! link's mailbox, and one thread waits for both sides (a waitset over the
//! server and the mailbox), so a long stream or a silent host holds up no
//! other request. A query that ends without the stream's end (the remote
//! host vanished, or nobody serves) aborts its request, so the client gets
//! an error instead of a silent end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hako::{ActiveRequest, Server, WaitSet};
use zenoh::query::{ConsolidationMode, Reply};
use zenoh::sample::Locality;
use zenoh::Wait;

use super::Shapes;
use crate::keys::is_end;
use crate::link::{Refused, POLL};
use crate::mailbox::{Mailbox, Post};
use crate::payload::{copy_in, copy_out};

/// What a forwarding thread works with.
pub(super) struct Forward<'a> {
    pub server: &'a Server<[u8], [u8]>,
    pub session: &'a zenoh::Session,
    pub key: &'a str,
    pub refused: &'a Refused,
    pub shapes: Shapes,
    /// The attachment of every query (this domain's id).
    pub att: [u8; 8],
    /// How long a query may wait for the end of its replies.
    pub timeout: Duration,
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
}

/// Takes local requests and sends each to the remote servers until
/// `stop`.
pub(super) fn forward_loop(f: &Forward<'_>, stop: &AtomicBool) {
    let (post, mailbox) = match Mailbox::new() {
        Ok(m) => m,
        Err(e) => return tracing::error!(service = f.name, "cannot make a mailbox: {e}"),
    };
    let mut waitset = match WaitSet::without_signal_handling() {
        Ok(w) => w,
        Err(e) => return tracing::error!(service = f.name, "cannot wait: {e}"),
    };
    let attached = waitset
        .attach_server(f.server)
        .and_then(|_| waitset.attach_fd(mailbox.fd()));
    if let Err(e) = attached {
        return tracing::error!(service = f.name, "cannot wait: {e}");
    }
    let mut open: HashMap<u64, Open<'_>> = HashMap::new();
    let mut next_id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for (id, event) in mailbox.take() {
            match event {
                Event::Reply(reply) => {
                    if let Some(o) = open.get_mut(&id) {
                        pass_on(f, o, &reply);
                    }
                }
                Event::Over => {
                    if let Some(o) = open.remove(&id) {
                        if !o.ended {
                            o.request.abort();
                        }
                        // Else it drops: the stream's end.
                    }
                }
            }
        }
        loop {
            match f.server.receive() {
                Ok(Some(request)) => {
                    next_id += 1;
                    if let Some(o) = send(f, request, next_id, &post) {
                        open.insert(next_id, o);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(service = f.name, "local receive failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                    break;
                }
            }
        }
        if let Err(e) = waitset.wait_and_process_timeout(|_| {}, POLL) {
            tracing::warn!(service = f.name, "cannot wait: {e}");
            std::thread::sleep(POLL);
        }
    }
    // Stopping: what is still open was given up on.
    for (_, o) in open.drain() {
        o.request.abort();
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
        }),
        Err(e) => {
            tracing::warn!(service = f.name, "cannot forward a request: {e}");
            request.abort();
            None
        }
    }
}

/// Passes one reply on to the local client as a response (or notes the
/// stream's end).
fn pass_on(f: &Forward<'_>, o: &mut Open<'_>, reply: &Reply) {
    let name = f.name;
    match reply.result() {
        Ok(sample) if crate::link::refused(sample.attachment(), f.refused) => {}
        Ok(sample) if sample.attachment().is_some_and(|a| is_end(&a.to_bytes())) => {
            o.ended = true;
        }
        Ok(sample) => {
            let bytes = sample.payload().to_bytes();
            let Some(n) = f.shapes.response.elements(bytes.len()) else {
                tracing::warn!(
                    service = name,
                    "dropped a remote response that does not fit the response type"
                );
                return;
            };
            match o.request.loan_slice_uninit(n) {
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
