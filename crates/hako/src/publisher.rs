//! Publishers: loan a chunk, write in place, send a descriptor.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::core::layout::{
    PubCounters, SegmentGeometry, SegmentHeader, SegmentParams, COUNTERS_OFFSET, DROPPED_OFFSET,
    LAYOUT_VERSION, SEGMENT_MAGIC,
};
use crate::core::park::{full_barrier, Kernel, WakeBlock};
use crate::core::pool::{ChunkBook, Outstanding};
use crate::core::ring::{Corrupted, Producer, Push, Returns, Submission};
use crate::core::sync::prefetch_write;
use crate::node::{new_id, node_is_alive};
use crate::os::fifo;
use crate::os::futex::OsKernel;
use crate::os::lock::DomainLock;
use crate::os::shm::{self, Mapping};
use crate::payload::{Payload, ShmSafe};
use crate::portlock::{PortGuard, PortLock};
use crate::pubsub::{BackpressureStrategy, OverflowPolicy};
use crate::segment;
use crate::service::{io_err, PortKind, ServiceError, ServiceInner};

/// Why a publisher could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublisherCreateError {
    /// The service admits no more publishers.
    #[error("service {service:?} already has {max} publishers (max_publishers); raise it when creating the service")]
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

/// Why a sample could not be loaned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoanError {
    /// The publisher already has `max_loaned_samples` samples loaned out.
    #[error("{0} samples are loaned already (max_loaned_samples); send or drop one first")]
    ExceedsMaxLoans(usize),
    /// Every chunk of the pool is in use by subscribers, history and loans.
    #[error("the publisher's pool is exhausted: all {0} chunks are in use; subscribers must release samples")]
    OutOfMemory(u32),
    /// The requested slice length exceeds the publisher's maximum.
    #[error("slice of {requested} elements requested; this publisher allows at most {max} (max_slice_len)")]
    SliceTooLong {
        /// Requested length.
        requested: usize,
        /// The maximum.
        max: usize,
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
pub struct PublisherBuilder<T: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    max_loans: Option<u32>,
    max_slice_len: u64,
    strategy: BackpressureStrategy,
    pool_size: Option<u32>,
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
            .finish()
    }
}

impl<T: Payload + ?Sized> PublisherBuilder<T> {
    pub(crate) fn new(service: Arc<ServiceInner>) -> Self {
        Self {
            service,
            max_loans: None,
            max_slice_len: 1,
            strategy: BackpressureStrategy::Block,
            pool_size: None,
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
    /// hold every chunk. At least `max_loaned_samples`.
    pub fn pool_size(mut self, chunks: u32) -> Self {
        self.pool_size = Some(chunks);
        self
    }

    /// What to do when a subscriber's queue is full on a service with
    /// [`OverflowPolicy::Backpressure`] (default: block). Ignored under
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
        let svc = self.service.clone();
        let (payload, q) = svc.pubsub();
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
            Some(n) if n >= max_loans => u64::from(n).min(worst_case),
            Some(n) => {
                return Err(PublisherCreateError::InvalidSetting {
                    field: "pool_size",
                    value: n.into(),
                    rule: "at least max_loaned_samples",
                })
            }
        };
        let params = SegmentParams {
            elem_size: payload.size,
            align: payload.align,
            max_len: self.max_slice_len,
            chunk_count,
            max_subscribers: q.max_subscribers.into(),
            buffer,
            borrowed,
        };
        let geo = params
            .geometry()
            .ok_or(PublisherCreateError::InvalidSetting {
                field: "max_slice_len",
                value: self.max_slice_len,
                rule: "the data segment would exceed 64 TiB or the pool 2^32 chunks",
            })?;
        let port_id = new_id();
        let path = svc.publisher_path(port_id);
        let seg_err = |source| PublisherCreateError::Segment {
            size: geo.total_size,
            source,
        };
        let fd = shm::create(&path, geo.total_size, svc.node.access)
            .map_err(|e| seg_err(io_err("create", &path)(e)))?;
        let map = match Mapping::new(&fd, 0, geo.total_size, true) {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(seg_err(io_err("map", &path)(e)));
            }
        };
        drop(fd);
        map.write(
            0,
            SegmentHeader {
                magic: SEGMENT_MAGIC,
                version: LAYOUT_VERSION,
                chunk_count: chunk_count as u32,
                port_id,
                params,
            },
        );
        let index = match svc.register(
            PortKind::Publisher,
            port_id,
            self.max_slice_len,
            chunk_count,
            |_| {},
        ) {
            Ok(Some(i)) => i,
            Ok(None) => {
                let _ = std::fs::remove_file(&path);
                return Err(PublisherCreateError::TooManyPublishers {
                    service: svc.name.to_string(),
                    max: q.max_publishers,
                });
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(seg_err(e));
            }
        };
        let n = chunk_count as u32;
        let conns = (0..q.max_subscribers as usize)
            .map(|j| {
                let base = geo.conns_offset + j as u64 * geo.conn_stride;
                // SAFETY: the views below point into `map` and into the
                // service's dynamic segment. `map` moves into the
                // PublisherInner built below, which also keeps the service
                // (and so its mapping) alive; both stay mapped until it drops,
                // and the views are only used through it.
                let (slots, head, returns, connected, wake, dropped_word) = unsafe {
                    (
                        map.atomics_detached(base + geo.sub_offset, 2 << geo.sub_log2),
                        map.atomic_detached(base + crate::core::layout::LINE),
                        map.atomics_detached(base + geo.returns_offset, chunk_count),
                        map.atomic_detached(base),
                        &*std::ptr::from_ref(svc.wake_block(PortKind::Subscriber, j)),
                        map.atomic_detached(base + DROPPED_OFFSET),
                    )
                };
                ConnState {
                    sub: Submission::new(slots, head, buffer),
                    returns: Returns::new(returns),
                    connected,
                    wake,
                    dropped_word,
                    dropped: 0,
                    sub_port: 0,
                    producer: Producer::default(),
                    outstanding: Outstanding::new(n),
                    broken: false,
                    delivered: false,
                    fifo: None,
                }
            })
            .collect();
        let state = PubState {
            book: ChunkBook::new(n),
            last_sent: None,
            fill: FillClock::default(),
            conns,
            history: VecDeque::with_capacity(q.history_size as usize),
            loaned: 0,
            orphaned: false,
            seen_generation: u64::MAX,
            active: Vec::with_capacity(q.max_subscribers as usize),
            active_dirty: true,
            // SAFETY: in the publisher's own mapping, which the PublisherInner
            // holding this state keeps alive; PubCounters is made of atomics,
            // 8-aligned at COUNTERS_OFFSET.
            counters: unsafe {
                &*map
                    .ptr()
                    .add(COUNTERS_OFFSET as usize)
                    .cast::<PubCounters>()
            },
            sent: 0,
            deliveries: 0,
            dropped: 0,
        };
        // Relaxed: a counter for inspectors.
        state
            .counters
            .free_chunks
            .store(u64::from(n), Ordering::Relaxed);
        // SAFETY: the generation word lives in the service's mapping, which
        // the PublisherInner keeps alive through `service`.
        let generation = unsafe { &*std::ptr::from_ref(svc.generation_word()) };
        let inner = Arc::new(PublisherInner {
            generation,
            overflow: q.overflow,
            strategy: self.strategy,
            history_size: q.history_size as usize,
            per_conn_limit: (buffer + borrowed) as usize,
            buffer,
            max_loans: max_loans as usize,
            max_len: self.max_slice_len as usize,
            large_chunks: geo.chunk_size >= REUSE_MIN_CHUNK,
            elem_size: payload.size,
            geo,
            port_id,
            index,
            path,
            map,
            state: PortLock::new(state),
            service: svc,
        });
        inner.state.lock_unclaimed().update_connections(&inner);
        Ok(Publisher {
            inner,
            _t: PhantomData,
        })
    }
}

