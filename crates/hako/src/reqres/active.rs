//! A request a server received, and the responses that answer it: zero,
//! one or many, then the end of the stream as the [`ActiveRequest`] drops.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use super::envelope::{withdrawal, Envelope, ABORTED, END, LAST};
use super::errors::ResponseSendError;
use super::message::{Destination, MessageMut, MessageMutUninit, Sealed};
use super::settings::Types;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::receiver::sample::RawSample;
use crate::port::sender::loan::{Queued, RawLoan};
use crate::port::sender::settings::LoanError;

/// A response being loaned: the client connection and request it answers.
pub struct ToClient {
    conn: usize,
    client: u64,
    id: u64,
}

impl Sealed for ToClient {}

// The chunk type of `send` is crate-private (see Destination).
#[allow(private_interfaces)]
impl Destination for ToClient {
    type Sent = Result<(), ResponseSendError>;
    #[inline(always)]
    fn send(self, raw: RawLoan) -> Self::Sent {
        // A response the client withdrew (it dropped the pending response)
        // goes where it would have gone unread: nowhere, without an error.
        match raw.send_to(self.conn, self.client, [self.id, 0], Some(withdrawal(self.id))) {
            Queued::Yes | Queued::Withdrawn => Ok(()),
            Queued::No => Err(ResponseSendError::ClientGone),
        }
    }
}

/// A loaned response whose payload is not yet written.
pub type ResponseMutUninit<Resp> = MessageMutUninit<Resp, ToClient>;
/// A loaned response, written and ready to send.
pub type ResponseMut<Resp> = MessageMut<Resp, ToClient>;

/// What a server's active requests need to answer: its sending half and
/// how responses are laid out. `Sync` (unlike the server's receiving
/// half), so that an [`ActiveRequest`] that borrows it is `Send`.
pub(crate) struct Answering {
    pub(super) tx: Arc<crate::port::sender::inner::SenderInner>,
    pub(super) resp_env: Envelope,
    /// Responses the user may have loaned at once.
    pub(super) user_loans: usize,
}

/// A request taken from the queue, before it is tied to its server (see
/// `Server::activate`).
pub(crate) struct Taken {
    pub(super) raw: RawSample,
    pub(super) elems: usize,
    pub(super) id: u64,
    pub(super) conn: usize,
    pub(super) client: u64,
    pub(super) no_response: bool,
}

/// A request a server received: dereferences to its payload, in the
/// client's shared memory. Answer it with
/// [`loan_uninit`](ActiveRequest::loan_uninit) /
/// [`send_copy`](ActiveRequest::send_copy) (as often as the stream needs);
/// dropping it ends the response stream and gives the request's chunk back.
///
/// `Send`: it may be held across an `.await` in a task of a multi-threaded
/// runtime.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-active-request", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Active".try_into()?)
///     .request_response::<u64, u64>()
///     .open_or_create()?;
/// let server = service.server_builder().create()?;
/// let client = service.client_builder().create()?;
/// let pending = client.send_copy(2)?;
/// if let Some(request) = server.receive()? {
///     assert_eq!(*request, 2); // read in the client's memory
///     assert_eq!(request.client_id(), client.id());
///     request.send_copy(4)?;
///     request.send_copy(8)?;
/// } // dropped: the stream ends
/// while let Some(response) = pending.blocking_receive()? {
///     println!("{}", *response); // 4, 8
/// }
/// # Ok(()) }
/// ```
pub struct ActiveRequest<'s, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    server: &'s Answering,
    raw: RawSample,
    elems: usize,
    /// The request's id, copied into every response.
    id: u64,
    /// The server's connection to the client, and the client's port id.
    conn: usize,
    client: u64,
    no_response: bool,
    /// A last response ended the stream already (see `send_last`).
    ended: bool,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for ActiveRequest<'_, Req, Resp> {
    fn drop(&mut self) {
        if self.no_response || self.ended {
            return;
        }
        self.end_stream(END);
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ActiveRequest<'_, Req, Resp> {
    /// Sends the end of the stream: a message with no payload, from a
    /// chunk kept in reserve for it (see ServerBuilder::create). Under a
    /// backpressure strategy that gives up (retry, discard) it still waits
    /// for room in the client's queue, for the client to go, or for it to
    /// drop the pending response; a client that left or dropped it gets
    /// nothing.
    fn end_stream(&self, flags: u64) {
        let tx = &self.server.tx;
        let mut tries = 0u32;
        loop {
            let raw = match RawLoan::new(tx, 0) {
                Ok(raw) => raw,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot end a response stream");
                    return;
                }
            };
            if raw.send_to(self.conn, self.client, [self.id, flags], Some(withdrawal(self.id))) != Queued::No {
                return;
            }
            // The client went, or its queue stayed full.
            if tx.served_port(self.conn) != Some(self.client) {
                return;
            }
            tries = tries.wrapping_add(1);
            if tries % 1024 == 0 && !tx.peer_alive(self.conn, self.client) {
                return;
            }
            std::thread::yield_now();
        }
    }
}

