//! Servers: receive requests in place and hand each out as an
//! [`ActiveRequest`] (`active.rs`), which answers it.

use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::active::{ActiveRequest, Answering, Taken};
use super::duplex::{Duplex, PortSpec};
use super::envelope::{request_id, Envelope};
use super::errors::{PortCreateError, ReqResReceiveError};
use super::settings::{request_queue, ReqResSettings, Types};
use crate::domain::config::OverflowPolicy;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::receiver::settings::ReceiverSettings;
use crate::port::sender::settings::{BackpressureStrategy, SenderSettings};
use crate::port::wait::WaitStrategy;

/// Builds a [`Server`]; returned by
/// [`ReqResService::server_builder`](crate::ReqResService::server_builder).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-server-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Frames".try_into()?)
///     .request_response::<u64, [u8]>()
///     .open_or_create()?;
/// let server = service
///     .server_builder()
///     .max_slice_len(1 << 20) // responses up to 1 MiB
///     .max_loaned_responses(2)
///     // A client that does not read its responses loses them.
///     .backpressure(hako::BackpressureStrategy::Discard)
///     .create()?;
/// # Ok(()) }
/// ```
pub struct ServerBuilder<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    settings: Arc<ReqResSettings>,
    max_loans: Option<u32>,
    max_slice_len: usize,
    strategy: BackpressureStrategy,
    wait: WaitStrategy,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for ServerBuilder<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("service", &self.service.name)
            .field("max_loans", &self.max_loans)
            .field("max_slice_len", &self.max_slice_len)
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ServerBuilder<Req, Resp> {
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

    /// What sending a response does while the client's queue is full: wait
    /// until the client makes room, or goes (`Block`, the default), or fail
    /// with [`ResponseSendError::ClientGone`](crate::ResponseSendError::ClientGone) at once (`Discard`) or after
    /// so many tries (`Retry`), so that a slow client cannot hold the
    /// server up. The end of a stream (an [`ActiveRequest`] dropped, or a
    /// last response that was refused) always waits: a lost end would
    /// leave the client waiting for ever. No send waits for a client that
    /// dropped the request's pending response: nobody would read it, so it
    /// is given back at once and the send returns `Ok`.
    pub fn backpressure(mut self, strategy: BackpressureStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Responses that may be loaned (not yet sent or dropped) at once.
    /// Default: the service's `max_response_buffer`.
    pub fn max_loaned_responses(mut self, n: u32) -> Self {
        self.max_loans = Some(n);
        self
    }

    /// How the blocking receives wait (default: spin, then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.wait = strategy;
        self
    }

    /// Creates the server: its data segment for responses and its entry in
    /// the service.
    pub fn create(self) -> Result<Server<Req, Resp>, PortCreateError> {
        let q = &self.settings.qos;
        let spec = PortSpec {
            kind: "servers",
            max: q.max_servers,
            max_slice_len: self.max_slice_len,
        };
        let in_flight = u64::from(q.max_requests_in_flight);
        let per = u64::from(q.max_response_buffer);
        let user_loans = spec.loans(
            "max_loaned_responses",
            self.max_loans,
            q.max_response_buffer,
        )?;
        // One chunk more than the user may loan, for the end of a stream:
        // ends are loaned and sent one at a time, when an active request
        // drops.
        let max_loans = u64::from(user_loans) + 1;
        let req_env = Envelope::described(&self.settings.request, 1);
        let resp_env = Envelope::described(&self.settings.response, self.max_slice_len);
        let max_len = spec.max_len(&resp_env)?;
        // As the client's receiver says (see client::response_queue).
        let (buffer, borrowed) = (2 * in_flight * (per + 1), in_flight * per);
        let tx = SenderSettings {
            overflow: OverflowPolicy::Backpressure,
            // Under Block a response waits for room in the client's queue,
            // or for the client to go; the end of a stream always does (see
            // `backpressure`).
            strategy: self.strategy,
            history_size: 0,
            buffer,
            borrowed,
            max_receivers: q.max_clients,
            max_senders: q.max_servers,
            max_loans: u32::try_from(max_loans).unwrap_or(u32::MAX),
            max_len,
            elem_size: 1,
            align: resp_env.align,
            chunk_count: u64::from(q.max_clients) * (buffer + borrowed) + max_loans,
            own: PortKind::Subscriber,
            peers: PortKind::Publisher,
            shared_id: None,
            tagged: true,
            inline: true,
            withdrawals: in_flight,
        };
        let rx = ReceiverSettings {
            elem_size: 1,
            align: req_env.align,
            slice: true,
            max_receivers: q.max_servers,
            buffer: request_queue(q),
            borrowed: in_flight,
            max_held: (u64::from(q.max_clients) * in_flight) as usize,
            backpressure: true,
            tagged: true,
            withdrawals: 0,
            strategy: self.wait,
            // Their patterns judge peers gone themselves.
            end_when_gone: false,
            skip_own_node: false,
            lossy: false,
            own: PortKind::Subscriber,
            peers: PortKind::Publisher,
            shared: None,
        };
        let name = self.service.name.to_string();
        let port = spec.create(self.service, tx, rx)?;
        let answering = Answering {
            tx: port.tx.clone(),
            resp_env,
            user_loans: user_loans as usize,
        };
        Ok(Server {
            port,
            req_env,
            answering,
            name,
            _t: PhantomData,
        })
    }
}