impl<T: ShmSafe> PublisherBuilder<[T]> {
    /// Largest slice (in elements) this publisher can send. Default 1.
    pub fn max_slice_len(mut self, n: usize) -> Self {
        self.max_slice_len = n as u64;
        self
    }
}

/// One connection block of the segment: fixed views of its rings and words
/// plus the publisher's private state of the connection. The 'static
/// lifetimes point into the publisher's own mapping and the service's
/// dynamic segment, both kept alive by the `PublisherInner` that holds this
/// state; they are only used while it lives.
struct ConnState {
    sub: Submission<'static>,
    returns: Returns<'static>,
    connected: &'static std::sync::atomic::AtomicU64,
    /// The subscriber's wake block in the service's port table.
    wake: &'static WakeBlock,
    /// The connection's overflow counter (for inspectors) and its value.
    dropped_word: &'static std::sync::atomic::AtomicU64,
    dropped: u64,
    /// Subscriber port served on this slot (0 = none).
    sub_port: u64,
    producer: Producer,
    outstanding: Outstanding,
    /// The subscriber wrote garbage; it gets nothing more.
    broken: bool,
    /// Got the sample being sent (wake it if it sleeps).
    delivered: bool,
    /// Write end of the subscriber's wake-up FIFO, opened when first needed.
    fifo: Option<OwnedFd>,
}

/// How long a publisher with large chunks takes to fill a sample, from
/// loan to send, measured on every [`FillClock::EVERY`]th loan.
///
/// A publisher without history loans the chunk freed last; in a lockstep
/// exchange (request/response, ping-pong) that is the chunk sent the time
/// before last, because the one sent last comes back only after the next
/// send's take-back. Payloads then cycle through two chunks per direction,
/// and with large chunks that footprint outgrows the caches: at 4 MiB on
/// the machine this was measured on, a round trip that writes and reads
/// every byte took 1.1x-1.2x as long as with the chunk sent last loaned
/// again. Checking at the loan whether that chunk came back costs a cache
/// miss (the subscriber wrote its return word just before answering),
/// which is noise beside filling megabytes but 0.05-0.1 µs, a quarter of
/// the round trip, when only a few bytes are written. So a publisher
/// checks only while its samples take long to fill.
#[derive(Debug, Default)]
struct FillClock {
    /// Loans until the next measured one.
    countdown: u32,
    /// When the measured loan was made, until its send.
    started: Option<std::time::Instant>,
    /// The last measured sample took at least [`FillClock::SLOW`] to fill.
    slow: bool,
}

impl FillClock {
    /// One loan in this many is timed (a clock read costs 20-30 ns here).
    const EVERY: u32 = 16;
    /// Filling a sample this long makes a cache miss per loan negligible.
    const SLOW: std::time::Duration = std::time::Duration::from_micros(10);

    #[inline]
    fn on_loan(&mut self) {
        if self.countdown == 0 {
            self.countdown = Self::EVERY;
            self.started = Some(std::time::Instant::now());
        }
        self.countdown -= 1;
    }

    /// With several samples loaned at once this times the measured loan to
    /// whichever send comes next: a rough figure, which is all it needs.
    #[inline]
    fn on_send(&mut self) {
        if let Some(t) = self.started.take() {
            self.slow = t.elapsed() >= Self::SLOW;
        }
    }
}

