//! [`AsyncReader`]: a blackboard reader whose watched entries' changes are
//! awaited under tokio.

use std::future::Future;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::error::AsyncError;
use super::readiness::{Readiness, Waitable};
use crate::blackboard::access::BlackboardError;
use crate::blackboard::reader::Reader;

impl Waitable for Reader {
    type Error = BlackboardError;
    fn arm(&self) -> bool {
        self.arm_wakeup()
    }
    fn disarm(&self) {
        self.disarm_wakeup()
    }
    fn peers_registered(&self) -> bool {
        // A board outlives its writers: a reader waits on for the next one.
        false
    }
    fn peers_gone(&self, _saw: &mut bool) -> Result<(), BlackboardError> {
        Ok(())
    }
    fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &crate::port::wait::Adaptive) {
        Reader::spin_policy(self)
    }
}

/// A blackboard [`Reader`] whose watched entries' changes are awaited:
/// [`changed`](Self::changed) resolves once an entry whose handle
/// [`watch`](crate::ReaderEntry::watch)es it changed since the handle last
/// read it; read the new values through the handles.
///
/// `Send` (as its future is), not `Sync`: one task at a time waits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-async-reader", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let board = node
///     .service_builder(&"Doc/AsyncBoard".try_into()?)
///     .blackboard()
///     .entry::<u64>("goal", 0)
///     .open_or_create()?;
/// let reader = board.reader_builder().create()?;
/// let goal = reader.entry::<u64>("goal")?;
/// goal.watch();
/// let mut reader = hako::aio::AsyncReader::new(reader)?;
/// let writer = board.writer_builder().create()?;
/// writer.entry::<u64>("goal")?.update(42)?;
/// reader.changed().await?;
/// assert_eq!(goal.get()?, 42);
/// # Ok(()) }
/// ```
pub struct AsyncReader {
    // Declared first: deregistered before the reader's FIFO closes.
    readiness: Readiness,
    reader: Reader,
}

impl std::fmt::Debug for AsyncReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AsyncReader").field(&self.reader).finish()
    }
}

impl AsyncReader {
    /// Registers `reader`'s wake-up descriptor with the current tokio
    /// runtime's reactor.
    ///
    /// # Panics
    /// Outside a tokio runtime with I/O enabled, as tokio's own I/O types.
    pub fn new(reader: Reader) -> std::io::Result<Self> {
        // SAFETY: as in AsyncSubscriber::new: the reader's FIFO outlives
        // `readiness`, declared first and dropped first.
        let readiness = unsafe { Readiness::new(reader.as_fd())? };
        Ok(Self { readiness, reader })
    }

    /// Waits until a watched entry changed since its handle last read it.
    /// Cancel-safe.
    pub fn changed(&mut self) -> Changed<'_> {
        Changed { port: self }
    }

    /// The poll behind [`changed`](Self::changed), for hand-written
    /// futures. Call [`cancel`](Self::cancel) when you stop polling before
    /// it is ready.
    pub fn poll_changed(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AsyncError<BlackboardError>>> {
        self.readiness
            .poll_take(&self.reader, cx, |r| Ok(r.has_changes().then_some(())))
    }

    /// Ends a wait that [`poll_changed`](Self::poll_changed) left pending.
    pub fn cancel(&mut self) {
        self.readiness.cancel(&self.reader);
    }

    /// The reader, for its other calls.
    pub fn get_ref(&self) -> &Reader {
        &self.reader
    }

    /// The reader back, registered with no reactor.
    pub fn into_inner(mut self) -> Reader {
        self.cancel();
        let Self { readiness, reader } = self;
        drop(readiness);
        reader
    }
}

/// The future of [`AsyncReader::changed`].
#[must_use = "futures do nothing unless awaited"]
pub struct Changed<'a> {
    port: &'a mut AsyncReader,
}

impl Future for Changed<'_> {
    type Output = Result<(), AsyncError<BlackboardError>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().port.poll_changed(cx)
    }
}

impl Drop for Changed<'_> {
    fn drop(&mut self) {
        self.port.cancel();
    }
}
