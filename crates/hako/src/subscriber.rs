//! Subscribers: take descriptors, read payloads in place.

use std::cell::{RefCell, RefMut};
use std::marker::PhantomData;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::core::bias::SampleCount;
use crate::core::layout::{SegmentGeometry, ATTACHED_OFFSET, LINE};
use crate::core::ring::{Corrupted, Pop, Returns, Submission};
use crate::core::sync::{prefetch_read, prefetch_write};
use crate::node::{new_id, node_is_alive};
use crate::os::fifo;
use crate::os::shm::Mapping;
use crate::payload::Payload;
use crate::portlock::{biasable, process_barrier};
use crate::pubsub::OverflowPolicy;
use crate::segment::{open_segment, reap_retired, OpenSegment};
use crate::service::io_err;
use crate::service::{PortKind, ServiceError, ServiceInner};
use crate::wait::{Adaptive, WaitStrategy, Waiter};

/// Why a subscriber could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriberCreateError {
    /// The service admits no more subscribers.
    #[error("service {service:?} already has {max} subscribers (max_subscribers); raise it when creating the service")]
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

/// What [`ReceiveError::CorruptedPublisher`] says of a bad descriptor.
const GARBAGE_IN_QUEUE: &str = "garbage in the submission queue";

/// Why `receive` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// Every publisher seen during a blocking receive has left or died and
    /// nothing is queued; waiting on could only hang.
    #[error("every publisher of service {0:?} is gone and nothing is queued")]
    PublishersGone(String),
    /// The subscriber already holds `subscriber_max_borrowed_samples` samples.
    #[error("{0} samples are held already (subscriber_max_borrowed_samples); drop one before receiving more")]
    ExceedsMaxBorrowed(usize),
    /// A publisher wrote something the protocol cannot produce (a bad
    /// descriptor or segment header). Its connection is closed;
    /// other publishers are unaffected and `receive` may be called again.
    #[error("publisher {publisher:016x} sent corrupted data ({what}); its connection is closed")]
    CorruptedPublisher {
        /// The publisher's port id.
        publisher: u64,
        /// What was wrong.
        what: &'static str,
    },
}

/// Builds a [`Subscriber`]; returned by
/// [`PubSubService::subscriber_builder`](crate::PubSubService::subscriber_builder).
pub struct SubscriberBuilder<T: Payload + ?Sized> {
    service: Arc<ServiceInner>,
    strategy: WaitStrategy,
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
    pub(crate) fn new(service: Arc<ServiceInner>) -> Self {
        Self {
            service,
            strategy: WaitStrategy::default(),
            _t: PhantomData,
        }
    }

    /// How [`receive_timeout`](Subscriber::receive_timeout) and
    /// [`blocking_receive`](Subscriber::blocking_receive) wait (default:
    /// spin, then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Creates the subscriber and registers it with the service. Publishers
    /// connect it on their next send (and hand it their history then).
    pub fn create(self) -> Result<Subscriber<T>, SubscriberCreateError> {
        // Registers membarrier now (it can take a while in a process with
        // many threads), not in the middle of a receive.
        crate::portlock::prepare();
        let svc = self.service;
        let port_id = new_id();
        let fifo_path = svc.fifo_path(port_id);
        let fifo =
            fifo::create(&fifo_path, svc.node.access).map_err(io_err("create FIFO", &fifo_path))?;
        let index = match svc.register(PortKind::Subscriber, port_id, 0, 0, |_| {}) {
            Ok(Some(i)) => i,
            other => {
                let _ = std::fs::remove_file(&fifo_path);
                return Err(match other {
                    Err(e) => e.into(),
                    _ => SubscriberCreateError::TooManySubscribers {
                        service: svc.name.to_string(),
                        max: svc.pubsub().1.max_subscribers,
                    },
                });
            }
        };
        let max_borrowed = svc.pubsub().1.subscriber_max_borrowed_samples as usize;
        let (extra, off) = svc.extra(index);
        // SAFETY: the service's mapping outlives the Registration, which
        // holds the service.
        let received_total = unsafe { extra.atomic_detached(off) };
        // Relaxed: a counter for inspectors; ours starts from zero.
        received_total.store(0, Ordering::Relaxed);
        let reg = Arc::new(Registration {
            service: svc,
            port_id,
            index,
            fifo,
            fifo_path,
            received_total,
        });
        // SAFETY: the generation word lives in the service's mapping, which
        // the registration keeps alive, and the subscriber holds that.
        let generation = unsafe { &*std::ptr::from_ref(reg.service.generation_word()) };
        let sub = Subscriber {
            reg,
            generation,
            max_borrowed,
            strategy: self.strategy,
            adaptive: Adaptive::default(),
            state: RefCell::new(SubState {
                seen_generation: u64::MAX,
                conns: Vec::new(),
                bad: Vec::new(),
                next: 0,
            }),
            _t: PhantomData,
        };
        sub.lock().update(&sub.reg);
        Ok(sub)
    }
}