/// Chunks from this size up are large enough that a publisher filling
/// them slowly loans the chunk it sent last again (see [`FillClock`]):
/// beyond a core's private cache (1-2 MiB on current x86 server cores).
/// At 1 MiB two chunks per direction measured as fast as one here.
const REUSE_MIN_CHUNK: u64 = 2 << 20;

struct PubState {
    book: ChunkBook,
    /// The chunk of the last sample delivered to anyone (see `upcoming`).
    last_sent: Option<u32>,
    /// Times the filling of samples, for publishers of large chunks.
    fill: FillClock,
    conns: Vec<ConnState>,
    /// The last `history_size` samples sent (chunk, length), oldest first.
    history: VecDeque<(u32, u64)>,
    loaned: usize,
    /// The `Publisher` was dropped while samples were loaned: the last loan
    /// to go releases the `PublisherInner` (see `RawLoan`).
    orphaned: bool,
    seen_generation: u64,
    /// Indices of the connections served (connected, not broken).
    active: Vec<usize>,
    /// The segment's counters (for inspectors) and the values behind them.
    counters: &'static PubCounters,
    sent: u64,
    deliveries: u64,
    dropped: u64,
    /// `active` must be rebuilt.
    active_dirty: bool,
}

pub(crate) struct PublisherInner {
    overflow: OverflowPolicy,
    strategy: BackpressureStrategy,
    history_size: usize,
    per_conn_limit: usize,
    buffer: u64,
    max_loans: usize,
    max_len: usize,
    /// Chunks of at least [`REUSE_MIN_CHUNK`]: the publisher times how
    /// long its samples take to fill ([`FillClock`]).
    large_chunks: bool,
    /// Bytes per payload element.
    elem_size: u64,
    geo: SegmentGeometry,
    port_id: u64,
    index: usize,
    path: std::path::PathBuf,
    map: Mapping,
    state: PortLock<PubState>,
    /// The service's generation word (in its mapping, kept alive by `service`).
    generation: &'static std::sync::atomic::AtomicU64,
    service: Arc<ServiceInner>,
}

impl PublisherInner {
    #[inline]
    fn lock(&self) -> PortGuard<'_, PubState> {
        self.state.lock()
    }

    /// The payload of chunk `idx` (the chunk's first byte).
    #[inline]
    fn payload_ptr(&self, idx: u32) -> *mut u8 {
        let off = self.geo.pool_offset + u64::from(idx) * self.geo.chunk_size;
        debug_assert!(off + self.geo.chunk_size <= self.map.len() as u64);
        // SAFETY: idx comes from our own ChunkBook (< chunk_count), so the
        // chunk lies inside the mapping.
        unsafe { self.map.ptr().add(off as usize) }
    }
}

impl PubState {
    /// Takes back every chunk the subscriber on `j` returned.
    fn take_back_returned(&mut self, j: usize) {
        let conn = &mut self.conns[j];
        let returns = conn.returns;
        let book = &mut self.book;
        let before = book.free_count();
        conn.outstanding.take_returned(
            |idx, stamp| returns.returned(idx, stamp),
            |idx| {
                book.release(idx);
            },
        );
        // The chunks come back in index order; the one sent last among them
        // goes on top, as upcoming() announced (and as its lines are the
        // likeliest to be in cache).
        if let Some(prev) = self.last_sent {
            self.book.lift(prev, before);
        }
    }

    fn drain_all(&mut self) {
        // A send leaves the list as it found it (a connection that broke
        // during the send is dropped from it here, or at the next send).
        self.refresh_active();
        for k in 0..self.active.len() {
            let j = self.active[k];
            if self.conns[j].sub_port != 0 && !self.conns[j].broken {
                self.take_back_returned(j);
            }
        }
        self.refresh_active();
    }

    /// Rebuilds the list of connections that are served, if it changed.
    #[inline]
    fn refresh_active(&mut self) {
        if self.active_dirty {
            self.rebuild_active();
        }
    }

    #[cold]
    fn rebuild_active(&mut self) {
        self.active.clear();
        let conns = &self.conns;
        self.active
            .extend((0..conns.len()).filter(|&j| conns[j].sub_port != 0 && !conns[j].broken));
        self.active_dirty = false;
    }

    /// Releases everything outstanding on `j`. `broken`: keep the slot
    /// marked so the same subscriber is not served again.
    fn disconnect(&mut self, j: usize, broken: bool) {
        let conn = &mut self.conns[j];
        let book = &mut self.book;
        conn.outstanding.drain(|idx| {
            book.release(idx);
        });
        conn.broken = broken;
        if !broken {
            conn.sub_port = 0;
        }
        self.active_dirty = true;
        // ORDERING: Release; pairs with the subscriber's Acquire load of the
        // connected word; it stops using the rings once it sees the change.
        conn.connected.store(0, Ordering::Release);
    }

    /// Follows changes of the subscriber table.
    fn update_connections(&mut self, p: &PublisherInner) {
        let svc = &p.service;
        if svc.generation() == self.seen_generation {
            return;
        }
        svc.reclaim_dead_ports();
        let gen = svc.generation();
        self.seen_generation = gen;
        for j in 0..self.conns.len() {
            // ORDERING: Acquire; pairs with the Release store in register().
            let pid = svc
                .port_slot(PortKind::Subscriber, j)
                .port_id
                .load(Ordering::Acquire);
            if pid == self.conns[j].sub_port {
                continue;
            }
            if self.conns[j].sub_port != 0 {
                self.disconnect(j, false);
            }
            if pid != 0 {
                self.connect(p, j, pid);
            }
        }
    }

