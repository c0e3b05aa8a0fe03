//! hako request/response, busy-polled.
//!
//! One service per row, `reqres/<row>`, requests and responses `[u8]` of
//! the row's size: the leader creates it (one client, one server, as many
//! requests in flight as the row's depth) and is the client; the follower
//! opens it and is the server. For request `seq` the client loans a slice
//! in its pool, writes it as the row's payload mode says and sends it; the
//! server busy-polls `receive()`, checks the request in place, loans a
//! response from its own pool, writes it and sends it as the last of the
//! stream (`ActiveRequest::send_last`: the response and the end of the
//! stream in one message). The client busy-polls its pending
//! response, checks the answer in place, and drops both. Nothing is copied;
//! only descriptors cross.
//!
//! With a [`WaitStrategy`] ([`HakoReqRes::wait`]) both sides wait with the
//! blocking calls instead (`PendingResponse::blocking_receive`,
//! `Server::blocking_receive`), their ports set to that strategy: the
//! blocking counterparts of the async rows ([`crate::transports::runtimes`]).
//!
//! A round trip ([`Leader::round_trip`]) is one request and its answer; a
//! request/response row keeps up to its depth in flight
//! ([`Leader::pipeline`]), each pending response held until its answer is
//! checked, oldest first.

use hako::{Client, Config, Node, NodeBuilder, ReqResService, Server, ServiceName, WaitStrategy};

use crate::error::Result;
use crate::transport::{
    pipeline, poll, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};

/// Most requests a client may keep in flight here.
pub const MAX_DEPTH: u32 = 1024;

/// hako request/response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HakoReqRes {
    /// `None`: both sides busy-poll `receive()`; a strategy: both wait in
    /// the blocking receives, their ports set to it.
    pub wait: Option<WaitStrategy>,
}

/// The leader's side: the client.
pub struct ReqResLeader {
    // Field order is drop order: the port before the service before the node.
    client: Client<[u8], [u8]>,
    _service: ReqResService<[u8], [u8]>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
    blocking: bool,
}

/// The follower's side: the server.
pub struct ReqResFollower {
    server: Server<[u8], [u8]>,
    _service: ReqResService<[u8], [u8]>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
    blocking: bool,
}

fn node(row: &RowSpec, name: &str) -> Result<Node> {
    let config = Config::default().with_root(&row.root);
    Ok(NodeBuilder::new().name(name)?.config(&config).create()?)
}

fn service_name(prefix: &str, row: &RowSpec) -> Result<ServiceName> {
    Ok(ServiceName::new(&format!("{prefix}/{}", row.row_id))?)
}

/// A row's bytes-to-bytes service, and its ports.
type Bytes = ReqResService<[u8], [u8]>;
type ByteClient = Client<[u8], [u8]>;
type ByteServer = Server<[u8], [u8]>;

/// The leader's side of a row: node `node_name`, the service
/// `<prefix>/<row>` (created: one client, one server, as many requests in
/// flight as the row's depth) and its client, waiting as `wait` says.
/// Shared with the async transport ([`crate::transports::runtimes`]).
pub(crate) fn create_client(
    row: &RowSpec,
    prefix: &str,
    node_name: &str,
    wait: WaitStrategy,
) -> Result<(Node, Bytes, ByteClient)> {
    if row.size == 0 {
        return Err("message size must be at least 1 byte".into());
    }
    let node = node(row, node_name)?;
    let service = node
        .service_builder(&service_name(prefix, row)?)
        .request_response::<[u8], [u8]>()
        .max_clients(1)
        .max_servers(1)
        .max_nodes(2)
        .max_requests_in_flight(row.depth.clamp(1, MAX_DEPTH))
        .max_response_buffer(2)
        .create()?;
    let client = service
        .client_builder()
        .max_slice_len(row.size)
        .max_loaned_requests(1)
        .wait_strategy(wait)
        .create()?;
    Ok((node, service, client))
}

/// The follower's side of a row: node `node_name`, the service
/// `<prefix>/<row>` (opened) and its server, waiting as `wait` says.
pub(crate) fn create_server(
    row: &RowSpec,
    prefix: &str,
    node_name: &str,
    wait: WaitStrategy,
) -> Result<(Node, Bytes, ByteServer)> {
    let node = node(row, node_name)?;
    let service = node
        .service_builder(&service_name(prefix, row)?)
        .request_response::<[u8], [u8]>()
        .open()?;
    let server = service
        .server_builder()
        .max_slice_len(row.size)
        .max_loaned_responses(1)
        .wait_strategy(wait)
        .create()?;
    Ok((node, service, server))
}

