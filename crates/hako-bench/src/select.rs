//! Every transport of this crate, by the name `--transports` uses.
//!
//! | name             | what                                                   | waits       |
//! |------------------|--------------------------------------------------------|-------------|
//! | `floor`          | one cache line ([`crate::floor`])                      | busy-poll   |
//! | `floor2`         | a doorbell and a payload line ([`crate::floor::TwoLineFloor`]) | busy-poll |
//! | `hako`           | hako pub/sub, `receive()` polled ([`crate::hako_pubsub`]) | busy-poll |
//! | `hako-reqres`    | hako request/response, polled ([`crate::hako_reqres`]) | busy-poll   |
//! | `hako-reqres-spin-park` | hako request/response, blocking receives, `SpinThenPark` | blocking |
//! | `hako-reqres-park` | hako request/response, blocking receives, `Park`     | blocking    |
//! | `hako-async`, `hako-async-busy`, `hako-async-park` | hako request/response awaited under tokio ([`crate::aio`]) | blocking (busy: busy-poll) |
//! | `tokio-unix`, `tokio-tcp` | tokio's unix and TCP sockets ([`crate::aio`]) | blocking |
//! | `hako-spin`      | hako, `blocking_receive()`, `WaitStrategy::BusySpin`   | busy-poll   |
//! | `hako-spin-park` | hako, `blocking_receive()`, `WaitStrategy::SpinThenPark` | blocking  |
//! | `hako-park`      | hako, `blocking_receive()`, `WaitStrategy::Park`       | blocking    |
//! | `reference`      | hako's data path by hand ([`crate::reference`])        | busy-poll   |
//! | `hako-c`         | hako's ping-pong in C, through the C API ([`crate::hako_c`]) | busy-poll |
//! | `futex`          | one futex word ([`crate::futex_floor`])                | blocking    |
//! | `pipe`           | anonymous pipes ([`crate::kernel::Pipe`])              | blocking    |
//! | `fifo`           | named pipes ([`crate::kernel::Fifo`])                  | blocking    |
//! | `unix`           | a unix stream socket ([`crate::kernel::UnixSocket`])   | blocking    |
//! | `tcp`            | TCP over loopback ([`crate::kernel::Tcp`])             | blocking    |
//! | `mq`             | POSIX message queues ([`crate::kernel::MessageQueue`]) | blocking    |
//! | `iceoryx2`       | iceoryx2 pub/sub, polled (feature `peers`)             | busy-poll   |
//! | `iceoryx2-reqres`| iceoryx2 request/response, polled (feature `peers`)    | busy-poll   |
//! | `shmipc`         | shmipc streams (feature `peers`)                       | blocking    |
//! | `zenoh`          | plain Zenoh over TCP loopback (feature `bridge`, [`crate::bridge::plain`]) | blocking |
//! | `hako-bridge`    | hako through two `hako-bridge` processes (feature `bridge`, [`crate::bridge::bridged`]) | blocking |
//!
//! The async transports come twice: on a current-thread runtime (the name
//! above) and on a multi-threaded one (the name with `-mt`).
//!
//! The peers exist only in a build with the `peers` feature, `zenoh` and
//! `hako-bridge` only in one with the `bridge` feature; without it their
//! names are known but refused with a message that says how to get them.

use hako::WaitStrategy;

use crate::aio::{AsyncTransport, AsyncWait, Flavor, HakoAsync, Socket, TokioStream};
#[cfg(feature = "bridge")]
use crate::bridge::{bridged::HakoBridge, plain::PlainZenoh};
use crate::floor::{Floor, TwoLineFloor};
use crate::futex_floor::FutexFloor;
use crate::hako_c::HakoC;
use crate::hako_pubsub::{HakoPubSub, HakoWait};
use crate::hako_reqres::HakoReqRes;
use crate::harness::follower::DynTransport;
use crate::harness::RunRow;
use crate::kernel::{Fifo, MessageQueue, Pipe, Tcp, UnixSocket};
#[cfg(feature = "peers")]
use crate::peers::{iceoryx2::Iceoryx2, iceoryx2_reqres::Iceoryx2ReqRes, shmipc::Shmipc};
use crate::reference::Reference;