impl<Req: Payload + ?Sized, Resp: ShmSafe> ServerBuilder<Req, [Resp]> {
    /// Largest response slice (in elements) this server can send. Default 1.
    pub fn max_slice_len(mut self, n: usize) -> Self {
        self.max_slice_len = n;
        self
    }
}

/// Receives requests of `Req` from every client of a service and answers
/// them with responses of `Resp`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-server", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Server".try_into()?)
///     .request_response::<u64, u64>()
///     .open_or_create()?;
/// let server = service.server_builder().create()?;
/// let client = service.client_builder().create()?;
/// let pending = client.send_copy(10)?;
/// while let Some(request) = server.receive()? {
///     // The request is the client's memory, read in place.
///     // A stream: three responses, then the end as the request drops...
///     for i in 0..3 {
///         request.send_copy(*request + i)?;
///     }
///     drop(request);
///     // ...or one answer that ends the stream in the same message:
///     // request.send_last_copy(*request * 2)?;
/// }
/// while let Some(response) = pending.blocking_receive()? {
///     println!("{}", *response); // 10, 11, 12
/// }
/// # Ok(()) }
/// ```
///
/// `Send` but not `Sync`: one thread at a time uses it. Clients are served
/// in turn; a server that wakes takes every request waiting before it
/// sleeps again.
pub struct Server<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    port: Duplex,
    req_env: Envelope,
    /// What active requests answer with.
    answering: Answering,
    name: String,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for Server<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("service", &self.name)
            .field("port_id", &format_args!("{:016x}", self.id()))
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for Server<Req, Resp> {
    fn drop(&mut self) {
        crate::port::sender::inner::SenderInner::face_dropped(&self.port.tx);
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Server<Req, Resp> {
    /// The server's unique port id.
    pub fn id(&self) -> u64 {
        self.port.port_id
    }

    /// Whether a request is waiting (a hint).
    pub fn has_requests(&self) -> bool {
        self.port.rx.has_samples()
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

    /// Registers interest before a waitset sleeps; true if requests wait.
    pub(crate) fn wait_arm(&self) -> bool {
        self.port.rx.arm()
    }

    /// Whether a response sent now would go out without waiting: true unless
    /// the port waits under backpressure (`BackpressureStrategy::Block`)
    /// and a queue it sends to is full. Only this port fills its queues,
    /// so a true stays true until its next send. No system call.
    pub fn has_room(&self) -> bool {
        self.port.tx.room_everywhere(false)
    }

    /// [`has_room`](Self::has_room), disconnecting first every full peer
    /// whose process died (a system call each).
    #[cfg(feature = "tokio")]
    pub(crate) fn has_room_alive(&self) -> bool {
        self.port.tx.room_everywhere(true)
    }

    /// The port's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn wait_spin_policy(&self) -> (WaitStrategy, &crate::port::wait::Adaptive) {
        self.port.rx.spin_policy()
    }

    /// Withdraws the interest taken by [`wait_arm`](Self::wait_arm).
    pub(crate) fn wait_disarm(&self) {
        self.port.rx.disarm()
    }

    /// Number of chunks in the server's pool (for its responses).
    pub fn pool_size(&self) -> u32 {
        self.port.tx.pool_size()
    }

    /// Number of chunks free now, after following the service's table
    /// (dropping the connections of clients that left or whose death was
    /// noticed) and taking back what clients returned. Useful to check
    /// that nothing leaks.
    pub fn free_chunks(&self) -> usize {
        self.port.tx.update_connections();
        self.port.tx.free_chunks()
    }

    /// Number of clients connected now.
    pub fn client_count(&self) -> usize {
        self.port.tx.receiver_count()
    }

    /// Takes the next request, if any; never blocks. Clients are served in
    /// turn, each one's requests in the order sent.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-server-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Receive".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// assert!(server.receive()?.is_none()); // nothing sent yet
    /// let pending = client.send_copy(3)?;
    /// match server.receive() {
    ///     Ok(Some(request)) => request.send_copy(*request * 3)?, // then its end, as it drops
    ///     Ok(None) => println!("no request yet"),
    ///     Err(e) => eprintln!("cannot receive: {e}"),
    /// }
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(9));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn receive(&self) -> Result<Option<ActiveRequest<'_, Req, Resp>>, ReqResReceiveError> {
        Ok(self.take()?.map(|t| self.activate(t)))
    }

    /// Takes the next request from the queue, checked.
    #[inline(always)]
    pub(crate) fn take(&self) -> Result<Option<Taken>, ReqResReceiveError> {
        let Some((raw, tag)) = self.port.rx.receive_tagged(|raw, tag| (raw, tag))? else {
            return Ok(None);
        };
        let m = self.req_env.open(tag, raw.len(), false).map_err(|what| {
            ReqResReceiveError::Corrupted {
                peer: raw.sender_id(),
                what,
            }
        })?;
        // SAFETY: the envelope's length was validated against the chunk.
        if !unsafe { raw.holds_valid::<Req>(m.elems) } {
            return Err(ReqResReceiveError::Corrupted {
                peer: raw.sender_id(),
                what: super::errors::INVALID_VALUE,
            });
        }
        Ok(Some(Taken {
            conn: raw.sender_slot(),
            client: raw.sender_id(),
            raw,
            elems: m.elems,
            id: request_id(m.slot, m.generation),
            no_response: m.no_response,
        }))
    }

    /// A taken request, to be answered from this server.
    pub(crate) fn activate(&self, t: Taken) -> ActiveRequest<'_, Req, Resp> {
        ActiveRequest::new(&self.answering, t)
    }

    /// Waits up to `timeout` for a request; `Ok(None)` on timeout.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-server-receive-timeout", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Idle".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// match server.receive_timeout(Duration::from_millis(10)) {
    ///     Ok(Some(request)) => println!("request {}", *request),
    ///     Ok(None) => println!("no request within 10 ms"),
    ///     Err(e) => eprintln!("cannot receive: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn receive_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<ActiveRequest<'_, Req, Resp>>, ReqResReceiveError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// Waits until a request arrives (a server waits for clients however
    /// long they take to come).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-server-blocking-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Blocking".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(5)?;
    /// let request = server.blocking_receive()?; // returns at once: one is there
    /// let n = *request;
    /// request.send_last_copy(n + 1)?;
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(6));
    /// # Ok(()) }
    /// ```
    pub fn blocking_receive(&self) -> Result<ActiveRequest<'_, Req, Resp>, ReqResReceiveError> {
        loop {
            if let Some(r) = self.wait(None)? {
                return Ok(r);
            }
        }
    }

    fn wait(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<ActiveRequest<'_, Req, Resp>>, ReqResReceiveError> {
        self.port.rx.wait_for(
            deadline,
            || self.receive(),
            || self.port.rx.has_samples(),
            // While it sleeps, the server follows clients that came or went
            // (one load when none did): a departed client's responses are
            // taken back then, not at the next send.
            || {
                self.port.tx.update_connections();
                Ok(())
            },
        )
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> AsFd for Server<Req, Resp> {
    /// The server's wake-up FIFO, readable after a request came while a
    /// waitset waits on it (see [`WaitSet::attach_server`](crate::WaitSet::attach_server)).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.port.rx.as_fd()
    }
}