    fn connect(&mut self, p: &PublisherInner, j: usize, pid: u64) {
        let conn = &mut self.conns[j];
        let sub = conn.sub;
        sub.reset(&mut conn.producer);
        conn.returns.reset();
        conn.sub_port = pid;
        conn.broken = false;
        conn.fifo = None;
        conn.dropped = 0;
        // Relaxed: a counter for inspectors, published with the connection.
        conn.dropped_word.store(0, Ordering::Relaxed);
        self.active_dirty = true;
        // History, newest last, as much as the queue holds.
        let skip = self.history.len().saturating_sub(p.buffer as usize);
        for &(idx, len) in self.history.iter().skip(skip) {
            let stamp = conn.producer.tail + 1;
            if let Ok(Push::Done) = sub.try_push(&mut conn.producer, idx, len, None) {
                conn.outstanding.insert(idx, stamp);
                self.book.add_ref(idx);
            }
        }
        // ORDERING: Release; pairs with the subscriber's Acquire load of the
        // connected word: the reset rings and history are visible before it
        // starts consuming.
        conn.connected.store(pid, Ordering::Release);
        // A subscriber may already sleep waiting for its first sample.
        // ORDERING: full barrier; as in deliver().
        full_barrier();
        self.wake_one(p, j);
    }

    /// Delivers chunk `idx` to every connected subscriber, wakes those that
    /// sleep and takes back what they returned; returns how many got it.
    #[inline]
    fn deliver(&mut self, p: &PublisherInner, idx: u32, len: u64) -> usize {
        if let &[j] = &self.active[..] {
            // One subscriber, the common case: no flags, no second pass.
            let next = self.upcoming(p, j);
            if !self.push_to(p, j, idx, len, next) {
                return 0;
            }
            // ORDERING: full barrier; as below.
            full_barrier();
            self.after_publish(p, j);
            return 1;
        }
        let mut delivered = 0;
        let next = match self.active.first() {
            Some(&j) => self.upcoming(p, j),
            None => None,
        };
        for k in 0..self.active.len() {
            let j = self.active[k];
            let got = self.push_to(p, j, idx, len, next);
            self.conns[j].delivered = got;
            delivered += usize::from(got);
        }
        if delivered == 0 {
            return 0;
        }
        // ORDERING: full barrier (a SeqCst fence); pairs with the fences of
        // sleeping subscribers (see core::park): after our descriptor
        // stores, before reading their registrations. One for all.
        full_barrier();
        for k in 0..self.active.len() {
            let j = self.active[k];
            if self.conns[j].delivered {
                self.after_publish(p, j);
            }
        }
        delivered
    }

    /// The chunk to announce with a send to subscriber `j` (and the others)
    /// as the one the next loan gets, for subscribers to prefetch while they
    /// wait (see core::ring). The pool loans the chunk freed last: without
    /// history, when a take-back follows this send (see after_publish), that
    /// is the chunk sent before this one, which a subscriber keeping pace
    /// has returned by then; with a full history, the sample it evicts;
    /// otherwise the top of the free list. Right every time for subscribers
    /// that keep pace with a publisher loaning one sample at a time, except
    /// while a publisher of large chunks fills slowly and loans the chunk
    /// sent last again (see `FillClock`): with a queue of two the guess is
    /// right there too (the chunk sent before this one is this one), with a
    /// deeper queue it is not; either way two prefetched lines are nothing
    /// beside megabytes of payload. A wrong guess costs a subscriber a
    /// wasted prefetch.
    #[inline]
    fn upcoming(&self, p: &PublisherInner, j: usize) -> Option<u32> {
        let takes_back = self.conns[j].outstanding.count() as u64 + 2 >= p.buffer;
        if p.history_size == 0 {
            return match self.last_sent {
                Some(prev) if takes_back => Some(prev),
                _ => self.book.top(),
            };
        }
        // The history holds the chunk sent before this one; once full, this
        // send evicts its oldest, after the take-back, and that chunk is
        // freed last if only the history still holds it (or the take-back
        // is about to let go of it).
        if self.history.len() >= p.history_size {
            if let Some(&(old, _)) = self.history.front() {
                let refs = self.book.refs(old);
                if refs == 1 || (refs == 2 && takes_back && self.last_sent == Some(old)) {
                    return Some(old);
                }
            }
        }
        self.book.top()
    }

    /// Queues chunk `idx` for subscriber `j`, announcing `next`; false if
    /// it did not get it.
    #[inline]
    fn push_to(
        &mut self,
        p: &PublisherInner,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
    ) -> bool {
        let conn = &self.conns[j];
        if conn.sub_port == 0 || conn.broken {
            return false;
        }
        self.push_if_room(p, j, idx, len, next) || self.deliver_one(p, j, idx, len, next)
    }

    /// Queues chunk `idx` for subscriber `j` if fewer chunks are outstanding
    /// on the connection than its queue holds, so the queue has room: no
    /// need to look at the subscriber's position (a cache line it writes).
    #[inline]
    fn push_if_room(
        &mut self,
        p: &PublisherInner,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
    ) -> bool {
        let conn = &mut self.conns[j];
        if conn.outstanding.count() as u64 >= p.buffer {
            return false;
        }
        let stamp = conn.producer.tail + 1;
        conn.sub.push_known_room(&mut conn.producer, idx, len, next);
        conn.outstanding.insert(idx, stamp);
        self.book.add_ref(idx);
        true
    }