/// The subscriber's entry in the service; removed when the subscriber and
/// every sample it handed out are gone.
struct Registration {
    service: Arc<ServiceInner>,
    port_id: u64,
    index: usize,
    /// Read end of the wake-up FIFO a waitset polls.
    fifo: OwnedFd,
    fifo_path: PathBuf,
    /// Samples received in all, for inspectors: in the service's extra area
    /// for this subscriber (kept mapped by `service`).
    received_total: &'static AtomicU64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.service
            .unregister(PortKind::Subscriber, self.index, self.port_id);
        reap_retired(&self.service);
        let _ = std::fs::remove_file(&self.fifo_path);
    }
}

/// This subscriber's view of one publisher's segment.
struct SubConn {
    reg: Arc<Registration>,
    publisher: u64,
    /// Header and connection blocks, read-write; kept mapped for the views.
    _rw: Mapping,
    /// The chunk pool, read-only; kept mapped for the views.
    _pool: Mapping,
    geo: SegmentGeometry,
    chunk_count: u32,
    max_len: u64,
    /// Bytes per payload element.
    elem_size: u64,
    /// Whether the payload is a slice (else the length must be 1).
    slice: bool,
    /// Samples of this connection received and dropped; decides who frees
    /// it (see [`ConnHandle`]). Its bias is claimed at the first receive (a
    /// subscriber may be created on one thread and used on another) and
    /// revoked when the handle goes, both on the subscriber's thread.
    count: SampleCount,
    // Views into `rw` and `pool`, computed once. The 'static lifetimes are
    // sound because the mappings live in this same struct, are never
    // replaced, and the views are only handed out borrowed from `&self`.
    sub: Submission<'static>,
    returns: Returns<'static>,
    connected: &'static AtomicU64,
    pool_base: usize,
}

