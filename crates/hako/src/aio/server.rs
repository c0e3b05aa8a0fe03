//! [`AsyncServer`]: a request/response server awaited under tokio.

use std::future::Future;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::error::AsyncError;
use super::readiness::{Readiness, Waitable};
use super::room::{Ready, RoomPort, RoomWait};
use crate::port::payload::Payload;
use crate::reqres::errors::ReqResReceiveError;
use crate::reqres::active::ActiveRequest;
use crate::reqres::server::Server;

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Waitable for Server<Req, Resp> {
    type Error = ReqResReceiveError;
    fn arm(&self) -> bool {
        self.wait_arm()
    }
    fn disarm(&self) {
        self.wait_disarm()
    }
    fn peers_registered(&self) -> bool {
        false
    }
    fn peers_gone(&self, _saw: &mut bool) -> Result<(), ReqResReceiveError> {
        // A server waits for clients however long none comes, as its
        // blocking receive does.
        Ok(())
    }
    fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
        self.wait_spin_policy()
    }
}

/// A [`Server`] whose requests are awaited with
/// [`receive`](Self::receive). Answering stays synchronous (a response
/// waits only under the server's `Block` backpressure, for a client that
/// does not read).
///
/// `Send`, and so are its futures and the [`ActiveRequest`]s they give: a
/// request may be held across an `.await` (say, while its answer is
/// computed) in a task of a multi-threaded runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-server", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/AsyncServer".try_into()?)
///     .request_response::<u64, u64>()
///     .open_or_create()?;
/// let mut server = hako::aio::AsyncServer::new(service.server_builder().create()?)?;
/// let client = service.client_builder().create()?;
/// let pending = client.send_copy(21)?;
/// let request = server.receive().await?;
/// let n = *request;
/// tokio::task::yield_now().await; // the request may wait across awaits
/// request.send_last_copy(n * 2)?;
/// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(42));
/// # Ok(()) }
/// ```
pub struct AsyncServer<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    // Declared first: deregistered before the server's FIFO closes.
    readiness: Readiness,
    server: Server<Req, Resp>,
    room: RoomWait,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for AsyncServer<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncServer").field(&self.server).finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> AsyncServer<Req, Resp> {
    /// Registers `server`'s wake-up descriptor with the current tokio
    /// runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(server: Server<Req, Resp>) -> std::io::Result<Self> {
        // SAFETY: as in AsyncSubscriber::new: the server's FIFO outlives
        // `readiness`, declared first and dropped first.
        let readiness = unsafe { Readiness::new(server.as_fd())? };
        Ok(Self {
            readiness,
            server,
            room: RoomWait::default(),
        })
    }

    /// Waits for the next request: what [`Server::blocking_receive`] gives,
    /// without a thread. The request borrows the server: answer it (or
    /// drop it, which ends its stream) before the next receive.
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing.
    pub fn receive(&mut self) -> ReceiveRequest<'_, Req, Resp> {
        ReceiveRequest { port: Some(self) }
    }

    /// Ends a wait left pending by a future dropped unpolled: clients stop
    /// writing to the wake-up descriptor. (The futures here do it when
    /// dropped.)
    pub fn cancel(&mut self) {
        self.readiness.cancel(&self.server);
    }

    /// The server, for its other calls.
    pub fn get_ref(&self) -> &Server<Req, Resp> {
        &self.server
    }

    /// Waits until a response sent now would go out without waiting (the
    /// queues it goes to have room, or the port never waits: see
    /// [`Server::has_room`](crate::Server::has_room)).
    /// Only this port fills those queues, so the next send after it, from
    /// this task, does not wait.
    ///
    /// Cancel-safe: it takes and sends nothing.
    pub fn ready(&mut self) -> Ready<'_, Self> {
        Ready::new(self)
    }

    /// The server back, registered with no reactor.
    pub fn into_inner(mut self) -> Server<Req, Resp> {
        self.cancel();
        let Self {
            readiness, server, ..
        } = self;
        drop(readiness);
        server
    }
}

/// The future of [`AsyncServer::receive`].
#[must_use = "futures do nothing unless awaited"]
pub struct ReceiveRequest<'a, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    /// Taken when the request is handed out: it borrows the server for as
    /// long as the future did.
    port: Option<&'a mut AsyncServer<Req, Resp>>,
}

impl<'a, Req: Payload + ?Sized, Resp: Payload + ?Sized> Future for ReceiveRequest<'a, Req, Resp> {
    type Output = Result<ActiveRequest<'a, Req, Resp>, AsyncError<ReqResReceiveError>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(port) = this.port.as_mut() else {
            panic!("ReceiveRequest polled after it completed");
        };
        let taken = match port.readiness.poll_take(&port.server, cx, Server::take) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(t)) => t,
        };
        let port: &'a AsyncServer<Req, Resp> = this.port.take().expect("checked above");
        Poll::Ready(Ok(port.server.activate(taken)))
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for ReceiveRequest<'_, Req, Resp> {
    fn drop(&mut self) {
        if let Some(port) = self.port.as_mut() {
            port.cancel();
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> RoomPort for AsyncServer<Req, Resp> {
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let port = &self.server;
        self.room.poll_room(cx, |alive| {
            if alive {
                port.has_room_alive()
            } else {
                port.has_room()
            }
        })
    }
}