    /// After the full barrier that followed a publish to subscriber `j`:
    /// wakes it if it sleeps, and takes back what it returned.
    #[inline]
    fn after_publish(&mut self, p: &PublisherInner, j: usize) {
        let w = self.conns[j].wake.sleepers_after_fence();
        if w.futex || w.fd {
            self.wake(p, j, w);
        }
        // Housekeeping after the sample is visible, off the critical
        // path: take back what the subscriber returned, so the next send
        // finds room without reading its queue position. Only once the
        // queue is one short of full: reading the return words costs a
        // cache miss (the subscriber writes them), so a stream takes many
        // back per miss instead of one per send.
        if self.conns[j].outstanding.count() as u64 + 1 >= p.buffer {
            self.take_back_returned(j);
        }
    }

    /// Wakes subscriber `j`, which sleeps (`w`, from its wake block after
    /// the full barrier that followed the publish).
    #[cold]
    fn wake(&mut self, p: &PublisherInner, j: usize, w: crate::core::park::Wake) {
        if w.futex {
            OsKernel.futex_wake(&self.conns[j].wake.epoch);
        }
        if w.fd {
            let conn = &mut self.conns[j];
            if conn.fifo.is_none() {
                conn.fifo = fifo::open_writer(&p.service.fifo_path(conn.sub_port)).ok();
            }
            if let Some(fd) = &conn.fifo {
                fifo::poke(fd);
            }
        }
    }

    /// Wakes subscriber `j` if it sleeps; the caller has issued a full
    /// barrier after publishing. No system call unless it sleeps.
    fn wake_one(&mut self, p: &PublisherInner, j: usize) {
        let w = self.conns[j].wake.sleepers_after_fence();
        if w.futex || w.fd {
            self.wake(p, j, w);
        }
    }