impl<Req: crate::port::payload::ShmSafe, Resp: Payload + ?Sized> ActiveRequest<'_, [Req], Resp> {
    /// The first element, for code that reads through raw pointers
    /// (language bindings): [`len`](Self::len) elements of the service's
    /// element size lie there (see `ReqResBuilder::payload_types`).
    pub fn as_ptr(&self) -> *const Req {
        self.raw.payload().cast()
    }

    /// Elements of the request.
    pub fn len(&self) -> usize {
        self.elems
    }

    /// Whether the request has no elements.
    pub fn is_empty(&self) -> bool {
        self.elems == 0
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for ActiveRequest<'_, Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveRequest")
            .field("client", &format_args!("{:016x}", self.client))
            .field("id", &format_args!("{:016x}", self.id))
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Deref for ActiveRequest<'_, Req, Resp> {
    type Target = Req;
    fn deref(&self) -> &Req {
        // SAFETY: as for a client's Response: the length was validated
        // against the envelope, the payload is aligned for Req and mapped
        // while the sample lives, and Req is ShmSafe.
        unsafe {
            &*Req::make_ptr(self.raw.payload().cast_mut(), self.elems)
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ActiveRequest<'_, Req, Resp> {
    /// The port id of the client that sent it.
    pub fn client_id(&self) -> u64 {
        self.client
    }

    /// Whether the client still waits for the responses: it is registered,
    /// its process is alive (this asks the kernel), and it has not dropped
    /// the request's pending response. A server may stop work early when
    /// it is not. Responses to a request whose pending response was dropped
    /// are given back unread (a send that finds the client's queue full
    /// stops waiting and returns `Ok`); those sent to a client that died
    /// before anyone noticed go nowhere, and their chunks come back when
    /// its ports are reclaimed.
    pub fn is_connected(&self) -> bool {
        self.server.tx.served_port(self.conn) == Some(self.client)
            && !self.server.tx.withdrawn(self.conn, self.client, withdrawal(self.id))
            && self.server.tx.peer_alive(self.conn, self.client)
    }

    /// Whether the client asked for no response (fire and forget).
    pub fn expects_response(&self) -> bool {
        !self.no_response
    }

    /// Gives up on the request: ends the response stream so that the
    /// client's next receive, after the responses sent before, reports
    /// [`ReqResReceiveError::Aborted`](crate::ReqResReceiveError::Aborted)
    /// instead of a plain end. For a server that relays requests (a bridge
    /// to other hosts) and learns that no answer will come.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-abort", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Abort".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(1)?;
    /// let request = server.receive()?.ok_or("no request")?;
    /// request.send_copy(10)?;
    /// request.abort();
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(10));
    /// assert_eq!(pending.blocking_receive().unwrap_err(), hako::ReqResReceiveError::Aborted);
    /// assert!(pending.is_finished());
    /// # Ok(()) }
    /// ```
    pub fn abort(mut self) {
        if !self.no_response && !self.ended {
            self.end_stream(END | ABORTED);
        }
        self.ended = true;
    }

    /// Sends `response`, loaned from this request, as the last of the
    /// stream, and ends the stream with it: one message where sending it
    /// and then dropping the request would make two (the response, then
    /// an end). The answer to a request that has exactly one goes this way.
    /// The request is gone afterwards, whatever happened: a response loaned
    /// from another request is refused ([`ResponseSendError::OtherRequest`])
    /// and given back, and this request's stream ends as if it were dropped;
    /// so does a response the client's full queue refused (under a
    /// [`backpressure`](crate::ServerBuilder::backpressure) strategy that gives
    /// up), its end waiting for room.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-last", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// # let service = node.service_builder(&"Doc/SendLast".try_into()?).request_response::<u64, u64>().open_or_create()?;
    /// # let server = service.server_builder().create()?;
    /// # let client = service.client_builder().create()?;
    /// # let pending = client.send_copy(21)?;
    /// if let Some(request) = server.receive()? {
    ///     let response = request.loan_uninit()?.write_payload(*request * 2);
    ///     request.send_last(response)?;
    /// }
    /// # assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(42));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn send_last(mut self, response: ResponseMut<Resp>) -> Result<(), ResponseSendError> {
        let (to, raw) = response.into_parts();
        if (to.conn, to.client, to.id) != (self.conn, self.client, self.id) {
            // Given back as `raw` drops; this request's stream goes on.
            return Err(ResponseSendError::OtherRequest);
        }
        if raw.send_to(self.conn, self.client, [self.id, LAST], Some(withdrawal(self.id))) != Queued::No {
            self.ended = true;
            return Ok(());
        }
        // A client that went gets nothing more; one whose queue stayed full
        // (a strategy that gives up) still gets the end, as this drops.
        self.ended = self.server.tx.served_port(self.conn) != Some(self.client);
        Err(ResponseSendError::ClientGone)
    }

    #[inline(always)]
    fn loan_raw(&self, elems: usize) -> Result<ResponseMutUninit<Resp>, ResponseSendError> {
        if self.no_response {
            return Err(ResponseSendError::NoResponseExpected);
        }
        let env = &self.server.resp_env;
        if elems > env.max_elems {
            return Err(LoanError::SliceTooLong {
                requested: elems,
                max: env.max_elems,
            }
            .into());
        }
        let raw = RawLoan::new_within(&self.server.tx, env.bytes(elems), self.server.user_loans)?;
        let to = ToClient {
            conn: self.conn,
            client: self.client,
            id: self.id,
        };
        Ok(MessageMutUninit::new(raw, elems, to))
    }
}

