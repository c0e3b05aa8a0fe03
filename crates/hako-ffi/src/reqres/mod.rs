//! Request/response: services and what their ports share ([`service`]),
//! clients with their pending responses ([`client`]), servers with their
//! active requests ([`server`]). Loans and received responses are
//! caller-owned structs, as samples are (see `sample.rs`); pending
//! responses and active requests are handles, tied to their port: a
//! client or server with some still live refuses to drop
//! (`HAKO_ERROR_MISUSE`).

// The service first: the C header lists it first, as cbindgen reads the
// files in this order.
pub(crate) mod service;

mod client;
mod server;

pub use client::*;
pub use server::*;
pub use service::*;
