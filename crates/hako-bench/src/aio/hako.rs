//! hako request/response awaited under tokio: `hako::aio::AsyncClient`
//! and `AsyncServer`.
//!
//! One service per row, `async/<row>`, requests and responses `[u8]` of
//! the row's size, as in [`crate::hako_reqres`]: the leader creates it and
//! is the client; the follower opens it and is the server. The client
//! loans a request, writes it, sends it and turns the pending response
//! into a ticket; it awaits the ticket's response, checks it in place and
//! ends the request. The server awaits each request, checks it, loans the
//! answer, writes it and sends it as the last of the stream. Nothing is
//! copied; only descriptors cross.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use hako::aio::{AsyncClient, AsyncServer};
use hako::{Config, Node, NodeBuilder, ReqResService, ServiceName, Ticket, WaitStrategy};

use super::{Backend, ClientSide, Flavor, ServerSide};
use crate::hako_reqres::MAX_DEPTH;
use crate::transport::{tag, PayloadMode, RowSpec, Waiting, PEER_TIMEOUT};
use crate::Result;

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

fn node(row: &RowSpec, name: &str) -> Result<Node> {
    let config = Config::default().with_root(&row.root);
    Ok(NodeBuilder::new().name(name)?.config(&config).create()?)
}

fn service_name(row: &RowSpec) -> Result<ServiceName> {
    Ok(ServiceName::new(&format!("async/{}", row.row_id))?)
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
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let node = node(row, "async-client")?;
        let service = node
            .service_builder(&service_name(row)?)
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
            .wait_strategy(self.wait.strategy())
            .create()?;
        Ok(HakoClient {
            client: AsyncClient::new(client)?,
            _service: service,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }

    fn server(&self, row: &RowSpec) -> Result<HakoServer> {
        let node = node(row, "async-server")?;
        let service = node
            .service_builder(&service_name(row)?)
            .request_response::<[u8], [u8]>()
            .open()?;
        let server = service
            .server_builder()
            .max_slice_len(row.size)
            .max_loaned_responses(1)
            .wait_strategy(self.wait.strategy())
            .create()?;
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
        let mut request = self.client.get_ref().loan_slice_uninit(self.size)?;
        self.payload.write_uninit(request.payload_mut(), t);
        // SAFETY: as in crate::hako_reqres::send_request: every byte is
        // initialised memory (written now, or what the chunk held), and
        // `u8` has no invalid values.
        let request = unsafe { request.assume_init() };
        Ok(request.send()?.into_ticket())
    }

    /// Awaits `ticket`'s answer, checks it against tag `t` and ends the
    /// request.
    async fn answer(&mut self, ticket: Ticket, t: u8) -> Result<()> {
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
        self.answer(ticket, t.wrapping_add(1)).await
    }

    async fn pipeline(&mut self, seqs: RangeInclusive<u64>, depth: usize) -> Result<()> {
        let depth = depth.max(1);
        let mut in_flight: VecDeque<(u64, Ticket)> = VecDeque::with_capacity(depth);
        for seq in seqs {
            if in_flight.len() == depth {
                if let Some((s, ticket)) = in_flight.pop_front() {
                    self.answer(ticket, tag(s).wrapping_add(1)).await?;
                }
            }
            in_flight.push_back((seq, self.send(tag(seq))?));
        }
        while let Some((s, ticket)) = in_flight.pop_front() {
            self.answer(ticket, tag(s).wrapping_add(1)).await?;
        }
        Ok(())
    }
}

impl ServerSide for HakoServer {
    async fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        let request = self.server.receive().await?;
        self.payload.check(&request, self.size, t, "request")?;
        let mut response = request.loan_slice_uninit(self.size)?;
        self.payload
            .write_uninit(response.payload_mut(), t.wrapping_add(1));
        // SAFETY: as for the request (see HakoClient::send).
        let response = unsafe { response.assume_init() };
        request.send_last(response)?;
        Ok(())
    }
}
