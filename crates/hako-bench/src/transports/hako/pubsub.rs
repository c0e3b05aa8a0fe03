//! hako publish/subscribe, busy-polling or blocking.
//!
//! Two services per row, `pingpong/<row>/ping` and `pingpong/<row>/pong`, each
//! with one publisher and one subscriber, payload `[u8]` with
//! `max_slice_len = size`. For message `seq` the leader loans a `size`-byte
//! slice, writes its first and last byte, sends it on "ping" and waits for
//! the answer on "pong"; the follower waits on "ping", checks both bytes,
//! drops the sample (returning the chunk), and answers the same way on "pong".
//! How both sides wait is a [`HakoWait`]: busy-polling `receive()` in this
//! crate's loop (transport "hako"), or the library's `blocking_receive()`
//! with a [`WaitStrategy`] ("hako-spin", "hako-spin-park", "hako-park"), so
//! the publisher's `send()` wakes a parked subscriber through its futex.
//! In touch mode nothing else of the payload is touched: this is the cost of
//! zero-copy transfer itself, which should not depend on the size; in full
//! mode the sender fills the loaned slice and the receiver sums it in place
//! ([`PayloadMode`]).
//!
//! The leader creates both services with small pools (one subscriber, one
//! publisher, no history; buffer, borrow and loan limits from
//! [`HakoPubSub`]); the follower opens them as they are. Ping-pong keeps
//! at most one message in flight per direction, so no queue ever fills and
//! the overflow policy never acts; both services use
//! [`OverflowPolicy::Backpressure`], whose subscriber takes a sample with a
//! plain store. Under [`OverflowPolicy::DropOldest`] the publisher may take
//! the oldest sample back from a full queue, so every receive claims its
//! sample with a compare-and-swap, which costs about 10 ns per receive here
//! (20 ns per round trip). iceoryx2 is set up the same way (no safe
//! overflow).
//!
//! One-way rows (throughput, fan-out) use only "ping", with as many
//! subscribers as followers, a queue of [`HakoPubSub::stream_buffer`] samples
//! per subscriber and [`OverflowPolicy::Backpressure`] with
//! [`BackpressureStrategy::Block`]: the publisher waits for the slowest
//! subscriber instead of dropping anything, hako's own flow control.

use hako::{
    BackpressureStrategy, Config, Node, NodeBuilder, OverflowPolicy, PubSubService, Publisher,
    Sample, SampleMutUninit, ServiceName, Subscriber, WaitStrategy,
};

use crate::error::Result;
use crate::transport::{
    check_reached, pipeline, poll, tag, Follower, Leader, PayloadMode, RowSpec, Transport, Waiting,
};

/// How the receiving side of [`HakoPubSub`] waits for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HakoWait {
    /// Busy-polls `Subscriber::receive()` in this crate's loop ([`poll`]);
    /// the subscriber never registers as a sleeper, so `send()` never makes
    /// a system call.
    #[default]
    Poll,
    /// `Subscriber::blocking_receive()` on a subscriber built with this
    /// strategy.
    Blocking(WaitStrategy),
}

/// hako publish/subscribe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HakoPubSub {
    /// `subscriber_max_buffer_size` of both services.
    pub buffer: u32,
    /// `subscriber_max_borrowed_samples` of both services.
    pub borrowed: u32,
    /// `max_loaned_samples` of the leader's publisher (the follower's is 1).
    pub max_loans: u32,
    /// `subscriber_max_buffer_size` in one-way rows: how far the publisher
    /// may run ahead of a subscriber. 32 rather than 8: with the deeper
    /// queue hako streams about 20 % more messages per second here
    /// (iceoryx2, which gets the same depth, does not change). Full-mode
    /// rows of large messages queue fewer ([`RowSpec::stream_depth`]).
    pub stream_buffer: u32,
    /// How both sides wait for a message.
    pub wait: HakoWait,
    /// Whether payloads of up to 48 bytes travel in the queue slot
    /// (`PublisherBuilder::inline_payloads`: the library's default; off in
    /// transport "hako-chunked", which measures them in the pool instead).
    pub inline: bool,
}

impl Default for HakoPubSub {
    fn default() -> Self {
        Self {
            buffer: 2,
            borrowed: 1,
            max_loans: 1,
            stream_buffer: 32,
            wait: HakoWait::Poll,
            inline: true,
        }
    }
}

impl HakoPubSub {
    /// The default configuration, waiting with `wait`.
    pub fn waiting_with(wait: HakoWait) -> Self {
        Self {
            wait,
            ..Self::default()
        }
    }

    /// A subscriber on `service` that waits as configured.
    fn subscriber(&self, service: &PubSubService<[u8]>) -> Result<Subscriber<[u8]>> {
        let builder = service.subscriber_builder();
        let builder = match self.wait {
            HakoWait::Poll => builder,
            HakoWait::Blocking(strategy) => builder.wait_strategy(strategy),
        };
        Ok(builder.create()?)
    }
}