/// A transport, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `floor`.
    Floor,
    /// `floor2`.
    Floor2,
    /// `hako`.
    Hako,
    /// `hako-spin`.
    HakoSpin,
    /// `hako-spin-park`.
    HakoSpinPark,
    /// `hako-park`.
    HakoPark,
    /// `hako-reqres`.
    HakoReqRes,
    /// `hako-reqres-spin-park`.
    HakoReqResSpinPark,
    /// `hako-reqres-park`.
    HakoReqResPark,
    /// `hako-async…`: hako request/response under tokio.
    HakoAsync(AsyncWait, Flavor),
    /// `tokio-unix…`, `tokio-tcp…`.
    TokioStream(Socket, Flavor),
    /// `reference`.
    Reference,
    /// `hako-c`.
    HakoC,
    /// `futex`.
    Futex,
    /// `pipe`.
    Pipe,
    /// `fifo`.
    Fifo,
    /// `unix`.
    Unix,
    /// `tcp`.
    Tcp,
    /// `mq`.
    Mq,
    /// `iceoryx2`.
    #[cfg(feature = "peers")]
    Iceoryx2,
    /// `iceoryx2-reqres`.
    #[cfg(feature = "peers")]
    Iceoryx2ReqRes,
    /// `shmipc`.
    #[cfg(feature = "peers")]
    Shmipc,
    /// `zenoh`.
    #[cfg(feature = "bridge")]
    Zenoh,
    /// `hako-bridge`.
    #[cfg(feature = "bridge")]
    HakoBridge,
    /// `hako-bridge-low-latency`.
    #[cfg(feature = "bridge")]
    HakoBridgeLowLatency,
}

/// Names of the peer transports, known in every build.
pub const PEER_NAMES: [&str; 3] = ["iceoryx2", "iceoryx2-reqres", "shmipc"];

/// Names of the transports of the `bridge` feature, known in every build.
pub const BRIDGE_NAMES: [&str; 3] = ["zenoh", "hako-bridge", "hako-bridge-low-latency"];

