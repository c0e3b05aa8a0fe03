//! iceoryx2 request/response, set up as [`crate::transports::hako::reqres`] sets up hako.
//!
//! One service per row, `hako-bench/<row>/reqres`, requests and responses
//! `[u8]` with a static maximum slice length equal to the row's size. The
//! leader creates it (one client, one server, as many active requests per
//! client as the row's depth, one response buffered per request, no safe
//! overflow either way, as hako's queues) and is the client; the follower
//! opens it and is the server. The client loans a request slice, writes it
//! in place as the row's payload mode says and sends it; the server
//! busy-polls `receive()` in the same loop as hako ([`poll`]), checks the
//! request in place, loans a response, writes and sends it, and drops the
//! active request (which closes the response channel). The client
//! busy-polls its pending response, checks the answer in place and drops
//! both, which frees the request's slot.
//!
//! A request sent before the server's port exists would reach nobody and
//! never be answered, so the leader waits until the service has its server
//! ([`Leader::connect`]). Files and node settings as for iceoryx2's
//! publish/subscribe ([`super::iceoryx2`]).

use std::mem::MaybeUninit;

use iceoryx2::pending_response::PendingResponse;
use iceoryx2::port::client::Client;
use iceoryx2::port::server::Server;
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::request_response::PortFactory as ReqResFactory;

use super::iceoryx2::{err, node, service_name};
use crate::error::Result;
use crate::transport::{
    pipeline, poll, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};

type Svc = ipc::Service;
type Factory = ReqResFactory<Svc, [u8], (), [u8], ()>;
type Pending = PendingResponse<Svc, [u8], (), [u8], ()>;

/// Most requests in flight asked of iceoryx2 here.
const MAX_DEPTH: u32 = 1024;

/// iceoryx2 request/response, busy-polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Iceoryx2ReqRes;

/// The leader's side: the client.
pub struct IceoryxClient {
    // Field order is drop order: the port before the service before the node.
    client: Client<Svc, [u8], (), [u8], ()>,
    service: Factory,
    _node: Node<Svc>,
    size: usize,
    payload: PayloadMode,
}

/// The follower's side: the server.
pub struct IceoryxServer {
    server: Server<Svc, [u8], (), [u8], ()>,
    _service: Factory,
    _node: Node<Svc>,
    size: usize,
    payload: PayloadMode,
}

/// Writes `t` into `buf` as `payload` says.
#[inline]
fn fill(buf: &mut [MaybeUninit<u8>], payload: PayloadMode, t: u8) {
    payload.write_uninit(buf, t);
}

#[inline]
fn send_request(
    client: &Client<Svc, [u8], (), [u8], ()>,
    size: usize,
    payload: PayloadMode,
    t: u8,
) -> Result<Pending> {
    let mut request = client
        .loan_slice_uninit(size)
        .map_err(|e| err("loan a request", e))?;
    fill(request.payload_mut(), payload, t);
    // SAFETY: as for hako (see crate::transports::hako::reqres): every byte is either
    // written now or holds what the chunk held before, and `u8` has no
    // invalid values.
    let request = unsafe { request.assume_init() };
    request.send().map_err(|e| err("send a request", e))
}

#[inline]
fn await_answer(pending: &Pending, size: usize, payload: PayloadMode, t: u8) -> Result<()> {
    let answer = poll("a response", || {
        pending.receive().map_err(|e| err("receive a response", e))
    })?;
    payload.check(answer.payload(), size, t, "response")
}

impl Transport for Iceoryx2ReqRes {
    type Leader = IceoryxClient;
    type Follower = IceoryxServer;

    fn name(&self) -> &'static str {
        "iceoryx2-reqres"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        pattern
            .one_way()
            .then(|| "request/response: every request is answered".to_owned())
    }

    fn in_flight_skip(&self, _size: usize, depth: u32) -> Option<String> {
        (depth > MAX_DEPTH).then(|| format!("more than {MAX_DEPTH} requests in flight"))
    }

    fn leader(&self, row: &RowSpec) -> Result<IceoryxClient> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let node = node(row, false)?;
        let service = node
            .service_builder(&service_name(row, "reqres")?)
            .request_response::<[u8], [u8]>()
            .max_clients(1)
            .max_servers(1)
            .max_nodes(2)
            .max_active_requests_per_client(row.depth.clamp(1, MAX_DEPTH) as usize)
            .max_response_buffer_size(1)
            .max_borrowed_responses_per_pending_response(1)
            .max_loaned_requests(1)
            .enable_safe_overflow_for_requests(false)
            .enable_safe_overflow_for_responses(false)
            .create()
            .map_err(|e| err("creating a service", e))?;
        let client = service
            .client_builder()
            .initial_max_slice_len(row.size)
            .allocation_strategy(AllocationStrategy::Static)
            .create()
            .map_err(|e| err("creating a client", e))?;
        Ok(IceoryxClient {
            client,
            service,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<IceoryxServer> {
        let node = node(row, true)?;
        let service = node
            .service_builder(&service_name(row, "reqres")?)
            .request_response::<[u8], [u8]>()
            .open()
            .map_err(|e| err("opening a service", e))?;
        let server = service
            .server_builder()
            .initial_max_slice_len(row.size)
            .allocation_strategy(AllocationStrategy::Static)
            .max_loaned_responses_per_request(1)
            .create()
            .map_err(|e| err("creating a server", e))?;
        Ok(IceoryxServer {
            server,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }
}

impl Leader for IceoryxClient {
    fn connect(&mut self) -> Result<()> {
        poll("the server to come", || {
            Ok((self.service.dynamic_config().number_of_servers() == 1).then_some(()))
        })
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let pending = send_request(&self.client, self.size, self.payload, t)?;
        sent();
        await_answer(&pending, self.size, self.payload, t.wrapping_add(1))
    }

    fn pipeline(&mut self, seqs: std::ops::RangeInclusive<u64>, depth: usize) -> Result<()> {
        let (size, payload) = (self.size, self.payload);
        pipeline(
            &mut &self.client,
            seqs,
            depth,
            |client, seq| send_request(client, size, payload, tag(seq)),
            |_, seq, pending| await_answer(&pending, size, payload, tag(seq).wrapping_add(1)),
        )
    }
}

impl Follower for IceoryxServer {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let request = poll("a request", || {
            self.server
                .receive()
                .map_err(|e| err("receive a request", e))
        })?;
        self.payload
            .check(request.payload(), self.size, t, "request")?;
        let mut response = request
            .loan_slice_uninit(self.size)
            .map_err(|e| err("loan a response", e))?;
        fill(response.payload_mut(), self.payload, t.wrapping_add(1));
        // SAFETY: as for the request (see send_request).
        let response = unsafe { response.assume_init() };
        response.send().map_err(|e| err("send a response", e))
        // The active request drops here and closes the response channel.
    }
}
