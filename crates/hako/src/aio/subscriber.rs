//! [`AsyncSubscriber`]: a subscriber awaited under tokio.

use std::future::Future;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::readiness::{Readiness, Waitable};
use super::error::AsyncError;
use crate::port::payload::Payload;
use crate::pubsub::sample::Sample;
use crate::port::receiver::settings::ReceiveError;
use crate::pubsub::subscriber::Subscriber;

impl<T: Payload + ?Sized> Waitable for Subscriber<T> {
    type Error = ReceiveError;
    fn arm(&self) -> bool {
        self.rx.arm()
    }
    fn disarm(&self) {
        self.rx.disarm()
    }
    fn peers_registered(&self) -> bool {
        self.rx.publishers_registered()
    }
    fn peers_gone(&self, saw: &mut bool) -> Result<(), ReceiveError> {
        self.rx.publishers_gone(saw)
    }
    fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
        self.rx.spin_policy()
    }
}

/// A [`Subscriber`] whose samples are awaited: [`receive`](Self::receive),
/// or the [`Stream`](futures_core::Stream) of them.
///
/// `Send` (as its futures are), not `Sync`: one task at a time receives.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-subscriber", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use std::time::Duration;
/// let service = node
///     .service_builder(&"Doc/AsyncSubscriber".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let mut subscriber = hako::aio::AsyncSubscriber::new(service.subscriber_builder().create()?)?;
/// let publisher = service.publisher_builder().create()?;
/// publisher.send_copy(1)?;
/// for _ in 0..2 {
///     tokio::select! {
///         sample = subscriber.receive() => println!("{}", *sample?), // 1
///         // Cancel-safe: a sample that came meanwhile waits for the next call.
///         _ = tokio::time::sleep(Duration::from_millis(10)) => println!("quiet"),
///     }
/// }
/// # Ok(()) }
/// ```
pub struct AsyncSubscriber<T: Payload + ?Sized> {
    // Declared first: deregistered before the subscriber's FIFO closes.
    readiness: Readiness,
    sub: Subscriber<T>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for AsyncSubscriber<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncSubscriber").field(&self.sub).finish()
    }
}

impl<T: Payload + ?Sized> AsyncSubscriber<T> {
    /// Registers `subscriber`'s wake-up descriptor with the current tokio
    /// runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(subscriber: Subscriber<T>) -> std::io::Result<Self> {
        // SAFETY: the subscriber's FIFO stays open while `readiness`
        // lives: both are fields of the result, `readiness` declared first
        // (dropped first), and into_inner drops it before it gives the
        // subscriber back.
        let readiness = unsafe { Readiness::new(subscriber.as_fd())? };
        Ok(Self {
            readiness,
            sub: subscriber,
        })
    }

    /// Waits for the next sample: what [`Subscriber::blocking_receive`]
    /// gives, without a thread: it waits on across a restart of the
    /// publishers, and fails with [`ReceiveError::PublishersGone`] (in
    /// [`AsyncError::Port`]) when every publisher seen during the wait has
    /// left or died and nothing is queued only if the subscriber was built
    /// with [`end_when_publishers_gone(true)`](crate::SubscriberBuilder::end_when_publishers_gone).
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing.
    pub fn receive(&mut self) -> Receive<'_, T> {
        Receive { port: self }
    }

    /// The poll behind [`receive`](Self::receive) and the stream, for
    /// hand-written futures: `Ready` with the next sample, or `Pending`
    /// with `cx` woken when one may have come. Call
    /// [`cancel`](Self::cancel) when you stop polling before it is ready.
    pub fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Sample<T>, AsyncError<ReceiveError>>> {
        self.readiness.poll_take(&self.sub, cx, |s| s.receive())
    }

    /// Ends a wait that [`poll_receive`](Self::poll_receive) left pending:
    /// publishers stop writing to the wake-up descriptor. (The futures
    /// here do it when dropped.)
    pub fn cancel(&mut self) {
        self.readiness.cancel(&self.sub);
    }

    /// The subscriber, for its other calls.
    pub fn get_ref(&self) -> &Subscriber<T> {
        &self.sub
    }

    /// The subscriber back, registered with no reactor.
    pub fn into_inner(mut self) -> Subscriber<T> {
        self.cancel();
        let Self { readiness, sub } = self;
        drop(readiness);
        sub
    }
}

/// The future of [`AsyncSubscriber::receive`].
#[must_use = "futures do nothing unless awaited"]
pub struct Receive<'a, T: Payload + ?Sized> {
    port: &'a mut AsyncSubscriber<T>,
}

impl<T: Payload + ?Sized> Future for Receive<'_, T> {
    type Output = Result<Sample<T>, AsyncError<ReceiveError>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().port.poll_receive(cx)
    }
}

impl<T: Payload + ?Sized> Drop for Receive<'_, T> {
    fn drop(&mut self) {
        self.port.cancel();
    }
}

impl<T: Payload + ?Sized> futures_core::Stream for AsyncSubscriber<T> {
    /// Every sample, and every error a receive gives; the stream never
    /// ends by itself (a wait whose publishers all went yields the error,
    /// and the next one waits for new publishers).
    type Item = Result<Sample<T>, AsyncError<ReceiveError>>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_receive(cx).map(Some)
    }
}
