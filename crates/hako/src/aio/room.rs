//! The async forms of sends that wait: [`AsyncPublisher`], and
//! [`ready`](crate::aio::AsyncClient::ready) on the async client and
//! server. A send waits only under backpressure (`Block`) while a
//! receiver's queue is full; these await room instead.
//!
//! Readers do not wake writers: a receive that makes room writes nothing a
//! writer could sleep on (that would cost every receive a load of the
//! writer's wake block). So a task waiting for room looks again at once,
//! letting the runtime run its other tasks in between, for the first
//! [`YIELD_PHASE`]; after that it looks every [`ROOM_TICK`] on a tokio
//! timer, and every [`LIVENESS_TICK`] it also disconnects full receivers
//! whose process died, as a blocked send does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::readiness::LIVENESS_TICK;
use crate::port::payload::Payload;
use crate::pubsub::publisher::Publisher;
use crate::pubsub::sample_mut::SampleMut;

/// How long a task waiting for room looks again at once.
pub(crate) const YIELD_PHASE: Duration = Duration::from_micros(100);
/// How often it looks after that.
pub(crate) const ROOM_TICK: Duration = Duration::from_millis(1);

/// The state of one wait for room.
#[derive(Default)]
pub(crate) struct RoomWait {
    began: Option<Instant>,
    checked: Option<Instant>,
    tick: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl RoomWait {
    /// `Ready` once `room(check_alive)` says a send would not wait.
    pub(crate) fn poll_room(
        &mut self,
        cx: &mut Context<'_>,
        room: impl Fn(bool) -> bool,
    ) -> Poll<()> {
        let now = Instant::now();
        let checked = *self.checked.get_or_insert(now);
        let check_alive = now.duration_since(checked) >= LIVENESS_TICK;
        if check_alive {
            self.checked = Some(now);
        }
        if room(check_alive) {
            *self = Self::default();
            return Poll::Ready(());
        }
        let began = *self.began.get_or_insert(now);
        if now.duration_since(began) < YIELD_PHASE {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            let tick = self
                .tick
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(ROOM_TICK)));
            if tick.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.tick = None;
            if room(false) {
                *self = Self::default();
                return Poll::Ready(());
            }
        }
    }
}

/// A port whose sends may wait for room.
pub(crate) trait RoomPort {
    /// The poll behind `ready`.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()>;
}

/// The future of `ready` on the async ports that send: done once a send
/// would go out without waiting. Cancel-safe (it takes and sends nothing).
#[must_use = "futures do nothing unless awaited"]
pub struct Ready<'a, P> {
    port: &'a mut P,
}

impl<'a, P> Ready<'a, P> {
    pub(crate) fn new(port: &'a mut P) -> Self {
        Self { port }
    }
}

impl<P: RoomPort> Future for Ready<'_, P> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().port.poll_room(cx)
    }
}

/// A [`Publisher`] whose sends await room instead of blocking the thread
/// when it waits under backpressure (`BackpressureStrategy::Block`) and a
/// subscriber's queue is full. Under any other overflow setting a send
/// never waits, and the publisher's own calls do.
///
/// `Send` (as its futures are), not `Sync`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-publisher", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use hako::aio::{AsyncError, AsyncPublisher, AsyncSubscriber};
/// let service = node
///     .service_builder(&"Doc/AsyncPublisher".try_into()?)
///     .publish_subscribe::<u64>()
///     .overflow_policy(hako::OverflowPolicy::Backpressure)
///     .open_or_create()?;
/// let mut subscriber = AsyncSubscriber::new(service.subscriber_builder().create()?)?;
/// let reader = tokio::spawn(async move {
///     for _ in 0..100 {
///         subscriber.receive().await?;
///     }
///     Ok::<_, AsyncError<hako::ReceiveError>>(())
/// });
/// let mut publisher = AsyncPublisher::new(service.publisher_builder().create()?);
/// for n in 0..100u64 {
///     // Cancel-safe: waits for room, takes nothing.
///     publisher.ready().await;
///     publisher.get_ref().send_copy(n)?;
/// }
/// reader.await??;
/// # Ok(()) }
/// ```
pub struct AsyncPublisher<T: Payload + ?Sized> {
    publisher: Publisher<T>,
    wait: RoomWait,
}

impl<T: Payload + ?Sized> std::fmt::Debug for AsyncPublisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncPublisher")
            .field(&self.publisher)
            .finish()
    }
}

impl<T: Payload + ?Sized> RoomPort for AsyncPublisher<T> {
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let publisher = &self.publisher;
        self.wait.poll_room(cx, |alive| {
            if alive {
                publisher.has_room_alive()
            } else {
                publisher.has_room()
            }
        })
    }
}

impl<T: Payload + ?Sized> AsyncPublisher<T> {
    /// Wraps `publisher` (no runtime needed until a wait).
    pub fn new(publisher: Publisher<T>) -> Self {
        Self {
            publisher,
            wait: RoomWait::default(),
        }
    }

    /// The publisher, to loan and send.
    pub fn get_ref(&self) -> &Publisher<T> {
        &self.publisher
    }

    /// The publisher back.
    pub fn into_inner(self) -> Publisher<T> {
        self.publisher
    }

    /// Waits until a send would go out without waiting (every subscriber's
    /// queue has room, or the publisher never waits). Only this publisher
    /// fills its subscribers' queues, so the next send after it, from this
    /// task, does not wait.
    ///
    /// Cancel-safe: it takes and sends nothing.
    pub fn ready(&mut self) -> Ready<'_, Self> {
        Ready::new(self)
    }

    /// Waits for room, then sends `sample`; the number of subscribers it
    /// reached. Dropping the future before it is done drops the sample
    /// unsent (its chunk goes back to the pool): in a `select!`, await
    /// [`ready`](Self::ready) and send synchronously instead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-publisher-send", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/AsyncSend".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let mut publisher = hako::aio::AsyncPublisher::new(service.publisher_builder().create()?);
    /// let sample = publisher.get_ref().loan_uninit()?.write_payload(7);
    /// assert_eq!(publisher.send(sample).await, 1);
    /// assert_eq!(subscriber.receive()?.map(|s| *s), Some(7));
    /// # Ok(()) }
    /// ```
    pub async fn send(&mut self, sample: SampleMut<T>) -> usize {
        self.ready().await;
        sample.send()
    }
}
