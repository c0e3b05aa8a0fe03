//! Making a client: its settings, its data segment for requests and its
//! receiver for responses, sized from the service's settings.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use super::client::Client;
use super::duplex::PortSpec;
use super::envelope::Envelope;
use super::errors::PortCreateError;
use super::inbox::{Inbox, Slot, Slots};
use super::settings::{request_queue, ReqResSettings, Types};
use crate::domain::config::OverflowPolicy;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::receiver::settings::ReceiverSettings;
use crate::port::sender::settings::{BackpressureStrategy, SenderSettings};
use crate::port::wait::WaitStrategy;

/// Builds a [`Client`]; returned by
/// [`ReqResService::client_builder`](crate::ReqResService::client_builder).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-client-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Upload".try_into()?)
///     .request_response::<[u8], u64>()
///     .open_or_create()?;
/// let client = service
///     .client_builder()
///     .max_slice_len(64 * 1024) // requests up to 64 KiB
///     .max_loaned_requests(2)
///     // A full server queue fails the send at once rather than waiting.
///     .backpressure(hako::BackpressureStrategy::Discard)
///     .wait_strategy(hako::WaitStrategy::Park)
///     .create()?;
/// # Ok(()) }
/// ```
pub struct ClientBuilder<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    settings: Arc<ReqResSettings>,
    max_loans: Option<u32>,
    max_slice_len: usize,
    strategy: BackpressureStrategy,
    wait: WaitStrategy,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for ClientBuilder<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("service", &self.service.name)
            .field("max_loans", &self.max_loans)
            .field("max_slice_len", &self.max_slice_len)
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ClientBuilder<Req, Resp> {
    pub(crate) fn new(service: Arc<ServiceInner>, settings: Arc<ReqResSettings>) -> Self {
        Self {
            service,
            settings,
            max_loans: None,
            max_slice_len: 1,
            strategy: BackpressureStrategy::Block,
            wait: WaitStrategy::default(),
            _t: PhantomData,
        }
    }

    /// Requests that may be loaned (not yet sent or dropped) at once.
    /// Default: the service's `max_requests_in_flight`.
    pub fn max_loaned_requests(mut self, n: u32) -> Self {
        self.max_loans = Some(n);
        self
    }

    /// What a send does while the chosen server's queue for this client is
    /// full (default: wait until it makes room, or goes).
    pub fn backpressure(mut self, strategy: BackpressureStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How the blocking receives of pending responses wait (default: spin,
    /// then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.wait = strategy;
        self
    }

    /// Creates the client: its data segment for requests and its entry in
    /// the service.
    pub fn create(self) -> Result<Client<Req, Resp>, PortCreateError> {
        let q = &self.settings.qos;
        let spec = PortSpec {
            kind: "clients",
            max: q.max_clients,
            max_slice_len: self.max_slice_len,
        };
        let in_flight = u64::from(q.max_requests_in_flight);
        let max_loans = spec.loans(
            "max_loaned_requests",
            self.max_loans,
            q.max_requests_in_flight,
        )?;
        let req_env = Envelope::described(&self.settings.request, self.max_slice_len);
        let resp_env = Envelope::described(&self.settings.response, 1);
        let max_len = spec.max_len(&req_env)?;
        // A request goes to one server; each server may have queued, held
        // or returned (before the client took it back) a queue's worth.
        let queue = request_queue(q);
        let tx = SenderSettings {
            overflow: OverflowPolicy::Backpressure,
            strategy: self.strategy,
            history_size: 0,
            buffer: queue,
            borrowed: in_flight,
            max_receivers: q.max_servers,
            max_senders: q.max_clients,
            max_loans,
            max_len,
            elem_size: 1,
            align: req_env.align,
            chunk_count: u64::from(q.max_servers) * queue + u64::from(max_loans),
            own: PortKind::Publisher,
            peers: PortKind::Subscriber,
            shared_id: None,
            tagged: true,
            inline: true,
            withdrawals: 0,
        };
        let rx = response_queue(q, resp_env.align, self.wait);
        let name = self.service.name.to_string();
        let port = spec.create(self.service, tx, rx)?;
        let n = q.max_requests_in_flight as usize;
        let per = q.max_response_buffer as usize;
        Ok(Client::new(
            Inbox {
                port,
                resp_env,
                slots: RefCell::new(Slots {
                slot: (0..n)
                    .map(|_| Slot {
                        generation: 0,
                        active: false,
                        server: 0,
                        conn: 0,
                        ended: false,
                        aborted: false,
                        listed_at: u64::MAX,
                        queue: VecDeque::with_capacity(per),
                    })
                    .collect(),
                    free: (0..n as u32).rev().collect(),
                    stale: 0,
                }),
                name,
                dropped: Arc::default(),
            },
            req_env,
        ))
    }
}

impl<Req: ShmSafe, Resp: Payload + ?Sized> ClientBuilder<[Req], Resp> {
    /// Largest request slice (in elements) this client can send. Default 1.
    pub fn max_slice_len(mut self, n: usize) -> Self {
        self.max_slice_len = n;
        self
    }
}

/// What a client's responses queue in: per server, the responses and ends
/// of every request in flight and of as many more that the client dropped
/// while the server still held them (a server holds or has queued at most
/// twice the requests in flight of a client); the client may hold a full
/// buffer of each request in flight.
fn response_queue(
    q: &super::settings::ReqResQos,
    align: u64,
    wait: WaitStrategy,
) -> ReceiverSettings {
    let in_flight = u64::from(q.max_requests_in_flight);
    let per = u64::from(q.max_response_buffer);
    ReceiverSettings {
        elem_size: 1,
        align,
        slice: true,
        max_receivers: q.max_clients,
        buffer: 2 * in_flight * (per + 1),
        borrowed: in_flight * per,
        // One more than a full buffer of every request: the end of a
        // stream (or a stale response) must be taken to be seen.
        max_held: (in_flight * per) as usize + 1,
        backpressure: true,
        tagged: true,
        withdrawals: in_flight,
        strategy: wait,
        // Their patterns judge peers gone themselves.
        end_when_gone: false,
        skip_own_node: false,
        lossy: false,
        own: PortKind::Publisher,
        peers: PortKind::Subscriber,
        shared: None,
    }
}


