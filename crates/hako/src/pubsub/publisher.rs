//! Publishers: loan a chunk, write in place, send a descriptor. The typed
//! face of the port layer's sender (`port/sender/`).

use std::marker::PhantomData;
use std::sync::Arc;

use super::sample_mut::{SampleMut, SampleMutUninit};
use super::settings::PubSubSettings;
use crate::domain::service::error::ServiceError;
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::tables::PortKind;
use crate::port::payload::{Payload, ShmSafe};
use crate::port::sender::inner::SenderInner;
use crate::port::sender::loan::RawLoan;
use crate::port::sender::settings::{
    BackpressureStrategy, LoanError, SenderCreateError, SenderSettings,
};

/// Why a publisher could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublisherCreateError {
    /// The service admits no more publishers.
    #[error("service {service:?} admits no more publishers (max_publishers = {max}); raise it when creating the service")]
    TooManyPublishers {
        /// The service.
        service: String,
        /// The limit.
        max: u32,
    },
    /// A setting is out of range.
    #[error("invalid publisher setting {field} = {value}: {rule}")]
    InvalidSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// The data segment could not be created (e.g. the tmpfs is full).
    #[error("cannot create the publisher's data segment of {size} bytes: {source}")]
    Segment {
        /// Requested size.
        size: u64,
        /// Why (for a full tmpfs: "No space left on device"; free space or
        /// lower the service's limits).
        source: ServiceError,
    },
}

/// Why a sample could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// `send_copy` could not loan a sample.
    #[error(transparent)]
    Loan(#[from] LoanError),
}

/// Builds a [`Publisher`]; returned by
/// [`PubSubService::publisher_builder`](crate::PubSubService::publisher_builder).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-publisher-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Commands".try_into()?)
///     .publish_subscribe::<u64>()
///     .overflow_policy(hako::OverflowPolicy::Backpressure)
///     .open_or_create()?;
/// let publisher = service
///     .publisher_builder()
///     .max_loaned_samples(4)
///     // When a subscriber's queue is full: try 100 times, then give up.
///     .backpressure(hako::BackpressureStrategy::Retry(100))
///     .create()?;
/// assert!(publisher.pool_size() >= 4);
/// # Ok(()) }
/// ```
pub struct PublisherBuilder<T: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    settings: Arc<PubSubSettings>,
    max_loans: Option<u32>,
    max_slice_len: u64,
    strategy: BackpressureStrategy,
    pool_size: Option<u32>,
    inline: bool,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for PublisherBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublisherBuilder")
            .field("service", &self.service.name)
            .field("max_loans", &self.max_loans)
            .field("max_slice_len", &self.max_slice_len)
            .field("strategy", &self.strategy)
            .field("pool_size", &self.pool_size)
            .field("inline_payloads", &self.inline)
            .finish()
    }
}

impl<T: Payload + ?Sized> PublisherBuilder<T> {
    pub(crate) fn new(service: Arc<ServiceInner>, settings: Arc<PubSubSettings>) -> Self {
        Self {
            service,
            settings,
            max_loans: None,
            max_slice_len: 1,
            strategy: BackpressureStrategy::Block,
            pool_size: None,
            inline: true,
            _t: PhantomData,
        }
    }

    /// Samples that may be loaned (not yet sent or dropped) at once.
    /// Default: the config's `publisher_max_loaned_samples`.
    pub fn max_loaned_samples(mut self, n: u32) -> Self {
        self.max_loans = Some(n);
        self
    }

    /// Chunks in the publisher's pool. The default covers the worst case:
    /// every subscriber's queue full and its borrow limit reached, plus the
    /// history and the loans, so a loan never finds the pool empty. A
    /// smaller pool saves shared memory (large payloads, many subscribers);
    /// a loan then fails with [`LoanError::OutOfMemory`] while subscribers
    /// hold every chunk. At least `max_loaned_samples`; a larger pool than
    /// the default is made as asked, though its extra chunks never all come
    /// into use.
    pub fn pool_size(mut self, chunks: u32) -> Self {
        self.pool_size = Some(chunks);
        self
    }

