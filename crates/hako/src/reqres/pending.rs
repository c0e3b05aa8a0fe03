//! A request in flight, seen from its client: the stream of responses it
//! gets, and a received response.

use std::marker::PhantomData;
use std::ops::Deref;
use std::time::{Duration, Instant};

use super::errors::ReqResReceiveError;
use super::inbox::{DroppedTickets, Inbox};
use std::sync::Arc;
use super::settings::Types;
use crate::port::payload::Payload;
use crate::port::receiver::sample::RawSample;


/// The responses to one request: zero, one or many, then the end of the
/// stream (the server dropped its active request).
///
/// Dropping it ends the request on the client's side: responses still on
/// their way are given back to the server unread, and the request's slot
/// is free for another one (under a new generation, so that no late
/// response can reach the new request).
///
/// ```
/// # use std::time::Duration;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pending", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// # let service = node.service_builder(&"Doc/Pending".try_into()?).request_response::<u64, u64>().open_or_create()?;
/// # let server = service.server_builder().create()?;
/// # let client = service.client_builder().create()?;
/// // Many requests in flight, each getting its own responses.
/// let pending: Vec<_> = (0..4).map(|n| client.send_copy(n)).collect::<Result<_, _>>()?;
/// # while let Some(request) = server.receive()? {
/// #     request.send_copy(*request * 10)?;
/// # }
/// for p in &pending {
///     loop {
///         match p.receive_timeout(Duration::from_millis(100)) {
///             Ok(Some(response)) => println!("{}", *response),
///             Ok(None) if p.is_finished() => break, // the stream ended
///             Ok(None) => {}                         // nothing yet
///             Err(hako::ReqResReceiveError::ServerGone) => break, // it died mid-stream
///             Err(e) => return Err(e.into()),
///         }
///     }
/// }
/// # Ok(()) }
/// ```
pub struct PendingResponse<'c, Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    client: &'c Inbox,
    slot: u32,
    generation: u32,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for PendingResponse<'_, Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingResponse")
            .field("slot", &self.slot)
            .field("generation", &self.generation)
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Drop for PendingResponse<'_, Req, Resp> {
    fn drop(&mut self) {
        self.client.release(self.slot);
    }
}

impl<'c, Req: Payload + ?Sized, Resp: Payload + ?Sized> PendingResponse<'c, Req, Resp> {
    pub(super) fn new(client: &'c Inbox, (slot, generation): (u32, u32)) -> Self {
        Self {
            client,
            slot,
            generation,
            _t: PhantomData,
        }
    }

    /// Takes the next response, if one is there; never blocks. `Ok(None)`
    /// when nothing is there now; once the stream has ended, always (see
    /// [`is_finished`](Self::is_finished)). Fails with
    /// [`ReqResReceiveError::ServerGone`] when the server left or died
    /// before ending the stream and every response it sent was taken.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pending-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Poll".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(1)?;
    /// assert!(pending.receive()?.is_none()); // not answered yet
    /// server.receive()?.ok_or("no request")?.send_copy(2)?; // and the end
    /// assert_eq!(pending.receive()?.map(|r| *r), Some(2));
    /// assert!(pending.receive()?.is_none());
    /// assert!(pending.is_finished());
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn receive(&self) -> Result<Option<Response<Resp>>, ReqResReceiveError> {
        self.client
            .next_for(self.slot)?
            .map(|(raw, elems)| Response::checked(raw, elems))
            .transpose()
    }

    /// Whether the server ended the stream and every response was taken.
    pub fn is_finished(&self) -> bool {
        self.client.finished(self.slot)
    }

    fn has_queued(&self) -> bool {
        self.client.queued_for(self.slot)
    }

    /// The request as a [`Ticket`], for an async client
    /// (`hako::aio::AsyncClient`, the `tokio` feature), which takes the
    /// responses by ticket: this pending response goes, the request stays
    /// in flight.
    pub fn into_ticket(self) -> Ticket {
        let t = Ticket {
            slot: self.slot,
            generation: self.generation,
            dropped: Some(self.client.dropped.clone()),
        };
        // The slot is the ticket's now: released when its stream is over
        // or the ticket is finished, not as this drops.
        std::mem::forget(self);
        t
    }

    /// Whether the server the request went to is still there: registered,
    /// and its process alive (this asks the kernel). A non-blocking
    /// [`receive`](Self::receive) only sees a server gone once it left the
    /// service's table (it left, or its death was noticed); the blocking
    /// receives ask this at least every 100 ms while they sleep.
    pub fn server_there(&self) -> bool {
        self.client.server_alive(self.slot)
    }