impl Kind {
    /// Every transport of this build.
    pub const ALL: &'static [Kind] = &[
        Kind::Floor,
        Kind::Floor2,
        Kind::Hako,
        Kind::HakoSpin,
        Kind::HakoSpinPark,
        Kind::HakoPark,
        Kind::HakoReqRes,
        Kind::HakoReqResSpinPark,
        Kind::HakoReqResPark,
        Kind::HakoAsync(AsyncWait::Default, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Busy, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Park, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Default, Flavor::MultiThread),
        Kind::HakoAsync(AsyncWait::Busy, Flavor::MultiThread),
        Kind::HakoAsync(AsyncWait::Park, Flavor::MultiThread),
        Kind::TokioStream(Socket::Unix, Flavor::CurrentThread),
        Kind::TokioStream(Socket::Tcp, Flavor::CurrentThread),
        Kind::TokioStream(Socket::Unix, Flavor::MultiThread),
        Kind::TokioStream(Socket::Tcp, Flavor::MultiThread),
        Kind::Reference,
        Kind::HakoC,
        Kind::Futex,
        Kind::Pipe,
        Kind::Fifo,
        Kind::Unix,
        Kind::Tcp,
        Kind::Mq,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2ReqRes,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
        #[cfg(feature = "bridge")]
        Kind::Zenoh,
        #[cfg(feature = "bridge")]
        Kind::HakoBridge,
        #[cfg(feature = "bridge")]
        Kind::HakoBridgeLowLatency,
    ];

    /// What `hako-pingpong` measures unless told otherwise.
    pub const DEFAULT: [Kind; 8] = [
        Kind::Hako,
        Kind::HakoSpin,
        Kind::HakoPark,
        Kind::HakoSpinPark,
        Kind::Futex,
        Kind::Pipe,
        Kind::Unix,
        Kind::Mq,
    ];

    /// [`Kind::DEFAULT`] as `--transports` takes it.
    pub const DEFAULT_LIST: &'static str =
        "hako,hako-spin,hako-park,hako-spin-park,futex,pipe,unix,mq";

    /// What `hako bench` measures unless told otherwise: hako busy-polling
    /// and spin-then-park, the floors (one cache line, two cache lines, a
    /// futex), the reference (hako's data path by hand), every kernel
    /// mechanism and (when built in) the peers.
    pub const SUITE: &'static [Kind] = &[
        Kind::Hako,
        Kind::HakoC,
        Kind::HakoSpinPark,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
        Kind::Floor,
        Kind::Floor2,
        // hako's data path by hand: what the library adds beyond it.
        Kind::Reference,
        Kind::Futex,
        Kind::Pipe,
        Kind::Fifo,
        Kind::Unix,
        Kind::Tcp,
        Kind::Mq,
    ];

    /// What the request/response rows of `hako bench` compare unless told
    /// otherwise: hako request/response, hako publish/subscribe ping-pong
    /// (the reference), the peers' request/response (iceoryx2's, and
    /// shmipc's streams) and a client and server over a unix socket and
    /// over TCP.
    pub const REQRES: &'static [Kind] = &[
        Kind::HakoReqRes,
        Kind::Hako,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2ReqRes,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
        Kind::Unix,
        Kind::Tcp,
    ];

    /// What the async rows of `hako bench` compare unless told otherwise:
    /// hako's async request/response (the ports' default wait, busy, and
    /// parked) and tokio's unix and TCP sockets on both runtimes, hako's
    /// blocking request/response (busy-polled, spin-then-park, parked)
    /// and shmipc (whose streams are tokio's).
    pub const ASYNC: &'static [Kind] = &[
        Kind::HakoAsync(AsyncWait::Default, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Busy, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Park, Flavor::CurrentThread),
        Kind::TokioStream(Socket::Unix, Flavor::CurrentThread),
        Kind::TokioStream(Socket::Tcp, Flavor::CurrentThread),
        Kind::HakoAsync(AsyncWait::Default, Flavor::MultiThread),
        Kind::HakoAsync(AsyncWait::Busy, Flavor::MultiThread),
        Kind::HakoAsync(AsyncWait::Park, Flavor::MultiThread),
        Kind::TokioStream(Socket::Unix, Flavor::MultiThread),
        Kind::TokioStream(Socket::Tcp, Flavor::MultiThread),
        Kind::HakoReqRes,
        Kind::HakoReqResSpinPark,
        Kind::HakoReqResPark,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
    ];

    /// What the bridge rows of `hako bench` compare unless told otherwise:
    /// plain Zenoh, and hako through two bridges (none in a build without
    /// the `bridge` feature).
    pub const BRIDGE: &'static [Kind] = &[
        #[cfg(feature = "bridge")]
        Kind::Zenoh,
        #[cfg(feature = "bridge")]
        Kind::HakoBridge,
        #[cfg(feature = "bridge")]
        Kind::HakoBridgeLowLatency,
    ];

    /// The name (the transport's [`Transport::name`](crate::transport::Transport::name)).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Floor => "floor",
            Kind::Floor2 => "floor2",
            Kind::Hako => "hako",
            Kind::HakoSpin => "hako-spin",
            Kind::HakoSpinPark => "hako-spin-park",
            Kind::HakoPark => "hako-park",
            Kind::HakoReqRes => "hako-reqres",
            Kind::HakoReqResSpinPark => "hako-reqres-spin-park",
            Kind::HakoReqResPark => "hako-reqres-park",
            Kind::HakoAsync(wait, flavor) => crate::aio::Backend::name(&HakoAsync { wait, flavor }),
            Kind::TokioStream(socket, flavor) => {
                crate::aio::Backend::name(&TokioStream { socket, flavor })
            }
            Kind::Reference => "reference",
            Kind::HakoC => "hako-c",
            Kind::Futex => "futex",
            Kind::Pipe => "pipe",
            Kind::Fifo => "fifo",
            Kind::Unix => "unix",
            Kind::Tcp => "tcp",
            Kind::Mq => "mq",
            #[cfg(feature = "peers")]
            Kind::Iceoryx2 => "iceoryx2",
            #[cfg(feature = "peers")]
            Kind::Iceoryx2ReqRes => "iceoryx2-reqres",
            #[cfg(feature = "peers")]
            Kind::Shmipc => "shmipc",
            #[cfg(feature = "bridge")]
            Kind::Zenoh => "zenoh",
            #[cfg(feature = "bridge")]
            Kind::HakoBridge => "hako-bridge",
            #[cfg(feature = "bridge")]
            Kind::HakoBridgeLowLatency => "hako-bridge-low-latency",
        }
    }

    /// Whether this is a peer library (not hako, not the kernel, not a floor).
    pub fn is_peer(self) -> bool {
        PEER_NAMES.contains(&self.name())
    }

    /// The transport called `name`; the error lists the known names, or
    /// says how to build a peer in.
    pub fn parse(name: &str) -> Result<Kind, String> {
        let name = name.trim();
        if let Some(k) = Kind::ALL.iter().copied().find(|k| k.name() == name) {
            return Ok(k);
        }
        if PEER_NAMES.contains(&name) {
            return Err(format!(
                "transport {name:?} is a peer library this build leaves out: build with \
                 `--features peers` (./scripts/bench does)"
            ));
        }
        if BRIDGE_NAMES.contains(&name) {
            return Err(format!(
                "transport {name:?} needs Zenoh, which this build leaves out: build with \
                 `--features bridge` (./scripts/bench does)"
            ));
        }
        Err(format!(
            "unknown transport {name:?}; known: {}",
            known_names()
        ))
    }

    /// A comma-separated list of names, in order, each once.
    pub fn parse_list(text: &str) -> Result<Vec<Kind>, String> {
        let mut kinds = Vec::new();
        for name in text.split(',').filter(|n| !n.trim().is_empty()) {
            let k = Kind::parse(name)?;
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        if kinds.is_empty() {
            return Err(format!("no transport given; known: {}", known_names()));
        }
        Ok(kinds)
    }
}