    /// Whether a payload of at most 48 bytes (the largest one the
    /// publisher may send: the payload type's size, times `max_slice_len`
    /// for a slice), aligned to at most 8, travels in the subscriber's
    /// queue slot beside its descriptor (default: yes). It is still loaned,
    /// written and sent in the publisher's memory as any other; at send the
    /// publisher copies it into each subscriber's slot, and the subscriber
    /// copies it out when it takes the slot, so a message moves one cache
    /// line from publisher to subscriber instead of two. `false` keeps
    /// such payloads in the pool alone (measured as `hako-chunked` in
    /// `hako bench`); larger payloads always stay there.
    pub fn inline_payloads(mut self, on: bool) -> Self {
        self.inline = on;
        self
    }

    /// What to do when a subscriber's queue is full on a service with
    /// [`OverflowPolicy::Backpressure`](crate::OverflowPolicy::Backpressure) (default: block). Ignored under
    /// drop-oldest.
    pub fn backpressure(mut self, strategy: BackpressureStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Creates the publisher: its data segment and its entry in the service.
    ///
    /// The segment's memory is allocated here, all of it, and mapped with
    /// its page tables set up (subscribers do the same when they connect),
    /// so no send or receive takes a page fault later; in exchange creation
    /// takes time in proportion to the pool (chunks × chunk size).
    pub fn create(self) -> Result<Publisher<T>, PublisherCreateError> {
        let svc = self.service;
        let PubSubSettings { payload, qos: q } = &*self.settings;
        let max_loans = self
            .max_loans
            .unwrap_or(svc.node.config.defaults.publisher_max_loaned_samples);
        if max_loans == 0 || max_loans > 1 << 20 {
            return Err(PublisherCreateError::InvalidSetting {
                field: "max_loaned_samples",
                value: max_loans.into(),
                rule: "between 1 and 1048576",
            });
        }
        if self.max_slice_len == 0 {
            return Err(PublisherCreateError::InvalidSetting {
                field: "max_slice_len",
                value: 0,
                rule: "at least 1",
            });
        }
        let buffer = u64::from(q.subscriber_max_buffer_size);
        let borrowed = u64::from(q.subscriber_max_borrowed_samples);
        let worst_case = u64::from(q.max_subscribers) * (buffer + borrowed)
            + u64::from(q.history_size)
            + u64::from(max_loans);
        let chunk_count = match self.pool_size {
            None => worst_case,
            // Honoured as set, even beyond the worst case (whose extra
            // chunks never all come into use).
            Some(n) if n >= max_loans => u64::from(n),
            Some(n) => {
                return Err(PublisherCreateError::InvalidSetting {
                    field: "pool_size",
                    value: n.into(),
                    rule: "at least max_loaned_samples",
                })
            }
        };
        let settings = SenderSettings {
            overflow: q.overflow,
            strategy: self.strategy,
            history_size: q.history_size,
            buffer,
            borrowed,
            max_receivers: q.max_subscribers,
            max_senders: q.max_publishers,
            max_loans,
            max_len: self.max_slice_len,
            elem_size: payload.size,
            align: payload.align,
            chunk_count,
            own: PortKind::Publisher,
            peers: PortKind::Subscriber,
            shared_id: None,
            tagged: false,
            inline: self.inline,
            withdrawals: 0,
        };
        let name = svc.name.to_string();
        let inner = SenderInner::create(svc, settings).map_err(|e| match e {
            SenderCreateError::TooMany => PublisherCreateError::TooManyPublishers {
                service: name,
                max: q.max_publishers,
            },
            SenderCreateError::Geometry => PublisherCreateError::InvalidSetting {
                field: "max_slice_len",
                value: self.max_slice_len,
                rule: "the data segment would exceed 64 TiB or the pool 2^32 chunks",
            },
            SenderCreateError::Segment { size, source } => {
                PublisherCreateError::Segment { size, source }
            }
        })?;
        Ok(Publisher {
            inner,
            _t: PhantomData,
        })
    }
}

impl<T: ShmSafe> PublisherBuilder<[T]> {
    /// Largest slice (in elements) this publisher can send. Default 1.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-max-slice-len", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Packets".try_into()?)
    ///     .publish_subscribe::<[u8]>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().max_slice_len(1500).create()?;
    /// assert!(publisher.max_slice_len() >= 1500);
    /// # Ok(()) }
    /// ```
    pub fn max_slice_len(mut self, n: usize) -> Self {
        self.max_slice_len = n as u64;
        self
    }
}

/// Sends samples of `T` to every subscriber of a service.
///
/// `Send` and `Sync`: a publisher can be moved to, or shared with, other
/// threads, and so can the samples it loans. Its bookkeeping sits behind a
/// process-local mutex that is uncontended unless several threads use the
/// same publisher at once; nothing in shared memory is ever locked.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-publisher", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Counter".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let subscriber = service.subscriber_builder().create()?;
/// let publisher = service.publisher_builder().create()?;
/// let sample = publisher.loan_uninit()?; // a chunk of shared memory
/// let sample = sample.write_payload(42); // written in place
/// assert_eq!(sample.send(), 1); // one subscriber got it
/// assert_eq!(subscriber.receive()?.map(|s| *s), Some(42));
/// # Ok(()) }
/// ```
pub struct Publisher<T: Payload + ?Sized> {
    inner: Arc<SenderInner>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("service", self.inner.service_name())
            .field("port_id", &format_args!("{:016x}", self.inner.id()))
            .finish()
    }
}

