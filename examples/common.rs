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

/// The transmission service, defined once for every program of the
/// examples (the C ones ask for the same, `c/transmission.h`): whichever
/// starts first creates it with these settings, and the others open it
/// and find what they ask for, in any start order.
pub fn transmission_service(
    node: &hako::Node,
) -> Result<hako::PubSubService<Transmission>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(node
        .service_builder(&SERVICE.try_into()?)
        .publish_subscribe::<Transmission>()
        .subscriber_max_buffer_size(4) // each subscriber's queue
        .history_size(3) // the last 3, for a subscriber that comes late
        .open_or_create()?)
}

/// The event service of the notifier/listener pair.
pub const EVENT_SERVICE: &str = "Examples/Doorbell";

/// Largest event id the notifier/listener pair uses. Both programs create
/// the service with the same setting, so either may start first.
pub const EVENT_ID_MAX: u64 = 7;

/// A request of the client/server pair: two numbers to add.
#[derive(Debug, Clone, Copy, Default, ShmSafe)]
#[repr(C)]
pub struct AddRequest {
    /// The first number.
    pub a: u64,
    /// The second number.
    pub b: u64,
}

/// The server's answer to an [`AddRequest`].
#[derive(Debug, Clone, Copy, Default, ShmSafe)]
#[repr(C)]
pub struct AddResponse {
    /// `a + b`.
    pub sum: u64,
}

/// The request/response service of the client/server pair.
pub const ADD_SERVICE: &str = "Examples/Adder";

/// The streaming service: a request `n` is answered with `0..n`, one
/// response each, then the end of the stream.
pub const COUNT_SERVICE: &str = "Examples/Counter";

/// Requests a client of the examples may have in flight (the pipelined
/// client uses them all). Every program opens the services with the same
/// settings, so any may start first.
pub const IN_FLIGHT: u32 = 16;

/// The first command-line argument as a number, or `default`.
pub fn arg_or(default: u64) -> Result<u64, std::num::ParseIntError> {
    std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()
        .map(|n| n.unwrap_or(default))
}

/// The error type of the examples' `main`: any error, printed with its
/// `Display` text when `main` returns it (a plain `Box<dyn Error>` from
/// `main` is printed with `Debug`, which shows hako's error enums in Rust
/// syntax instead of their message).
pub struct Report(Box<dyn std::error::Error + Send + Sync>);

impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for Report {
    fn from(e: E) -> Self {
        Report(e.into())
    }
}

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}
