//! Subscribers: take descriptors, read payloads in place. The typed face
//! of the port layer's receiver (`port/receiver/`).

use std::marker::PhantomData;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use super::sample::Sample;
use super::settings::PubSubSettings;
use crate::domain::config::OverflowPolicy;
use crate::domain::service::error::ServiceError;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::port::payload::Payload;
use crate::port::receiver::inner::{Receiver, ReceiverCreateError};
use crate::port::receiver::settings::{ReceiveError, ReceiverSettings};
use crate::port::wait::WaitStrategy;

/// Why a subscriber could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriberCreateError {
    /// The service admits no more subscribers.
    #[error("service {service:?} admits no more subscribers (max_subscribers = {max}); raise it when creating the service")]
    TooManySubscribers {
        /// The service.
        service: String,
        /// The limit.
        max: u32,
    },
    /// The service's files could not be used.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// Builds a [`Subscriber`]; returned by
/// [`PubSubService::subscriber_builder`](crate::PubSubService::subscriber_builder).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-subscriber-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Jobs".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let subscriber = service
///     .subscriber_builder()
///     .wait_strategy(hako::WaitStrategy::Park) // sleep at once, spin never
///     .end_when_publishers_gone(true) // the waits end when the publishers leave
///     .create()?;
/// assert_eq!(subscriber.publisher_count(), 0);
/// # Ok(()) }
/// ```
pub struct SubscriberBuilder<T: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    settings: Arc<PubSubSettings>,
    strategy: WaitStrategy,
    end_when_gone: bool,
    skip_own_node: bool,
    lossy: bool,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for SubscriberBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriberBuilder")
            .field("service", &self.service.name)
            .finish()
    }
}

impl<T: Payload + ?Sized> SubscriberBuilder<T> {
    pub(crate) fn new(service: Arc<ServiceInner>, settings: Arc<PubSubSettings>) -> Self {
        Self {
            service,
            settings,
            strategy: WaitStrategy::default(),
            end_when_gone: false,
            skip_own_node: false,
            lossy: false,
            _t: PhantomData,
        }
    }

    /// How [`receive_timeout`](Subscriber::receive_timeout) and
    /// [`blocking_receive`](Subscriber::blocking_receive) wait (default:
    /// spin, then park).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-wait-strategy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Ticks".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// // Lowest latency, one CPU kept busy while it waits.
    /// let subscriber = service
    ///     .subscriber_builder()
    ///     .wait_strategy(hako::WaitStrategy::BusySpin)
    ///     .create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// publisher.send_copy(1)?;
    /// let sample = subscriber.receive_timeout(Duration::from_millis(100))?;
    /// assert_eq!(sample.map(|s| *s), Some(1));
    /// # Ok(()) }
    /// ```
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Whether [`receive_timeout`](Subscriber::receive_timeout) and
    /// [`blocking_receive`](Subscriber::blocking_receive) end with
    /// [`ReceiveError::PublishersGone`] once every publisher seen during
    /// the wait has left or died and nothing is queued (default: false,
    /// they wait on, so a subscriber outlives a restart of its publisher).
    /// Set it when a publisher leaving means the work is done.
    ///
    /// Only a publisher the wait itself saw counts: a wait that begins
    /// with no publisher registered waits for one to come (or times out).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-end-when-gone", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Batch".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service
    ///     .subscriber_builder()
    ///     .end_when_publishers_gone(true)
    ///     .create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// publisher.send_copy(1)?;
    /// drop(publisher);
    /// // What a publisher sent stays readable after it left.
    /// assert_eq!(subscriber.receive()?.map(|s| *s), Some(1));
    /// // This wait saw no publisher: it waits for one, and times out.
    /// assert!(subscriber.receive_timeout(Duration::from_millis(50))?.is_none());
    /// // This one sees a publisher, which leaves 100 ms into the wait.
    /// let publisher = service.publisher_builder().create()?;
    /// let leaver = std::thread::spawn(move || {
    ///     std::thread::sleep(Duration::from_millis(100));
    ///     drop(publisher);
    /// });
    /// match subscriber.receive_timeout(Duration::from_millis(300)) {
    ///     Err(hako::ReceiveError::PublishersGone(service)) => println!("{service}: done"),
    ///     Err(e) => return Err(e.into()),
    ///     Ok(_) => unreachable!("the publisher sent nothing and left"),
    /// }
    /// leaver.join().expect("the thread dropped the publisher");
    /// # Ok(()) }
    /// ```
    pub fn end_when_publishers_gone(mut self, end: bool) -> Self {
        self.end_when_gone = end;
        self
    }