impl SubConn {
    fn open(reg: &Arc<Registration>, slot: usize, pid: u64) -> Result<Option<Self>, &'static str> {
        let svc = &reg.service;
        let Some(OpenSegment { fd, header: h, geo }) = open_segment(&svc.publisher_path(pid))?
        else {
            return Ok(None);
        };
        let (payload, q) = svc.pubsub();
        let p = &h.params;
        let ps = svc.port_slot(PortKind::Publisher, slot);
        // Relaxed (both): published by the Acquire load of port_id that found it.
        let (slot_len, slot_chunks) = (
            ps.max_len.load(Ordering::Relaxed),
            ps.chunk_count.load(Ordering::Relaxed),
        );
        if h.port_id != pid
            || p.elem_size != payload.size
            || p.align != payload.align
            || (!payload.slice && p.max_len != 1)
            || p.max_subscribers != u64::from(q.max_subscribers)
            || p.buffer != u64::from(q.subscriber_max_buffer_size)
            || p.borrowed != u64::from(q.subscriber_max_borrowed_samples)
            || p.max_len != slot_len
            || p.chunk_count != slot_chunks
        {
            return Err("segment header disagrees with the service");
        }
        let rw = Mapping::new(&fd, 0, geo.pool_offset, true)
            .map_err(|_| "cannot map the connection blocks")?;
        let pool = Mapping::new(
            &fd,
            geo.pool_offset,
            geo.total_size - geo.pool_offset,
            false,
        )
        .map_err(|_| "cannot map the pool")?;
        let base = geo.conns_offset + reg.index as u64 * geo.conn_stride;
        // ORDERING: Release; pairs with the Acquire load in
        // segment::still_needed(): once seen, the file may be removed.
        rw.atomic(base + ATTACHED_OFFSET)
            .store(reg.port_id, Ordering::Release);
        // SAFETY: the four views below point into `rw`, which moves
        // into the returned struct with them and stays mapped until it is
        // dropped; they are only used through it (see the field comment).
        let (slots, head, returns, connected) = unsafe {
            (
                rw.atomics_detached(base + geo.sub_offset, 2 << geo.sub_log2),
                rw.atomic_detached(base + LINE),
                rw.atomics_detached(base + geo.returns_offset, u64::from(h.chunk_count)),
                rw.atomic_detached(base),
            )
        };
        Ok(Some(Self {
            reg: reg.clone(),
            publisher: pid,
            pool_base: pool.ptr() as usize,
            _rw: rw,
            _pool: pool,
            geo,
            chunk_count: h.chunk_count,
            max_len: p.max_len,
            elem_size: p.elem_size,
            slice: payload.slice,
            count: SampleCount::new(biasable()),
            sub: if q.overflow == OverflowPolicy::Backpressure {
                Submission::new(slots, head, p.buffer).sole_consumer()
            } else {
                Submission::new(slots, head, p.buffer)
            },
            returns: Returns::new(returns),
            connected,
        }))
    }

    /// Samples of this connection currently held.
    #[inline]
    fn held(&self) -> usize {
        // A drop racing with this check at worst refuses one receive that
        // would just have fitted.
        self.count.held() as usize
    }

    #[inline]
    fn connected(&self) -> bool {
        // ORDERING: Acquire; pairs with the publisher's Release store in
        // connect(): the reset rings are visible once we see our id.
        self.connected.load(Ordering::Acquire) == self.reg.port_id
    }

    #[inline]
    fn submission(&self) -> Submission<'_> {
        self.sub
    }

    fn chunk_offset(&self, idx: u32) -> u64 {
        u64::from(idx) * self.geo.chunk_size
    }

    /// Address of chunk `idx`'s payload; `idx` must be below `chunk_count`.
    #[inline]
    fn payload_addr(&self, idx: u32) -> usize {
        self.pool_base + self.chunk_offset(idx) as usize
    }

    /// What to prefetch while waiting for the message after one of `len`
    /// elements (validated) in chunk `idx` (validated), which announced
    /// `next` (unvalidated): the first and last byte of `next`'s payload,
    /// guessing the same length, and `next`'s return word; or, if `next` is
    /// missing or out of range, `idx`'s payload, which is in our cache
    /// already, and its return word.
    #[inline]
    fn ahead(&self, idx: u32, len: u64, next: Option<u32>) -> [usize; 3] {
        match next {
            Some(n) if n < self.chunk_count => {
                let first = self.payload_addr(n);
                [
                    first,
                    first + (len * self.elem_size).saturating_sub(1) as usize,
                    self.returns.word_addr(n),
                ]
            }
            _ => {
                let first = self.payload_addr(idx);
                [first, first, self.returns.word_addr(idx)]
            }
        }
    }
}

/// The subscriber's hold on a connection. Samples point at the same
/// `SubConn` without a reference count: the connection's [`SampleCount`]
/// tells who is last. When the handle goes, it frees the connection if
/// every sample received is dropped by then, else the last sample to drop
/// does. A sample stores its return word before it counts itself, so the
/// one that frees comes after every other sample's last access.
struct ConnHandle(NonNull<SubConn>);

// SAFETY: SubConn is Send and Sync (mappings, atomics and an Arc); the handle
// is its owner until the hand-over described above.
unsafe impl Send for ConnHandle {}

impl ConnHandle {
    fn new(conn: SubConn) -> Self {
        Self(NonNull::from(Box::leak(Box::new(conn))))
    }
}

impl Deref for ConnHandle {
    type Target = SubConn;
    fn deref(&self) -> &SubConn {
        // SAFETY: freed only after the handle is gone (see the type's docs).
        unsafe { self.0.as_ref() }
    }
}

