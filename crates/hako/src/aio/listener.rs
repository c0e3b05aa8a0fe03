//! [`AsyncListener`]: a listener awaited under tokio.

use std::future::Future;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::readiness::{Readiness, Waitable};
use super::error::AsyncError;
use crate::event::listener::{Listener, ListenerError};
use crate::event::settings::EventId;

impl Waitable for Listener {
    type Error = ListenerError;
    fn arm(&self) -> bool {
        Listener::arm(self)
    }
    fn disarm(&self) {
        Listener::disarm(self)
    }
    fn peers_registered(&self) -> bool {
        self.notifiers_registered()
    }
    fn peers_gone(&self, saw: &mut bool) -> Result<(), ListenerError> {
        self.notifiers_gone(saw)
    }
    fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
        Listener::spin_policy(self)
    }
}

/// What a wait yields: each event id that fired, with how often.
pub type Events = Vec<(EventId, u64)>;

/// A [`Listener`] whose events are awaited: [`wait`](Self::wait), or the
/// [`Stream`](futures_core::Stream) of them.
///
/// `Send` (as its futures are), not `Sync`: one task at a time waits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-listener", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node.service_builder(&"Doc/AsyncBell".try_into()?).event().open_or_create()?;
/// let mut listener = hako::aio::AsyncListener::new(service.listener_builder().create()?)?;
/// let notifier = service.notifier_builder().create()?;
/// notifier.notify_with_id(hako::EventId(4))?;
/// for (id, count) in listener.wait().await? {
///     println!("event {} x{count}", id.value());
/// }
/// # Ok(()) }
/// ```
pub struct AsyncListener {
    // Declared first: deregistered before the listener's FIFO closes.
    readiness: Readiness,
    listener: Listener,
}

impl std::fmt::Debug for AsyncListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncListener").field(&self.listener).finish()
    }
}

impl AsyncListener {
    /// Registers `listener`'s wake-up descriptor with the current tokio
    /// runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(listener: Listener) -> std::io::Result<Self> {
        // SAFETY: as in AsyncSubscriber::new: the listener's FIFO outlives
        // `readiness`, declared first and dropped first.
        let readiness = unsafe { Readiness::new(listener.as_fd())? };
        Ok(Self {
            readiness,
            listener,
        })
    }

    /// Waits for events: what [`Listener::blocking_wait`] gives (each event
    /// id that fired, with how often), without a thread. Fails with
    /// [`ListenerError::NotifiersGone`] (in [`AsyncError::Port`]) when
    /// every notifier seen during the wait has left or died and nothing is
    /// pending.
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing.
    pub fn wait(&mut self) -> Wait<'_> {
        Wait { port: self }
    }

    /// The poll behind [`wait`](Self::wait) and the stream, for
    /// hand-written futures. Call [`cancel`](Self::cancel) when you stop
    /// polling before it is ready.
    pub fn poll_wait(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Events, AsyncError<ListenerError>>> {
        self.readiness.poll_take(&self.listener, cx, |l| {
            let events = l.try_wait();
            Ok((!events.is_empty()).then_some(events))
        })
    }

    /// Ends a wait that [`poll_wait`](Self::poll_wait) left pending:
    /// notifiers stop writing to the wake-up descriptor.
    pub fn cancel(&mut self) {
        self.readiness.cancel(&self.listener);
    }

    /// The listener, for its other calls.
    pub fn get_ref(&self) -> &Listener {
        &self.listener
    }

    /// The listener back, registered with no reactor.
    pub fn into_inner(mut self) -> Listener {
        self.cancel();
        let Self {
            readiness,
            listener,
        } = self;
        drop(readiness);
        listener
    }
}

/// The future of [`AsyncListener::wait`].
#[must_use = "futures do nothing unless awaited"]
pub struct Wait<'a> {
    port: &'a mut AsyncListener,
}

impl Future for Wait<'_> {
    type Output = Result<Events, AsyncError<ListenerError>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().port.poll_wait(cx)
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.port.cancel();
    }
}

impl futures_core::Stream for AsyncListener {
    /// Every batch of events, and every error a wait gives; the stream
    /// never ends by itself.
    type Item = Result<Events, AsyncError<ListenerError>>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_wait(cx).map(Some)
    }
}
