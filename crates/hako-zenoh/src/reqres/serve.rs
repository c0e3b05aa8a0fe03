//! Serve: remote requests to local servers, many at once. Each query the
//! queryable takes goes to a local server through the bridge's client as
//! soon as the client may have another request in flight; every response
//! goes back as one reply, and the query ends with the stream. One thread
//! waits for both sides at once (a waitset over the client and the
//! queryable's mailbox, or polling both with `--low-latency`), so a long
//! stream holds up no other request.
//!
//! The client's requests are as long as the longest the other domains'
//! clients send (their bridges say; the client is made anew when that
//! grows, at a moment no request is in flight or waiting), and grow as
//! longer ones come: a request that does not fit waits, with those behind
//! it, until the requests in flight are answered, and goes out through a
//! roomier client (lengths double, so this happens a few times at most).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hako::{Client, PendingResponse, ReqResService};
use zenoh::query::Query;
use zenoh::Wait;

use super::common::{grown, Idle, Shapes};
use crate::link::{Room, Said};
use crate::mailbox::Mailbox;
use crate::payload::{copy_in, copy_out};

/// What a serving thread works with.
pub(super) struct Serve<'a> {
    pub service: &'a ReqResService<[u8], [u8]>,
    pub queries: &'a Mailbox<Query>,
    pub shapes: Shapes,
    /// The attachments of a reply and of the last, empty one.
    pub att: ([u8; 8], [u8; 9]),
    /// How long a request may take to end its stream.
    pub timeout: Duration,
    /// Requests the client may have in flight at once.
    pub in_flight: usize,
    /// The longest requests other domains' clients send.
    pub room: &'a Room,
    /// Poll instead of sleeping (`--low-latency`).
    pub spin: bool,
    pub name: &'a str,
}

/// A remote request sent to a local server, its responses on their way.
struct Open<'c> {
    query: Query,
    pending: PendingResponse<'c, [u8], [u8]>,
    deadline: Instant,
}

/// Takes remote queries and answers them through local servers until
/// `stop`, with a client as roomy as the requests need.
pub(super) fn serve_loop(s: &Serve<'_>, stop: &AtomicBool) {
    let mut waiting = VecDeque::new();
    let mut len = super::common::first_len(s.shapes.request, s.room.writers());
    // The longest client made so far, and a length no client could be
    // made for.
    let (mut made, mut refused) = (0, usize::MAX);
    let mut said = Said::default();
    while !stop.load(Ordering::Relaxed) {
        let client = s.service.client_builder().max_slice_len(len).create();
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                said.warn(
                    s.name,
                    format!("cannot make a client of {len} elements: {e}"),
                );
                // What needs this room cannot go; the rest goes through a
                // client of the last length that worked.
                refused = len;
                let fits = |q: &Query| elements(s, q).is_ok_and(|n| n < refused);
                waiting.retain(|q| {
                    fits(q) || {
                        fail(
                            s,
                            q,
                            format!("the bridge cannot make room for this request: {e}"),
                        );
                        false
                    }
                });
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
        tracing::debug!(service = s.name, elements = len, "client made");
        match serve_with(s, &client, len, refused, &mut waiting, stop) {
            Some(need) => len = need,
            None => return,
        }
    }
}

