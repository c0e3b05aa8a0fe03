//! [`AsyncClient`]: the responses of a request/response client awaited
//! under tokio.

use std::future::Future;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::error::AsyncError;
use super::readiness::{Readiness, Waitable};
use super::room::{Ready, RoomPort, RoomWait};
use crate::port::payload::{Payload, ShmSafe};
use crate::reqres::client::Client;
use crate::reqres::errors::{ReqResReceiveError, RequestSendError, ServerWaitError};
use crate::reqres::pending::{Response, Ticket};

/// A client waiting for the responses of one of its requests.
struct Asking<'a, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    client: &'a Client<Req, Resp>,
    slot: u32,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Waitable for Asking<'_, Req, Resp> {
    type Error = ReqResReceiveError;
    fn arm(&self) -> bool {
        self.client.wait_arm()
    }
    fn disarm(&self) {
        self.client.wait_disarm()
    }
    fn peers_registered(&self) -> bool {
        true
    }
    fn peers_gone(&self, _saw: &mut bool) -> Result<(), ReqResReceiveError> {
        // What the server sent before it went is still taken.
        let inbox = self.client.inbox();
        if inbox.server_alive(self.slot) || self.client.has_responses() {
            Ok(())
        } else {
            Err(ReqResReceiveError::ServerGone)
        }
    }
    fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
        self.client.wait_spin_policy()
    }
}

