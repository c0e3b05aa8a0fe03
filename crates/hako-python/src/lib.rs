//! The `hako` Python package's native module, `hako._hako`: nodes,
//! publish/subscribe, events, request/response and the waitset of the
//! Rust crate, the watcher of a domain's changes, with zero-copy samples through the buffer protocol. The
//! Python part of the package (`python/hako`) re-exports it and adds the
//! payload type names (`_types.py`) and the asyncio waits (`_aio.py`).
//!
//! Every service is opened with byte-slice payloads described at run time
//! (`PubSubBuilder::payload_type`): the Python side says which type it
//! carries (name, size, alignment), so a Python and a Rust process share
//! one service.

#![warn(clippy::undocumented_unsafe_blocks)]

mod board;
mod common;
mod errors;
mod event;
mod node;
mod payload;
mod pubsub;
mod reqres;
mod sample;
mod view;
mod waitset;
mod watch;

use pyo3::prelude::*;

#[pymodule]
fn _hako(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<node::Node>()?;
    m.add_class::<pubsub::PubSubService>()?;
    m.add_class::<pubsub::Publisher>()?;
    m.add_class::<pubsub::Subscriber>()?;
    m.add_class::<sample::Loan>()?;
    m.add_class::<sample::Sample>()?;
    m.add_class::<event::EventService>()?;
    m.add_class::<event::Notifier>()?;
    m.add_class::<event::Listener>()?;
    m.add_class::<reqres::ReqResService>()?;
    m.add_class::<reqres::Client>()?;
    m.add_class::<reqres::PendingResponse>()?;
    m.add_class::<reqres::Server>()?;
    m.add_class::<reqres::ActiveRequest>()?;
    m.add_class::<waitset::WaitSet>()?;
    m.add_class::<watch::Watcher>()?;
    m.add_class::<board::Blackboard>()?;
    m.add_class::<board::BoardWriter>()?;
    m.add_class::<board::BoardReader>()?;
    m.add_class::<board::WriterEntry>()?;
    m.add_class::<board::ReaderEntry>()?;
    m.add_class::<board::BoardLoan>()?;
    m.add_class::<board::BoardView>()?;
    Ok(())
}