    fn deliver_one(
        &mut self,
        p: &PublisherInner,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
    ) -> bool {
        let sub = self.conns[j].sub;
        let mut attempts: u32 = 0;
        let mut spins: u32 = 0;
        let mut drained = false;
        loop {
            if self.push_if_room(p, j, idx, len, next) {
                return true;
            }
            if !drained {
                drained = true;
                self.take_back_returned(j);
                if self.conns[j].broken {
                    return false;
                }
                continue;
            }
            if self.conns[j].outstanding.count() >= p.per_conn_limit {
                self.take_back_returned(j);
                if self.conns[j].broken {
                    return false;
                }
            }
            if self.conns[j].outstanding.count() < p.per_conn_limit {
                let stamp = self.conns[j].producer.tail + 1;
                match sub.try_push(&mut self.conns[j].producer, idx, len, next) {
                    Ok(Push::Done) => {
                        self.conns[j].outstanding.insert(idx, stamp);
                        self.book.add_ref(idx);
                        return true;
                    }
                    Ok(Push::Full) => {}
                    Err(Corrupted) => {
                        tracing::warn!(
                            slot = j,
                            "subscriber corrupted its queue index; disconnecting it"
                        );
                        self.disconnect(j, true);
                        return false;
                    }
                }
            }
            // No room for this subscriber.
            match p.overflow {
                OverflowPolicy::DropOldest => match sub.reclaim_oldest(&mut self.conns[j].producer)
                {
                    Ok(Some(old)) => {
                        if self.conns[j].outstanding.remove(old) {
                            self.book.release(old);
                            self.count_drop(j);
                        } else {
                            // Only a subscriber rewriting its queue can put a
                            // chunk there that is not outstanding.
                            tracing::warn!(
                                slot = j,
                                "subscriber corrupted its queue; disconnecting it"
                            );
                            self.disconnect(j, true);
                            return false;
                        }
                    }
                    Ok(None) => {
                        // Queue empty: the subscriber holds everything.
                        if self.conns[j].outstanding.count() >= p.per_conn_limit {
                            self.count_drop(j);
                            return false;
                        }
                    }
                    Err(Corrupted) => {
                        self.disconnect(j, true);
                        return false;
                    }
                },
                OverflowPolicy::Backpressure => {
                    match p.strategy {
                        BackpressureStrategy::Discard => {
                            self.count_drop(j);
                            return false;
                        }
                        BackpressureStrategy::Retry(max) => {
                            attempts += 1;
                            if attempts > max {
                                self.count_drop(j);
                                return false;
                            }
                        }
                        BackpressureStrategy::Block => {}
                    }
                    spins = spins.wrapping_add(1);
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                        if spins % 1024 == 0 && !self.subscriber_still_there(p, j) {
                            self.disconnect(j, false);
                            return false;
                        }
                    }
                }
            }
        }
    }

    /// A delivery to `j` lost to overflow: counted for inspectors.
    #[cold]
    fn count_drop(&mut self, j: usize) {
        self.dropped += 1;
        let conn = &mut self.conns[j];
        conn.dropped += 1;
        // Relaxed (both): counters for inspectors, nothing depends on them.
        conn.dropped_word.store(conn.dropped, Ordering::Relaxed);
        self.counters.dropped.store(self.dropped, Ordering::Relaxed);
    }

    /// While blocked: is the subscriber on `j` still registered and alive?
    fn subscriber_still_there(&self, p: &PublisherInner, j: usize) -> bool {
        let slot = p.service.port_slot(PortKind::Subscriber, j);
        // ORDERING: Acquire; pairs with the Release store in unregister().
        if slot.port_id.load(Ordering::Acquire) != self.conns[j].sub_port {
            return false;
        }
        // Relaxed: node_id is stable while port_id is (published by it).
        let node = slot.node_id.load(Ordering::Relaxed);
        node_is_alive(&p.service.node.config.root, node)
    }

    /// Takes the chunk sent last back from every subscriber that has
    /// returned it; once all have (and no history holds it), it is on top
    /// of the free stack, and the next loan gets it (see [`FillClock`]).
    #[cold]
    fn reclaim_last_sent(&mut self) {
        let Some(prev) = self.last_sent else { return };
        if self.book.refs(prev) == 0 {
            return;
        }
        self.refresh_active();
        for k in 0..self.active.len() {
            let conn = &mut self.conns[self.active[k]];
            let Some(stamp) = conn.outstanding.stamp(prev) else {
                continue;
            };
            if !conn.broken && conn.returns.returned(prev, stamp) {
                conn.outstanding.remove(prev);
                self.book.release(prev);
            }
        }
    }

    #[inline]
    fn alloc(&mut self, p: &PublisherInner) -> Result<u32, LoanError> {
        if self.loaned >= p.max_loans {
            return Err(LoanError::ExceedsMaxLoans(p.max_loans));
        }
        if p.large_chunks {
            // With a history the chunk sent last stays held by it: nothing
            // to gain from looking at its return.
            if self.fill.slow && p.history_size == 0 {
                self.reclaim_last_sent();
            }
            self.fill.on_loan();
        }
        let idx = match self.book.alloc() {
            Some(i) => i,
            None => {
                self.drain_all();
                self.book
                    .alloc()
                    .ok_or(LoanError::OutOfMemory(self.book.len()))?
            }
        };
        self.loaned += 1;
        // Relaxed: a counter for inspectors.
        self.counters
            .loans
            .store(self.loaned as u64, Ordering::Relaxed);
        Ok(idx)
    }

    #[inline]
    fn send(&mut self, p: &PublisherInner, idx: u32, len: u64) -> usize {
        // ORDERING: Acquire; pairs with the Release bump of the generation
        // (DynSegment::bump): table changes before it are visible.
        if p.generation.load(Ordering::Acquire) != self.seen_generation {
            self.update_connections(p);
        }
        self.refresh_active();
        if p.large_chunks {
            self.fill.on_send();
        }
        let n = self.deliver(p, idx, len);
        self.last_sent = (n > 0).then_some(idx);
        if p.history_size > 0 {
            self.book.add_ref(idx);
            self.history.push_back((idx, len));
            if self.history.len() > p.history_size {
                if let Some((old, _)) = self.history.pop_front() {
                    self.book.release(old);
                }
            }
        }
        self.loaned -= 1;
        self.book.release(idx);
        self.sent += 1;
        self.deliveries += n as u64;
        // Relaxed (all): counters for inspectors; plain stores on a line only
        // we write.
        let c = self.counters;
        c.sent.store(self.sent, Ordering::Relaxed);
        c.deliveries.store(self.deliveries, Ordering::Relaxed);
        c.loans.store(self.loaned as u64, Ordering::Relaxed);
        c.free_chunks
            .store(self.book.free_count() as u64, Ordering::Relaxed);
        self.prepare_next(p, len);
        n
    }

    /// With two or more samples outstanding on the first connection (a
    /// stream running ahead of its subscriber, or an exchange in step with
    /// a queue deeper than two, as take-backs are lazy), starts taking
    /// ownership of the lines the next loan will most likely write: the
    /// first and last line of a payload as long as this one, in the chunk
    /// on top of the free stack. The subscriber read them when that chunk
    /// last went round, so each store would otherwise wait for its CPU to
    /// give the line up, one after the other. With at most one outstanding
    /// (in step with a queue of two) it is left out: the subscriber
    /// prefetches that very chunk for reading while it waits, and the two
    /// would fight over its lines. In step with a queue of 16, ping-pong
    /// measured within noise of without. A hint only.
    #[inline]
    fn prepare_next(&self, p: &PublisherInner, len: u64) {
        let Some(&j) = self.active.first() else {
            return;
        };
        if self.conns[j].outstanding.count() < 2 {
            return;
        }
        if let Some(next) = self.book.top() {
            let first = p.payload_ptr(next);
            let last = (len.saturating_mul(p.elem_size))
                .clamp(1, p.geo.chunk_size)
                .saturating_sub(1);
            prefetch_write(first);
            // wrapping_add: only an address for the prefetch, never
            // dereferenced; `last` is below the chunk's size in any case.
            prefetch_write(first.wrapping_add(last as usize));
        }
    }

    fn give_back(&mut self, idx: u32) {
        // A sample dropped unsent tells nothing of how long filling takes.
        self.fill.started = None;
        self.loaned -= 1;
        self.book.release(idx);
        // Relaxed: a counter for inspectors.
        self.counters
            .loans
            .store(self.loaned as u64, Ordering::Relaxed);
    }
}

