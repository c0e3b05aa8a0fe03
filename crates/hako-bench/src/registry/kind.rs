//! The transports' names: [`Kind`], the lists the suite runs by default,
//! and parsing `--transports`.

use crate::transports::runtimes::{AsyncWait, Flavor, Socket};
use crate::transports::runtimes::{Backend, HakoAsync, TokioStream};

/// A transport, by name: each variant is the transport [`Kind::name`]
/// names (`HakoSpinPark` is `hako-spin-park`, `TokioStream(Unix,
/// MultiThread)` `tokio-unix-mt`).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Floor,
    Floor2,
    Hako,
    HakoChunked,
    HakoSpin,
    HakoSpinPark,
    HakoPark,
    HakoReqRes,
    HakoReqResSpinPark,
    HakoReqResPark,
    HakoAsync(AsyncWait, Flavor),
    TokioStream(Socket, Flavor),
    Reference,
    HakoC,
    HakoGo,
    GoUnix,
    HakoBoard,
    Futex,
    Pipe,
    Fifo,
    Unix,
    Tcp,
    Mq,
    #[cfg(feature = "peers")]
    Iceoryx2,
    #[cfg(feature = "peers")]
    Iceoryx2ReqRes,
    #[cfg(feature = "peers")]
    Iceoryx2Board,
    #[cfg(feature = "peers")]
    Shmipc,
    #[cfg(feature = "peers")]
    MonoioUnix,
    #[cfg(feature = "peers")]
    TokioUringUnix,
    #[cfg(feature = "bridge")]
    Zenoh,
    #[cfg(feature = "bridge")]
    HakoBridge,
    #[cfg(feature = "bridge")]
    HakoBridgeLowLatency,
}

/// Names of the peer transports, known in every build.
pub const PEER_NAMES: [&str; 6] = [
    "iceoryx2",
    "iceoryx2-reqres",
    "iceoryx2-board",
    "shmipc",
    "monoio-unix",
    "tokio-uring-unix",
];

/// Names of the transports whose sides are Go programs (`hako-bench-go`,
/// built from the repository's `go/` by ./scripts/bench and ./scripts/go).
pub const GO_NAMES: [&str; 2] = ["hako-go", "go-unix"];

/// Names of the transports of the `bridge` feature, known in every build.
pub const BRIDGE_NAMES: [&str; 3] = ["zenoh", "hako-bridge", "hako-bridge-low-latency"];

impl Kind {
    /// Every transport of this build.
    pub const ALL: &'static [Kind] = &[
        Kind::Floor,
        Kind::Floor2,
        Kind::Hako,
        Kind::HakoChunked,
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
        Kind::HakoGo,
        Kind::GoUnix,
        Kind::HakoBoard,
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
        Kind::Iceoryx2Board,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
        #[cfg(feature = "peers")]
        Kind::MonoioUnix,
        #[cfg(feature = "peers")]
        Kind::TokioUringUnix,
        #[cfg(feature = "bridge")]
        Kind::Zenoh,
        #[cfg(feature = "bridge")]
        Kind::HakoBridge,
        #[cfg(feature = "bridge")]
        Kind::HakoBridgeLowLatency,
    ];

    /// What `hako bench` measures unless told otherwise: hako busy-polling
    /// (in Rust, C and Go) and spin-then-park, hako's blackboard (and
    /// iceoryx2's: ping-pong only), the floors (one cache line, two cache lines, a
    /// futex), the reference (a minimal descriptor ring by hand), every kernel
    /// mechanism, Go's unix socket and (when built in) the peers.
    pub const SUITE: &'static [Kind] = &[
        Kind::Hako,
        // hako with small payloads in the pool: what the queue slot saves.
        Kind::HakoChunked,
        Kind::HakoC,
        Kind::HakoGo,
        Kind::HakoSpinPark,
        Kind::HakoBoard,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2,
        #[cfg(feature = "peers")]
        Kind::Iceoryx2Board,
        #[cfg(feature = "peers")]
        Kind::Shmipc,
        Kind::Floor,
        Kind::Floor2,
        // A minimal descriptor ring by hand: what the library adds beyond it.
        Kind::Reference,
        Kind::Futex,
        Kind::Pipe,
        Kind::Fifo,
        Kind::Unix,
        Kind::Tcp,
        Kind::Mq,
        Kind::GoUnix,
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
    /// blocking request/response (busy-polled, spin-then-park, parked),
    /// shmipc (whose streams are tokio's), and a unix socket on the
    /// io_uring runtimes monoio and tokio-uring.
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
        #[cfg(feature = "peers")]
        Kind::MonoioUnix,
        #[cfg(feature = "peers")]
        Kind::TokioUringUnix,
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
            Kind::HakoChunked => "hako-chunked",
            Kind::HakoSpin => "hako-spin",
            Kind::HakoSpinPark => "hako-spin-park",
            Kind::HakoPark => "hako-park",
            Kind::HakoReqRes => "hako-reqres",
            Kind::HakoReqResSpinPark => "hako-reqres-spin-park",
            Kind::HakoReqResPark => "hako-reqres-park",
            Kind::HakoAsync(wait, flavor) => Backend::name(&HakoAsync { wait, flavor }),
            Kind::TokioStream(socket, flavor) => Backend::name(&TokioStream { socket, flavor }),
            Kind::Reference => "reference",
            Kind::HakoC => "hako-c",
            Kind::HakoGo => "hako-go",
            Kind::GoUnix => "go-unix",
            Kind::HakoBoard => "hako-board",
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
            Kind::Iceoryx2Board => "iceoryx2-board",
            #[cfg(feature = "peers")]
            Kind::Shmipc => "shmipc",
            #[cfg(feature = "peers")]
            Kind::MonoioUnix => "monoio-unix",
            #[cfg(feature = "peers")]
            Kind::TokioUringUnix => "tokio-uring-unix",
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