    /// Whether the subscriber leaves out the publishers of its own node
    /// (default: false, it takes every publisher's samples). They do not
    /// queue samples for it, so it is not woken for them nor holds their
    /// chunks. For a relay that republishes what it receives elsewhere and
    /// publishes here what came from elsewhere, as the bridge to other
    /// hosts does: its subscriber then never sees its own publisher's
    /// samples.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-skip-own", std::process::id())));
    /// # let cfg = hako::Config::default().with_root(&root.0);
    /// let relay = hako::NodeBuilder::new().config(&cfg).create()?;
    /// let program = hako::NodeBuilder::new().config(&cfg).create()?;
    /// let name = "Doc/Relay".try_into()?;
    /// let here = relay.service_builder(&name).publish_subscribe::<u64>().open_or_create()?;
    /// let outgoing = here.subscriber_builder().skip_own_node(true).create()?;
    /// let incoming = here.publisher_builder().create()?;
    /// let theirs = program.service_builder(&name).publish_subscribe::<u64>().open()?;
    /// let publisher = theirs.publisher_builder().create()?;
    /// incoming.send_copy(1)?; // from elsewhere: not for `outgoing`
    /// publisher.send_copy(2)?;
    /// assert_eq!(outgoing.receive()?.map(|s| *s), Some(2));
    /// assert!(outgoing.receive()?.is_none());
    /// # Ok(()) }
    /// ```
    pub fn skip_own_node(mut self, skip: bool) -> Self {
        self.skip_own_node = skip;
        self
    }

    /// Whether publishers never wait for this subscriber (default: false).
    /// On a service with [`OverflowPolicy::Backpressure`] a publisher waits
    /// for (or, by its strategy, gives up on) a subscriber whose queue is
    /// full; a lossy subscriber is treated as on a drop-oldest service
    /// instead: its oldest sample goes to make room, counted as the
    /// publisher's overflow towards it (`hako monitor` shows it), and the
    /// other subscribers still hold the publisher back as usual. For a
    /// subscriber that must not slow the service down, such as the bridge
    /// to other hosts forwarding samples over a network that may be slow.
    /// On a drop-oldest service it changes nothing.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-lossy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Lossy".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .overflow_policy(hako::OverflowPolicy::Backpressure)
    ///     .subscriber_max_buffer_size(2)
    ///     .open_or_create()?;
    /// let forwarder = service.subscriber_builder().lossy(true).create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// for i in 0..5 {
    ///     publisher.send_copy(i)?; // never waits for `forwarder`
    /// }
    /// assert_eq!(forwarder.receive()?.map(|s| *s), Some(3)); // the newest two
    /// assert_eq!(forwarder.receive()?.map(|s| *s), Some(4));
    /// # Ok(()) }
    /// ```
    pub fn lossy(mut self, lossy: bool) -> Self {
        self.lossy = lossy;
        self
    }

    /// Creates the subscriber and registers it with the service. Publishers
    /// connect it on their next send (and hand it their history then).
    pub fn create(self) -> Result<Subscriber<T>, SubscriberCreateError> {
        let PubSubSettings { payload, qos: q } = &*self.settings;
        let settings = ReceiverSettings {
            elem_size: payload.size,
            align: payload.align,
            slice: payload.slice,
            max_receivers: q.max_subscribers,
            buffer: u64::from(q.subscriber_max_buffer_size),
            borrowed: u64::from(q.subscriber_max_borrowed_samples),
            max_held: q.subscriber_max_borrowed_samples as usize,
            backpressure: q.overflow == OverflowPolicy::Backpressure,
            tagged: false,
            withdrawals: 0,
            strategy: self.strategy,
            end_when_gone: self.end_when_gone,
            skip_own_node: self.skip_own_node,
            lossy: self.lossy,
            own: PortKind::Subscriber,
            peers: PortKind::Publisher,
            shared: None,
        };
        let name = self.service.name.to_string();
        let rx = Receiver::create(self.service, settings).map_err(|e| match e {
            ReceiverCreateError::TooMany => SubscriberCreateError::TooManySubscribers {
                service: name,
                max: q.max_subscribers,
            },
            ReceiverCreateError::Service(e) => e.into(),
        })?;
        Ok(Subscriber {
            rx,
            _t: PhantomData,
        })
    }
}

