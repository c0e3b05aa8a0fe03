//! One instance of every transport, looked up by [`Kind`].

use hako::WaitStrategy;

use super::kind::Kind;
use crate::harness::follower::DynTransport;
use crate::harness::RunRow;
#[cfg(feature = "bridge")]
use crate::transports::bridge::{bridged::HakoBridge, plain::PlainZenoh};
use crate::transports::floors::cache_line::{Floor, TwoLineFloor};
use crate::transports::floors::futex::FutexFloor;
use crate::transports::floors::reference::Reference;
use crate::transports::hako::c::HakoC;
use crate::transports::hako::pubsub::{HakoPubSub, HakoWait};
use crate::transports::hako::reqres::HakoReqRes;
use crate::transports::kernel::{Fifo, MessageQueue, Pipe, Tcp, UnixSocket};
#[cfg(feature = "peers")]
use crate::transports::peers::{
    iceoryx2::Iceoryx2,
    iceoryx2_reqres::Iceoryx2ReqRes,
    shmipc::Shmipc,
    uring::{Monoio, TokioUring, UringUnix},
};
use crate::transports::runtimes::{
    AsyncTransport, AsyncWait, Flavor, HakoAsync, Socket, TokioStream,
};

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
            #[cfg(feature = "peers")]
            Kind::MonoioUnix => {
                let $t = &$self.monoio_unix;
                $body
            }
            #[cfg(feature = "peers")]
            Kind::TokioUringUnix => {
                let $t = &$self.tokio_uring_unix;
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
    #[cfg(feature = "peers")]
    monoio_unix: UringUnix<Monoio>,
    #[cfg(feature = "peers")]
    tokio_uring_unix: UringUnix<TokioUring>,
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
            #[cfg(feature = "peers")]
            monoio_unix: UringUnix::default(),
            #[cfg(feature = "peers")]
            tokio_uring_unix: UringUnix::default(),
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
