//! # hako-bench — cross-process benchmarks of hako against a shared-memory floor
//!
//! Every number this crate prints is a *round trip* between two processes,
//! each pinned to its own CPU: a *leader* sends, a *follower* answers, and the
//! leader times the pair. On a VM the cross-CPU cost of moving one cache line
//! changes as the host moves the vCPUs, so each result is quoted next to a
//! *floor* — two processes ping-ponging one cache line — measured just before
//! it (see `DESIGN.md`, "Measuring").
//!
//! ## Pieces
//!
//! * [`transport`] — the [`Transport`](transport::Transport) trait: a way to
//!   move a message of `size` bytes from leader to follower and back, with a
//!   [`Leader`](transport::Leader) and a [`Follower`](transport::Follower) side.
//! * [`floor`] — the floor: one cache-line-aligned `AtomicU64` in shared memory.
//! * [`hako_pubsub`] — hako publish/subscribe, busy-polling: services "ping"
//!   and "pong", payload `[u8]`, written and checked at both ends only.
//! * [`reference`](mod@reference) — hako's data path (chunk pool, stamped submission and
//!   completion rings) hand-written with nothing else: what the zero-copy
//!   design costs before any library overhead.
//! * [`harness`] — starts the follower as a child process of the same binary,
//!   pins CPUs, runs warm-up and timed iterations, and summarises the round
//!   trips in an HDR histogram (optionally dumping the raw times).
//! * [`blocks`] — a row measured in blocks between floor probes, so a floor
//!   that changes mid-row does not skew the ratio.
//! * [`cpu`] — CPU pinning; [`shm`] — a shared mapping for the floor;
//!   [`rundir`] — the per-run domain root and the cleanup of dead runs'
//!   leftovers; [`report`] — the table and the JSON file.
//!
//! A binary built on this crate calls [`harness::follower_main`] first thing
//! when it finds [`harness::FOLLOWER_ARG`] as its first argument; the leader
//! side is a [`harness::Session`].

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod blocks;
pub mod cpu;
pub mod floor;
pub mod hako_pubsub;
pub mod harness;
pub mod reference;
pub mod report;
pub mod rundir;
pub mod shm;
pub mod transport;

/// The error type of this crate: benchmarks report, they do not recover.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result with [`BoxError`].
pub type Result<T, E = BoxError> = std::result::Result<T, E>;