/// Receives samples of `T` from every publisher of a service.
///
/// `Send` but not `Sync`: one thread at a time uses it, so receiving needs no
/// lock. Samples it hands out are `Send` too and keep the
/// publisher's memory mapped, so they stay readable even if the publisher
/// exits; the subscriber stays registered until it and all its samples are
/// dropped.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-subscriber", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use std::time::Duration;
/// let service = node
///     .service_builder(&"Doc/Subscriber".try_into()?)
///     .publish_subscribe::<u64>()
///     .subscriber_max_buffer_size(4)
///     .open_or_create()?;
/// let subscriber = service
///     .subscriber_builder()
///     .wait_strategy(hako::WaitStrategy::SpinThenPark) // how the waits wait
///     .create()?;
/// let publisher = service.publisher_builder().create()?;
/// for n in 1..=3 {
///     publisher.send_copy(n)?;
/// }
/// assert_eq!(*subscriber.blocking_receive()?, 1); // waits until one is there
/// let next = subscriber.receive_timeout(Duration::from_millis(100))?; // None on timeout
/// assert_eq!(next.map(|s| *s), Some(2));
/// while let Some(sample) = subscriber.receive()? {
///     println!("{}", *sample); // 3; then None: receive never blocks
/// }
/// # Ok(()) }
/// ```
pub struct Subscriber<T: Payload + ?Sized> {
    pub(crate) rx: Receiver,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for Subscriber<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("service", self.rx.service_name())
            .field("port_id", &format_args!("{:016x}", self.rx.id()))
            .finish()
    }
}

impl<T: Payload + ?Sized> Subscriber<T> {
    /// The subscriber's unique port id.
    pub fn id(&self) -> u64 {
        self.rx.id()
    }