/// Serves through `client` (requests of up to `len` elements) until
/// `stop` (`None`) or until a request needs more room and none is in
/// flight (`Some`: the length of the next client).
fn serve_with(
    s: &Serve<'_>,
    client: &Client<[u8], [u8]>,
    len: usize,
    refused: usize,
    waiting: &mut VecDeque<Query>,
    stop: &AtomicBool,
) -> Option<usize> {
    let mut idle = match Idle::new(s.spin, |w| {
        w.attach_client(client)?;
        w.attach_fd(s.queries.fd())
    }) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(service = s.name, "cannot wait: {e}");
            return None;
        }
    };
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut need = 0;
    while !stop.load(Ordering::Relaxed) {
        waiting.extend(s.queries.take());
        while need == 0 && open.len() < s.in_flight {
            let Some(query) = waiting.pop_front() else {
                break;
            };
            match elements(s, &query) {
                Err(why) => fail(s, &query, why),
                Ok(n) if n > len && n < refused => {
                    need = n;
                    waiting.push_front(query);
                }
                Ok(n) if n > len => fail(
                    s,
                    &query,
                    "the bridge cannot make room for this request".into(),
                ),
                Ok(n) => match send(client, &query, n)
                    .inspect(|_| tracing::trace!(service = s.name, "request sent"))
                {
                    Ok(pending) => open.push(Open {
                        query,
                        pending,
                        deadline: Instant::now() + s.timeout,
                    }),
                    Err(e) => fail(s, &query, e),
                },
            }
        }
        open.retain(|o| match answer(s, o) {
            Ok(ended) => !ended,
            Err(e) => {
                fail(s, &o.query, e);
                false
            }
        });
        // Room for a longer request, once none is in flight; room that
        // another domain's clients need, made while nothing waits.
        let known = s.room.writers();
        let idle_now = open.is_empty() && waiting.is_empty();
        if open.is_empty() && (need > 0 || (idle_now && known > len && known < refused)) {
            return Some(grown(need, known, refused));
        }
        let now = Instant::now();
        let next = open
            .iter()
            .map(|o| o.deadline.saturating_duration_since(now))
            .min();
        idle.wait(next, s.name);
    }
    for o in &open {
        fail(s, &o.query, "the bridge is stopping".into());
    }
    None
}

/// Tells the remote client that its request failed, and why.
fn fail(s: &Serve<'_>, query: &Query, why: String) {
    tracing::warn!(service = s.name, "a remote request failed: {why}");
    let _ = query.reply_err(why).wait();
}

/// The elements of a remote request; `Err` with what to tell the remote
/// client if its bytes do not make a request.
fn elements(s: &Serve<'_>, query: &Query) -> Result<usize, String> {
    let bytes = query.payload().map_or(0, |p| p.len());
    s.shapes
        .request
        .elements(bytes)
        .ok_or_else(|| format!("a request of {bytes} bytes does not fit the request type"))
}

/// Sends a remote request of `elements` elements to a local server; `Err`
/// with what to tell the remote client.
fn send<'c>(
    client: &'c Client<[u8], [u8]>,
    query: &Query,
    elements: usize,
) -> Result<PendingResponse<'c, [u8], [u8]>, String> {
    let bytes = query.payload().map(|p| p.to_bytes()).unwrap_or_default();
    let mut loan = client
        .loan_slice_uninit(elements)
        .map_err(|e| format!("cannot send the request: {e}"))?;
    // SAFETY: the loan holds `elements` request elements, `bytes.len()`
    // bytes (`elements` checked it); `bytes` is Zenoh's buffer.
    unsafe { copy_in(loan.as_mut_ptr(), &bytes) };
    // SAFETY: every byte was written just above.
    unsafe { loan.assume_init() }
        .send()
        .map_err(|e| format!("cannot send the request: {e}"))
}

/// Replies with every response that came; `Ok(true)` once the stream
/// ended (and the query with it).
fn answer(s: &Serve<'_>, o: &Open<'_>) -> Result<bool, String> {
    let (att, end) = s.att;
    loop {
        match o.pending.receive() {
            Ok(Some(r)) => {
                // SAFETY: a response holds `len` elements of the response
                // size at `as_ptr` while it lives (checked at receive).
                let out = unsafe { copy_out(r.as_ptr(), r.len(), s.shapes.response) };
                drop(r);
                o.query
                    .reply(o.query.key_expr().clone(), out)
                    .attachment(att.to_vec())
                    .wait()
                    .map_err(|e| format!("cannot reply: {e}"))?;
            }
            Ok(None) if o.pending.is_finished() => {
                o.query
                    .reply(o.query.key_expr().clone(), Vec::<u8>::new())
                    .attachment(end.to_vec())
                    .wait()
                    .map_err(|e| format!("cannot reply: {e}"))?;
                return Ok(true);
            }
            Ok(None) if Instant::now() >= o.deadline => {
                return Err(format!(
                    "no end of the response stream within {:?}",
                    s.timeout
                ));
            }
            Ok(None) => return Ok(false),
            Err(e) => return Err(format!("the local server failed: {e}")),
        }
    }
}