impl Drop for PublisherInner {
    fn drop(&mut self) {
        let svc = &self.service;
        let root = &svc.node.config.root;
        let _lock = DomainLock::acquire(root);
        // Subscribers that mapped the segment keep their mappings: samples they
        // hold or have queued stay readable after the file is gone. One that
        // has samples queued but has not mapped it yet still needs the file.
        if segment::still_needed(svc, &self.map, &self.geo, self.buffer) {
            svc.retire_locked(self.index, self.port_id);
        } else {
            svc.remove_port_locked(PortKind::Publisher, self.index, self.port_id);
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Sends samples of `T` to every subscriber of a service.
///
/// `Send` and `Sync`: a publisher can be moved to, or shared with, other
/// threads, and so can the samples it loans. Its bookkeeping sits behind a
/// process-local mutex that is uncontended unless several threads use the
/// same publisher at once; nothing in shared memory is ever locked.
pub struct Publisher<T: Payload + ?Sized> {
    inner: Arc<PublisherInner>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("service", &self.inner.service.name)
            .field("port_id", &format_args!("{:016x}", self.inner.port_id))
            .finish()
    }
}

impl<T: Payload + ?Sized> Publisher<T> {
    /// Connects subscribers that arrived since the last send (and hands them
    /// the history). `send` does this by itself; call it when a publisher is
    /// idle but late joiners should get the history now.
    pub fn update_connections(&self) {
        self.inner
            .state
            .lock_unclaimed()
            .update_connections(&self.inner);
    }

    /// Number of subscribers currently connected.
    pub fn subscriber_count(&self) -> usize {
        let mut st = self.inner.state.lock_unclaimed();
        st.update_connections(&self.inner);
        st.conns
            .iter()
            .filter(|c| c.sub_port != 0 && !c.broken)
            .count()
    }

    /// The publisher's unique port id.
    pub fn id(&self) -> u64 {
        self.inner.port_id
    }

    /// Number of chunks in the publisher's pool.
    pub fn pool_size(&self) -> u32 {
        self.inner.state.lock_unclaimed().book.len()
    }

    /// Number of chunks currently free (after taking back what subscribers
    /// returned). Useful to check that nothing leaks.
    pub fn free_chunks(&self) -> usize {
        let mut st = self.inner.state.lock_unclaimed();
        st.drain_all();
        st.book.free_count()
    }

    fn loan_raw(&self, len: usize) -> Result<RawLoan, LoanError> {
        if len > self.inner.max_len {
            return Err(LoanError::SliceTooLong {
                requested: len,
                max: self.inner.max_len,
            });
        }
        let idx = self.inner.lock().alloc(&self.inner)?;
        Ok(RawLoan {
            publisher: std::ptr::NonNull::from(&*self.inner),
            payload: self.inner.payload_ptr(idx),
            idx,
            len,
        })
    }
}

impl<T: Payload + ?Sized> Drop for Publisher<T> {
    fn drop(&mut self) {
        let mut st = self.inner.state.lock_unclaimed();
        if st.loaned > 0 {
            // Leave one reference behind for the last loan to release (see
            // RawLoan); taken under the lock, so that loan cannot run first.
            st.orphaned = true;
            let _ = Arc::into_raw(Arc::clone(&self.inner));
        }
    }
}

/// A loaned chunk; returned to the pool if dropped unsent.
///
/// It points at the publisher's state without holding a reference count
/// (which would cost two atomic read-modify-writes per message): the state's
/// `loaned` counter, kept under the publisher's lock anyway, keeps it alive
/// instead. A `Publisher` dropped while loans are out leaves its reference
/// behind (`orphaned`), and the last loan to go releases it.
struct RawLoan {
    publisher: std::ptr::NonNull<PublisherInner>,
    /// The chunk's payload, computed once.
    payload: *mut u8,
    idx: u32,
    len: usize,
}

// SAFETY: the pointer is used like an `Arc<PublisherInner>` (which is Send
// and Sync: its mutable state sits behind its lock), and the loan keeps what
// it points to alive as described above, on whatever thread it is; the
// payload pointer points into that publisher's mapping, which lives as long,
// and the loan is its only user until it is sent.
unsafe impl Send for RawLoan {}
// SAFETY: as for Send; `&RawLoan` only reads its fields (the pointers, the
// index and the length), and writes through the payload pointer need `&mut`.
unsafe impl Sync for RawLoan {}

impl RawLoan {
    #[inline]
    fn inner(&self) -> &PublisherInner {
        // SAFETY: alive while this loan is (see the type's documentation).
        unsafe { self.publisher.as_ref() }
    }

    #[inline]
    fn payload(&self) -> *mut u8 {
        self.payload
    }

    #[inline]
    fn send(self) -> usize {
        let me = std::mem::ManuallyDrop::new(self);
        let p = me.inner();
        let mut st = p.lock();
        let n = st.send(p, me.idx, me.len as u64);
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: the dropped Publisher left this reference for us.
            unsafe { release_orphaned(me.publisher) };
        }
        n
    }
}

impl Drop for RawLoan {
    fn drop(&mut self) {
        let mut st = self.inner().lock();
        st.give_back(self.idx);
        let last = st.orphaned && st.loaned == 0;
        drop(st);
        if last {
            // SAFETY: as in send().
            unsafe { release_orphaned(self.publisher) };
        }
    }
}

/// Drops the reference a `Publisher` left behind when it was dropped while
/// samples were loaned.
///
/// # Safety
/// Only by the last loan of an orphaned publisher, once, with no reference
/// to the state left in use.
unsafe fn release_orphaned(p: std::ptr::NonNull<PublisherInner>) {
    // SAFETY: the pointer is the one Arc::into_raw returned in
    // Publisher::drop (the same allocation as every loan's); the caller
    // guarantees this runs once.
    drop(unsafe { Arc::from_raw(p.as_ptr()) });
}

impl<T: ShmSafe> Publisher<T> {
    /// Loans an uninitialised sample from the shared pool.
    pub fn loan_uninit(&self) -> Result<SampleMutUninit<T>, LoanError> {
        let raw = self.loan_raw(1)?;
        Ok(SampleMutUninit {
            raw,
            _t: PhantomData,
        })
    }

