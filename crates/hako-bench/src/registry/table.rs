//! One instance of every transport, looked up by [`Kind`].

use std::sync::Arc;

use hako::WaitStrategy;

use super::kind::Kind;
use crate::harness::RunRow;
use crate::transport::Transport;
use crate::transports::board::HakoBoard;
#[cfg(feature = "bridge")]
use crate::transports::bridge::{bridged::HakoBridge, plain::PlainZenoh};
use crate::transports::floors::cache_line::{Floor, TwoLineFloor};
use crate::transports::floors::futex::FutexFloor;
use crate::transports::floors::reference::Reference;
use crate::transports::go::Go;
use crate::transports::hako::c::HakoC;
use crate::transports::hako::pubsub::{HakoPubSub, HakoWait};
use crate::transports::hako::reqres::HakoReqRes;
use crate::transports::kernel::{Fifo, MessageQueue, Pipe, Tcp, UnixSocket};
#[cfg(feature = "peers")]
use crate::transports::peers::{
    iceoryx2::Iceoryx2,
    iceoryx2_board::Iceoryx2Board,
    iceoryx2_reqres::Iceoryx2ReqRes,
    shmipc::Shmipc,
    uring::{Monoio, TokioUring, UringUnix},
};
use crate::transports::runtimes::{
    AsyncTransport, AsyncWait, Flavor, HakoAsync, Socket, TokioStream,
};

/// One transport, as the leader's rows and the follower process use it.
#[derive(Clone)]
struct Entry {
    kind: Kind,
    transport: Arc<dyn RunRow + Send + Sync>,
}

fn entry<T: Transport + 'static>(kind: Kind, transport: T) -> Entry
where
    T::Follower: 'static,
{
    Entry {
        kind,
        transport: Arc::new(transport),
    }
}

/// Every transport of the build, each once.
#[derive(Clone)]
pub struct Transports(Vec<Entry>);

impl std::fmt::Debug for Transports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|e| e.kind.name()))
            .finish()
    }
}

impl Transports {
    /// Every transport; the hako ones with `hako`'s service settings (only
    /// the leader's matter: it creates the services).
    pub fn new(hako: HakoPubSub) -> Self {
        let with = |wait| HakoPubSub { wait, ..hako };
        let reqres = |wait| HakoReqRes { wait };
        let go = |through_hako| Go {
            hako: through_hako,
            stream_buffer: hako.stream_buffer,
        };
        let mut list = vec![
            entry(Kind::Floor, Floor),
            entry(Kind::Floor2, TwoLineFloor),
            entry(Kind::Hako, with(HakoWait::Poll)),
            entry(
                Kind::HakoChunked,
                HakoPubSub {
                    inline: false,
                    ..with(HakoWait::Poll)
                },
            ),
            entry(
                Kind::HakoSpin,
                with(HakoWait::Blocking(WaitStrategy::BusySpin)),
            ),
            entry(
                Kind::HakoSpinPark,
                with(HakoWait::Blocking(WaitStrategy::SpinThenPark)),
            ),
            entry(Kind::HakoPark, with(HakoWait::Blocking(WaitStrategy::Park))),
            entry(Kind::HakoReqRes, reqres(None)),
            entry(
                Kind::HakoReqResSpinPark,
                reqres(Some(WaitStrategy::SpinThenPark)),
            ),
            entry(Kind::HakoReqResPark, reqres(Some(WaitStrategy::Park))),
            entry(Kind::Reference, Reference),
            entry(Kind::HakoC, HakoC),
            entry(Kind::HakoGo, go(true)),
            entry(Kind::GoUnix, go(false)),
            entry(Kind::HakoBoard, HakoBoard),
            entry(Kind::Futex, FutexFloor),
            entry(Kind::Pipe, Pipe),
            entry(Kind::Fifo, Fifo),
            entry(Kind::Unix, UnixSocket),
            entry(Kind::Tcp, Tcp),
            entry(Kind::Mq, MessageQueue),
            #[cfg(feature = "peers")]
            entry(Kind::Iceoryx2, Iceoryx2::matching(&hako)),
            #[cfg(feature = "peers")]
            entry(Kind::Iceoryx2ReqRes, Iceoryx2ReqRes),
            #[cfg(feature = "peers")]
            entry(Kind::Iceoryx2Board, Iceoryx2Board),
            #[cfg(feature = "peers")]
            entry(Kind::Shmipc, Shmipc),
            #[cfg(feature = "peers")]
            entry(Kind::MonoioUnix, UringUnix::<Monoio>::default()),
            #[cfg(feature = "peers")]
            entry(Kind::TokioUringUnix, UringUnix::<TokioUring>::default()),
            #[cfg(feature = "bridge")]
            entry(Kind::Zenoh, PlainZenoh),
            #[cfg(feature = "bridge")]
            entry(Kind::HakoBridge, HakoBridge { low_latency: false }),
            #[cfg(feature = "bridge")]
            entry(Kind::HakoBridgeLowLatency, HakoBridge { low_latency: true }),
        ];
        for flavor in Flavor::ALL {
            for wait in AsyncWait::ALL {
                let t = AsyncTransport(HakoAsync { wait, flavor });
                list.push(entry(Kind::HakoAsync(wait, flavor), t));
            }
            for socket in [Socket::Unix, Socket::Tcp] {
                let t = AsyncTransport(TokioStream { socket, flavor });
                list.push(entry(Kind::TokioStream(socket, flavor), t));
            }
        }
        Self(list)
    }

    fn find(&self, kind: Kind) -> &Entry {
        self.0
            .iter()
            .find(|e| e.kind == kind)
            .expect("every kind of the build has a transport")
    }

    /// Transport `kind`, for the leader.
    pub fn get(&self, kind: Kind) -> &dyn RunRow {
        &*self.find(kind).transport
    }

    /// Every transport in the order of [`Kind::ALL`], for
    /// [`crate::harness::follower::follower_main`].
    pub fn for_follower(&self) -> Vec<&dyn RunRow> {
        Kind::ALL.iter().map(|&k| self.get(k)).collect()
    }
}

impl Default for Transports {
    fn default() -> Self {
        Self::new(HakoPubSub::default())
    }
}