impl<T: Payload + ?Sized> Publisher<T> {
    /// Connects subscribers that arrived since the last send (and hands them
    /// the history). `send` does this by itself; call it when a publisher is
    /// idle but late joiners should get the history now.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-update-connections", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Latest".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .history_size(1)
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// publisher.send_copy(7)?; // nobody listens yet; kept as history
    /// let subscriber = service.subscriber_builder().create()?;
    /// publisher.update_connections(); // hands the late subscriber the history
    /// assert_eq!(subscriber.receive()?.map(|s| *s), Some(7));
    /// # Ok(()) }
    /// ```
    pub fn update_connections(&self) {
        self.inner.update_connections();
    }

    /// Whether a send now would go out without waiting: true unless the
    /// port waits under backpressure (`BackpressureStrategy::Block`) and a
    /// receiver's queue is full. Only this port fills its queues, so a
    /// true stays true until its next send. Takes back what receivers
    /// returned; no system call.
    pub fn has_room(&self) -> bool {
        self.inner.room_everywhere(false)
    }

    /// [`has_room`](Self::has_room), disconnecting first every full
    /// subscriber whose process died (a system call each).
    #[cfg(feature = "tokio")]
    pub(crate) fn has_room_alive(&self) -> bool {
        self.inner.room_everywhere(true)
    }

    /// Number of subscribers currently connected.
    pub fn subscriber_count(&self) -> usize {
        self.inner.receiver_count()
    }

    /// The publisher's unique port id.
    pub fn id(&self) -> u64 {
        self.inner.id()
    }

    /// Number of chunks in the publisher's pool.
    pub fn pool_size(&self) -> u32 {
        self.inner.pool_size()
    }

    /// Whether this publisher's data segment or its service's file was
    /// truncated while mapped, by a process with write access to them. Its
    /// process survives the fault (the lost memory reads zeros, see the
    /// README's "Hostile input"), but its samples reach nobody any more
    /// (its subscribers got [`ReceiveError::CorruptedPublisher`](crate::ReceiveError::CorruptedPublisher)
    /// or [`ReceiveError::CorruptedService`](crate::ReceiveError::CorruptedService)):
    /// drop it and make a new one, or recreate the service.
    pub fn is_corrupted(&self) -> bool {
        self.inner.is_corrupted()
    }

    /// Number of chunks currently free (after taking back what subscribers
    /// returned). Useful to check that nothing leaks.
    pub fn free_chunks(&self) -> usize {
        self.inner.free_chunks()
    }
}

impl<T: Payload + ?Sized> Drop for Publisher<T> {
    fn drop(&mut self) {
        SenderInner::face_dropped(&self.inner);
    }
}

impl<T: ShmSafe> Publisher<T> {
    /// Loans an uninitialised sample from the shared pool.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan-uninit", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Loans".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().max_loaned_samples(1).create()?;
    /// let sample = publisher.loan_uninit()?;
    /// // A second loan exceeds max_loaned_samples until the first is sent or dropped.
    /// if let Err(e) = publisher.loan_uninit() {
    ///     eprintln!("cannot loan: {e}");
    /// }
    /// sample.write_payload(1).send();
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_uninit(&self) -> Result<SampleMutUninit<T>, LoanError> {
        let raw = RawLoan::new(&self.inner, 1)?;
        Ok(SampleMutUninit {
            raw,
            _t: PhantomData,
        })
    }