impl Drop for ConnHandle {
    fn drop(&mut self) {
        // On the subscriber's thread (it is not Sync). If the process-wide
        // barrier fails, the connection is kept (with its mapping) rather
        // than risk freeing it under a sample; nothing else is lost.
        if self.count.let_go(process_barrier) {
            // SAFETY: every sample of the connection is gone and so are we.
            unsafe { free_conn(self.0) };
        }
    }
}

/// Frees a connection.
///
/// # Safety
/// Only by the last of the handle and the samples (see [`ConnHandle`]).
unsafe fn free_conn(conn: NonNull<SubConn>) {
    // SAFETY: allocated by Box in ConnHandle::new; the caller is the last user.
    drop(unsafe { Box::from_raw(conn.as_ptr()) });
}

/// What [`Subscriber::take`] found on one connection.
enum Taken<T: Payload + ?Sized> {
    /// A sample, and the payload lines to prefetch next on this connection.
    Sample(Sample<T>, [usize; 3]),
    /// Nothing queued.
    Nothing,
    /// The publisher wrote garbage; the connection must go.
    Broken(ReceiveError),
}

struct ConnEntry {
    conn: ConnHandle,
    /// The publisher left the table: drain what it queued, then drop.
    draining: bool,
    /// Addresses of the first and last payload byte of the chunk the
    /// publisher announced for its next message (or of one in our cache),
    /// and of that chunk's return word: prefetched whenever the queue is
    /// polled, the payload for reading, so that when the message comes its
    /// payload and its descriptor arrive together, the return word for
    /// writing, so that dropping the sample does not wait for the
    /// publisher's CPU to give the line up (it reads it in every
    /// take-back).
    ahead: [usize; 3],
}

struct SubState {
    seen_generation: u64,
    conns: Vec<ConnEntry>,
    /// Publishers whose segments failed validation.
    bad: Vec<u64>,
    next: usize,
}

impl Drop for SubState {
    fn drop(&mut self) {
        // Revoke the biases of every connection with one process-wide
        // barrier rather than one each (the handles' own revokes then find
        // nothing to do). If the barrier fails, each handle tries again.
        let mut needed = false;
        for entry in &self.conns {
            needed |= entry.conn.count.bias.raise();
        }
        if !needed || process_barrier() {
            for entry in &self.conns {
                entry.conn.count.bias.finish();
            }
        }
    }
}

impl SubState {
    /// Samples handed out and not yet dropped, over every connection. A
    /// connection stays in the list while any of its samples is held.
    fn borrowed(&self) -> usize {
        self.conns.iter().map(|e| e.conn.held()).sum()
    }

    fn update(&mut self, reg: &Arc<Registration>) -> Option<ReceiveError> {
        let svc = &reg.service;
        if svc.generation() == self.seen_generation {
            return None;
        }
        svc.reclaim_dead_ports();
        let gen = svc.generation();
        self.seen_generation = gen;
        let mut err = None;
        let n = svc.table_len(PortKind::Publisher);
        let mut present = Vec::with_capacity(n);
        for i in 0..n {
            // ORDERING: Acquire; pairs with the Release store in register().
            let pid = svc
                .port_slot(PortKind::Publisher, i)
                .port_id
                .load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            present.push(pid);
            if self.bad.contains(&pid)
                || self
                    .conns
                    .iter()
                    .any(|e| e.conn.publisher == pid && !e.draining)
            {
                continue;
            }
            match SubConn::open(reg, i, pid) {
                Ok(Some(c)) => {
                    let ahead = [c.payload_addr(0), c.payload_addr(0), c.returns.word_addr(0)];
                    self.conns.push(ConnEntry {
                        conn: ConnHandle::new(c),
                        draining: false,
                        ahead,
                    })
                }
                Ok(None) => {}
                Err(what) => {
                    tracing::warn!(
                        publisher = pid,
                        what,
                        "ignoring a publisher with a corrupted segment"
                    );
                    self.bad.push(pid);
                    err = Some(ReceiveError::CorruptedPublisher {
                        publisher: pid,
                        what,
                    });
                }
            }
        }
        for e in &mut self.conns {
            if !present.contains(&e.conn.publisher) {
                e.draining = true;
            }
        }
        self.bad.retain(|b| present.contains(b));
        reap_retired(svc);
        err
    }
}

