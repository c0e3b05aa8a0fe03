//! Types shared by the example programs.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use hako::ShmSafe;

/// The payload of the publisher/subscriber pair: plain data, `#[repr(C)]`.
#[derive(Debug, Clone, Copy, Default, ShmSafe)]
#[repr(C)]
pub struct Transmission {
    /// Counts up from 0.
    pub seq: u64,
    /// Some measurement.
    pub temperature: f64,
    /// A fixed-size buffer travels along without being copied.
    pub note: [u8; 32],
}

/// The service both programs use.
pub const SERVICE: &str = "Examples/Transmission";

/// The event service of the notifier/listener pair.
pub const EVENT_SERVICE: &str = "Examples/Doorbell";

/// Largest event id the notifier/listener pair uses. Both programs create
/// the service with the same setting, so either may start first.
pub const EVENT_ID_MAX: u64 = 7;
