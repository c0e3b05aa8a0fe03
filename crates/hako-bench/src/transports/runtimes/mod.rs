//! Transports driven by tokio: both sides of a row run in a tokio runtime
//! and await every message, as a tokio program would.
//!
//! | name                | what                                                    |
//! |---------------------|---------------------------------------------------------|
//! | `hako-async`        | hako request/response, `AsyncClient` and `AsyncServer`, the ports' default `SpinThenPark` |
//! | `hako-async-busy`   | the same with `WaitStrategy::BusySpin`: the awaiting task never sleeps |
//! | `hako-async-park`   | the same with `WaitStrategy::Park`: the awaiting task sleeps at once |
//! | `tokio-unix`        | a tokio `UnixStream`, requests and answers written and read whole |
//! | `tokio-tcp`         | a tokio `TcpStream` over loopback, `TCP_NODELAY`         |
//!
//! Each comes on a current-thread runtime (the name above) and on a
//! multi-threaded one with two workers (the name with `-mt`). On a
//! current-thread runtime a side's loop is the future `block_on` drives; on
//! a multi-threaded one it is a task spawned onto the workers, which the
//! main thread awaits: what a server task of a tokio program is. The
//! workers inherit the side's CPU (the benchmark pins each process), so
//! both share it.
//!
//! A row's messages are requests from the leader (the client) answered by
//! the follower (the server), one at a time (round trips, each timed from
//! the end of the last) or with a depth in flight (rates). The whole timed
//! loop runs inside the runtime: nothing leaves it between messages.

mod common;
mod hako;
mod tokio_sockets;

pub use common::{
    AsyncFollower, AsyncLeader, AsyncTransport, Backend, ClientSide, Flavor, ServerSide,
};
pub use hako::{AsyncWait, HakoAsync};
pub use tokio_sockets::{Socket, TokioStream};
