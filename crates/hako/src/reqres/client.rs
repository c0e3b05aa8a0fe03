//! Clients: loan a request, write it in place, send it to a server, and
//! get back a [`PendingResponse`] that yields the server's responses.
//!
//! A client has a slot per request it may have in flight. A request's
//! header names its slot and the slot's generation; the server copies it
//! into every response. All responses reach the client through one
//! receiver, so whichever pending response asks takes what came and
//! routes it: to itself, to the slot's queue of another pending response
//! (kept until that one asks), or, for a slot whose pending response was
//! dropped (an older generation), back to the server at once.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use super::duplex::PortSpec;
use super::envelope::{request_id, Envelope, NO_RESPONSE};
use super::errors::{PortCreateError, RequestSendError};
use super::inbox::{Inbox, Routed, Slot, Slots};
use super::message::{Destination, MessageMut, MessageMutUninit, Sealed};
use super::pending::PendingResponse;
use super::settings::{request_queue, ReqResSettings, Types};
use crate::domain::config::OverflowPolicy;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::receiver::settings::ReceiverSettings;
use crate::port::sender::loan::RawLoan;
use crate::port::sender::settings::{BackpressureStrategy, SenderSettings};
use crate::port::wait::WaitStrategy;

/// Most responses a send routes before it sends.
const ROUTE_BEFORE_SEND: usize = 64;

/// A request being loaned: where it goes when sent.
pub struct ToServer<'c, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    client: &'c Client<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Sealed for ToServer<'_, Req, Resp> {}

// The chunk type of `send` is crate-private (see Destination).
#[allow(private_interfaces)]
impl<'c, Req: Payload + ?Sized, Resp: Payload + ?Sized> Destination for ToServer<'c, Req, Resp> {
    type Sent = Result<PendingResponse<'c, Req, Resp>, RequestSendError>;
    #[inline(always)]
    fn send(self, raw: RawLoan) -> Self::Sent {
        let slot = self.client.send(raw, false)?;
        Ok(PendingResponse::new(&self.client.inbox, slot))
    }
}

/// A loaned request whose payload is not yet written.
pub type RequestMutUninit<'c, Req, Resp> = MessageMutUninit<Req, ToServer<'c, Req, Resp>>;
/// A loaned request, written and ready to send.
pub type RequestMut<'c, Req, Resp> = MessageMut<Req, ToServer<'c, Req, Resp>>;

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> MessageMut<Req, ToServer<'_, Req, Resp>> {
    /// Sends the request fire-and-forget: the server answers nothing, and
    /// no slot of the client stays in flight for it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-without-response", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Log".try_into()?)
    ///     .request_response::<u64, ()>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// client.loan_uninit()?.write_payload(404).send_without_response()?;
    /// assert_eq!(client.requests_in_flight(), 0);
    /// let request = server.receive()?.ok_or("no request")?;
    /// assert!(!request.expects_response());
    /// # Ok(()) }
    /// ```
    pub fn send_without_response(self) -> Result<(), RequestSendError> {
        let (client, raw) = self.into_parts();
        client.client.send(raw, true).map(|_| ())
    }
}

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
            withdrawals: 0,
        };
        let rx = response_queue(q, resp_env.align, self.wait);
        let name = self.service.name.to_string();
        let port = spec.create(self.service, tx, rx)?;
        let n = q.max_requests_in_flight as usize;
        let per = q.max_response_buffer as usize;
        Ok(Client {
            inbox: Inbox {
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
            },
            req_env,
            next_server: Cell::new(0),
            _t: PhantomData,
        })
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