    /// Copies `value` into a loaned sample and sends it; returns how many
    /// subscribers received it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-copy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Ticks".try_into()?)
    ///     .publish_subscribe::<u64>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// assert_eq!(publisher.send_copy(1)?, 0); // no subscriber yet
    /// let subscriber = service.subscriber_builder().create()?;
    /// assert_eq!(publisher.send_copy(2)?, 1);
    /// assert_eq!(subscriber.receive()?.map(|s| *s), Some(2));
    /// # Ok(()) }
    /// ```
    pub fn send_copy(&self, value: T) -> Result<usize, SendError> {
        Ok(self.loan_uninit()?.write_payload(value).send())
    }
}

impl<T: ShmSafe + Default> Publisher<T> {
    /// Loans a sample initialised with `T::default()`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// #[derive(Debug, Default, Clone, Copy, hako::ShmSafe)]
    /// #[repr(C)]
    /// struct Pose {
    ///     x: f32,
    ///     y: f32,
    ///     heading: f32,
    /// }
    ///
    /// let service = node
    ///     .service_builder(&"Doc/Pose".try_into()?)
    ///     .publish_subscribe::<Pose>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().create()?;
    /// let mut sample = publisher.loan()?; // Pose::default(), in shared memory
    /// sample.x = 1.5;
    /// sample.heading = 0.25;
    /// sample.send();
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan(&self) -> Result<SampleMut<T>, LoanError> {
        Ok(self.loan_uninit()?.write_payload(T::default()))
    }
}

impl<T: ShmSafe> Publisher<[T]> {
    /// Loans an uninitialised slice of `len` elements.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan-slice-uninit", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Text".try_into()?)
    ///     .publish_subscribe::<[u8]>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().max_slice_len(64).create()?;
    /// publisher.loan_slice_uninit(5)?.write_from_slice(b"hello").send();
    /// assert_eq!(subscriber.receive()?.as_deref(), Some(&b"hello"[..]));
    /// // Longer than max_slice_len: refused.
    /// if let Err(e) = publisher.loan_slice_uninit(100) {
    ///     eprintln!("{e}");
    /// }
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_slice_uninit(&self, len: usize) -> Result<SampleMutUninit<[T]>, LoanError> {
        let raw = RawLoan::new(&self.inner, len)?;
        Ok(SampleMutUninit {
            raw,
            _t: PhantomData,
        })
    }

    /// Loans a slice of `len` elements, each `T::default()`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-loan-slice", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Samples".try_into()?)
    ///     .publish_subscribe::<[i16]>()
    ///     .open_or_create()?;
    /// let publisher = service.publisher_builder().max_slice_len(480).create()?;
    /// let mut sample = publisher.loan_slice(480)?; // 480 zeros
    /// sample[0] = 1000;
    /// sample[479] = -1000;
    /// sample.send();
    /// # Ok(()) }
    /// ```
    #[inline(always)]
    pub fn loan_slice(&self, len: usize) -> Result<SampleMut<[T]>, LoanError>
    where
        T: Default,
    {
        Ok(self.loan_slice_uninit(len)?.write_from_fn(|_| T::default()))
    }

    /// Copies `data` into a loaned slice and sends it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-send-slice-copy", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node
    ///     .service_builder(&"Doc/Readings".try_into()?)
    ///     .publish_subscribe::<[f64]>()
    ///     .open_or_create()?;
    /// let subscriber = service.subscriber_builder().create()?;
    /// let publisher = service.publisher_builder().max_slice_len(8).create()?;
    /// publisher.send_slice_copy(&[0.5, 1.5, 2.5])?;
    /// let sample = subscriber.receive()?.ok_or("nothing received")?;
    /// assert_eq!(&*sample, &[0.5, 1.5, 2.5]);
    /// # Ok(()) }
    /// ```
    pub fn send_slice_copy(&self, data: &[T]) -> Result<usize, SendError>
    where
        T: Copy,
    {
        Ok(self
            .loan_slice_uninit(data.len())?
            .write_from_slice(data)
            .send())
    }

    /// Largest slice this publisher can loan.
    pub fn max_slice_len(&self) -> usize {
        self.inner.max_len()
    }
}
