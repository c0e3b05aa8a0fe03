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

use std::cell::Cell;
use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd};

use super::envelope::{request_id, Envelope, NO_RESPONSE};
use super::errors::{RequestSendError, ServerWaitError};
use super::inbox::{Inbox, Routed, Slots};
use super::message::{Destination, MessageMut, MessageMutUninit, Sealed};
use super::pending::PendingResponse;
use super::settings::Types;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::sender::loan::RawLoan;

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
    /// A client on `inbox`'s port, whose requests are laid out as `req_env`
    /// says (made by its builder).
    pub(super) fn new(inbox: Inbox, req_env: Envelope) -> Self {
        Self {
            inbox,
            req_env,
            next_server: Cell::new(0),
            _t: PhantomData,
        }
    }

    /// The client's unique port id.
    pub fn id(&self) -> u64 {
        self.inbox.port.port_id
    }

    /// Number of servers the client can send to now.
    pub fn server_count(&self) -> usize {
        self.inbox.port.tx.receiver_count()
    }

    /// Waits until a server is there to take a request, at most `timeout`,
    /// sleeping (a futex in the service's tables, which a server's arrival
    /// wakes) rather than polling: so a client may start before its
    /// server. `Ok` at once if one is there. Ends early with
    /// [`ServerWaitError::TerminationRequest`] on SIGINT or SIGTERM, as the
    /// node's blocking waits do (looked at least every 100 ms).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-wait-for-server", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// # use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Later".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let client = service.client_builder().create()?;
    /// assert!(client.wait_for_server(Duration::from_millis(10)).is_err()); // nobody yet
    /// let server = service.server_builder().create()?; // usually another process
    /// client.wait_for_server(Duration::from_secs(10))?;
    /// # Ok(()) }
    /// ```
    pub fn wait_for_server(&self, timeout: std::time::Duration) -> Result<(), ServerWaitError> {
        let tx = &self.inbox.port.tx;
        tx.wait_for_receivers(timeout).map_err(|waited| match waited {
            Some(waited) => ServerWaitError::NoServer {
                service: self.inbox.name.clone(),
                waited,
            },
            None => ServerWaitError::TerminationRequest,
        })
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
    pub(crate) fn wait_spin_policy(
        &self,
    ) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
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
        self.inbox.release_dropped();
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
