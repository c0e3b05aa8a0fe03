//! A bridged request/response service, one way or the other:
//!
//! * **Serve** (this domain has servers of its own): a Zenoh queryable on
//!   the service's key takes each remote request, a local client of the
//!   bridge's sends it to a local server, and every response goes back as
//!   one reply to the query; the query ends with the response stream
//!   (`serve.rs`).
//! * **Forward** (only other domains have servers): a local server of the
//!   bridge's takes each request of a local client and sends it as a Zenoh
//!   query; every reply becomes one response, and the stream ends when the
//!   query does. A query that gets no reply within the query timeout (the
//!   remote host vanished, or nobody serves) ends with the stream aborted,
//!   so the client gets an error instead of a silent end (`forward.rs`).
//!
//! Either way requests are carried concurrently, as many as the service
//! lets a client have in flight: a long stream or a silent host delays no
//! other request.
//!
//! A domain with servers of its own never forwards: its clients have
//! servers here, and a bridge that did both could send a request round
//! in a circle.

mod forward;
mod serve;

use std::time::Duration;

use hako::{PayloadDescription, ReqResQos, ServiceName, WaitSet, WaitSetError};
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::link::{from_domain, Ctx, LinkError, Shared, Worker, POLL};
use crate::mailbox::Mailbox;
use crate::open;
use crate::payload::Shape;

/// Bytes of room the bridge's client (requests) or server (responses)
/// starts with, for a slice type: more if other domains' ports send more.
const FIRST_SLICE_BYTES: usize = 4096;

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
pub(crate) struct Shapes {
    request: Shape,
    response: Shape,
}

/// Elements of the first port for messages of `shape`: a few KiB worth of
/// a slice, or `known` (what other domains send) if more; 1 for a type
/// that is no slice.
fn first_len(shape: Shape, known: usize) -> usize {
    if shape.slice {
        (FIRST_SLICE_BYTES / shape.size.max(1)).max(known).max(1)
    } else {
        1
    }
}

/// Elements of a port made anew for a message of `need` elements, when
/// other domains send up to `known` and no port could be made for
/// `refused`: the next power of two, if it stays below `refused`.
fn grown(need: usize, known: usize, refused: usize) -> usize {
    let n = need.max(known);
    match n.checked_next_power_of_two() {
        Some(p) if p < refused => p,
        _ => n,
    }
}

/// How a link's thread waits for either side: a waitset over its port and
/// its mailbox (asleep until one has something), or, with `--low-latency`,
/// a yield of the CPU before the next look at both.
enum Idle<'a> {
    Sleep(WaitSet<'a>),
    Spin,
}

impl<'a> Idle<'a> {
    /// Sleeping on what `attach` attaches, or spinning.
    fn new(
        spin: bool,
        attach: impl FnOnce(&mut WaitSet<'a>) -> Result<hako::AttachmentId, WaitSetError>,
    ) -> Result<Self, WaitSetError> {
        if spin {
            return Ok(Self::Spin);
        }
        let mut w = WaitSet::without_signal_handling()?;
        attach(&mut w)?;
        Ok(Self::Sleep(w))
    }

    /// Waits until something may have come, `timeout` (at most [`POLL`])
    /// passed, or, spinning, a moment.
    fn wait(&mut self, timeout: Option<Duration>, name: &str) {
        match self {
            Self::Spin => std::thread::yield_now(),
            Self::Sleep(w) => {
                let t = timeout.map_or(POLL, |t| t.min(POLL));
                if let Err(e) = w.wait_and_process_timeout(|_| {}, t) {
                    tracing::warn!(service = name, "cannot wait: {e}");
                    std::thread::sleep(POLL);
                }
            }
        }
    }
}

impl ReqResLink {
    /// Bridges service `name` in `mode` (made from the types and `qos` if
    /// `create` and it does not exist); with `spin`, its thread polls.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        types: (&PayloadDescription, &PayloadDescription),
        qos: &ReqResQos,
        create: bool,
        mode: Mode,
        shared: &Shared,
        spin: bool,
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
        let room = shared.room.clone();
        let (worker, queryable) = match mode {
            Mode::Idle => (None, None),
            Mode::Serve => {
                let (post, queries) =
                    Mailbox::new().map_err(|e| LinkError::Thread(e.to_string()))?;
                let me = ctx.domain;
                let refused = shared.refused.clone();
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
                            post.send(query);
                        }
                    })
                    .wait()
                    .map_err(LinkError::zenoh)?;
                let att = (me.attachment(), me.end_attachment());
                let (timeout, in_flight) = (ctx.query_timeout, qos.max_requests_in_flight as usize);
                let w = Worker::spawn(thread_name, move |stop| {
                    let s = serve::Serve {
                        service: &service,
                        queries: &queries,
                        shapes,
                        att,
                        timeout,
                        in_flight,
                        room: &room,
                        spin,
                        name: &label,
                    };
                    serve::serve_loop(&s, stop)
                })?;
                (Some(w), Some(queryable))
            }
            Mode::Forward => {
                let session = ctx.session.clone();
                let refused = shared.refused.clone();
                let (att, timeout) = (ctx.domain.attachment(), ctx.query_timeout);
                let w = Worker::spawn(thread_name, move |stop| {
                    let f = forward::Forward {
                        service: &service,
                        session: &session,
                        key: &key,
                        refused: &refused,
                        shapes,
                        att,
                        timeout,
                        room: &room,
                        spin,
                        name: &label,
                    };
                    forward::forward_loop(&f, stop)
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