/// Receives samples of `T` from every publisher of a service.
///
/// `Send` but not `Sync`: one thread at a time uses it, so receiving needs no
/// lock. Samples it hands out are `Send` too and keep the
/// publisher's memory mapped, so they stay readable even if the publisher
/// exits; the subscriber stays registered until it and all its samples are
/// dropped.
pub struct Subscriber<T: Payload + ?Sized> {
    reg: Arc<Registration>,
    /// The service's generation word, in its mapping (kept alive by `reg`):
    /// loaded by every receive, so one load away.
    generation: &'static AtomicU64,
    max_borrowed: usize,
    strategy: WaitStrategy,
    adaptive: Adaptive,
    state: RefCell<SubState>,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> std::fmt::Debug for Subscriber<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("service", &self.reg.service.name)
            .field("port_id", &format_args!("{:016x}", self.reg.port_id))
            .finish()
    }
}

impl<T: Payload + ?Sized> Subscriber<T> {
    fn lock(&self) -> RefMut<'_, SubState> {
        // No method of the subscriber calls another while holding the state,
        // and the subscriber is not Sync, so this never finds it borrowed.
        self.state.borrow_mut()
    }

    /// The subscriber's unique port id.
    pub fn id(&self) -> u64 {
        self.reg.port_id
    }

    /// Takes the next sample, if any; never blocks. Samples of one publisher
    /// arrive in the order sent; publishers are served round-robin.
    pub fn receive(&self) -> Result<Option<Sample<T>>, ReceiveError> {
        let mut st = self.lock();
        // ORDERING: Acquire; pairs with the Release bump of the generation
        // (DynSegment::bump): table changes before it are visible.
        if self.generation.load(Ordering::Acquire) != st.seen_generation {
            if let Some(e) = st.update(&self.reg) {
                return Err(e);
            }
        }
        // The common case, one publisher: no round-robin, and only the
        // loads needed to find a sample or learn there is none (an empty
        // receive is the body of every busy-poll loop).
        if let [entry] = &st.conns[..] {
            let conn = &entry.conn;
            if !entry.draining && conn.connected() {
                if conn.held() >= self.max_borrowed {
                    return Err(ReceiveError::ExceedsMaxBorrowed(self.max_borrowed));
                }
                return match self.take(entry) {
                    Taken::Sample(sample, lines) => {
                        st.conns[0].ahead = lines;
                        Ok(Some(sample))
                    }
                    Taken::Nothing => Ok(None),
                    Taken::Broken(e) => {
                        let gone = st.conns.swap_remove(0);
                        st.bad.push(gone.conn.publisher);
                        Err(e)
                    }
                };
            }
        }
        self.receive_from_any(st)
    }

    /// [`receive`](Self::receive) with several publishers, or one that
    /// left or broke.
    #[cold]
    fn receive_from_any(
        &self,
        mut st: RefMut<'_, SubState>,
    ) -> Result<Option<Sample<T>>, ReceiveError> {
        if st.borrowed() >= self.max_borrowed {
            return Err(ReceiveError::ExceedsMaxBorrowed(self.max_borrowed));
        }
        let n = st.conns.len();
        let mut i = if st.next < n { st.next } else { 0 };
        let mut result = Ok(None);
        let mut remove = None;
        let mut ahead = None;
        for _ in 0..n {
            let entry = &st.conns[i];
            let conn = &entry.conn;
            if !conn.connected() {
                if entry.draining && conn.held() == 0 {
                    remove = Some(i);
                }
            } else {
                match self.take(entry) {
                    Taken::Sample(sample, lines) => {
                        result = Ok(Some(sample));
                        ahead = Some((i, lines));
                        st.next = i + 1;
                        break;
                    }
                    Taken::Nothing => {
                        if entry.draining && conn.held() == 0 {
                            remove = Some(i);
                        }
                    }
                    Taken::Broken(e) => {
                        result = Err(e);
                        remove = Some(i);
                        break;
                    }
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        if let Some((i, lines)) = ahead {
            st.conns[i].ahead = lines;
        }
        if let Some(i) = remove {
            let gone = st.conns.swap_remove(i);
            if result.is_err() {
                st.bad.push(gone.conn.publisher);
            }
        }
        result
    }

    /// Takes the next sample of one connection, if any, prefetching the
    /// chunk its publisher announced with the load of the slot, so that
    /// both travel at once when the publisher has written them (see
    /// core::ring).
    #[inline(always)]
    fn take(&self, entry: &ConnEntry) -> Taken<T> {
        let conn = &entry.conn;
        prefetch_read(entry.ahead[0] as *const u8);
        prefetch_read(entry.ahead[1] as *const u8);
        prefetch_write(entry.ahead[2] as *const u8);
        match conn.sub.pop() {
            Ok(Pop::Item {
                index,
                pos,
                len,
                next,
            }) => {
                // When the announcement was wrong, the line the sample's
                // drop will write has not been asked for yet.
                conn.returns.prepare_release(index);
                match self.accept(conn, index, pos.wrapping_add(1), len) {
                    Ok(sample) => Taken::Sample(sample, conn.ahead(index, len, next)),
                    Err(e) => Taken::Broken(e),
                }
            }
            Ok(Pop::Empty) => Taken::Nothing,
            Err(Corrupted) => Taken::Broken(ReceiveError::CorruptedPublisher {
                publisher: conn.publisher,
                what: GARBAGE_IN_QUEUE,
            }),
        }
    }

    fn accept(
        &self,
        conn: &ConnHandle,
        idx: u32,
        stamp: u64,
        len: u64,
    ) -> Result<Sample<T>, ReceiveError> {
        let bad = |what| ReceiveError::CorruptedPublisher {
            publisher: conn.publisher,
            what,
        };
        if idx >= conn.chunk_count {
            return Err(bad("chunk index out of range"));
        }
        // The length came with the descriptor (same cache line), so the
        // payload's lines can be fetched without reading the chunk first.
        if len > conn.max_len || (!conn.slice && len != 1) {
            // Give the chunk back so the publisher does not lose it.
            conn.returns.release(idx, stamp);
            return Err(bad("payload length out of range"));
        }
        conn.count.received_one();
        // Relaxed (both): only this thread writes the total (a counter for
        // inspectors, on a line of this subscriber's own).
        let total = self.reg.received_total;
        total.store(total.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        Ok(Sample {
            conn: conn.0,
            payload: conn.payload_addr(idx) as *const u8,
            idx,
            stamp,
            len: len as usize,
            _t: PhantomData,
        })
    }

    /// Waits up to `timeout` for a sample; `Ok(None)` on timeout. A zero
    /// timeout is the same as [`receive`](Self::receive).
    pub fn receive_timeout(&self, timeout: Duration) -> Result<Option<Sample<T>>, ReceiveError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// Waits until a sample arrives. Returns
    /// [`ReceiveError::PublishersGone`] when every publisher seen during the
    /// wait has left or died and nothing is queued (a subscriber started
    /// before any publisher waits for one to come).
    pub fn blocking_receive(&self) -> Result<Sample<T>, ReceiveError> {
        loop {
            if let Some(s) = self.wait(None)? {
                return Ok(s);
            }
        }
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<Option<Sample<T>>, ReceiveError> {
        let waiter = Waiter {
            strategy: self.strategy,
            adaptive: &self.adaptive,
            block: self
                .reg
                .service
                .wake_block(PortKind::Subscriber, self.reg.index),
        };
        // A cheap look at the table (no system call); liveness is checked
        // only when a sleep times out.
        let mut saw_publisher = self.publishers_registered();
        waiter.wait(
            deadline,
            || self.receive(),
            || self.ready(),
            || {
                if self.publishers_alive() {
                    saw_publisher = true;
                    Ok(())
                } else if saw_publisher && !self.ready() {
                    Err(ReceiveError::PublishersGone(
                        self.reg.service.name.to_string(),
                    ))
                } else {
                    Ok(())
                }
            },
        )
    }

    /// Whether a receive would find something (without taking it).
    fn ready(&self) -> bool {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .any(|e| e.conn.connected() && e.conn.submission().has_item())
    }

    fn publishers_registered(&self) -> bool {
        let svc = &self.reg.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            let slot = svc.port_slot(PortKind::Publisher, i);
            // Relaxed (both): a hint; publishers_alive() does the real check.
            slot.port_id.load(Ordering::Relaxed) != 0 && slot.flags.load(Ordering::Relaxed) == 0
        })
    }

    fn publishers_alive(&self) -> bool {
        let svc = &self.reg.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            let slot = svc.port_slot(PortKind::Publisher, i);
            // ORDERING: Acquire; pairs with the Release store in register().
            slot.port_id.load(Ordering::Acquire) != 0
                // Relaxed (both): published with the port id.
                && slot.flags.load(Ordering::Relaxed) == 0
                && node_is_alive(&svc.node.config.root, slot.node_id.load(Ordering::Relaxed))
        })
    }

    /// Registers interest before a waitset sleeps; true if samples wait.
    pub(crate) fn arm(&self) -> bool {
        self.reg
            .service
            .wake_block(PortKind::Subscriber, self.reg.index)
            .register_fd(|| self.ready())
    }

    /// Withdraws the interest taken by [`arm`](Self::arm); empties the FIFO.
    pub(crate) fn disarm(&self) {
        self.reg
            .service
            .wake_block(PortKind::Subscriber, self.reg.index)
            .unregister_fd();
        fifo::drain(&self.reg.fifo);
    }

    /// Whether a sample is waiting (a hint: another thread may take it).
    pub fn has_samples(&self) -> bool {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .any(|e| e.conn.connected() && e.conn.submission().has_item())
    }

    /// Number of publishers this subscriber is connected to.
    pub fn publisher_count(&self) -> usize {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .filter(|e| !e.draining && e.conn.connected())
            .count()
    }
}

