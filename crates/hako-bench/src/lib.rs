//! # hako-bench — cross-process benchmarks of hako
//!
//! The library and the program (`hako-bench`, which `hako bench` runs) of
//! hako's benchmark suite: ping-pong, throughput, fan-out,
//! request/response, async and bridge rows between separate processes, in
//! `touch` and `full` payload modes, through hako, floors, the kernel's IPC,
//! async runtimes and (feature `peers`) the peer libraries, next to a
//! memory figure and the bytes each port maps. docs/benchmark.md says what
//! it measures and how to read it.
//!
//! Every round trip is quoted next to a *floor* measured just before it —
//! two processes ping-ponging one cache line, or waking each other through
//! one futex word — because on a VM the cross-CPU cost of moving a cache
//! line changes as the host moves the vCPUs; transports of a row are
//! compared with each other block by block, rates run by run.
//!
//! ## The tree, bottom up
//!
//! * [`error`] — the error type; [`units`] — how sizes, ratios, times and
//!   rates are written and read.
//! * [`sys`] — the machine: CPUs and CPU time, the clock, a shared mapping
//!   for the floors, the run's directory and the clean-up of dead runs.
//! * [`transport`] — the [`Transport`](transport::Transport) trait (a
//!   [`Leader`](transport::Leader) and a [`Follower`](transport::Follower)
//!   side), what a row is ([`transport::RowSpec`], patterns, payload modes)
//!   and the timed loop.
//! * [`transports`] — every transport, by family: floors (one cache line,
//!   two, a futex word, a minimal descriptor ring), the kernel's IPC,
//!   hako's patterns and its C face, hako's Go face and Go's unix socket
//!   (both sides Go programs), async runtimes (hako's async ports and
//!   tokio's sockets), the peer libraries (iceoryx2, shmipc, monoio and
//!   tokio-uring) and the bridge.
//! * [`harness`] — the follower processes and the protocol with them,
//!   pinning, a row measured in blocks between floor probes, rate rows in
//!   rounds, statistics, progress.
//! * [`registry`] — every transport by name, and the lists each group runs.
//! * [`suite`] — what runs, in which order; the memory figure and the
//!   footprint.
//! * [`report`] — one model of a run's figures, rendered as text,
//!   Markdown, JSON and SVG; the summary's ratios and the goals, the latter
//!   from one table of data ([`report::goals::GOALS`]).
//! * [`cli`] — `hako bench`'s arguments and the run.
//!
//! A module imports only from its own layer and the ones below.
//! A binary built on this crate calls [`harness::follower::follower_main`]
//! first thing when it finds [`harness::FOLLOWER_ARG`] as its first
//! argument; the leader side is a [`harness::Session`].

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod cli;
pub mod error;
pub mod harness;
pub mod registry;
pub mod report;
pub mod suite;
pub mod sys;
pub mod transport;
pub mod transports;
pub mod units;

pub use error::{BoxError, Result};
