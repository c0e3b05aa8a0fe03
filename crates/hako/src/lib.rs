//! # hako — zero-copy IPC through shared memory
//!
//! hako lets processes on one Linux machine exchange messages through shared
//! memory without copying them: a publisher *loans* a chunk of its shared
//! pool, writes the message in place and *sends* it; only an 8-byte
//! descriptor crosses to each subscriber, which reads the payload where the
//! publisher wrote it. There is no daemon: processes find each other through
//! files in a *domain root* directory on a tmpfs (by default the user's
//! own, `/dev/shm/hako-<uid>`; a shared one is set by `HAKO_ROOT` or a
//! [`Config`]).
//!
//! ## A tour
//!
//! ```
//! use hako::{NodeBuilder, ShmSafe};
//!
//! #[derive(Debug, Clone, Copy, ShmSafe)]
//! #[repr(C)]
//! struct Frame { seq: u64, pixels: [u8; 64] }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # struct Rm(std::path::PathBuf);
//! # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
//! # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-tour", std::process::id())));
//! # std::env::set_var("HAKO_ROOT", &root.0); // this example's private domain
//! // A node owns ports; its liveness is a lock the kernel drops if we die.
//! let node = NodeBuilder::new().name("camera")?.create()?;
//! // A service is found by name; `open_or_create` is safe to race.
//! let service = node
//!     .service_builder(&"My/Funk/ServiceName".try_into()?)
//!     .publish_subscribe::<Frame>()
//!     .subscriber_max_buffer_size(16)
//!     .history_size(4)
//!     .open_or_create()?;
//!
//! let publisher = service.publisher_builder().max_loaned_samples(8).create()?;
//! let sample = publisher.loan_uninit()?;                 // a chunk of shared memory
//! let sample = sample.write_payload(Frame { seq: 1, pixels: [0; 64] }); // written in place
//! let receivers = sample.send();                         // only a descriptor moves
//! # let _ = receivers;
//!
//! // In another process:
//! let subscriber = service.subscriber_builder().create()?;
//! while let Some(frame) = subscriber.receive()? {
//!     println!("{}", frame.seq);                         // read in place
//! }                                                      // dropping it returns the chunk
//! # Ok(()) }
//! ```
//!
//! Slices whose length is chosen per message use `publish_subscribe::<[T]>()`
//! with [`PublisherBuilder::max_slice_len`] and
//! [`Publisher::loan_slice_uninit`].
//!
//! ## Request/response
//!
//! A [`ReqResService`] carries requests of one type and responses of
//! another. A [`Client`] loans a request, writes it in place and sends it
//! to a server, getting a [`PendingResponse`]; a [`Server`] receives an
//! [`ActiveRequest`] (a view into the client's memory), answers with zero,
//! one or many responses, and ends the stream by dropping it:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # struct Rm(std::path::PathBuf);
//! # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
//! # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-tour-reqres", std::process::id())));
//! # std::env::set_var("HAKO_ROOT", &root.0); // this example's private domain
//! let node = hako::NodeBuilder::new().create()?;
//! let service = node
//!     .service_builder(&"Math/Square".try_into()?)
//!     .request_response::<u64, u64>()
//!     .open_or_create()?;
//! let server = service.server_builder().create()?;
//! let client = service.client_builder().create()?;
//!
//! let pending = client.send_copy(7)?;
//! if let Some(request) = server.receive()? {
//!     request.send_copy(*request * *request)?;
//! } // the stream ends here
//! while let Some(response) = pending.blocking_receive()? {
//!     assert_eq!(*response, 49);
//! }
//! # Ok(()) }
//! ```
//!
//! ## Waiting without burning a CPU
//!
//! `receive` never blocks. [`Subscriber::receive_timeout`] and
//! [`Subscriber::blocking_receive`] wait, as their [`WaitStrategy`] says:
//! busy-spin, spin-then-park (the default) or park at once in the kernel on
//! a futex in shared memory. A publisher wakes a sleeping subscriber when it
//! sends; when nobody sleeps, a send makes no system call.
//!
//! Events carry no payload: a [`Notifier`] signals event ids, a [`Listener`]
//! learns which ids fired and how often ([`ServiceBuilder::event`]).
//!
//! A [`WaitSet`] waits on many listeners, subscribers, file descriptors,
//! intervals and deadlines at once (epoll), and returns when SIGINT or
//! SIGTERM arrives. For a plain cyclic loop, [`Node::wait`]:
//!
//! ```no_run
//! // Not run as a doc test: it loops until Ctrl-C.
//! # let node = hako::NodeBuilder::new().create().unwrap();
//! while node.wait(std::time::Duration::from_millis(100)).is_ok() {
//!     // one cycle of work; Ctrl-C ends the loop
//! }
//! ```
//!
//! ## Payload types
//!
//! A payload lives in shared memory and is read by another process, so it
//! must be plain data: `#[repr(C)]`, no pointers, no `Drop`. Mark such types
//! with `#[derive(ShmSafe)]`, which checks all three; the type's name becomes
//! part of the service's compatibility check.
//!
//! ## Quality of service
//!
//! Each service fixes, at creation, how many publishers, subscribers and nodes
//! it admits, how many samples a subscriber queues per publisher
//! (`subscriber_max_buffer_size`) and may hold at once
//! (`subscriber_max_borrowed_samples`), how many samples late joiners get
//! (`history_size`), and what happens when a queue is full
//! ([`OverflowPolicy`]: drop the oldest, or apply backpressure, where the
//! publisher blocks, retries or discards as its [`BackpressureStrategy`]
//! says). Opening a service with settings it cannot meet, or with another
//! payload type, is a [`ServiceError`] that names the field.
//!
//! ## Threads
//!
//! Everything is `Send`: nodes, services, ports and samples move freely
//! between threads and into async tasks. Nodes, services, publishers,
//! notifiers and samples are also `Sync`. A [`Subscriber`] is not `Sync`: it
//! is used by one thread at a time, which keeps its receive path free of
//! locks (move it, or wrap it in a mutex to share it). A publisher's private
//! bookkeeping sits behind a process-local lock biased to the first thread
//! that loans: that thread takes it with plain loads and stores; another
//! thread's first use turns the bias off for good (one `membarrier` system
//! call) and from then on every thread pays one atomic operation. Nothing in
//! shared memory is ever locked, so a crashed peer cannot block anyone.
//!
//! ## Crashes, cleaning and inspection
//!
//! A process killed at any point leaves its node file, its ports and their
//! files behind. Whoever notices its node's `flock` gone reclaims them: a
//! process creating a node (for the whole domain), one opening a service (for
//! that service), or [`reclaim_dead_nodes`] on demand (`hako clean`). Chunks
//! the dead held go back to their publishers; samples a live subscriber holds
//! from a dead publisher stay readable. [`inspect`] reads a domain from the
//! outside: nodes, services, ports and their counters (`hako list`,
//! `hako inspect`). Files are for their owner alone unless the config names
//! a [`group`](Config::group) to share the domain with.
//!
//! ## Layers
//!
//! The lock-free core (rings, chunk bookkeeping, layouts), the OS layer
//! (shared memory, locks, futexes), the domain (config, nodes, services,
//! cleanup), the port machinery every pattern shares (data segments,
//! loans, connections, waiting), the patterns (publish/subscribe, events,
//! request/response),
//! and above them the [`WaitSet`] and [`inspect`]. The public API is what
//! this page re-exports: [`Node`], [`PubSubService`], [`Publisher`],
//! [`Subscriber`], [`EventService`], [`Notifier`], [`Listener`], [`WaitSet`].
//! `docs/ARCHITECTURE.md` in the repository draws the tree.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