/// A received sample: dereferences to the payload in shared memory, where the
/// publisher wrote it. Dropping it hands the chunk back to the publisher.
///
/// `Send` and `Sync`. Dropping one on the thread that receives is cheapest
/// (plain stores); on another thread it costs an atomic increment. Do not
/// drop samples in a signal handler: that is not async-signal-safe.
pub struct Sample<T: Payload + ?Sized> {
    /// Kept alive by the connection's drop counter (see [`ConnHandle`]).
    conn: NonNull<SubConn>,
    /// The payload, in the connection's pool mapping (computed once, at
    /// receive, from the validated chunk index).
    payload: *const u8,
    idx: u32,
    /// Return stamp of this delivery.
    stamp: u64,
    len: usize,
    _t: PhantomData<fn() -> Box<T>>,
}

// SAFETY: the connection is Send and Sync and stays alive while the sample
// does, on whatever thread (see ConnHandle); the payload is plain data that
// nobody writes while the sample holds it.
unsafe impl<T: Payload + ?Sized> Send for Sample<T> {}
// SAFETY: as for Send; `&Sample` only reads.
unsafe impl<T: Payload + ?Sized> Sync for Sample<T> {}

impl<T: Payload + ?Sized> Sample<T> {
    #[inline]
    fn conn(&self) -> &SubConn {
        // SAFETY: alive while the sample is (see ConnHandle).
        unsafe { self.conn.as_ref() }
    }

