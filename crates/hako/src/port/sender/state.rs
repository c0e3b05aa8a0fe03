//! A sender's mutable state, kept behind its port lock: the chunk book,
//! the connections, the history; loaning, sending and following the
//! receivers that come and go. Delivery itself is in `deliver.rs`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::conn::{ConnState, FillClock};
use super::params::SenderParams;
use super::settings::{LoanError, Withdrawal};
use crate::core::layout::{PubCounters, PORT_LOSSY, PORT_SKIP_OWN_NODE};
use crate::core::park::publish_barrier;
use crate::core::pool::ChunkBook;
use crate::core::ring::{Push, Tag, NO_TAG};
use crate::core::sync::prefetch_write;

/// Where [`SenderState::send_next`] sent a chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    /// The connection, and its receiver's port id.
    pub conn: usize,
    pub port: u64,
    /// Where the next turn starts.
    pub cursor: usize,
    /// Whether the receiver got it (under backpressure its queue may have
    /// stayed full, or it may have gone meanwhile).
    pub delivered: bool,
}

pub(crate) struct SenderState {
    pub(super) book: ChunkBook,
    /// The chunk of the last sample delivered to anyone (see `upcoming`).
    pub(super) last_sent: Option<u32>,
    /// Times the filling of samples, for publishers of large chunks.
    pub(super) fill: FillClock,
    pub(super) conns: Vec<ConnState>,
    /// The last `history_size` samples sent (chunk, length), oldest first.
    pub(super) history: VecDeque<(u32, u64)>,
    pub(super) loaned: usize,
    /// The `Publisher` was dropped while samples were loaned: the last loan
    /// to go releases the `SenderInner` (see `RawLoan`).
    pub(super) orphaned: bool,
    pub(super) seen_generation: u64,
    /// Indices of the connections served (connected, not broken).
    pub(super) active: Vec<usize>,
    /// The segment's counters (for inspectors) and the values behind them.
    pub(super) counters: &'static PubCounters,
    pub(super) sent: u64,
    pub(super) deliveries: u64,
    pub(super) dropped: u64,
    /// `active` must be rebuilt.
    pub(super) active_dirty: bool,
    /// The port keeps no history and its chunks are small (no fill clock):
    /// with one connection served, a send takes the lane (see `lane`).
    pub(super) plain: bool,
    /// The one connection served, when the port is `plain`: a send to it
    /// skips the checks a history, a fill clock or fan-out need.
    pub(super) lane: Option<usize>,
}

impl SenderState {
    /// Takes back every chunk the subscriber on `j` returned.
    #[inline]
    pub(super) fn take_back_returned(&mut self, j: usize) {
        take_back(&mut self.conns[j], &mut self.book, self.last_sent);
    }