/// Waits for the next sample on `subscriber` as `wait` says.
#[inline]
fn next_sample(wait: HakoWait, subscriber: &Subscriber<[u8]>, what: &str) -> Result<Sample<[u8]>> {
    match wait {
        HakoWait::Poll => poll(what, || Ok(subscriber.receive()?)),
        HakoWait::Blocking(_) => Ok(subscriber.blocking_receive()?),
    }
}

/// The leader's side: publishes "ping", subscribes to "pong" (ping-pong).
pub struct HakoLeader {
    // Field order is drop order: ports before services before the node.
    ping: Publisher<[u8]>,
    pong: Option<Subscriber<[u8]>>,
    _services: Vec<PubSubService<[u8]>>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
    followers: usize,
    wait: HakoWait,
}

/// The follower's side: subscribes to "ping", publishes "pong" (ping-pong).
pub struct HakoFollower {
    ping: Subscriber<[u8]>,
    pong: Option<Publisher<[u8]>>,
    _services: Vec<PubSubService<[u8]>>,
    _node: Node,
    size: usize,
    payload: PayloadMode,
    wait: HakoWait,
}

fn node(row: &RowSpec, name: &str) -> Result<Node> {
    let config = Config::default().with_root(&row.root);
    Ok(NodeBuilder::new().name(name)?.config(&config).create()?)
}

fn service_names(row: &RowSpec) -> Result<[ServiceName; 2]> {
    Ok([
        ServiceName::new(&format!("pingpong/{}/ping", row.row_id))?,
        ServiceName::new(&format!("pingpong/{}/pong", row.row_id))?,
    ])
}

fn check_size(size: usize) -> Result<()> {
    if size == 0 {
        return Err("message size must be at least 1 byte".into());
    }
    Ok(())
}

/// Loans a `size`-byte sample, writes message tag `t` into it as `payload`
/// says and sends it; returns how many subscribers got it.
#[inline]
fn loan_tagged(
    publisher: &Publisher<[u8]>,
    size: usize,
    payload: PayloadMode,
    t: u8,
) -> Result<usize> {
    let mut sample: SampleMutUninit<[u8]> = publisher.loan_slice_uninit(size)?;
    payload.write_uninit(sample.payload_mut(), t);
    // SAFETY: in full mode every byte was written. In touch mode only the
    // first and last byte were; the others hold whatever the chunk held
    // before — zeros written by the kernel when the segment was created, or
    // bytes of earlier payloads — so they are initialised memory, and `u8`
    // has no invalid bit patterns. hako offers no API for "send a chunk with
    // partly stale contents"; writing all 4 MiB per message would measure
    // memcpy, not the transport (that is what full mode is for).
    let sample = unsafe { sample.assume_init() };
    Ok(sample.send())
}

impl Transport for HakoPubSub {
    type Leader = HakoLeader;
    type Follower = HakoFollower;