/// Sends requests of `Req` to the servers of a service and receives their
/// responses of `Resp`.
///
/// `Send` but not `Sync`: one thread at a time uses it (and the pending
/// responses it hands out borrow it). Requests go to the servers in turn.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-client", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Client".try_into()?)
///     .request_response::<[u8], [u8]>()
///     .open_or_create()?;
/// let server = service.server_builder().max_slice_len(64).create()?;
/// let client = service.client_builder().max_slice_len(64).create()?;
/// // Write the request in place, in the client's shared memory...
/// let request = client.loan_slice_uninit(5)?.write_from_slice(b"hello");
/// let pending = request.send()?;
/// // ...or copy a small one: client.send_slice_copy(b"hello")?
/// # server.receive()?.ok_or("no request")?.send_slice_copy(b"world")?;
/// while let Some(response) = pending.blocking_receive()? {
///     println!("{} bytes", response.len()); // in the server's memory
/// }
/// // None: the server ended the stream.
/// # Ok(()) }
/// ```
pub struct Client<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    inbox: Inbox,
    req_env: Envelope,
    next_server: Cell<usize>,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for Client<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("service", &self.inbox.name)
            .field("port_id", &format_args!("{:016x}", self.id()))
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for Client<Req, Resp> {
    fn drop(&mut self) {
        crate::port::sender::inner::SenderInner::face_dropped(&self.inbox.port.tx);
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Client<Req, Resp> {
    /// The client's unique port id.
    pub fn id(&self) -> u64 {
        self.inbox.port.port_id
    }

    /// Number of servers the client can send to now.
    pub fn server_count(&self) -> usize {
        self.inbox.port.tx.receiver_count()
    }

    /// Whether responses wait, taken or not yet taken from the queues (a
    /// hint).
    pub fn has_responses(&self) -> bool {
        self.inbox.port.rx.has_samples() || self.inbox.has_queued()
    }

    /// Registers interest in the wake-up descriptor (`as_fd`): from now on
    /// a sender writes a byte to it after each send, until
    /// [`disarm_wakeup`](Self::disarm_wakeup). Returns true if something is
    /// waiting already (take it rather than sleep). For event loops other
    /// than a [`WaitSet`](crate::WaitSet) and hako's tokio support: register
    /// the descriptor for reading, take what is there, arm, sleep until it
    /// is readable, disarm, take again (the docs of `hako::aio`, with the
    /// `tokio` feature, say it whole).
    pub fn arm_wakeup(&self) -> bool {
        self.wait_arm()
    }

    /// Withdraws the interest registered by
    /// [`arm_wakeup`](Self::arm_wakeup), and empties the descriptor.
    pub fn disarm_wakeup(&self) {
        self.wait_disarm()
    }

    /// Its responses, routed to their requests (for the async client).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// Registers interest before a waitset sleeps; true if responses wait.
    /// Stale ones go back first: nobody takes them, they would wake it.
    pub(crate) fn wait_arm(&self) -> bool {
        self.route_stale();
        self.inbox.port.rx.arm() || self.inbox.has_queued()
    }

    /// Gives stale responses (of pending responses dropped before the
    /// stream's end) back, routing those of requests in flight met on the
    /// way to their slots; errors show at the next receive.
    #[inline(always)]
    fn route_stale(&self) {
        if self.inbox.stale_streams() > 0 {
            for _ in 0..ROUTE_BEFORE_SEND {
                if !matches!(self.inbox.route_one(None), Ok(Routed::Elsewhere)) {
                    break;
                }
            }
        }
    }

    /// Whether a request sent now would go out without waiting: true unless
    /// the port waits under backpressure (`BackpressureStrategy::Block`)
    /// and a queue it sends to is full. Only this port fills its queues,
    /// so a true stays true until its next send. No system call.
    pub fn has_room(&self) -> bool {
        self.inbox.port.tx.room_everywhere(false)
    }

    /// [`has_room`](Self::has_room), disconnecting first every full peer
    /// whose process died (a system call each).
    #[cfg(feature = "tokio")]
    pub(crate) fn has_room_alive(&self) -> bool {
        self.inbox.port.tx.room_everywhere(true)
    }

    /// The port's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn wait_spin_policy(&self) -> (WaitStrategy, &crate::port::wait::Adaptive) {
        self.inbox.port.rx.spin_policy()
    }

    /// Withdraws the interest taken by [`wait_arm`](Self::wait_arm).
    pub(crate) fn wait_disarm(&self) {
        self.inbox.port.rx.disarm()
    }

    /// Requests in flight now (pending responses not yet dropped).
    pub fn requests_in_flight(&self) -> usize {
        let s = self.inbox.slots.borrow();
        s.slot.len() - s.free.len()
    }

    #[inline(always)]
    fn loan_raw(&self, elems: usize) -> Result<RawLoan, RequestSendError> {
        Ok(RawLoan::new(&self.inbox.port.tx, self.req_env.bytes(elems))?)
    }

    fn message(&self, raw: RawLoan, elems: usize) -> RequestMutUninit<'_, Req, Resp> {
        MessageMutUninit::new(raw, elems, ToServer { client: self })
    }

    /// Sends a loaned chunk (its payload written) to the next server;
    /// returns the request's slot and generation.
    #[inline(always)]
    fn send(&self, raw: RawLoan, no_response: bool) -> Result<(u32, u32), RequestSendError> {
        self.route_stale(); // so that they do not fill our queues
        // Map the segments of servers that came, before one answers.
        self.inbox.port.rx.update();
        let mut slots = self.inbox.slots.borrow_mut();
        let (slot, generation) = if no_response {
            (u32::MAX, 0)
        } else {
            let Some(i) = slots.free.pop() else {
                return Err(RequestSendError::TooManyRequestsInFlight(slots.slot.len()));
            };
            (i, slots.slot[i as usize].generation)
        };
        let flags = if no_response { NO_RESPONSE } else { 0 };
        let tag = [request_id(slot, generation), flags];
        let sent = raw.send_next(self.next_server.get(), tag);
        let give_back = |slots: &mut Slots| {
            if !no_response {
                slots.free.push(slot);
            }
        };
        let Some(sent) = sent else {
            give_back(&mut slots);
            return Err(RequestSendError::NoServer(self.inbox.name.clone()));
        };
        self.next_server.set(sent.cursor);
        if !sent.delivered {
            give_back(&mut slots);
            drop(slots);
            // The send may have given up on the server's connection.
            self.inbox.forget_listed();
            return Err(RequestSendError::NotDelivered);
        }
        if !no_response {
            let s = &mut slots.slot[slot as usize];
            s.active = true;
            s.server = sent.port;
            s.conn = sent.conn;
            s.ended = false;
            s.aborted = false;
            s.listed_at = u64::MAX;
        }
        Ok((slot, generation))
    }

}

