//! The receiving half of the data path, shared by every pattern that moves
//! payloads: a port registered in its service's second table that maps
//! each sender's data segment, takes descriptors from its queue there,
//! validates them, and hands out samples that return their chunk when
//! dropped.
//!
//! Within the folder imports point down: `settings` → `conn` → `sample` →
//! `state` → `inner` → `receive`. `inner.rs` and `receive.rs` both
//! implement [`Receiver`](inner::Receiver): the first its making and
//! waiting, the second taking samples.

pub(crate) mod conn;
pub(crate) mod inner;
pub(crate) mod receive;
pub(crate) mod sample;
pub(crate) mod settings;
pub(crate) mod state;
