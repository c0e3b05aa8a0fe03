//! hako request/response awaited under tokio: `hako::aio::AsyncClient`
//! and `AsyncServer`.
//!
//! One service per row, `async/<row>`, requests and responses `[u8]` of
//! the row's size, made as in [`crate::transports::hako::reqres`] (its helpers): the
//! leader creates it and is the client; the follower opens it and is the
//! server. The client
//! loans a request, writes it, sends it and turns the pending response
//! into a ticket; it awaits the ticket's response, checks it in place and
//! ends the request. The server awaits each request, checks it, loans the
//! answer, writes it and sends it as the last of the stream. Nothing is
//! copied; only descriptors cross.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use hako::aio::{AsyncClient, AsyncServer};
use hako::{Node, ReqResService, Ticket, WaitStrategy};

use super::common::{Backend, ClientSide, Flavor, ServerSide};
use crate::error::Result;
use crate::transport::{tag, PayloadMode, RowSpec, Waiting, PEER_TIMEOUT};
use crate::transports::hako::reqres::{
    answer, create_client, create_server, send_request, MAX_DEPTH,
};

/// How an async hako side waits: its ports' [`WaitStrategy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AsyncWait {
    /// `SpinThenPark`, the ports' default (`hako-async`).
    Default,
    /// `BusySpin`: never sleeps (`hako-async-busy`).
    Busy,
    /// `Park`: sleeps at once (`hako-async-park`).
    Park,
}

impl AsyncWait {
    /// Every way, in table order.
    pub const ALL: [AsyncWait; 3] = [AsyncWait::Default, AsyncWait::Busy, AsyncWait::Park];

    fn strategy(self) -> WaitStrategy {
        match self {
            AsyncWait::Default => WaitStrategy::SpinThenPark,
            AsyncWait::Busy => WaitStrategy::BusySpin,
            AsyncWait::Park => WaitStrategy::Park,
        }
    }
}

/// hako request/response under tokio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HakoAsync {
    /// How its sides wait.
    pub wait: AsyncWait,
    /// Its runtime.
    pub flavor: Flavor,
}

/// The client, in the leader.
pub struct HakoClient {
    // Field order is drop order: the port before the service before the node.
    client: AsyncClient<[u8], [u8]>,
    _service: ReqResService<[u8], [u8]>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
}

/// The server, in the follower.
pub struct HakoServer {
    server: AsyncServer<[u8], [u8]>,
    _service: ReqResService<[u8], [u8]>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
}

impl Backend for HakoAsync {
    type Client = HakoClient;
    type Server = HakoServer;

    fn name(&self) -> &'static str {
        match (self.wait, self.flavor) {
            (AsyncWait::Default, Flavor::CurrentThread) => "hako-async",
            (AsyncWait::Busy, Flavor::CurrentThread) => "hako-async-busy",
            (AsyncWait::Park, Flavor::CurrentThread) => "hako-async-park",
            (AsyncWait::Default, Flavor::MultiThread) => "hako-async-mt",
            (AsyncWait::Busy, Flavor::MultiThread) => "hako-async-busy-mt",
            (AsyncWait::Park, Flavor::MultiThread) => "hako-async-park-mt",
        }
    }

    fn flavor(&self) -> Flavor {
        self.flavor
    }

    fn waiting(&self) -> Waiting {
        match self.wait {
            AsyncWait::Busy => Waiting::BusyPoll,
            AsyncWait::Default | AsyncWait::Park => Waiting::Blocking,
        }
    }

    fn in_flight_skip(&self, _size: usize, depth: u32) -> Option<String> {
        (depth > MAX_DEPTH).then(|| format!("more than {MAX_DEPTH} requests in flight"))
    }

    fn client(&self, row: &RowSpec) -> Result<HakoClient> {
        let (node, service, client) =
            create_client(row, "async", "async-client", self.wait.strategy())?;
        Ok(HakoClient {
            client: AsyncClient::new(client)?,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }

    fn server(&self, row: &RowSpec) -> Result<HakoServer> {
        let (node, service, server) =
            create_server(row, "async", "async-server", self.wait.strategy())?;
        Ok(HakoServer {
            server: AsyncServer::new(server)?,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }
}

impl HakoClient {
    /// Sends request tag `t`; its ticket.
    fn send(&self, t: u8) -> Result<Ticket> {
        Ok(send_request(self.client.get_ref(), self.size, self.payload, t)?.into_ticket())
    }

    /// Awaits `ticket`'s answer, checks it against tag `t` and ends the
    /// request.
    async fn await_answer(&mut self, ticket: Ticket, t: u8) -> Result<()> {
        let answer = self
            .client
            .receive(&ticket)
            .await?
            .ok_or("the server ended the stream without a response")?;
        self.payload.check(&answer, self.size, t, "response")?;
        drop(answer);
        self.client.finish(ticket);
        Ok(())
    }
}

impl ClientSide for HakoClient {
    async fn connect(&mut self) -> Result<()> {
        let since = std::time::Instant::now();
        while self.client.get_ref().server_count() == 0 {
            if since.elapsed() > PEER_TIMEOUT {
                return Err("the server did not come".into());
            }
            tokio::time::sleep(std::time::Duration::from_micros(100)).await;
        }
        Ok(())
    }

    async fn round_trip(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let ticket = self.send(t)?;
        self.await_answer(ticket, t.wrapping_add(1)).await
    }

    async fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let depth = depth.max(1);
        let mut in_flight: VecDeque<(u64, Ticket)> = VecDeque::with_capacity(depth);
        for seq in seqs {
            if in_flight.len() == depth {
                if let Some((s, ticket)) = in_flight.pop_front() {
                    self.await_answer(ticket, tag(s).wrapping_add(1)).await?;
                }
            }
            in_flight.push_back((seq, self.send(tag(seq))?));
        }
        while let Some((s, ticket)) = in_flight.pop_front() {
            self.await_answer(ticket, tag(s).wrapping_add(1)).await?;
        }
        Ok(())
    }
}

impl ServerSide for HakoServer {
    async fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let request = self.server.receive().await?;
        answer(request, self.size, self.payload, t)
    }
}