impl<Req: Payload + ?Sized, Resp: ShmSafe> ActiveRequest<'_, Req, Resp> {
    /// Loans an uninitialised response from the server's shared pool.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-response-loan", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// #[derive(Debug, Clone, Copy, hako::ShmSafe)]
    /// #[repr(C)]
    /// struct Stats {
    ///     count: u64,
    ///     mean: f64,
    /// }
    /// let service = node
    ///     .service_builder(&"Doc/Stats".try_into()?)
    ///     .request_response::<u64, Stats>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(7)?;
    /// let request = server.receive()?.ok_or("no request")?;
    /// let response = request.loan_uninit()?.write_payload(Stats { count: 7, mean: 0.5 });
    /// response.send()?;
    /// drop(request);
    /// assert_eq!(pending.blocking_receive()?.map(|r| r.count), Some(7));
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_uninit(&self) -> Result<ResponseMutUninit<Resp>, ResponseSendError> {
        self.loan_raw(1)
    }

    /// Copies `value` into a loaned response and sends it.
    pub fn send_copy(&self, value: Resp) -> Result<(), ResponseSendError> {
        self.loan_uninit()?.write_payload(value).send()
    }

    /// Copies `value` into a loaned response and sends it as the last of
    /// the stream (see [`send_last`](Self::send_last)).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-last-copy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Negate".try_into()?)
    ///     .request_response::<i64, i64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(5)?;
    /// let request = server.receive()?.ok_or("no request")?;
    /// let n = *request;
    /// request.send_last_copy(-n)?; // one message: the response and the end
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(-5));
    /// assert!(pending.blocking_receive()?.is_none());
    /// # Ok(()) }
    /// ```
    pub fn send_last_copy(self, value: Resp) -> Result<(), ResponseSendError> {
        let response = self.loan_uninit()?.write_payload(value);
        self.send_last(response)
    }
}

impl<Req: Payload + ?Sized, Resp: ShmSafe> ActiveRequest<'_, Req, [Resp]> {
    /// Loans an uninitialised response slice of `len` elements.
    #[inline(always)]
    pub fn loan_slice_uninit(&self, len: usize) -> Result<ResponseMutUninit<[Resp]>, ResponseSendError> {
        self.loan_raw(len)
    }

    /// Copies `data` into a loaned response slice and sends it.
    pub fn send_slice_copy(&self, data: &[Resp]) -> Result<(), ResponseSendError>
    where
        Resp: Copy,
    {
        self.loan_slice_uninit(data.len())?
            .write_from_slice(data)
            .send()
    }

    /// Copies `data` into a loaned response slice and sends it as the last
    /// of the stream (see [`send_last`](Self::send_last)).
    pub fn send_last_slice_copy(self, data: &[Resp]) -> Result<(), ResponseSendError>
    where
        Resp: Copy,
    {
        let response = self
            .loan_slice_uninit(data.len())?
            .write_from_slice(data);
        self.send_last(response)
    }
}

impl<'s, Req: Payload + ?Sized, Resp: Payload + ?Sized> ActiveRequest<'s, Req, Resp> {
    /// A taken request, answered through `answering`.
    pub(crate) fn new(answering: &'s Answering, t: Taken) -> Self {
        Self {
            server: answering,
            conn: t.conn,
            client: t.client,
            raw: t.raw,
            elems: t.elems,
            id: t.id,
            no_response: t.no_response,
            ended: false,
            _t: PhantomData,
        }
    }
}
