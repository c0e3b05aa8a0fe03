//! Delivery: queuing a sent chunk for every connected receiver, waking
//! those that sleep, and what happens when a queue is full.

use std::sync::atomic::Ordering;

use super::params::SenderParams;
use super::settings::{BackpressureStrategy, Withdrawal};
use super::conn::ConnState;
use super::state::{take_back, SenderState};
use crate::core::park::{publish_barrier, Kernel, Wake};
use crate::core::pool::ChunkBook;
use crate::core::ring::{Corrupted, Inline, Push, Tag, NO_TAG};
use crate::domain::config::OverflowPolicy;
use crate::domain::nodefile::node_alive_in;
use crate::domain::service::files::fifo_file;
use crate::os::fifo;
use crate::os::futex::OsKernel;

impl SenderState {
    /// Delivers chunk `idx` to every connected subscriber, wakes those that
    /// sleep and takes back what they returned; returns how many got it.
    #[inline]
    pub(super) fn deliver(&mut self, p: &SenderParams, idx: u32, len: u64) -> usize {
        if let &[j] = &self.active[..] {
            // One subscriber, the common case: no flags, no second pass.
            let next = self.upcoming(p, j);
            return usize::from(self.publish_one(p, j, idx, len, next));
        }
        let mut delivered = 0;
        let next = match self.active.first() {
            Some(&j) => self.upcoming(p, j),
            None => None,
        };
        for k in 0..self.active.len() {
            let j = self.active[k];
            let got = self.push_to(p, j, idx, len, next, NO_TAG, None);
            self.conns[j].delivered = got;
            delivered += usize::from(got);
        }
        if delivered == 0 {
            return 0;
        }
        // ORDERING: the publish barrier (core::sync); pairs with the fences of
        // sleeping subscribers (see core::park): after our descriptor
        // stores, before reading their registrations. One for all.
        publish_barrier();
        for k in 0..self.active.len() {
            let j = self.active[k];
            if self.conns[j].delivered {
                self.after_publish(p, j);
            }
        }
        delivered
    }

    /// [`send`](Self::send) on the lane: one connection served, `j`, no
    /// history, no fill clock. The connection and the book are borrowed
    /// apart, so the whole send indexes `conns` once.
    #[inline(always)]
    pub(super) fn send_lane(&mut self, p: &SenderParams, j: usize, idx: u32, len: u64) -> usize {
        let conn = &mut self.conns[j];
        let book = &mut self.book;
        let mut slot_len = len;
        let words = p.inline_words(idx, &mut slot_len);
        // As upcoming() says for a port without history.
        let next = match self.last_sent {
            Some(prev) if conn.takes_back_after_send(p) => Some(prev),
            _ => book.top(),
        };
        if !conn.push_if_room(book, p.buffer, idx, slot_len, next, NO_TAG, words) {
            return self.send_lane_full(p, j, idx, len, next);
        }
        // ORDERING: the publish barrier; as in deliver().
        publish_barrier();
        conn.wake_if_sleeping(p);
        // As after_publish() does.
        if conn.outstanding.count() as u64 + 1 >= p.buffer {
            take_back(conn, book, self.last_sent);
        }
        // The connection holds the chunk now, so the loan's release below
        // frees nothing and the top of the free stack is the next loan's
        // (unless the receiver returned it already and the take-back took
        // it: then the prefetch, a hint, misses).
        conn.prepare_next(book, p, len);
        self.last_sent = Some(idx);
        self.sent_to(idx, 1);
        1
    }

    /// [`send_lane`](Self::send_lane) when the queue had no room at first.
    #[cold]
    #[inline(never)]
    fn send_lane_full(&mut self, p: &SenderParams, j: usize, idx: u32, len: u64, next: Option<u32>) -> usize {
        let n = usize::from(self.deliver_one(p, j, idx, len, next, NO_TAG, None));
        if n > 0 {
            // ORDERING: the publish barrier; as in deliver().
            publish_barrier();
            self.after_publish(p, j);
        }
        self.last_sent = (n > 0).then_some(idx);
        self.sent_to(idx, n);
        self.prepare_next_on(p, j, len);
        n
    }

