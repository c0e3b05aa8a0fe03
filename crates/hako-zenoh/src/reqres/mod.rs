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

mod common;
mod forward;
mod serve;

use hako::{PayloadDescription, ReqResQos, ServiceName};
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::link::{from_domain, Ctx, LinkError, Shared, Worker};
use crate::mailbox::Mailbox;
use crate::open;
use crate::payload::Shape;
use common::Shapes;

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
