//! Types shared by the example programs.

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
