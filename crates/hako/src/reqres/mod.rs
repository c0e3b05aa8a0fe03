//! The request/response pattern: a client loans a request in its own pool,
//! writes it in place and sends it to a server; the server reads it where
//! it was written and answers with zero, one or many responses loaned from
//! its pool, which the client reads in place; dropping the active request
//! ends the stream. Only descriptors cross, in both directions.
//!
//! Clients and servers are each one entry of the service's tables (clients
//! in the first, servers in the second) with a sender and a receiver of the
//! port layer on it (`duplex.rs`). Every message carries, in its
//! descriptor's tag, a header that names its request by slot and
//! generation (`envelope.rs`).
//!
//! Within the folder imports point down: `settings`, `envelope`, `errors`
//! → `message`, `duplex` → `inbox` → `pending` → `client` → `client_builder`; `message` →
//! `active` → `server`; both → `service`.

pub(crate) mod active;
pub(crate) mod client;
pub(crate) mod client_builder;
pub(crate) mod duplex;
pub mod envelope;
pub(crate) mod errors;
pub(crate) mod inbox;
pub(crate) mod message;
pub(crate) mod pending;
pub(crate) mod server;
pub(crate) mod service;
pub(crate) mod settings;
