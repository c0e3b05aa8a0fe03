//! Serve: remote requests to local servers, many at once. Each query the
//! queryable takes goes to a local server through the bridge's client as
//! soon as the client may have another request in flight; every response
//! goes back as one reply, and the query ends with the stream. One thread
//! waits for both sides at once (a waitset over the client and the
//! queryable's mailbox), so a long stream holds up no other request.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hako::{Client, PendingResponse, WaitSet};
use zenoh::query::Query;
use zenoh::Wait;

use super::Shapes;
use crate::link::POLL;
use crate::mailbox::Mailbox;
use crate::payload::{copy_in, copy_out};

/// What a serving thread works with.
pub(super) struct Serve<'a> {
    pub client: &'a Client<[u8], [u8]>,
    pub queries: &'a Mailbox<Query>,
    pub shapes: Shapes,
    /// The attachments of a reply and of the last, empty one.
    pub att: ([u8; 8], [u8; 9]),
    /// How long a request may take to end its stream.
    pub timeout: Duration,
    /// Requests the client may have in flight at once.
    pub in_flight: usize,
    pub name: &'a str,
}

/// A remote request sent to a local server, its responses on their way.
struct Open<'c> {
    query: Query,
    pending: PendingResponse<'c, [u8], [u8]>,
    deadline: Instant,
}

/// Takes remote queries and answers them through local servers until
/// `stop`.
pub(super) fn serve_loop(s: &Serve<'_>, stop: &AtomicBool) {
    let mut waitset = match WaitSet::without_signal_handling() {
        Ok(w) => w,
        Err(e) => return tracing::error!(service = s.name, "cannot wait: {e}"),
    };
    let attached = waitset
        .attach_client(s.client)
        .and_then(|_| waitset.attach_fd(s.queries.fd()));
    if let Err(e) = attached {
        return tracing::error!(service = s.name, "cannot wait: {e}");
    }
    let mut waiting = VecDeque::new();
    let mut open: Vec<Open<'_>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        waiting.extend(s.queries.take());
        while open.len() < s.in_flight {
            let Some(query) = waiting.pop_front() else {
                break;
            };
            match send(s, &query) {
                Ok(pending) => open.push(Open {
                    query,
                    pending,
                    deadline: Instant::now() + s.timeout,
                }),
                Err(e) => fail(s, &query, e),
            }
        }
        open.retain(|o| match answer(s, o) {
            Ok(ended) => !ended,
            Err(e) => {
                fail(s, &o.query, e);
                false
            }
        });
        let now = Instant::now();
        let next = open
            .iter()
            .map(|o| o.deadline.saturating_duration_since(now));
        let wait = next.min().map_or(POLL, |d| d.min(POLL));
        if let Err(e) = waitset.wait_and_process_timeout(|_| {}, wait) {
            tracing::warn!(service = s.name, "cannot wait: {e}");
            std::thread::sleep(POLL);
        }
    }
    for o in &open {
        fail(s, &o.query, "the bridge is stopping".into());
    }
}

/// Tells the remote client that its request failed, and why.
fn fail(s: &Serve<'_>, query: &Query, why: String) {
    tracing::debug!(service = s.name, "a remote request failed: {why}");
    let _ = query.reply_err(why).wait();
}

/// Sends a remote request to a local server; `Err` with what to tell the
/// remote client.
fn send<'c>(s: &Serve<'c>, query: &Query) -> Result<PendingResponse<'c, [u8], [u8]>, String> {
    let bytes = query.payload().map(|p| p.to_bytes()).unwrap_or_default();
    let elements = s.shapes.request.elements(bytes.len()).ok_or_else(|| {
        format!(
            "a request of {} bytes does not fit the request type",
            bytes.len()
        )
    })?;
    let mut loan = s
        .client
        .loan_slice_uninit(elements)
        .map_err(|e| format!("cannot send the request: {e}"))?;
    // SAFETY: the loan holds `elements` request elements, `bytes.len()`
    // bytes (checked above); `bytes` is Zenoh's buffer.
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