/// `floor, hako, …`.
pub fn known_names() -> String {
    Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where `hako_async` of [`Transports`] keeps the transport of `wait` on
/// `flavor`.
fn hako_async_index(wait: AsyncWait, flavor: Flavor) -> usize {
    let w = AsyncWait::ALL.iter().position(|&w| w == wait).unwrap_or(0);
    let f = Flavor::ALL.iter().position(|&f| f == flavor).unwrap_or(0);
    f * 3 + w
}

/// Where `tokio_stream` of [`Transports`] keeps the transport of `socket`
/// on `flavor`.
fn tokio_stream_index(socket: Socket, flavor: Flavor) -> usize {
    let s = usize::from(socket == Socket::Tcp);
    let f = Flavor::ALL.iter().position(|&f| f == flavor).unwrap_or(0);
    f * 2 + s
}

/// `$body` with `$t` bound to the transport of `$kind` in `$self` (a
/// [`Transports`]): one match for every way of looking a transport up.
macro_rules! each {
    ($self:ident, $kind:expr, $t:ident => $body:expr) => {
        match $kind {
            Kind::Floor => {
                let $t = &$self.floor;
                $body
            }
            Kind::Floor2 => {
                let $t = &$self.floor2;
                $body
            }
            Kind::Hako => {
                let $t = &$self.hako;
                $body
            }
            Kind::HakoSpin => {
                let $t = &$self.hako_spin;
                $body
            }
            Kind::HakoSpinPark => {
                let $t = &$self.hako_spin_park;
                $body
            }
            Kind::HakoPark => {
                let $t = &$self.hako_park;
                $body
            }
            Kind::HakoReqRes => {
                let $t = &$self.hako_reqres;
                $body
            }
            Kind::HakoReqResSpinPark => {
                let $t = &$self.hako_reqres_spin_park;
                $body
            }
            Kind::HakoReqResPark => {
                let $t = &$self.hako_reqres_park;
                $body
            }
            Kind::HakoAsync(wait, flavor) => {
                let $t = &$self.hako_async[hako_async_index(wait, flavor)];
                $body
            }
            Kind::TokioStream(socket, flavor) => {
                let $t = &$self.tokio_stream[tokio_stream_index(socket, flavor)];
                $body
            }
            Kind::Reference => {
                let $t = &$self.reference;
                $body
            }
            Kind::HakoC => {
                let $t = &$self.hako_c;
                $body
            }
            Kind::Futex => {
                let $t = &$self.futex;
                $body
            }
            Kind::Pipe => {
                let $t = &$self.pipe;
                $body
            }
            Kind::Fifo => {
                let $t = &$self.fifo;
                $body
            }
            Kind::Unix => {
                let $t = &$self.unix;
                $body
            }
            Kind::Tcp => {
                let $t = &$self.tcp;
                $body
            }
            Kind::Mq => {
                let $t = &$self.mq;
                $body
            }
            #[cfg(feature = "peers")]
            Kind::Iceoryx2 => {
                let $t = &$self.iceoryx2;
                $body
            }
            #[cfg(feature = "peers")]
            Kind::Iceoryx2ReqRes => {
                let $t = &$self.iceoryx2_reqres;
                $body
            }
            #[cfg(feature = "peers")]
            Kind::Shmipc => {
                let $t = &$self.shmipc;
                $body
            }
            #[cfg(feature = "bridge")]
            Kind::Zenoh => {
                let $t = &$self.zenoh;
                $body
            }
            #[cfg(feature = "bridge")]
            Kind::HakoBridge => {
                let $t = &$self.hako_bridge;
                $body
            }
            #[cfg(feature = "bridge")]
            Kind::HakoBridgeLowLatency => {
                let $t = &$self.hako_bridge_low_latency;
                $body
            }
        }
    };
}

/// One instance of every transport.
#[derive(Debug, Clone)]
pub struct Transports {
    floor: Floor,
    floor2: TwoLineFloor,
    hako: HakoPubSub,
    hako_spin: HakoPubSub,
    hako_spin_park: HakoPubSub,
    hako_park: HakoPubSub,
    hako_reqres: HakoReqRes,
    hako_reqres_spin_park: HakoReqRes,
    hako_reqres_park: HakoReqRes,
    hako_async: [AsyncTransport<HakoAsync>; 6],
    tokio_stream: [AsyncTransport<TokioStream>; 4],
    reference: Reference,
    hako_c: HakoC,
    futex: FutexFloor,
    pipe: Pipe,
    fifo: Fifo,
    unix: UnixSocket,
    tcp: Tcp,
    mq: MessageQueue,
    #[cfg(feature = "peers")]
    iceoryx2: Iceoryx2,
    #[cfg(feature = "peers")]
    iceoryx2_reqres: Iceoryx2ReqRes,
    #[cfg(feature = "peers")]
    shmipc: Shmipc,
    #[cfg(feature = "bridge")]
    zenoh: PlainZenoh,
    #[cfg(feature = "bridge")]
    hako_bridge: HakoBridge,
    #[cfg(feature = "bridge")]
    hako_bridge_low_latency: HakoBridge,
}

impl Transports {
    /// Every transport; the hako ones with `hako`'s service settings (only
    /// the leader's matter: it creates the services).
    pub fn new(hako: HakoPubSub) -> Self {
        let with = |wait| HakoPubSub { wait, ..hako };
        Self {
            floor: Floor,
            floor2: TwoLineFloor,
            hako: with(HakoWait::Poll),
            hako_spin: with(HakoWait::Blocking(WaitStrategy::BusySpin)),
            hako_spin_park: with(HakoWait::Blocking(WaitStrategy::SpinThenPark)),
            hako_park: with(HakoWait::Blocking(WaitStrategy::Park)),
            hako_reqres: HakoReqRes { wait: None },
            hako_reqres_spin_park: HakoReqRes {
                wait: Some(WaitStrategy::SpinThenPark),
            },
            hako_reqres_park: HakoReqRes {
                wait: Some(WaitStrategy::Park),
            },
            hako_async: std::array::from_fn(|i| {
                let (wait, flavor) = (AsyncWait::ALL[i % 3], Flavor::ALL[i / 3]);
                debug_assert_eq!(hako_async_index(wait, flavor), i);
                AsyncTransport(HakoAsync { wait, flavor })
            }),
            tokio_stream: std::array::from_fn(|i| {
                let socket = [Socket::Unix, Socket::Tcp][i % 2];
                let flavor = Flavor::ALL[i / 2];
                debug_assert_eq!(tokio_stream_index(socket, flavor), i);
                AsyncTransport(TokioStream { socket, flavor })
            }),
            reference: Reference,
            hako_c: HakoC,
            futex: FutexFloor,
            pipe: Pipe,
            fifo: Fifo,
            unix: UnixSocket,
            tcp: Tcp,
            mq: MessageQueue,
            #[cfg(feature = "peers")]
            iceoryx2: Iceoryx2::matching(&hako),
            #[cfg(feature = "peers")]
            iceoryx2_reqres: Iceoryx2ReqRes,
            #[cfg(feature = "peers")]
            shmipc: Shmipc,
            #[cfg(feature = "bridge")]
            zenoh: PlainZenoh,
            #[cfg(feature = "bridge")]
            hako_bridge: HakoBridge { low_latency: false },
            #[cfg(feature = "bridge")]
            hako_bridge_low_latency: HakoBridge { low_latency: true },
        }
    }

    /// Transport `kind`, for the leader.
    pub fn get(&self, kind: Kind) -> &dyn RunRow {
        each!(self, kind, t => t)
    }

    /// Transport `kind`, for [`crate::harness::follower::follower_main`].
    fn get_dyn(&self, kind: Kind) -> &dyn DynTransport {
        each!(self, kind, t => t)
    }

    /// Every transport, for [`crate::harness::follower::follower_main`].
    pub fn for_follower(&self) -> Vec<&dyn DynTransport> {
        Kind::ALL.iter().map(|&k| self.get_dyn(k)).collect()
    }
}

impl Default for Transports {
    fn default() -> Self {
        Self::new(HakoPubSub::default())
    }
}
