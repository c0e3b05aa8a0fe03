//! The sending half of the data path, shared by every pattern that moves
//! payloads: a pool of chunks in a data segment of its own, loans of them,
//! one submission and one return ring per receiver, history for late
//! joiners, and what happens when a receiver's queue is full.
//!
//! Within the folder imports point down: `settings` → `conn` → `params` →
//! `state` → `deliver` → `inner` → `loan`. `state.rs` and `deliver.rs`
//! both implement [`SenderState`](state::SenderState): the first its
//! bookkeeping, the second delivery; each also gives
//! [`ConnState`](conn::ConnState) the steps that borrow one connection
//! apart from the chunk book, so that a send indexes its connection once.

pub(crate) mod conn;
pub(crate) mod deliver;
pub(crate) mod inner;
pub(crate) mod loan;
pub(crate) mod params;
pub(crate) mod settings;
pub(crate) mod state;
