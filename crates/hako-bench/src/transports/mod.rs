//! Every transport the suite measures, by family, each an implementation
//! of [`Transport`](crate::transport::Transport); the
//! [`registry`](crate::registry) names them.
//!
//! * [`floors`] — the cache-line floors, the futex floor and the reference
//!   ring: what the hardware and the kernel cost at the least;
//! * [`kernel`] — the kernel's IPC: pipes, FIFOs, unix and TCP sockets,
//!   message queues;
//! * [`hako`] — hako's patterns and faces: publish/subscribe with each wait,
//!   request/response, the C API;
//! * [`runtimes`] — request/response under async runtimes: hako's async
//!   ports and tokio's sockets;
//! * [`board`] — hako's blackboard, update-to-visible through two boards
//!   (iceoryx2's is among the peers);
//! * [`go`] — hako through the Go module, and Go's own unix socket, both
//!   sides Go programs;
//! * [`peers`] — the peer libraries (feature `peers`): iceoryx2, shmipc;
//! * [`bridge`] — plain Zenoh and hako through two bridges (feature
//!   `bridge`).

pub mod board;
#[cfg(feature = "bridge")]
pub mod bridge;
pub mod floors;
pub mod go;
pub mod hako;
pub mod kernel;
#[cfg(feature = "peers")]
pub mod peers;
pub mod runtimes;
