//! # hako-bench — cross-process benchmarks of hako against a shared-memory floor
//!
//! The library and the program (`hako-bench`, which `hako bench` runs) of
//! hako's benchmarks: the comparison suite
//! ([`suite`]): ping-pong, throughput and fan-out between separate
//! processes, in `touch` and `full` payload modes ([`transport::Pattern`],
//! [`transport::PayloadMode`]), through hako, the floors, the kernel's
//! pipes, FIFOs, sockets and message queues ([`kernel`]) and, with the
//! `peers` feature, iceoryx2 and shmipc (`peers`), next to a memory figure
//! ([`memory`]) and the bytes each port maps ([`footprint`]); with the
//! `bridge` feature, hako through two `hako-bridge` processes against
//! plain Zenoh (`bridge`). The rest of this page describes the ping-pong
//! machinery and `hako-pingpong`, the lower-level tool that shares it.
//!
//! Every number of a ping-pong row is a *round trip* between two processes,
//! each pinned to its own CPU (or both to one CPU, `--same-cpu`): a *leader*
//! sends, a *follower* answers, and the leader times the pair. On a VM the
//! cross-CPU cost of moving one cache line changes as the host moves the
//! vCPUs, so each result is quoted next to a *floor* — two processes
//! ping-ponging one cache line — measured just before it (see `DESIGN.md`,
//! "Measuring"). Transports that sleep in the kernel are also quoted against
//! the *futex floor* (two processes waking each other through one futex
//! word) and against each other, block by block.
//!
//! ## The binary
//!
//! `hako-pingpong` measures the transports named by `--transports` (default
//! `hako,hako-spin,hako-park,hako-spin-park,futex,pipe,unix,mq`; see
//! [`select`]) at each of `--sizes` (64 B … 4 MiB), with the processes on two
//! CPUs (`--pinning cross`, the default), on one (`--pinning same` or
//! `--same-cpu`, which leaves out the busy-polling transports and probes the
//! futex floor instead of the cache line) or both in turn (`--pinning
//! both`). Per transport and size it prints the median and p99 round trip,
//! the ratios to the probes and to `futex`, the CPU time (user + system) per
//! round trip of each process and how often each slept (voluntary context
//! switches), then hako against the futex floor and each kernel mechanism,
//! and whether the goals of issues #2 and #3 are met. `--quick` takes about
//! 10 s per pinning mode; `--json FILE` writes everything.
//!
//! ## Pieces
//!
//! * [`transport`] — the [`Transport`](transport::Transport) trait: a way to
//!   move a message of `size` bytes from leader to follower and back, with a
//!   [`Leader`](transport::Leader) and a [`Follower`](transport::Follower) side.
//! * [`floor`] — the floor: one cache-line-aligned `AtomicU64` in shared memory.
//! * [`futex_floor`] — the blocking floor: one futex word in shared memory,
//!   each side wakes the other and sleeps.
//! * [`hako_reqres`] — hako request/response: a client and a server, `[u8]`
//!   requests and responses, up to 64 in flight.
//! * [`hako_c`] — hako's ping-pong written in C against the C API.
//! * [`hako_pubsub`] — hako publish/subscribe: services "ping" and "pong",
//!   payload `[u8]`, written and checked at both ends only; busy-polling
//!   `receive()`, or `blocking_receive()` with a `WaitStrategy`.
//! * [`aio`] — transports driven by tokio on both sides: hako's async
//!   request/response ports and tokio's unix and TCP sockets, on a
//!   current-thread or a multi-threaded runtime.
//! * [`kernel`] — pipes, a unix socket and POSIX message queues, the payload
//!   copied through the kernel.
//! * `bridge` (feature `bridge`) — a round trip through two `hako-bridge`
//!   processes over Zenoh, and the same with plain Zenoh.
//! * [`reference`](mod@reference) — hako's data path (chunk pool, stamped submission and
//!   completion rings) hand-written with nothing else: what the zero-copy
//!   design costs before any library overhead.
//! * [`harness`] — starts the follower as a child process of the same binary,
//!   pins CPUs, runs warm-up and timed iterations, and summarises the round
//!   trips in an HDR histogram (optionally dumping the raw times);
//!   [`follower`] — the follower process's side of it; [`timing`] — the
//!   clock, the timed loop and the statistics of a row.
//! * [`blocks`] — a row measured in blocks between floor probes, so a floor
//!   that changes mid-row does not skew the ratio; transports of a row are
//!   also compared block by block.
//! * [`select`] — every transport by name, for `--transports`.
//! * [`stream`] — one-way and request/response rate rows, measured in
//!   rounds and compared run by run.
//! * [`suite`] — the whole comparison: every pattern, mode, size and
//!   transport in one session; one-way rows fitted to a time budget;
//!   [`progress`] — its steps, for the progress bar.
//! * [`memory`] — writing and reading a payload once in one process.
//! * [`footprint`] — bytes of shared memory one publisher and one
//!   subscriber map, by the subscribers their service allows (hako, and
//!   iceoryx2 with `peers`).
//! * [`cpu`] — CPU pinning and CPU time (the process CPU clock, and
//!   `getrusage` for sleeps and the user/system split); [`shm`] — a shared
//!   mapping for the floors;
//!   [`rundir`] — the per-run domain root and the cleanup of dead runs'
//!   leftovers; [`report`] — the table and the JSON file.
//!
//! A binary built on this crate calls [`follower::follower_main`] first thing
//! when it finds [`harness::FOLLOWER_ARG`] as its first argument; the leader
//! side is a [`harness::Session`].

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod cli;
pub mod harness;
pub mod registry;
pub mod report;
pub mod suite;
pub mod sys;
pub mod transport;
pub mod transports;
pub mod units;

/// The error type of this crate: benchmarks report, they do not recover.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result with [`BoxError`].
pub type Result<T, E = BoxError> = std::result::Result<T, E>;
