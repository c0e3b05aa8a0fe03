//! What an async wait can fail with.

/// Why an async wait failed.
#[derive(Debug, thiserror::Error)]
pub enum AsyncError<E> {
    /// What the port's blocking call would have said.
    #[error(transparent)]
    Port(E),
    /// The tokio runtime the port was registered with has shut its I/O
    /// driver down; the port is still usable (`into_inner`).
    #[error("the tokio runtime of the port is gone: {0}")]
    Runtime(std::io::Error),
}
