//! The Zenoh bridge against plain Zenoh (feature `bridge`): the round trip
//! of the `bridge` group of `hako bench`.
//!
//! The question these two transports answer: what does carrying hako
//! services across hosts with `hako-bridge` (crate `hako-zenoh`) cost over
//! using Zenoh directly? Both measure the same ping-pong over TCP on
//! loopback, between two Zenoh sessions:
//!
//! * [`plain::PlainZenoh`] (`zenoh`) — a Zenoh publisher and subscriber in
//!   each process. The leader's session listens on `127.0.0.1` at a free
//!   port (written to a file of the row, as the `tcp` transport does), the
//!   follower's connects to it; multicast scouting is off. The leader puts
//!   pings on one key expression of the row and takes pongs from another;
//!   the follower answers each ping with a pong.
//! * [`bridged::HakoBridge`] (`hako-bridge`) — hako publish/subscribe in two
//!   domains (two roots in the row's directory), leader in one, follower in
//!   the other, joined by two `hako-bridge` processes the leader starts:
//!   a ping goes from the leader's publisher through the first bridge's
//!   subscriber, Zenoh, the second bridge's publisher to the follower, and
//!   the pong back the same way. What plain Zenoh does in two processes
//!   takes four here, so that programs need no Zenoh at all.
//!
//! The processes sit like two hosts of one CPU each: the leader's side
//! (and its Zenoh threads, or its bridge) on the leader's CPU, the
//! follower's on the follower's (see [`bridged`]).
//!
//! Both transports are blocking and measure ping-pong only, one message in
//! flight. Messages are tagged as everywhere in the suite
//! ([`PayloadMode`](crate::transport::PayloadMode)). The links take a
//! moment to form (Zenoh sessions connecting, declarations travelling, the
//! bridges finding each other's services), and a message sent before that
//! is lost, so [`Leader::connect`](crate::transport::Leader::connect) sends
//! *probes* until one comes back: messages of the row's size tagged
//! [`PROBE`], answered with [`PROBE_ANSWER`], tags no ping (0..=250) or
//! pong (1..=251) ever carries. Both sides pass over probes wherever they
//! meet one, so a late probe or a late answer breaks no sequence check.
//!
//! The Zenoh settings of the plain transport are those that gave it the
//! lowest round trip here: see [`plain`].

pub mod bridged;
mod common;
pub mod plain;
pub mod program;

pub use common::{FOLLOWER_WAIT, LINK_WATCHDOG, PROBE, PROBE_ANSWER};