    pub(super) fn drain_all(&mut self) {
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
    pub(super) fn refresh_active(&mut self) {
        if self.active_dirty {
            self.rebuild_active();
        }
    }

    #[cold]
    pub(super) fn rebuild_active(&mut self) {
        self.active.clear();
        let conns = &self.conns;
        self.active
            .extend((0..conns.len()).filter(|&j| conns[j].sub_port != 0 && !conns[j].broken));
        self.lane = match self.active[..] {
            [j] if self.plain => Some(j),
            _ => None,
        };
        self.active_dirty = false;
    }

    /// Releases everything outstanding on `j`. `broken`: keep the slot
    /// marked so the same subscriber is not served again.
    pub(super) fn disconnect(&mut self, j: usize, broken: bool) {
        let conn = &mut self.conns[j];
        let book = &mut self.book;
        conn.outstanding.drain(|idx| {
            book.release(idx);
        });
        // Relaxed: a counter for inspectors (a cold path: the chunks a
        // departed receiver held are free now).
        self.counters
            .free_chunks
            .store(book.free_count() as u64, Ordering::Relaxed);
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
    pub(super) fn update_connections(&mut self, p: &SenderParams) {
        let svc = &p.service;
        if svc.generation() == self.seen_generation {
            return;
        }
        svc.reclaim_dead_ports();
        let gen = svc.generation();
        self.seen_generation = gen;
        for j in 0..self.conns.len() {
            let slot = svc.port_slot(p.peers, j);
            // ORDERING: Acquire; pairs with the Release store in register().
            let mut pid = slot.port_id.load(Ordering::Acquire);
            // Relaxed (both): published by the Acquire load of port_id.
            let flags = if pid != 0 { slot.flags.load(Ordering::Relaxed) } else { 0 };
            // A receiver of this node that leaves out its own node's
            // senders is served as no receiver at all.
            if flags & PORT_SKIP_OWN_NODE != 0 && slot.node_id.load(Ordering::Relaxed) == svc.node.id {
                pid = 0;
            }
            if pid == self.conns[j].sub_port {
                continue;
            }
            if self.conns[j].sub_port != 0 {
                self.disconnect(j, false);
            }
            if pid != 0 {
                self.conns[j].lossy = flags & PORT_LOSSY != 0;
                self.connect(p, j, pid);
            }
        }
    }

    pub(super) fn connect(&mut self, p: &SenderParams, j: usize, pid: u64) {
        let conn = &mut self.conns[j];
        let sub = conn.sub;
        sub.reset(&mut conn.producer);
        conn.returns.reset();
        // A previous receiver's withdrawals say nothing of this one's.
        for word in conn.withdrawn {
            // Relaxed: published with the connection (Release below).
            word.store(0, Ordering::Relaxed);
        }
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
            let mut slot_len = len;
            let words = p.inline_words(idx, &mut slot_len);
            // At most a queue's worth: a return slot is free for each.
            let Some(ret) = conn.outstanding.free_slot() else {
                break;
            };
            if let Ok(Push::Done) = sub.try_push(&mut conn.producer, idx, ret, slot_len, None, NO_TAG, words) {
                conn.outstanding.insert(ret, idx, stamp);
                self.book.add_ref(idx);
            }
        }
        // ORDERING: Release; pairs with the subscriber's Acquire load of the
        // connected word: the reset rings and history are visible before it
        // starts consuming.
        conn.connected.store(pid, Ordering::Release);
        // A subscriber may already sleep waiting for its first sample.
        // ORDERING: the publish barrier; as in deliver().
        publish_barrier();
        self.wake_one(p, j);
    }

    /// Takes the chunk sent last back from every subscriber that has
    /// returned it; once all have (and no history holds it), it is on top
    /// of the free stack, and the next loan gets it (see [`FillClock`]).
    #[cold]
    pub(super) fn reclaim_last_sent(&mut self) {
        let Some(prev) = self.last_sent else { return };
        if self.book.refs(prev) == 0 {
            return;
        }
        self.refresh_active();
        for k in 0..self.active.len() {
            let conn = &mut self.conns[self.active[k]];
            let Some((ret, stamp)) = conn.outstanding.find(prev) else {
                continue;
            };
            if !conn.broken && conn.returns.returned(ret, stamp) {
                conn.outstanding.remove(ret, prev);
                self.book.release(prev);
            }
        }
    }

    #[inline(always)]
    pub(super) fn alloc(&mut self, p: &SenderParams) -> Result<u32, LoanError> {
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

    #[inline(always)]
    pub(super) fn send(&mut self, p: &SenderParams, idx: u32, len: u64) -> usize {
        // ORDERING: Acquire; pairs with the Release bump of the generation
        // (DynSegment::bump): table changes before it are visible.
        if p.generation.load(Ordering::Acquire) != self.seen_generation {
            self.update_connections(p);
        }
        self.refresh_active();
        match self.lane {
            Some(j) => self.send_lane(p, j, idx, len),
            None => self.send_general(p, idx, len),
        }
    }

    /// [`send`](Self::send) off the lane: to several connections or none,
    /// with a history or a fill clock. Out of line, so that a send inlined
    /// into the caller's loop carries only the lane.
    #[inline(never)]
    fn send_general(&mut self, p: &SenderParams, idx: u32, len: u64) -> usize {
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
        self.sent_to(idx, n);
        self.prepare_next(p, len);
        n
    }

    /// Sends chunk `idx` to the receiver `port` on connection `j` alone (no
    /// history): a response to the client that asked. False if that
    /// connection does not serve `port` now (it left or broke, and another
    /// port may have taken its entry) or, under backpressure, its queue
    /// stayed full.
    #[inline(always)]
    pub(super) fn send_to(
        &mut self,
        p: &SenderParams,
        (j, port): (usize, u64),
        idx: u32,
        len: u64,
        tag: Tag,
        until: Option<Withdrawal>,
    ) -> bool {
        // ORDERING: Acquire; as in send().
        if p.generation.load(Ordering::Acquire) != self.seen_generation {
            self.update_connections(p);
        }
        // Served means connected and not broken: what `active` lists, read
        // from the connection itself instead of searched for.
        let served = self.served_port(j) == Some(port);
        let got = served && self.send_on(p, j, idx, len, tag, until);
        if !served {
            self.sent_to(idx, 0);
        }
        got
    }

    /// Sends chunk `idx` to the next served connection in turn, from
    /// `cursor` (a position in the list of served connections, kept by the
    /// caller): a request to one of the servers. `None` (the chunk goes
    /// back) if no receiver is served now.
    #[inline(always)]
    pub(super) fn send_next(
        &mut self,
        p: &SenderParams,
        cursor: usize,
        idx: u32,
        len: u64,
        tag: Tag,
    ) -> Option<Sent> {
        // ORDERING: Acquire; as in send().
        if p.generation.load(Ordering::Acquire) != self.seen_generation {
            self.update_connections(p);
        }
        self.refresh_active();
        let n = self.active.len();
        if n == 0 {
            self.give_back(idx);
            return None;
        }
        let k = if cursor < n { cursor } else { 0 };
        let j = self.active[k];
        let port = self.conns[j].sub_port;
        let delivered = self.send_on(p, j, idx, len, tag, None);
        Some(Sent {
            conn: j,
            port,
            cursor: k + 1,
            delivered,
        })
    }

    /// Queues chunk `idx` on served connection `j`, with `tag`, and wakes
    /// its receiver if it sleeps; the loan ends either way.
    #[inline(always)]
    fn send_on(
        &mut self,
        p: &SenderParams,
        j: usize,
        idx: u32,
        len: u64,
        tag: Tag,
        until: Option<Withdrawal>,
    ) -> bool {
        if p.large_chunks {
            self.fill.on_send();
        }
        let next = self.upcoming(p, j);
        let got = self.push_to(p, j, idx, len, next, tag, until);
        if got {
            // ORDERING: the publish barrier; as in deliver().
            publish_barrier();
            self.after_publish(p, j);
        }
        self.last_sent = got.then_some(idx);
        self.sent_to(idx, usize::from(got));
        got
    }

    /// The bookkeeping after a sample went to `n` receivers: the loan ends,
    /// and the counters for inspectors follow.
    #[inline]
    pub(super) fn sent_to(&mut self, idx: u32, n: usize) {
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
    }

    /// Whether the receiver `port`, on connection `j`, withdrew the message
    /// `w` names (a connection that no longer serves `port` withdrew
    /// nothing: its words may be another receiver's).
    pub(crate) fn withdrawn(&self, (j, port): (usize, u64), w: Withdrawal) -> bool {
        self.served_port(j) == Some(port) && self.conns[j].is_withdrawn(w)
    }

    /// The receiver's port id on connection `j`, if it is served.
    #[inline]
    pub(super) fn served_port(&self, j: usize) -> Option<u64> {
        let c = self.conns.get(j)?;
        (c.sub_port != 0 && !c.broken).then_some(c.sub_port)
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
    pub(super) fn prepare_next(&self, p: &SenderParams, len: u64) {
        if let Some(&j) = self.active.first() {
            self.prepare_next_on(p, j, len);
        }
    }

    /// [`prepare_next`](Self::prepare_next) for the first connection
    /// served, `j`.
    #[inline(always)]
    pub(super) fn prepare_next_on(&self, p: &SenderParams, j: usize, len: u64) {
        self.conns[j].prepare_next(&self.book, p, len);
    }

    pub(super) fn give_back(&mut self, idx: u32) {
        // A sample dropped unsent tells nothing of how long filling takes.
        self.fill.started = None;
        self.loaned -= 1;
        self.book.release(idx);
        // Relaxed: a counter for inspectors.
        self.counters
            .loans
            .store(self.loaned as u64, Ordering::Relaxed);
    }

    /// Connections served now (connected, not broken).
    pub(super) fn connected_count(&self) -> usize {
        self.conns
            .iter()
            .filter(|c| c.sub_port != 0 && !c.broken)
            .count()
    }
}

/// Takes back every chunk the receiver on `conn` returned, into `book`.
/// The chunk sent last (`last_sent`) is released after the others, so
/// that it goes on top of the free stack if it is free now, as
/// `upcoming` announced (and as its lines are the likeliest to be in
/// cache).
#[inline(never)]
pub(super) fn take_back(conn: &mut ConnState, book: &mut ChunkBook, last_sent: Option<u32>) {
    let returns = conn.returns;
    // u32::MAX: no chunk has that index (a pool has fewer chunks).
    let last = last_sent.unwrap_or(u32::MAX);
    let mut last_back = 0u32;
    conn.outstanding.take_returned(&returns, |idx| {
        if idx == last {
            last_back += 1;
        } else {
            book.release(idx);
        }
    });
    for _ in 0..last_back {
        book.release(last);
    }
}

impl ConnState {
    /// With two or more samples outstanding here (see
    /// [`SenderState::prepare_next`]), starts taking ownership of the lines
    /// the next loan from `book` will most likely write.
    #[inline(always)]
    pub(super) fn prepare_next(&self, book: &ChunkBook, p: &SenderParams, len: u64) {
        if self.outstanding.count() < 2 {
            return;
        }
        if let Some(next) = book.top() {
            let first = p.payload_ptr(next);
            // The loan checked `len` against the chunk, so the product
            // neither overflows nor leaves the chunk; an empty payload
            // prefetches its first byte.
            let last = (len * p.elem_size).saturating_sub(1);
            prefetch_write(first);
            // wrapping_add: only an address for the prefetch, never
            // dereferenced.
            prefetch_write(first.wrapping_add(last as usize));
        }
    }
}