    /// Queues chunk `idx` for connection `j`, which `active` lists (it is
    /// rebuilt at the start of every send, so `j` is served: straight to
    /// the push), announcing `next`; if it got it, wakes its receiver and
    /// takes back what it returned. False if it did not get it.
    #[inline(always)]
    fn publish_one(&mut self, p: &SenderParams, j: usize, idx: u32, len: u64, next: Option<u32>) -> bool {
        if !(self.push_if_room(p, j, idx, len, next, NO_TAG)
            || self.deliver_one(p, j, idx, len, next, NO_TAG, None))
        {
            return false;
        }
        // ORDERING: the publish barrier; as in deliver().
        publish_barrier();
        self.after_publish(p, j);
        true
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
    #[inline(always)]
    pub(super) fn upcoming(&self, p: &SenderParams, j: usize) -> Option<u32> {
        let takes_back = self.conns[j].takes_back_after_send(p);
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

    /// Queues chunk `idx` for subscriber `j`, announcing `next`, with `tag`
    /// (for a tagged ring); false if it did not get it. A wait for room
    /// ends early once `until` says the receiver withdrew the message.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn push_to(
        &mut self,
        p: &SenderParams,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        until: Option<Withdrawal>,
    ) -> bool {
        let conn = &self.conns[j];
        if conn.sub_port == 0 || conn.broken {
            return false;
        }
        self.push_if_room(p, j, idx, len, next, tag)
            || self.deliver_one(p, j, idx, len, next, tag, until)
    }

    /// Queues chunk `idx` for subscriber `j` if its queue has room (see
    /// [`ConnState::push_if_room`]).
    #[inline(always)]
    pub(super) fn push_if_room(
        &mut self,
        p: &SenderParams,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
    ) -> bool {
        let mut slot_len = len;
        let words = p.inline_words(idx, &mut slot_len);
        self.conns[j].push_if_room(&mut self.book, p.buffer, idx, slot_len, next, tag, words)
    }

    /// After the full barrier that followed a publish to subscriber `j`:
    /// wakes it if it sleeps, and takes back what it returned.
    #[inline]
    pub(super) fn after_publish(&mut self, p: &SenderParams, j: usize) {
        self.conns[j].wake_if_sleeping(p);
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

    /// Wakes subscriber `j` if it sleeps; the caller has issued a full
    /// barrier after publishing. No system call unless it sleeps.
    pub(super) fn wake_one(&mut self, p: &SenderParams, j: usize) {
        self.conns[j].wake_if_sleeping(p);
    }

    /// Queues chunk `idx` for subscriber `j` when its queue had no room at
    /// first: takes back what it returned, then does what the overflow
    /// policy says (drop the oldest; or under backpressure give up, retry
    /// or wait: until there is room, the receiver goes, a termination
    /// signal comes or `until` says the receiver withdrew the message).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn deliver_one(
        &mut self,
        p: &SenderParams,
        j: usize,
        idx: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        until: Option<Withdrawal>,
    ) -> bool {
        let sub = self.conns[j].sub;
        let mut attempts: u32 = 0;
        let mut spins: u32 = 0;
        let mut drained = false;
        loop {
            if self.push_if_room(p, j, idx, len, next, tag) {
                return true;
            }
            // With more than 64 return slots the word used last may be full
            // while the queue has room: the search moves the hint to a word
            // with a free slot, without a take-back or a look at the
            // receiver's position.
            let out = &self.conns[j].outstanding;
            if (out.count() as u64) < p.buffer
                && out.free_slot().is_some()
                && self.push_if_room(p, j, idx, len, next, tag)
            {
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
            let free = self.conns[j].outstanding.free_slot();
            if let (true, Some(ret)) = (self.conns[j].outstanding.count() < p.per_conn_limit, free) {
                let stamp = self.conns[j].producer.tail + 1;
                let mut slot_len = len;
                let words = p.inline_words(idx, &mut slot_len);
                match sub.try_push(&mut self.conns[j].producer, idx, ret, slot_len, next, tag, words) {
                    Ok(Push::Done) => {
                        self.conns[j].outstanding.insert(ret, idx, stamp);
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
            // No room for this subscriber. One that is never waited for
            // loses its oldest, whatever the service's policy.
            let overflow = if self.conns[j].lossy {
                OverflowPolicy::DropOldest
            } else {
                p.overflow
            };
            match overflow {
                OverflowPolicy::DropOldest => match sub.reclaim_oldest(&mut self.conns[j].producer)
                {
                    Ok(Some((old, ret))) => {
                        if self.conns[j].outstanding.remove(ret, old) {
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
                        // Nobody wants it any more: not delivered, and not
                        // a loss either (the receiver would have dropped it
                        // unread).
                        if until.is_some_and(|w| self.conns[j].is_withdrawn(w)) {
                            return false;
                        }
                        std::thread::yield_now();
                        if spins % 1024 == 0 && !self.subscriber_still_there(p, j) {
                            self.disconnect(j, false);
                            return false;
                        }
                        // SIGINT/SIGTERM (the node handles them and a wait
                        // installed the handlers) ends the wait as it ends
                        // the other blocking calls: this subscriber does
                        // not get the sample, which counts as dropped.
                        if spins % 64 == 0
                            && p.service.node.signals
                            && crate::os::signal::requested_if_installed()
                        {
                            self.count_drop(j);
                            return false;
                        }
                    }
                }
            }
        }
    }

    /// Whether a send now would deliver to every connection served without
    /// waiting for room: always, unless the port waits under
    /// backpressure (`Block`). Takes back what full connections' receivers
    /// returned; with `check_alive`, disconnects a full one whose receiver
    /// left or died (a system call per full connection), as a blocked send
    /// does now and then. For the async forms of waiting sends.
    pub(crate) fn room_everywhere(&mut self, p: &SenderParams, check_alive: bool) -> bool {
        if p.overflow != OverflowPolicy::Backpressure || p.strategy != BackpressureStrategy::Block
        {
            return true;
        }
        // ORDERING: Acquire; as in send().
        if p.generation.load(Ordering::Acquire) != self.seen_generation {
            self.update_connections(p);
        }
        self.refresh_active();
        let mut room = true;
        for k in 0..self.active.len() {
            let j = self.active[k];
            if (self.conns[j].outstanding.count() as u64) < p.buffer || self.conns[j].lossy {
                continue;
            }
            self.take_back_returned(j);
            let conn = &mut self.conns[j];
            let count = conn.outstanding.count();
            // As deliver_one finds room: below the queue's size, or below
            // the connection's limit with a slot free in its ring.
            let free = (count as u64) < p.buffer
                || (count < p.per_conn_limit && conn.sub.has_room(&mut conn.producer));
            if conn.broken || free {
                continue;
            }
            if check_alive && !self.subscriber_still_there(p, j) {
                self.disconnect(j, false);
                continue;
            }
            room = false;
        }
        room
    }

    /// A delivery to `j` lost to overflow: counted for inspectors.
    #[cold]
    pub(super) fn count_drop(&mut self, j: usize) {
        self.dropped += 1;
        let conn = &mut self.conns[j];
        conn.dropped += 1;
        // Relaxed (both): counters for inspectors, nothing depends on them.
        conn.dropped_word.store(conn.dropped, Ordering::Relaxed);
        self.counters.dropped.store(self.dropped, Ordering::Relaxed);
    }

    /// While blocked: is the subscriber on `j` still registered and alive?
    pub(super) fn subscriber_still_there(&self, p: &SenderParams, j: usize) -> bool {
        let slot = p.service.port_slot(p.peers, j);
        // ORDERING: Acquire; pairs with the Release store in unregister().
        if slot.port_id.load(Ordering::Acquire) != self.conns[j].sub_port {
            return false;
        }
        // Relaxed: node_id is stable while port_id is (published by it).
        let node = slot.node_id.load(Ordering::Relaxed);
        node_alive_in(&p.service.node.root, node)
    }
}

impl ConnState {
    /// Whether the take-back after a send on this connection is due (see
    /// `after_publish`): the chunk sent before is then the likeliest to
    /// be freed last.
    #[inline(always)]
    pub(super) fn takes_back_after_send(&self, p: &SenderParams) -> bool {
        self.outstanding.count() as u64 + 2 >= p.buffer
    }

    /// Queues chunk `idx` (of `book`) here if fewer chunks are outstanding
    /// on the connection than its queue holds (`buffer`), so the queue has
    /// room: no need to look at the receiver's position (a cache line it
    /// writes). `words`: the payload, for an inline ring.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn push_if_room(
        &mut self,
        book: &mut ChunkBook,
        buffer: u64,
        idx: u32,
        len: u64,
        next: Option<u32>,
        tag: Tag,
        words: Option<&Inline>,
    ) -> bool {
        if self.outstanding.count() as u64 >= buffer {
            return false;
        }
        // Fewer outstanding than the queue holds, so a return slot is free
        // (there are as many as the queue holds plus what may be borrowed);
        // when it is not in the word searched last (only with more than 64
        // slots), deliver_one's search finds it.
        let stamp = self.producer.tail + 1;
        let Some(ret) = self.outstanding.insert_hinted(idx, stamp) else {
            return false;
        };
        self.sub
            .push_known_room(&mut self.producer, idx, ret, len, next, tag, words);
        book.add_ref(idx);
        true
    }

    /// After the barrier that followed a publish here: wakes the receiver
    /// if it sleeps.
    #[inline(always)]
    pub(super) fn wake_if_sleeping(&mut self, p: &SenderParams) {
        let w = self.wake.sleepers_after_fence();
        if w.futex || w.fd {
            self.wake_up(p, w);
        }
    }

    /// Wakes the receiver, which sleeps (`w`, from its wake block after
    /// the barrier that followed the publish).
    #[cold]
    fn wake_up(&mut self, p: &SenderParams, w: Wake) {
        if w.futex {
            OsKernel.futex_wake(&self.wake.epoch);
        }
        if w.fd {
            if self.fifo.is_none() {
                self.fifo = p.service.dir.open_fifo_writer(&fifo_file(self.sub_port)).ok();
            }
            if let Some(fd) = &self.fifo {
                fifo::poke(fd);
            }
        }
    }
}
