//! Request/response: the service (`service.rs`), which makes clients and
//! their pending responses (`client.rs`) and servers and their active
//! requests (`server.rs`); this file only declares them and re-exports the
//! classes.
//!
//! Pending responses and loaned requests borrow their client, active
//! requests their server: each holds a reference to its port's Python
//! object (so the port outlives it) and counts itself in the port's
//! `live`, and a port with live borrowers refuses `close()`. The port
//! itself is boxed, so the borrow's address never moves.

pub(crate) mod client;
pub(crate) mod server;
pub(crate) mod service;

pub use client::{Client, PendingResponse};
pub use server::{ActiveRequest, Server};
pub use service::ReqResService;
