//! Every transport of this crate, by the name `--transports` uses.
//!
//! | name             | what                                                   | waits       |
//! |------------------|--------------------------------------------------------|-------------|
//! | `floor`          | one cache line ([`crate::transports::floors::cache_line`])                      | busy-poll   |
//! | `floor2`         | a doorbell and a payload line ([`crate::transports::floors::cache_line::TwoLineFloor`]) | busy-poll |
//! | `hako`           | hako pub/sub, `receive()` polled ([`crate::transports::hako::pubsub`]) | busy-poll |
//! | `hako-chunked`   | as `hako`, with payloads of up to 48 bytes kept in the pool instead of the queue slot (`inline_payloads(false)`) | busy-poll |
//! | `hako-reqres`    | hako request/response, polled ([`crate::transports::hako::reqres`]) | busy-poll   |
//! | `hako-reqres-spin-park` | hako request/response, blocking receives, `SpinThenPark` | blocking |
//! | `hako-reqres-park` | hako request/response, blocking receives, `Park`     | blocking    |
//! | `hako-async`, `hako-async-busy`, `hako-async-park` | hako request/response awaited under tokio ([`crate::transports::runtimes`]) | blocking (busy: busy-poll) |
//! | `tokio-unix`, `tokio-tcp` | tokio's unix and TCP sockets ([`crate::transports::runtimes`]) | blocking |
//! | `hako-spin`      | hako, `blocking_receive()`, `WaitStrategy::BusySpin`   | busy-poll   |
//! | `hako-spin-park` | hako, `blocking_receive()`, `WaitStrategy::SpinThenPark` | blocking  |
//! | `hako-park`      | hako, `blocking_receive()`, `WaitStrategy::Park`       | blocking    |
//! | `reference`      | a minimal descriptor ring by hand ([`crate::transports::floors::reference`]) | busy-poll |
//! | `hako-c`         | hako's ping-pong in C, through the C API ([`crate::transports::hako::c`]) | busy-poll |
//! | `hako-go`        | hako's ping-pong in Go, through the Go module (`go/`; [`crate::transports::go`]) | busy-poll |
//! | `go-unix`        | Go's own `net` unix socket, both sides Go ([`crate::transports::go`]) | blocking |
//! | `hako-board`     | hako's blackboard: update-to-visible through two boards ([`crate::transports::board`]) | busy-poll |
//! | `futex`          | one futex word ([`crate::transports::floors::futex`])                | blocking    |
//! | `pipe`           | anonymous pipes ([`crate::transports::kernel::Pipe`])              | blocking    |
//! | `fifo`           | named pipes ([`crate::transports::kernel::Fifo`])                  | blocking    |
//! | `unix`           | a unix stream socket ([`crate::transports::kernel::UnixSocket`])   | blocking    |
//! | `tcp`            | TCP over loopback ([`crate::transports::kernel::Tcp`])             | blocking    |
//! | `mq`             | POSIX message queues ([`crate::transports::kernel::MessageQueue`]) | blocking    |
//! | `iceoryx2`       | iceoryx2 pub/sub, polled (feature `peers`)             | busy-poll   |
//! | `iceoryx2-reqres`| iceoryx2 request/response, polled (feature `peers`)    | busy-poll   |
//! | `iceoryx2-board` | iceoryx2's blackboard, as `hako-board` (feature `peers`) | busy-poll |
//! | `shmipc`         | shmipc streams (feature `peers`)                       | blocking    |
//! | `monoio-unix`    | a unix socket on monoio's io_uring runtime (feature `peers`, [`crate::transports::peers::uring`]) | blocking |
//! | `tokio-uring-unix` | a unix socket on tokio-uring (feature `peers`)       | blocking    |
//! | `zenoh`          | plain Zenoh over TCP loopback (feature `bridge`, [`crate::transports::bridge::plain`]) | blocking |
//! | `hako-bridge`    | hako through two `hako-bridge` processes (feature `bridge`, [`crate::transports::bridge::bridged`]) | blocking |
//!
//! The async transports come twice: on a current-thread runtime (the name
//! above) and on a multi-threaded one (the name with `-mt`).
//!
//! The peers exist only in a build with the `peers` feature, `zenoh` and
//! `hako-bridge` only in one with the `bridge` feature; without it their
//! names are known but refused with a message that says how to get them.

mod kind;
mod table;

pub use kind::{known_names, Kind, BRIDGE_NAMES, GO_NAMES, PEER_NAMES};
pub use table::Transports;