    /// Takes the next sample, if any; never blocks. Samples of one publisher
    /// arrive in the order sent; publishers are served round-robin.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Receive".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// assert!(subscriber.receive()?.is_none()); // nothing sent yet
    /// publisher.send_copy(7)?;
    /// match subscriber.receive() {
    ///     Ok(Some(sample)) => println!("received {}", *sample),
    ///     Ok(None) => println!("nothing yet"),
    ///     Err(e) => eprintln!("cannot receive: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn receive(&self) -> Result<Option<Sample<T>>, ReceiveError> {
        self.rx.receive(Sample::new)?.map(valid).transpose()
    }

    /// Waits up to `timeout` for a sample; `Ok(None)` on timeout. A zero
    /// timeout is the same as [`receive`](Self::receive). Publishers that
    /// leave, die or restart meanwhile do not end the wait (unless the
    /// subscriber was built with
    /// [`end_when_publishers_gone(true)`](SubscriberBuilder::end_when_publishers_gone):
    /// then [`ReceiveError::PublishersGone`] as for
    /// [`blocking_receive`](Self::blocking_receive)). Ends with
    /// [`ReceiveError::TerminationRequest`] on Ctrl-C (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-subscriber-receive-timeout", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node
    ///     .service_builder(&"Doc/Readings".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// // Nothing sent: Ok(None) after 20 ms.
    /// assert!(subscriber.receive_timeout(Duration::from_millis(20))?.is_none());
    /// publisher.send_copy(42)?;
    /// match subscriber.receive_timeout(Duration::from_millis(100)) {
    ///     Ok(Some(sample)) => println!("received {}", *sample),
    ///     Ok(None) => println!("nothing within 100 ms"),
    ///     Err(e) => eprintln!("cannot receive: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn receive_timeout(&self, timeout: Duration) -> Result<Option<Sample<T>>, ReceiveError> {
        self.rx
            .receive_timeout(timeout, Sample::new)?
            .map(valid)
            .transpose()
    }

    /// Waits until a sample arrives, from any publisher, present or to
    /// come: a publisher that restarts (exits, or is killed, and starts
    /// again) is connected again and the wait goes on;
    /// [`take_publisher_changes`](Self::take_publisher_changes) tells that it
    /// happened. Returns [`ReceiveError::TerminationRequest`] when SIGINT or
    /// SIGTERM arrives while it waits (unless the node was built with
    /// [`signal_handling(false)`](crate::NodeBuilder::signal_handling)).
    /// A subscriber built with
    /// [`end_when_publishers_gone(true)`](SubscriberBuilder::end_when_publishers_gone)
    /// returns [`ReceiveError::PublishersGone`] instead once every
    /// publisher seen during the wait has left or died and nothing is queued
    /// (one started before any publisher still waits for one to come).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-subscriber-blocking-receive", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Orders".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// publisher.send_copy(5)?;
    /// // A sample is queued: returns at once.
    /// match subscriber.blocking_receive() {
    ///     Ok(sample) => println!("order {}", *sample),
    ///     Err(e) => eprintln!("stopped waiting: {e}"), // Ctrl-C, or the publishers gone
    /// }
    /// # Ok(()) }
    /// ```
    pub fn blocking_receive(&self) -> Result<Sample<T>, ReceiveError> {
        valid(self.rx.blocking_receive(Sample::new)?)
    }

    /// The publishers connected and departed since the last call (or since
    /// the subscriber was made): a restarted publisher shows as one
    /// departure and one connection. For programs that keep per-publisher
    /// state (sequence numbers, a stream's header) and must reset it. A
    /// publisher that died is counted as departed once its entry is
    /// reclaimed: when a wait of this subscriber finds every publisher
    /// gone, or when another port comes or goes on the service.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-publisher-changes", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Stream".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// publisher.send_copy(1)?;
    /// assert_eq!(subscriber.receive()?.map(|s| *s), Some(1));
    /// drop(publisher); // the publisher restarts:
    /// let _publisher = service.publisher_builder().create()?;
    /// // Counted when the subscriber looks (here, or in any receive).
    /// let changes = subscriber.take_publisher_changes();
    /// assert_eq!((changes.connected, changes.departed), (2, 1));
    /// // Taken: the next call starts from zero.
    /// assert_eq!(subscriber.take_publisher_changes(), hako::PublisherChanges::default());
    /// # Ok(()) }
    /// ```
    pub fn take_publisher_changes(&self) -> crate::port::receiver::state::PublisherChanges {
        self.rx.take_changes()
    }

    /// Whether a sample is waiting (a hint: another thread may take it).
    pub fn has_samples(&self) -> bool {
        self.rx.has_samples()
    }

    /// Number of publishers this subscriber is connected to.
    pub fn publisher_count(&self) -> usize {
        self.rx.publisher_count()
    }

    /// Whether a publisher is registered and its process alive (a system
    /// call per publisher). For event loops that wait on
    /// [`as_fd`](AsFd::as_fd) themselves: a publisher that dies cannot
    /// wake them, so they ask this now and then (hako's own waits do every
    /// 100 ms) and stop waiting once every publisher they saw is gone.
    pub fn publishers_alive(&self) -> bool {
        self.rx.publishers_alive()
    }

    /// Registers interest in the wake-up descriptor (`as_fd`): from now on
    /// a sender writes a byte to it after each send, until
    /// [`disarm_wakeup`](Self::disarm_wakeup). Returns true if something is
    /// waiting already (take it rather than sleep). For event loops other
    /// than a [`WaitSet`](crate::WaitSet) and hako's tokio support: register
    /// the descriptor for reading, take what is there, arm, sleep until it
    /// is readable, disarm, take again (the docs of `hako::aio`, with the
    /// `tokio` feature, say it whole).
    pub fn arm_wakeup(&self) -> bool {
        self.rx.arm()
    }

    /// Withdraws the interest registered by
    /// [`arm_wakeup`](Self::arm_wakeup), and empties the descriptor.
    pub fn disarm_wakeup(&self) {
        self.rx.disarm()
    }
}

/// `s`, if its bytes are a value of `T`. Nothing at all for the types
/// whose every bit pattern is a value (`T::CHECKED` is a constant).
#[inline(always)]
fn valid<T: Payload + ?Sized>(s: Sample<T>) -> Result<Sample<T>, ReceiveError> {
    // SAFETY: the sample's payload is mapped and readable while it lives.
    if T::CHECKED && !unsafe { T::is_valid(&*s) } {
        return Err(ReceiveError::InvalidPayload {
            publisher: s.publisher_id(),
            type_name: T::details().type_name,
        });
    }
    Ok(s)
}

impl<T: Payload + ?Sized> AsFd for Subscriber<T> {
    /// The subscriber's wake-up FIFO, readable after a send while a waitset
    /// waits on it.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }
}
