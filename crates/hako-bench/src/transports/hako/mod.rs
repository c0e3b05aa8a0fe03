//! hako's own transports: publish/subscribe ([`pubsub::HakoPubSub`]:
//! `hako`, `hako-spin`, `hako-spin-park`, `hako-park`), request/response
//! ([`reqres::HakoReqRes`]: `hako-reqres` and its waits) and the C API
//! ([`c::HakoC`]: `hako-c`). The async faces are in
//! [`runtimes`](super::runtimes), beside tokio's sockets.

pub mod c;
pub mod pubsub;
pub mod reqres;