impl<Req: ShmSafe, Resp: Payload + ?Sized> Client<Req, Resp> {
    /// Loans an uninitialised request from the client's shared pool.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan-uninit", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Double".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.loan_uninit()?.write_payload(21).send()?;
    /// server.receive()?.ok_or("no request")?.send_last_copy(42)?;
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(42));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_uninit(&self) -> Result<RequestMutUninit<'_, Req, Resp>, RequestSendError> {
        let raw = self.loan_raw(1)?;
        Ok(self.message(raw, 1))
    }

    /// Copies `value` into a loaned request and sends it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-copy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/SendCopy".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let client = service.client_builder().create()?;
    /// // No server yet: the request has nowhere to go.
    /// if let Err(e) = client.send_copy(1) {
    ///     eprintln!("not sent: {e}");
    /// }
    /// let server = service.server_builder().create()?;
    /// let pending = client.send_copy(2)?;
    /// assert_eq!(server.receive()?.map(|r| *r), Some(2));
    /// # Ok(()) }
    /// ```
    pub fn send_copy(&self, value: Req) -> Result<PendingResponse<'_, Req, Resp>, RequestSendError> {
        self.loan_uninit()?.write_payload(value).send()
    }
}

impl<Req: ShmSafe, Resp: Payload + ?Sized> Client<[Req], Resp> {
    /// Loans an uninitialised request slice of `len` elements.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan-slice-uninit", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Sum".try_into()?)
    ///     .request_response::<[u32], u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().max_slice_len(100).create()?;
    /// let pending = client.loan_slice_uninit(100)?.write_from_fn(|i| i as u32).send()?;
    /// let request = server.receive()?.ok_or("no request")?;
    /// let sum = request.iter().map(|&n| u64::from(n)).sum();
    /// request.send_last_copy(sum)?;
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(4950));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_slice_uninit(
        &self,
        len: usize,
    ) -> Result<RequestMutUninit<'_, [Req], Resp>, RequestSendError> {
        if len > self.req_env.max_elems {
            return Err(crate::port::sender::settings::LoanError::SliceTooLong {
                requested: len,
                max: self.req_env.max_elems,
            }
            .into());
        }
        let raw = self.loan_raw(len)?;
        Ok(self.message(raw, len))
    }

    /// Copies `data` into a loaned request slice and sends it.
    pub fn send_slice_copy(
        &self,
        data: &[Req],
    ) -> Result<PendingResponse<'_, [Req], Resp>, RequestSendError>
    where
        Req: Copy,
    {
        self.loan_slice_uninit(data.len())?
            .write_from_slice(data)
            .send()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> AsFd for Client<Req, Resp> {
    /// The client's wake-up FIFO, readable after a response came while a
    /// waitset waits on it (see [`WaitSet::attach_client`](crate::WaitSet::attach_client)).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inbox.port.rx.as_fd()
    }
}