/// A [`Client`] whose responses are awaited: send requests with the
/// client's own calls ([`get_ref`](Self::get_ref)), turn each pending
/// response into a [`Ticket`] ([`PendingResponse::into_ticket`](crate::PendingResponse::into_ticket)),
/// and take its responses with [`receive`](Self::receive) or as a
/// [`Stream`](futures_core::Stream) ([`responses`](Self::responses)).
///
/// `Send`, and so are its futures and streams (they borrow it mutably, so
/// one task takes responses at a time; requests may be in flight by the
/// dozen).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-client", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use futures::StreamExt;
/// let service = node
///     .service_builder(&"Doc/AsyncClient".try_into()?)
///     .request_response::<u64, u64>()
///     .open_or_create()?;
/// let server = service.server_builder().create()?;
/// let mut client = hako::aio::AsyncClient::new(service.client_builder().create()?)?;
/// // Sending never waits (unless the server's queue is full under the
/// // client's Block backpressure).
/// let ticket = client.get_ref().send_copy(21)?.into_ticket();
/// server.receive()?.ok_or("no request")?.send_last_copy(42)?; // usually elsewhere
/// let mut responses = client.responses(ticket);
/// while let Some(response) = responses.next().await {
///     println!("{}", *response?);
/// }
/// // The stream ended: the server dropped its active request.
/// # Ok(()) }
/// ```
///
/// A ticket's request stays in flight (its slot taken) until its stream
/// ends and the end was taken, its server is gone, or it is
/// [`finish`](Self::finish)ed; a ticket dropped before that keeps the slot
/// until the client goes.
pub struct AsyncClient<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    // Declared first: deregistered before the client's FIFO closes.
    readiness: Readiness,
    client: Client<Req, Resp>,
    room: RoomWait,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for AsyncClient<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncClient").field(&self.client).finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> AsyncClient<Req, Resp> {
    /// Registers `client`'s wake-up descriptor with the current tokio
    /// runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(client: Client<Req, Resp>) -> std::io::Result<Self> {
        // SAFETY: as in AsyncSubscriber::new: the client's FIFO outlives
        // `readiness`, declared first and dropped first.
        let readiness = unsafe { Readiness::new(client.as_fd())? };
        Ok(Self {
            readiness,
            client,
            room: RoomWait::default(),
        })
    }

    /// The client, to loan and send requests.
    pub fn get_ref(&self) -> &Client<Req, Resp> {
        &self.client
    }

    /// Waits until a request sent now would go out without waiting (the
    /// queues it goes to have room, or the port never waits: see
    /// [`Client::has_room`](crate::Client::has_room)).
    /// Only this port fills those queues, so the next send after it, from
    /// this task, does not wait.
    ///
    /// Cancel-safe: it takes and sends nothing.
    pub fn ready(&mut self) -> Ready<'_, Self> {
        Ready::new(self)
    }

    /// The client back, registered with no reactor. Tickets of requests
    /// still in flight keep their slots until it goes.
    pub fn into_inner(mut self) -> Client<Req, Resp> {
        self.cancel();
        let Self {
            readiness, client, ..
        } = self;
        drop(readiness);
        client
    }

    /// Waits for the next response to `ticket`'s request: `Some` with it,
    /// `None` once its stream has ended (the request is over then: its slot
    /// is free, and the ticket stays done). Fails with
    /// [`ReqResReceiveError::ServerGone`] (in [`AsyncError::Port`]) when its
    /// server went without ending the stream and every response it sent
    /// was taken (the request is over then too).
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-client-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/AsyncReceive".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let mut client = hako::aio::AsyncClient::new(service.client_builder().create()?)?;
    /// let ticket = client.get_ref().send_copy(2)?.into_ticket();
    /// if let Some(request) = server.receive()? {
    ///     request.send_copy(*request + 1)?;
    /// } // the end of the stream
    /// while let Some(response) = client.receive(&ticket).await? {
    ///     println!("{}", *response); // 3
    /// }
    /// # Ok(()) }
    /// ```
    pub fn receive<'a>(&'a mut self, ticket: &'a Ticket) -> ReceiveResponse<'a, Req, Resp> {
        ReceiveResponse { port: self, ticket }
    }

    /// The responses to `ticket`'s request as a stream, which ends with
    /// the request's stream (or after an error); dropping it before then
    /// [`finish`](Self::finish)es the request.
    pub fn responses(&mut self, ticket: Ticket) -> Responses<'_, Req, Resp> {
        Responses {
            port: self,
            ticket: Some(ticket),
        }
    }

    /// Ends `ticket`'s request on our side, as dropping its pending
    /// response would: responses still on their way go back to the server
    /// unread, and its slot is free for another request.
    pub fn finish(&mut self, mut ticket: Ticket) {
        ticket.disarm();
        let inbox = self.client.inbox();
        if inbox.current(ticket.slot, ticket.generation) {
            inbox.release(ticket.slot);
        }
    }

    /// Waits until a server is there to take a request, at most `timeout`
    /// (see [`Client::wait_for_server`]; here it looks every few
    /// milliseconds on a tokio timer, as a futex cannot be awaited).
    /// Cancel-safe.
    pub async fn wait_for_server(&self, timeout: Duration) -> Result<(), ServerWaitError> {
        let end = tokio::time::Instant::now().checked_add(timeout);
        let mut pause = Duration::from_millis(1);
        loop {
            if self.client.server_count() > 0 {
                return Ok(());
            }
            let now = tokio::time::Instant::now();
            let left = end.map_or(pause, |e| e.saturating_duration_since(now));
            if left.is_zero() {
                return Err(ServerWaitError::NoServer {
                    service: self.client.inbox().name.clone(),
                    waited: timeout,
                });
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Ends a wait left pending: servers stop writing to the wake-up
    /// descriptor.
    fn cancel(&mut self) {
        // Arming is the client's, not a request's: the slot plays no part.
        let asking = Asking {
            client: &self.client,
            slot: 0,
        };
        self.readiness.cancel(&asking);
    }

    /// The poll behind [`receive`](Self::receive) and the stream.
    fn poll_response(
        &mut self,
        ticket: &Ticket,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Response<Resp>>, AsyncError<ReqResReceiveError>>> {
        let inbox = self.client.inbox();
        inbox.release_dropped();
        if !inbox.current(ticket.slot, ticket.generation) {
            // Over already (its end or its server's death was taken).
            return Poll::Ready(Ok(None));
        }
        let asking = Asking {
            client: &self.client,
            slot: ticket.slot,
        };
        let got = self.readiness.poll_take(&asking, cx, |a| {
            let inbox = a.client.inbox();
            match inbox.next_for(a.slot)? {
                Some((raw, elems)) => Response::checked(raw, elems).map(|r| Some(Some(r))),
                None if inbox.finished(a.slot) => Ok(Some(None)),
                None => Ok(None),
            }
        });
        let over = matches!(
            &got,
            Poll::Ready(
                Ok(None)
                    | Err(AsyncError::Port(
                        ReqResReceiveError::ServerGone | ReqResReceiveError::Aborted
                    ))
            )
        );
        // Over, or the response taken was its last (it came with the end,
        // `send_last`): the slot is free for another request now, not at
        // the next receive.
        let last = matches!(&got, Poll::Ready(Ok(Some(_)))) && inbox.finished(ticket.slot);
        if over || last {
            inbox.release(ticket.slot);
        }
        got
    }
}

impl<Req: ShmSafe, Resp: Payload + ?Sized> AsyncClient<Req, Resp> {
    /// Sends a copy of `value` as a request and returns its [`Ticket`]
    /// (the blocking client's [`send_copy`](Client::send_copy) gives a
    /// pending response, which borrows the client across an `.await`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-send-copy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/AsyncSendCopy".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let mut client = hako::aio::AsyncClient::new(service.client_builder().create()?)?;
    /// let ticket = match client.send_copy(20) {
    ///     Ok(ticket) => ticket,
    ///     Err(e) => return Err(e.into()),
    /// };
    /// server.receive()?.ok_or("no request")?.send_last_copy(21)?;
    /// let response = client.receive(&ticket).await?.ok_or("no response")?;
    /// assert_eq!(*response, 21);
    /// # Ok(()) }
    /// ```
    pub fn send_copy(&self, value: Req) -> Result<Ticket, RequestSendError> {
        Ok(self.client.send_copy(value)?.into_ticket())
    }

}

impl<Req: ShmSafe, Resp: Payload + ?Sized> AsyncClient<[Req], Resp> {
    /// Sends a copy of `data` as a request and returns its [`Ticket`] (see
    /// [`send_copy`](AsyncClient::send_copy)).
    pub fn send_slice_copy(&self, data: &[Req]) -> Result<Ticket, RequestSendError>
    where
        Req: Copy,
    {
        Ok(self.client.send_slice_copy(data)?.into_ticket())
    }
}

/// The future of [`AsyncClient::receive`].
#[must_use = "futures do nothing unless awaited"]
pub struct ReceiveResponse<'a, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    port: &'a mut AsyncClient<Req, Resp>,
    ticket: &'a Ticket,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Future for ReceiveResponse<'_, Req, Resp> {
    type Output = Result<Option<Response<Resp>>, AsyncError<ReqResReceiveError>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.port.poll_response(this.ticket, cx)
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for ReceiveResponse<'_, Req, Resp> {
    fn drop(&mut self) {
        self.port.cancel();
    }
}

/// The stream of [`AsyncClient::responses`].
#[must_use = "streams do nothing unless polled"]
pub struct Responses<'a, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    port: &'a mut AsyncClient<Req, Resp>,
    /// `None` once the stream ended.
    ticket: Option<Ticket>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> futures_core::Stream
    for Responses<'_, Req, Resp>
{
    type Item = Result<Response<Resp>, AsyncError<ReqResReceiveError>>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(ticket) = this.ticket.as_ref() else {
            return Poll::Ready(None);
        };
        let got = match this.port.poll_response(ticket, cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(got) => got,
        };
        match got {
            Ok(Some(r)) => Poll::Ready(Some(Ok(r))),
            Ok(None) => {
                if let Some(mut done) = this.ticket.take() {
                    done.disarm();
                }
                Poll::Ready(None)
            }
            Err(e) => {
                // After an error the request is over (its server went) or
                // the next poll tries again (a corrupted response).
                Poll::Ready(Some(Err(e)))
            }
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for Responses<'_, Req, Resp> {
    fn drop(&mut self) {
        self.port.cancel();
        if let Some(ticket) = self.ticket.take() {
            self.port.finish(ticket);
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> RoomPort for AsyncClient<Req, Resp> {
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let port = &self.client;
        self.room.poll_room(cx, |alive| {
            if alive {
                port.has_room_alive()
            } else {
                port.has_room()
            }
        })
    }
}