    /// The id of the publisher that sent it.
    pub fn publisher_id(&self) -> u64 {
        self.conn().publisher
    }
}

impl<T: Payload + ?Sized> Deref for Sample<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: idx < chunk_count and len <= max_len were validated before
        // `payload` was computed from them, so the payload lies inside the
        // pool mapping (alive while the sample is, see ConnHandle), aligned
        // for T (chunk size and payload offset are multiples of its
        // alignment). The publisher does not write the chunk while we hold
        // it; T is ShmSafe, so any bytes a misbehaving publisher might write
        // are still a valid T.
        unsafe { &*T::make_ptr(self.payload.cast_mut(), self.len) }
    }
}

impl<T: Payload + ?Sized> Drop for Sample<T> {
    fn drop(&mut self) {
        let conn = self.conn();
        conn.returns.release(self.idx, self.stamp);
        if conn.count.sample_dropped() {
            // SAFETY: the subscriber let go and we were the last sample.
            unsafe { free_conn(self.conn) };
        }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug> std::fmt::Debug for Sample<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sample").field(&&**self).finish()
    }
}

impl<T: Payload + ?Sized> AsFd for Subscriber<T> {
    /// The subscriber's wake-up FIFO, readable after a send while a waitset
    /// waits on it.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.reg.fifo.as_fd()
    }
}