    /// Copies `value` into a loaned sample and sends it; returns how many
    /// subscribers received it.
    pub fn send_copy(&self, value: T) -> Result<usize, SendError> {
        Ok(self.loan_uninit()?.write_payload(value).send())
    }
}

impl<T: ShmSafe + Default> Publisher<T> {
    /// Loans a sample initialised with `T::default()`.
    pub fn loan(&self) -> Result<SampleMut<T>, LoanError> {
        Ok(self.loan_uninit()?.write_payload(T::default()))
    }
}

impl<T: ShmSafe> Publisher<[T]> {
    /// Loans an uninitialised slice of `len` elements.
    pub fn loan_slice_uninit(&self, len: usize) -> Result<SampleMutUninit<[T]>, LoanError> {
        let raw = self.loan_raw(len)?;
        Ok(SampleMutUninit {
            raw,
            _t: PhantomData,
        })
    }

    /// Loans a slice of `len` elements, each `T::default()`.
    pub fn loan_slice(&self, len: usize) -> Result<SampleMut<[T]>, LoanError>
    where
        T: Default,
    {
        Ok(self.loan_slice_uninit(len)?.write_from_fn(|_| T::default()))
    }

    /// Copies `data` into a loaned slice and sends it.
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
        self.inner.max_len
    }
}

/// A loaned sample whose payload is not yet initialised.
///
/// Write it with [`write_payload`](Self::write_payload) (or, for slices,
/// [`write_from_fn`](SampleMutUninit::write_from_fn) /
/// [`write_from_slice`](SampleMutUninit::write_from_slice)), or initialise it
/// through [`payload_mut`](Self::payload_mut) and call
/// [`assume_init`](Self::assume_init).
pub struct SampleMutUninit<T: Payload + ?Sized> {
    raw: RawLoan,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: ShmSafe> SampleMutUninit<T> {
    /// Writes the payload in place.
    pub fn write_payload(self, value: T) -> SampleMut<T> {
        // SAFETY: the chunk is ours (loaned), aligned for T and large enough
        // (the segment geometry was computed from T's layout).
        unsafe { self.raw.payload().cast::<T>().write(value) };
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// The uninitialised payload, to be written field by field.
    pub fn payload_mut(&mut self) -> &mut MaybeUninit<T> {
        // SAFETY: as in write_payload; MaybeUninit needs no initialisation,
        // and `&mut self` makes the reference unique.
        unsafe { &mut *self.raw.payload().cast::<MaybeUninit<T>>() }
    }

    /// Declares the payload initialised.
    ///
    /// # Safety
    /// Every byte of the payload must have been written through
    /// [`payload_mut`](Self::payload_mut).
    pub unsafe fn assume_init(self) -> SampleMut<T> {
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }
}

impl<T: ShmSafe> SampleMutUninit<[T]> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Whether the slice has no elements.
    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    /// Initialises element `i` with `f(i)`.
    pub fn write_from_fn(self, mut f: impl FnMut(usize) -> T) -> SampleMut<[T]> {
        let base = self.raw.payload().cast::<T>();
        for i in 0..self.raw.len {
            // SAFETY: i < len <= max_len; the chunk holds max_len elements.
            unsafe { base.add(i).write(f(i)) };
        }
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// Copies `data` (which must have exactly `len()` elements) into the slice.
    ///
    /// # Panics
    /// If `data.len() != self.len()`.
    pub fn write_from_slice(self, data: &[T]) -> SampleMut<[T]>
    where
        T: Copy,
    {
        assert_eq!(
            data.len(),
            self.raw.len,
            "write_from_slice: length mismatch"
        );
        // SAFETY: the chunk holds at least len elements of T and does not
        // overlap `data` (which is a Rust reference, not our loaned chunk).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.raw.payload().cast::<T>(),
                data.len(),
            );
        }
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }

    /// The uninitialised elements.
    pub fn payload_mut(&mut self) -> &mut [MaybeUninit<T>] {
        // SAFETY: in range (len <= max_len), unique through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.raw.payload().cast(), self.raw.len) }
    }

    /// Declares every element initialised.
    ///
    /// A chunk is never handed out uninitialised at the byte level: it holds
    /// zeros when the pool is new and earlier payloads of the same element
    /// type afterwards. So when `T` has no padding bytes (integers, arrays of
    /// them), writing only some elements and calling this is sound; the
    /// others keep old contents. A sender that touches only the first and
    /// last byte of a large `[u8]` uses exactly that.
    ///
    /// # Safety
    /// Every element must have been written through
    /// [`payload_mut`](Self::payload_mut), or `T` must have no padding bytes
    /// (see above).
    pub unsafe fn assume_init(self) -> SampleMut<[T]> {
        SampleMut {
            raw: self.raw,
            _t: PhantomData,
        }
    }
}

/// A loaned, initialised sample: write to it through `DerefMut`, then
/// [`send`](Self::send) it. Dropping it unsent returns the chunk.
pub struct SampleMut<T: Payload + ?Sized> {
    raw: RawLoan,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> SampleMut<T> {
    /// Sends the sample; returns how many subscribers received it.
    pub fn send(self) -> usize {
        self.raw.send()
    }
}

impl<T: Payload + ?Sized> Deref for SampleMut<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the payload was initialised (type state) and the chunk is
        // ours until sent.
        unsafe { &*T::make_ptr(self.raw.payload(), self.raw.len) }
    }
}

impl<T: Payload + ?Sized> DerefMut for SampleMut<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; &mut self makes the reference unique.
        unsafe { &mut *T::make_ptr(self.raw.payload(), self.raw.len) }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug> std::fmt::Debug for SampleMut<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SampleMut").field(&&**self).finish()
    }
}