    fn name(&self) -> &'static str {
        match self.wait {
            HakoWait::Poll if !self.inline => "hako-chunked",
            HakoWait::Poll => "hako",
            HakoWait::Blocking(WaitStrategy::BusySpin) => "hako-spin",
            HakoWait::Blocking(WaitStrategy::SpinThenPark) => "hako-spin-park",
            HakoWait::Blocking(WaitStrategy::Park) => "hako-park",
        }
    }

    fn waiting(&self) -> Waiting {
        match self.wait {
            HakoWait::Poll | HakoWait::Blocking(WaitStrategy::BusySpin) => Waiting::BusyPoll,
            HakoWait::Blocking(_) => Waiting::Blocking,
        }
    }

    /// Pings in flight, each answered by a pong: both queues hold the
    /// row's depth.
    fn in_flight_skip(&self, _size: usize, _depth: u32) -> Option<String> {
        None
    }

    fn leader(&self, row: &RowSpec) -> Result<HakoLeader> {
        check_size(row.size)?;
        let node = node(row, "pingpong-leader")?;
        let one_way = row.pattern.one_way();
        let followers = row.followers.max(1);
        let mk = |name: &ServiceName, subscribers: u32| {
            let builder = node
                .service_builder(name)
                .publish_subscribe::<[u8]>()
                .max_publishers(1)
                .max_subscribers(subscribers)
                .max_nodes(subscribers + 1)
                .history_size(0)
                .subscriber_max_borrowed_samples(self.borrowed);
            builder
                .subscriber_max_buffer_size(if one_way {
                    row.stream_depth(self.stream_buffer as usize) as u32
                } else {
                    // Request/response rows: room for every message in flight.
                    self.buffer.max(row.depth)
                })
                .overflow_policy(OverflowPolicy::Backpressure)
                .create()
        };
        let [ping_name, pong_name] = service_names(row)?;
        let mut services = vec![mk(&ping_name, followers)?];
        if !one_way {
            services.push(mk(&pong_name, 1)?);
        }
        let ping = services[0]
            .publisher_builder()
            .max_slice_len(row.size)
            .max_loaned_samples(self.max_loans)
            .backpressure(BackpressureStrategy::Block)
            .inline_payloads(self.inline)
            .create()?;
        let pong = match services.get(1) {
            Some(s) => Some(self.subscriber(s)?),
            None => None,
        };
        Ok(HakoLeader {
            ping,
            pong,
            _services: services,
            _node: node,
            size: row.size,
            payload: row.payload,
            followers: followers as usize,
            wait: self.wait,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<HakoFollower> {
        check_size(row.size)?;
        let node = node(row, &format!("pingpong-follower-{}", row.index))?;
        let [ping_name, pong_name] = service_names(row)?;
        let open = |name: &ServiceName| {
            node.service_builder(name)
                .publish_subscribe::<[u8]>()
                .open()
        };
        let mut services = vec![open(&ping_name)?];
        if !row.pattern.one_way() {
            services.push(open(&pong_name)?);
        }
        let ping = self.subscriber(&services[0])?;
        let pong = match services.get(1) {
            Some(s) => Some(
                s.publisher_builder()
                    .max_slice_len(row.size)
                    .max_loaned_samples(1)
                    .inline_payloads(self.inline)
                    .create()?,
            ),
            None => None,
        };
        Ok(HakoFollower {
            ping,
            pong,
            _services: services,
            _node: node,
            size: row.size,
            payload: row.payload,
            wait: self.wait,
        })
    }
}

fn one_way_only(what: &str) -> crate::error::BoxError {
    format!("{what}: this row is one-way (no pong service)").into()
}

impl Leader for HakoLeader {
    fn connect(&mut self) -> Result<()> {
        let want = self.followers;
        poll("the followers' ports to connect", || {
            let pong = self.pong.as_ref().is_none_or(|p| p.publisher_count() == 1);
            Ok((self.ping.subscriber_count() == want && pong).then_some(()))
        })
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        let reached = loan_tagged(&self.ping, self.size, self.payload, t)?;
        sent();
        check_reached("ping", seq, reached, 1)?;
        let pong = self
            .pong
            .as_ref()
            .ok_or_else(|| one_way_only("round trip"))?;
        let answer = next_sample(self.wait, pong, "a pong")?;
        self.payload
            .check(&answer, self.size, t.wrapping_add(1), "pong")
    }

    #[inline]
    fn send(&mut self, seq: u64) -> Result<()> {
        let reached = loan_tagged(&self.ping, self.size, self.payload, tag(seq))?;
        check_reached("message", seq, reached, self.followers)
    }

    fn pipeline(&mut self, seqs: std::ops::RangeInclusive<u64>, depth: usize) -> Result<()> {
        let (size, payload, wait) = (self.size, self.payload, self.wait);
        let pong = self.pong.as_ref().ok_or_else(|| one_way_only("pipeline"))?;
        pipeline(
            &mut &self.ping,
            seqs,
            depth,
            |ping, seq| check_reached("ping", seq, loan_tagged(ping, size, payload, tag(seq))?, 1),
            |_, seq, ()| {
                let answer = next_sample(wait, pong, "a pong")?;
                payload.check(&answer, size, tag(seq).wrapping_add(1), "pong")
            },
        )
    }
}

impl Follower for HakoFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.receive(seq)?;
        let pong = self.pong.as_ref().ok_or_else(|| one_way_only("answer"))?;
        let reached = loan_tagged(pong, self.size, self.payload, t.wrapping_add(1))?;
        check_reached("pong", seq, reached, 1)?;
        Ok(())
    }

    #[inline]
    fn receive(&mut self, seq: u64) -> Result<()> {
        let sample = next_sample(self.wait, &self.ping, "a ping")?;
        self.payload.check(&sample, self.size, tag(seq), "ping")
        // The sample drops here, handing its chunk back.
    }
}

/// The cost of one message with no other CPU involved: one thread loans,
/// tags, sends, receives, checks and drops `size`-byte samples through one
/// service, `iterations` times. Returns nanoseconds per message. Subtracted
/// from a one-way trip it leaves what cross-CPU traffic costs.
pub fn single_thread_ns(root: &std::path::Path, size: usize, iterations: u64) -> Result<f64> {
    check_size(size)?;
    let row = RowSpec::ping_pong(root.to_owned(), u64::MAX, size);
    let node = node(&row, "pingpong-local")?;
    let name = ServiceName::new("pingpong/local")?;
    let service = node
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .max_publishers(1)
        .max_subscribers(1)
        .history_size(0)
        .subscriber_max_buffer_size(2)
        .subscriber_max_borrowed_samples(1)
        .create()?;
    let publisher = service
        .publisher_builder()
        .max_slice_len(size)
        .max_loaned_samples(1)
        .create()?;
    let subscriber = service.subscriber_builder().create()?;
    let one = |seq: u64| -> Result<()> {
        let t = tag(seq);
        loan_tagged(&publisher, size, PayloadMode::Touch, t)?;
        let sample = subscriber
            .receive()?
            .ok_or("a sample sent in this thread is missing")?;
        PayloadMode::Touch.check(&sample, size, t, "local")
    };
    for seq in 1..=iterations / 10 {
        one(seq)?;
    }
    let start = std::time::Instant::now();
    for seq in 1..=iterations {
        one(seq)?;
    }
    Ok(start.elapsed().as_nanos() as f64 / iterations as f64)
}
