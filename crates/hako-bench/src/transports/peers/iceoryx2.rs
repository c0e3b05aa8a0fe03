//! iceoryx2 publish/subscribe, set up as [`crate::transports::hako::pubsub`] sets up hako.
//!
//! Same shape as hako's transport: services `hako-bench/<row>/ping` and
//! `…/pong`, payload `[u8]` with a static maximum slice length equal to the
//! row's size (`initial_max_slice_len` + [`AllocationStrategy::Static`]), so
//! every size up to 4 MiB and beyond fits. The sender loans a slice
//! (`loan_slice_uninit`), writes it in place as the row's payload mode says
//! and sends it; the receiver busy-polls `receive()` in the same loop as
//! hako ([`poll`]) and checks the sample in place. Queue depths and policy
//! as hako's: ping-pong keeps a buffer of 2, one-way rows a buffer of 32,
//! both without safe overflow (a lockstep ping-pong never fills its queue,
//! and hako's ping-pong uses backpressure too), and the publisher retries
//! until delivered
//! ([`BackpressureStrategy::RetryUntilDelivered`]): iceoryx2's own flow
//! control.
//!
//! Files: iceoryx2 keeps its node and service descriptions under a root
//! directory (default `/tmp/iceoryx2`) and its shared memory in `/dev/shm`
//! under a prefix (default `iox2_`). Here the root is the run's own
//! directory (`<run root>/iceoryx2`, removed with it) and the prefix is
//! `hkb<leader pid>_`, which [`crate::sys::rundir::clean_stale_shm`] removes once
//! that pid is gone. Both processes build the same [`Config`]. Nodes do not
//! install iceoryx2's SIGINT/SIGTERM handler, so Ctrl-C stops a run at once.

use std::mem::MaybeUninit;

use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::port::update_connections::UpdateConnections;
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory as PubSubFactory;

use crate::error::Result;
use crate::transport::{
    check_reached, poll, tag, Follower, Leader, PayloadMode, RowSpec, Transport, Waiting,
};
use crate::transports::hako::pubsub::HakoPubSub;

/// Prefix of iceoryx2's shared-memory files of a run: `hkb<leader pid>_`.
pub const SHM_PREFIX: &str = "hkb";

/// iceoryx2 publish/subscribe, busy-polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iceoryx2 {
    /// `subscriber_max_buffer_size` in ping-pong rows.
    pub buffer: usize,
    /// `subscriber_max_borrowed_samples`.
    pub borrowed: usize,
    /// `subscriber_max_buffer_size` in one-way rows.
    pub stream_buffer: usize,
}

impl Iceoryx2 {
    /// The queue settings hako runs with.
    pub fn matching(hako: &HakoPubSub) -> Self {
        Self {
            buffer: hako.buffer as usize,
            borrowed: hako.borrowed as usize,
            stream_buffer: hako.stream_buffer as usize,
        }
    }
}

impl Default for Iceoryx2 {
    fn default() -> Self {
        Self::matching(&HakoPubSub::default())
    }
}

type Pub = Publisher<ipc::Service, [u8], ()>;
type Sub = Subscriber<ipc::Service, [u8], ()>;
type Factory = PubSubFactory<ipc::Service, [u8], ()>;

pub(crate) fn err(what: &str, e: impl std::fmt::Debug) -> crate::error::BoxError {
    format!("iceoryx2: {what}: {e:?}").into()
}

/// The iceoryx2 configuration of a row: its files in the run's directory and
/// under the run's prefix.
fn config(row: &RowSpec, follower: bool) -> Result<Config> {
    let mut config = Config::default();
    let root = row.root.join("iceoryx2");
    let root = root
        .to_str()
        .ok_or_else(|| format!("run root {} is not UTF-8", row.root.display()))?;
    config
        .global
        .set_root_path(&Path::new(root.as_bytes()).map_err(|e| err("root path", e))?);
    let prefix = format!("{SHM_PREFIX}{}_", crate::sys::rundir::leader_pid(follower));
    config.global.prefix = FileName::new(prefix.as_bytes()).map_err(|e| err("prefix", e))?;
    Ok(config)
}

pub(super) fn node(row: &RowSpec, follower: bool) -> Result<Node<ipc::Service>> {
    // Warnings about stale nodes of killed runs are not for the table.
    set_log_level(LogLevel::Error);
    NodeBuilder::new()
        .config(&config(row, follower)?)
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|e| err("creating a node", e))
}

pub(super) fn service_name(row: &RowSpec, what: &str) -> Result<ServiceName> {
    ServiceName::new(&format!("hako-bench/{}/{what}", row.row_id))
        .map_err(|e| err("service name", e))
}

/// Loans a `size`-byte slice, writes tag `t` into it as `payload` says and
/// sends it; returns how many subscribers got it.
#[inline]
fn send_tagged(publisher: &Pub, size: usize, payload: PayloadMode, t: u8) -> Result<usize> {
    let mut sample = publisher
        .loan_slice_uninit(size)
        .map_err(|e| err("loan", e))?;
    let bytes: &mut [MaybeUninit<u8>] = sample.payload_mut();
    payload.write_uninit(bytes, t);
    // SAFETY: in full mode every byte was written; in touch mode the others
    // hold what the chunk held before (zeros from the kernel or bytes of
    // earlier samples): initialised memory, and `u8` has no invalid values.
    // The same reasoning as for hako (see crate::transports::hako::pubsub).
    let sample = unsafe { sample.assume_init() };
    sample.send().map_err(|e| err("send", e))
}