/// Checks `request` against tag `t` and answers it with tag `t + 1`, the
/// one response ending the stream (one message, not two); the request's
/// chunk goes back as it drops.
#[inline]
pub(crate) fn answer(
    request: hako::ActiveRequest<'_, [u8], [u8]>,
    size: usize,
    payload: PayloadMode,
    t: u8,
) -> Result<()> {
    payload.check(&request, size, t, "request")?;
    let mut response = request.loan_slice_uninit(size)?;
    payload.write_uninit(response.payload_mut(), t.wrapping_add(1));
    // SAFETY: as for the request (see send_request).
    let response = unsafe { response.assume_init() };
    request.send_last(response)?;
    Ok(())
}

/// Sends request tag `t` of `size` bytes, written as `payload` says.
#[inline]
pub(crate) fn send_request(
    client: &Client<[u8], [u8]>,
    size: usize,
    payload: PayloadMode,
    t: u8,
) -> Result<hako::PendingResponse<'_, [u8], [u8]>> {
    let mut request = client.loan_slice_uninit(size)?;
    payload.write_uninit(request.payload_mut(), t);
    // SAFETY: in full mode every byte was written; in touch mode the others
    // hold what the chunk held before (zeros from the kernel, or earlier
    // payloads): initialised memory, and `u8` has no invalid values. The
    // same reasoning as for publish/subscribe (see crate::transports::hako::pubsub).
    let request = unsafe { request.assume_init() };
    Ok(request.send()?)
}

/// Busy-polls (or, `blocking`, waits on) `pending` for its answer and
/// checks it against tag `t`.
#[inline]
fn await_answer(
    pending: &hako::PendingResponse<'_, [u8], [u8]>,
    size: usize,
    payload: PayloadMode,
    t: u8,
    blocking: bool,
) -> Result<()> {
    if blocking {
        let answer = pending
            .blocking_receive()?
            .ok_or("the server ended the stream without a response")?;
        return payload.check(&answer, size, t, "response");
    }
    let answer = poll("a response", || {
        let r = pending.receive()?;
        if r.is_none() && pending.is_finished() {
            return Err("the server ended the stream without a response".into());
        }
        Ok(r)
    })?;
    payload.check(&answer, size, t, "response")
}

impl Transport for HakoReqRes {
    type Leader = ReqResLeader;
    type Follower = ReqResFollower;

    fn name(&self) -> &'static str {
        match self.wait {
            None => "hako-reqres",
            Some(WaitStrategy::BusySpin) => "hako-reqres-spin",
            Some(WaitStrategy::SpinThenPark) => "hako-reqres-spin-park",
            Some(WaitStrategy::Park) => "hako-reqres-park",
        }
    }

    fn waiting(&self) -> Waiting {
        match self.wait {
            None | Some(WaitStrategy::BusySpin) => Waiting::BusyPoll,
            Some(_) => Waiting::Blocking,
        }
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        pattern
            .one_way()
            .then(|| "request/response: every request is answered".to_owned())
    }

    fn in_flight_skip(&self, _size: usize, depth: u32) -> Option<String> {
        (depth > MAX_DEPTH).then(|| format!("more than {MAX_DEPTH} requests in flight"))
    }

    fn leader(&self, row: &RowSpec) -> Result<ReqResLeader> {
        let wait = self.wait.unwrap_or_default();
        let (node, service, client) = create_client(row, "reqres", "reqres-client", wait)?;
        Ok(ReqResLeader {
            client,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
            blocking: self.wait.is_some(),
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<ReqResFollower> {
        let wait = self.wait.unwrap_or_default();
        let (node, service, server) = create_server(row, "reqres", "reqres-server", wait)?;
        Ok(ReqResFollower {
            server,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
            blocking: self.wait.is_some(),
        })
    }
}

impl Leader for ReqResLeader {
    fn connect(&mut self) -> Result<()> {
        poll("the server to come", || {
            Ok((self.client.server_count() == 1).then_some(()))
        })?;
        Ok(())
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let pending = send_request(&self.client, self.size, self.payload, t)?;
        sent();
        await_answer(
            &pending,
            self.size,
            self.payload,
            t.wrapping_add(1),
            self.blocking,
        )
    }

    fn pipeline(&mut self, seqs: std::ops::RangeInclusive<u64>, depth: usize) -> Result<()> {
        let (size, payload, blocking) = (self.size, self.payload, self.blocking);
        pipeline(
            &mut &self.client,
            seqs,
            depth,
            |client, seq| send_request(client, size, payload, tag(seq)),
            |_, seq, pending| {
                await_answer(&pending, size, payload, tag(seq).wrapping_add(1), blocking)
            },
        )
    }
}

impl Follower for ReqResFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let request = if self.blocking {
            self.server.blocking_receive()?
        } else {
            poll("a request", || Ok(self.server.receive()?))?
        };
        answer(request, self.size, self.payload, t)
    }
}