    /// Waits up to `timeout` for the next response: `Ok(Some)` with it,
    /// `Ok(None)` at the end of the stream or on timeout (tell them apart
    /// with [`is_finished`](Self::is_finished)).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pending-receive-timeout", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Slow".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let _server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(1)?;
    /// match pending.receive_timeout(Duration::from_millis(10)) {
    ///     Ok(Some(response)) => println!("response {}", *response),
    ///     Ok(None) if pending.is_finished() => println!("no more responses"),
    ///     Ok(None) => println!("nothing within 10 ms"), // this time
    ///     Err(e) => eprintln!("cannot receive: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn receive_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<Response<Resp>>, ReqResReceiveError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// Waits for the next response: `Ok(Some)` with it, `Ok(None)` when the
    /// stream has ended, [`ReqResReceiveError::ServerGone`] when the server
    /// went without ending it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-pending-blocking-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Countdown".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let pending = client.send_copy(3)?;
    /// let request = server.receive()?.ok_or("no request")?;
    /// for n in (1..=*request).rev() {
    ///     request.send_copy(n)?;
    /// }
    /// drop(request); // the end of the stream
    /// while let Some(response) = pending.blocking_receive()? {
    ///     println!("{}", *response); // 3, 2, 1
    /// }
    /// # Ok(()) }
    /// ```
    pub fn blocking_receive(&self) -> Result<Option<Response<Resp>>, ReqResReceiveError> {
        loop {
            if let Some(r) = self.wait(None)? {
                return Ok(Some(r));
            }
            if self.is_finished() {
                return Ok(None);
            }
        }
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<Option<Response<Resp>>, ReqResReceiveError> {
        let got = self.client.port.rx.wait_for(
            deadline,
            || match self.receive()? {
                Some(r) => Ok(Some(Some(r))),
                None if self.is_finished() => Ok(Some(None)),
                None => Ok(None),
            },
            || self.client.port.rx.has_samples(),
            || {
                // What the server sent before it went is still taken.
                if self.server_there() || self.client.port.rx.has_samples() || self.has_queued() {
                    Ok(())
                } else {
                    Err(ReqResReceiveError::ServerGone)
                }
            },
        )?;
        Ok(got.flatten())
    }
}

/// A request in flight whose responses an async client takes (see
/// [`PendingResponse::into_ticket`]): its slot and the slot's generation.
/// Not `Clone`: one owner takes its responses and finishes it. Dropping it
/// ends the request as dropping its pending response would (its slot is
/// freed at the client's next send or receive, and its responses go back
/// to the server unread); a ticket whose stream ended holds nothing.
#[must_use = "a ticket's request is given up when the ticket is dropped"]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
pub struct Ticket {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
    /// Where its drop is told (`None` once it was finished).
    dropped: Option<Arc<DroppedTickets>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("slot", &self.slot)
            .field("generation", &self.generation)
            .finish()
    }
}

impl Ticket {
    /// The ticket's request is over, ended by its client: its drop tells
    /// nothing.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn disarm(&mut self) {
        self.dropped = None;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(d) = self.dropped.take() {
            d.push(self.slot, self.generation);
        }
    }
}

/// A response received by a client: dereferences to the payload in shared
/// memory, where the server wrote it. Dropping it hands the chunk back to
/// the server.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-response", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Response".try_into()?)
///     .request_response::<u64, [u8; 4]>()
///     .open_or_create()?;
/// let server = service.server_builder().create()?;
/// let client = service.client_builder().create()?;
/// let pending = client.send_copy(0)?;
/// server.receive()?.ok_or("no request")?.send_last_copy(*b"pong")?;
/// let response = pending.blocking_receive()?.ok_or("no response")?;
/// assert_eq!(&*response, b"pong"); // read in the server's memory
/// assert_eq!(response.server_id(), server.id());
/// # Ok(()) }
/// ```
pub struct Response<T: Payload + ?Sized> {
    raw: RawSample,
    /// The payload's element count (validated).
    elems: usize,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> Response<T> {
    /// The response in `raw`, `elems` elements long (validated against the
    /// chunk), if its bytes are a value of `T`.
    pub(crate) fn checked(raw: RawSample, elems: usize) -> Result<Self, ReqResReceiveError> {
        // SAFETY: `elems` was validated against the chunk.
        if !unsafe { raw.holds_valid::<T>(elems) } {
            return Err(ReqResReceiveError::Corrupted {
                peer: raw.sender_id(),
                what: super::errors::INVALID_VALUE,
            });
        }
        Ok(Self {
            raw,
            elems,
            _t: PhantomData,
        })
    }

    /// The id of the server that sent it.
    pub fn server_id(&self) -> u64 {
        self.raw.sender_id()
    }
}

impl<T: crate::port::payload::ShmSafe> Response<[T]> {
    /// The first element, for code that reads through raw pointers
    /// (language bindings): [`len`](Self::len) elements of the service's
    /// element size lie there (see `ReqResBuilder::payload_types`).
    pub fn as_ptr(&self) -> *const T {
        self.raw.payload().cast()
    }

    /// Elements of the payload.
    pub fn len(&self) -> usize {
        self.elems
    }

    /// Whether the payload has no elements.
    pub fn is_empty(&self) -> bool {
        self.elems == 0
    }
}

impl<T: Payload + ?Sized> Deref for Response<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the message's length was validated against the envelope
        // (`elems` elements of T, within the chunk: the port layer checked
        // it against the chunk size), the payload starts the chunk, aligned
        // for T (chunks are aligned at least as much), the mapping lives as
        // long as the sample, and T is ShmSafe, so any bytes a misbehaving
        // server writes are still a valid T.
        unsafe { &*T::make_ptr(self.raw.payload().cast_mut(), self.elems) }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug> std::fmt::Debug for Response<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Response").field(&&**self).finish()
    }
}