/// Busy-polls `subscriber` for the next sample and checks it.
#[inline]
fn receive_checked(
    subscriber: &Sub,
    size: usize,
    payload: PayloadMode,
    t: u8,
    what: &str,
) -> Result<()> {
    let sample = poll(what, || subscriber.receive().map_err(|e| err("receive", e)))?;
    payload.check(&sample, size, t, what)
}

/// The leader's side: publishes "ping", subscribes to "pong" (ping-pong).
pub struct IceoryxLeader {
    // Field order is drop order: ports before services before the node.
    ping: Pub,
    pong: Option<Sub>,
    services: Vec<Factory>,
    _node: Node<ipc::Service>,
    size: usize,
    payload: PayloadMode,
    followers: usize,
}

/// The follower's side: subscribes to "ping", publishes "pong" (ping-pong).
pub struct IceoryxFollower {
    ping: Sub,
    pong: Option<Pub>,
    _services: Vec<Factory>,
    _node: Node<ipc::Service>,
    size: usize,
    payload: PayloadMode,
}

impl Transport for Iceoryx2 {
    type Leader = IceoryxLeader;
    type Follower = IceoryxFollower;

    fn name(&self) -> &'static str {
        "iceoryx2"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn leader(&self, row: &RowSpec) -> Result<IceoryxLeader> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let node = node(row, false)?;
        let one_way = row.pattern.one_way();
        let followers = row.followers.max(1) as usize;
        let mk = |what: &str, subscribers: usize| -> Result<Factory> {
            node.service_builder(&service_name(row, what)?)
                .publish_subscribe::<[u8]>()
                .max_publishers(1)
                .max_subscribers(subscribers)
                .max_nodes(subscribers + 1)
                .history_size(0)
                .subscriber_max_borrowed_samples(self.borrowed)
                .subscriber_max_buffer_size(if one_way {
                    row.stream_depth(self.stream_buffer)
                } else {
                    self.buffer
                })
                .enable_safe_overflow(false)
                .create()
                .map_err(|e| err("creating a service", e))
        };
        let mut services = vec![mk("ping", followers)?];
        if !one_way {
            services.push(mk("pong", 1)?);
        }
        let ping = services[0]
            .publisher_builder()
            .initial_max_slice_len(row.size)
            .allocation_strategy(AllocationStrategy::Static)
            .max_loaned_samples(1)
            .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
            .create()
            .map_err(|e| err("creating a publisher", e))?;
        let pong = match services.get(1) {
            Some(s) => Some(
                s.subscriber_builder()
                    .create()
                    .map_err(|e| err("creating a subscriber", e))?,
            ),
            None => None,
        };
        Ok(IceoryxLeader {
            ping,
            pong,
            services,
            _node: node,
            size: row.size,
            payload: row.payload,
            followers,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<IceoryxFollower> {
        let node = node(row, true)?;
        let open = |what: &str| -> Result<Factory> {
            node.service_builder(&service_name(row, what)?)
                .publish_subscribe::<[u8]>()
                .open()
                .map_err(|e| err("opening a service", e))
        };
        let mut services = vec![open("ping")?];
        if !row.pattern.one_way() {
            services.push(open("pong")?);
        }
        let ping = services[0]
            .subscriber_builder()
            .create()
            .map_err(|e| err("creating a subscriber", e))?;
        let pong = match services.get(1) {
            Some(s) => Some(
                s.publisher_builder()
                    .initial_max_slice_len(row.size)
                    .allocation_strategy(AllocationStrategy::Static)
                    .max_loaned_samples(1)
                    .create()
                    .map_err(|e| err("creating a publisher", e))?,
            ),
            None => None,
        };
        Ok(IceoryxFollower {
            ping,
            pong,
            _services: services,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }
}

impl Leader for IceoryxLeader {
    fn connect(&mut self) -> Result<()> {
        let want = self.followers;
        poll("the followers' ports to connect", || {
            let subs = self.services[0].dynamic_config().number_of_subscribers();
            let pubs = self
                .services
                .get(1)
                .map_or(1, |s| s.dynamic_config().number_of_publishers());
            Ok((subs == want && pubs == 1).then_some(()))
        })?;
        self.ping
            .update_connections()
            .map_err(|e| err("connecting", e))
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let reached = send_tagged(&self.ping, self.size, self.payload, t)?;
        sent();
        check_reached("ping", seq, reached, 1)?;
        let pong = self.pong.as_ref().ok_or("this row is one-way")?;
        receive_checked(pong, self.size, self.payload, t.wrapping_add(1), "a pong")
    }

    #[inline]
    fn send(&mut self, seq: u64) -> Result<()> {
        let reached = send_tagged(&self.ping, self.size, self.payload, tag(seq))?;
        check_reached("message", seq, reached, self.followers)
    }
}

impl Follower for IceoryxFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        self.receive(seq)?;
        let pong = self.pong.as_ref().ok_or("this row is one-way")?;
        let reached = send_tagged(pong, self.size, self.payload, tag(seq).wrapping_add(1))?;
        check_reached("pong", seq, reached, 1)?;
        Ok(())
    }

    #[inline]
    fn receive(&mut self, seq: u64) -> Result<()> {
        receive_checked(&self.ping, self.size, self.payload, tag(seq), "a ping")
    }
}