extern crate self as hako;

// The lock-free core is all that builds under loom (`RUSTFLAGS="--cfg
// loom"`), where its models run; everything above it needs the kernel.
mod core;

/// Applies `#[cfg(not(loom))]` to every item given: the one place that
/// says what the loom build leaves out.
macro_rules! not_under_loom {
    ($($item:item)*) => { $( #[cfg(not(loom))] $item )* };
}

not_under_loom! {
    #[cfg(feature = "tokio")]
    pub mod aio;
    mod blackboard;
    mod describe;
    mod domain;
    mod event;
    pub mod inspect;
    mod os;
    mod port;
    mod pubsub;
    mod reqres;
    mod waitset;
    pub mod watch;

    pub use blackboard::access::BlackboardError;
    pub use blackboard::reader::{
        EntryRef, RawEntryRef, RawReaderEntry, Reader, ReaderBuilder, ReaderEntry,
    };
    pub use blackboard::service::{BlackboardBuilder, BlackboardService};
    pub use blackboard::settings::{BlackboardQos, EntryDescription};
    pub use blackboard::writer::{
        EntryLoan, EntryLoanUninit, RawEntryLoan, RawWriterEntry, Writer, WriterBuilder,
        WriterEntry,
    };
    pub use describe::{Pattern, StaticDescription};
    pub use domain::cleanup::reclaim_dead_nodes;
    pub use domain::config::{self, Config, ConfigError, Defaults, OverflowPolicy};
    pub use domain::lockfile::NamedLock;
    pub use domain::name::{NameError, NodeName, ServiceName};
    pub use domain::node::{Node, NodeBuilder, NodeCreateError, NodeWaitError};
    pub use domain::nodefile::node_is_alive;
    pub use domain::service::builder::ServiceBuilder;
    pub use domain::service::error::ServiceError;
    pub use domain::service::reclaim::{DeadNode, Reclaimed};
    pub use event::listener::{Listener, ListenerBuilder, ListenerError};
    pub use event::notifier::{Notifier, NotifierBuilder, NotifyError};
    pub use event::service::{EventBuilder, EventService};
    pub use event::settings::{EventId, EventPortCreateError, EventQos};
    pub use hako_derive::ShmSafe;
    pub use port::fixed::{FixedError, FixedString, FixedVec};
    pub use port::payload::{Payload, PayloadDescription, ShmSafe, TypeDetails};
    pub use port::receiver::settings::ReceiveError;
    pub use port::receiver::state::PublisherChanges;
    pub use port::sender::settings::{BackpressureStrategy, LoanError};
    pub use port::wait::WaitStrategy;
    pub use pubsub::publisher::{Publisher, PublisherBuilder, PublisherCreateError, SendError};
    pub use pubsub::sample::Sample;
    pub use pubsub::sample_mut::{SampleMut, SampleMutUninit};
    pub use pubsub::service::{PubSubBuilder, PubSubService};
    pub use pubsub::settings::PubSubQos;
    pub use watch::{Change, PortChange, Role, Watcher};
    pub use pubsub::subscriber::{Subscriber, SubscriberBuilder, SubscriberCreateError};
    pub use reqres::client::{Client, RequestMut, RequestMutUninit, ToServer};
    pub use reqres::client_builder::ClientBuilder;
    pub use reqres::errors::{
        PortCreateError as ReqResPortCreateError, ReqResReceiveError, RequestSendError,
        ResponseSendError, ServerWaitError,
    };
    pub use reqres::message::{Destination, MessageMut, MessageMutUninit};
    pub use reqres::pending::{PendingResponse, Response, Ticket};
    pub use reqres::active::{ActiveRequest, ResponseMut, ResponseMutUninit, ToClient};
    pub use reqres::server::{Server, ServerBuilder};
    pub use reqres::service::{ReqResBuilder, ReqResService};
    pub use reqres::settings::ReqResQos;
    pub use waitset::{AttachmentId, WaitEvent, WaitOutcome, WaitSet, WaitSetError};

    /// Not part of hako's API: the insides that hako's own benchmarks,
    /// tests and fuzz targets reach into (shared-memory layouts, rings, the
    /// chunk book). Anything here may change in any release, without
    /// notice; programs using hako must not name it.
    #[doc(hidden)]
    pub mod unstable {
        pub use crate::core::{board, layout, pool, returns, ring};
        pub use crate::reqres::envelope;
    }
}
