//! Kernel mechanisms that copy the message: pipes, FIFOs, unix and TCP
//! sockets, POSIX message queues.
//!
//! For message `seq` the sender writes a whole `size`-byte buffer (tagged,
//! or filled in full mode, as in the other transports) and the receiver
//! reads a whole one: the kernel copies every byte twice per direction (into
//! its buffers and out again), and a reader sleeps in the kernel until the
//! data is there. Kernel defaults are kept (pipe capacity, socket buffer
//! sizes), as a program that just uses the mechanism would have them, and a
//! sender that gets ahead blocks in `write` — the flow control each of them
//! has.
//!
//! * [`Pipe`] — anonymous pipes (`pipe2`), one per direction. The follower,
//!   started before the row, opens its ends through `/proc/<leader>/fd/<n>`
//!   (the numbers are in a small file in the run's root), which yields the
//!   very same pipe; the leader then closes its copies of those ends.
//! * [`Fifo`] — named pipes (`mkfifo`) in the run's root; the names are
//!   removed once both ends are open. Reads and writes go through the same
//!   `pipe_read`/`pipe_write` as an anonymous pipe's; only opening differs.
//! * [`UnixSocket`] — a `SOCK_STREAM` unix socket bound in the run's root;
//!   the follower connects, the leader accepts, the name is then removed.
//! * [`Tcp`] — a TCP connection over loopback (127.0.0.1, an ephemeral port
//!   written to a file in the run's root), `TCP_NODELAY` on both ends.
//! * [`MessageQueue`] — POSIX message queues (`mq_open`), one per direction
//!   and follower, each holding one message of `size` bytes (ping-pong) or a
//!   few (one-way). A message arrives whole or not at all. Sizes above
//!   `/proc/sys/fs/mqueue/msgsize_max` are skipped
//!   ([`Transport::skip_reason`](crate::transport::Transport::skip_reason)).
//!
//! A stream (pipe, FIFO, socket) has no message boundaries: each side reads
//! until it has `size` bytes. One-way rows use the leader→follower direction
//! only; in fan-out the leader writes each message to every follower's
//! channel in turn. All five share one leader and one follower side
//! ([`KernelLeader`], [`KernelFollower`]) over a [`Channel`].
//!
//! A side whose peer died sees end-of-file or a broken pipe (streams) or a
//! receive that times out after [`PEER_TIMEOUT`](crate::transport::PEER_TIMEOUT) (message queue).

mod channel;
mod mq;
mod pipes;
mod sockets;

pub use channel::{Channel, KernelFollower, KernelLeader};
pub use mq::{msgsize_max, MessageQueue, Mq, MSGSIZE_MAX_PATH};
pub use pipes::{Fifo, Pipe};
pub(crate) use sockets::socket_in_flight_skip;
pub use sockets::{Tcp, UnixSocket, SOCKET_IN_FLIGHT_BYTES};
