//! The error type of this crate: benchmarks report, they do not recover.

/// Any error, with what went wrong in its message.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result with [`BoxError`].
pub type Result<T, E = BoxError> = std::result::Result<T, E>;
