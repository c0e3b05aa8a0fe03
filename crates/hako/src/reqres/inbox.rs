//! A client's incoming side: its port, and the slots of its requests in
//! flight with the responses routed to them. Every pending response of the
//! client works on it (see `client.rs` for the routing).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::duplex::Duplex;
use super::envelope::{request_id, withdrawal, Envelope};
use super::errors::ReqResReceiveError;
use crate::port::receiver::sample::RawSample;

/// Most responses one receive routes to other requests before it gives up.
const ROUTE_PER_RECEIVE: usize = 256;

/// One request slot of a client.
pub(crate) struct Slot {
    /// Bumped when the slot's pending response goes: responses that name
    /// an older generation are stale.
    pub(super) generation: u32,
    pub(super) active: bool,
    /// The server the request went to, and the client's connection to it.
    pub(super) server: u64,
    pub(super) conn: usize,
    /// The server ended the stream.
    pub(super) ended: bool,
    /// It ended it giving up on the request (reported by the next receive).
    pub(super) aborted: bool,
    /// The service's table generation at which the server was last found
    /// listed (`u64::MAX`: not since the request was sent).
    pub(super) listed_at: u64,
    /// Responses taken from the receiver by another pending response,
    /// with their payload's element count.
    pub(super) queue: VecDeque<(RawSample, usize)>,
}

pub(crate) struct Slots {
    pub(super) slot: Vec<Slot>,
    pub(super) free: Vec<u32>,
    /// Streams whose pending response went before they ended, and whose
    /// end has not come back yet: their responses are stale.
    pub(super) stale: u32,
}

/// What [`Inbox::route_one`] did.
pub(super) enum Routed {
    /// Nothing was there.
    Nothing,
    /// A message went to its slot's queue (or was stale, or ended a
    /// stream).
    Elsewhere,
    /// A response to the slot asked for, handed over directly, with its
    /// payload's element count.
    Mine(RawSample, usize),
}

/// Tickets dropped (on any thread) while their requests were in flight:
/// the client releases their slots at its next send or receive.
#[derive(Default)]
pub(crate) struct DroppedTickets {
    /// Whether `list` may hold something: one load for the common case.
    any: AtomicBool,
    /// Slot and generation of each dropped ticket.
    list: Mutex<Vec<(u32, u32)>>,
}

impl DroppedTickets {
    /// A ticket of `slot` and `generation` dropped.
    pub(crate) fn push(&self, slot: u32, generation: u32) {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((slot, generation));
        // ORDERING: Release; pairs with the Acquire swap in take(): the
        // entry pushed is seen by whoever sees the flag.
        self.any.store(true, Ordering::Release);
    }

    /// What was dropped since the last call.
    fn take(&self) -> Vec<(u32, u32)> {
        // ORDERING: Acquire; pairs with the Release store in push().
        if !self.any.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        std::mem::take(&mut *self.list.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The port of a client and the routing of its responses.
pub(crate) struct Inbox {
    pub(crate) port: Duplex,
    /// How responses are laid out.
    pub(super) resp_env: Envelope,
    pub(super) slots: RefCell<Slots>,
    /// The service's name, for errors.
    pub(crate) name: String,
    /// Tickets of this client's requests dropped while in flight.
    pub(crate) dropped: Arc<DroppedTickets>,
}

impl Inbox {
    /// Takes one response from the receiver and routes it to its slot; a
    /// response to slot `mine` (the caller's, whose queue is empty) is
    /// handed back instead of queued.
    pub(super) fn route_one(&self, mine: Option<u32>) -> Result<Routed, ReqResReceiveError> {
        let Some((raw, tag)) = self.port.rx.receive_tagged(|raw, tag| (raw, tag))? else {
            return Ok(Routed::Nothing);
        };
        let m = self.resp_env.open(tag, raw.len(), true).map_err(|what| {
            ReqResReceiveError::Corrupted {
                peer: raw.sender_id(),
                what,
            }
        })?;
        let mut slots = self.slots.borrow_mut();
        let slots = &mut *slots;
        if let Some(s) = slots.slot.get_mut(m.slot as usize) {
            if s.active && s.generation == m.generation && s.server == raw.sender_id() {
                if m.end {
                    s.ended = true;
                    s.aborted = m.aborted;
                } else if !s.ended {
                    // A last response ends the stream as it arrives.
                    s.ended = m.last;
                    if mine == Some(m.slot) {
                        return Ok(Routed::Mine(raw, m.elems));
                    }
                    s.queue.push_back((raw, m.elems));
                }
                // A response after the end (sent from a loan that outlived
                // its active request) is dropped.
            } else if m.end || m.last {
                // A stale stream ended.
                slots.stale = slots.stale.saturating_sub(1);
            }
        }
        // Anything else is stale (its pending response was dropped) and
        // goes back to the server as `raw` drops.
        Ok(Routed::Elsewhere)
    }

    /// Takes the next response of `slot`'s request, if one is there (see
    /// `PendingResponse::receive`): from the slot's queue, or routed from
    /// the receiver; `None` when nothing is there now or the stream ended.
    #[inline(always)]
    pub(crate) fn next_for(
        &self,
        slot: u32,
    ) -> Result<Option<(RawSample, usize)>, ReqResReceiveError> {
        // Bounded: other requests' responses (or stale ones) that keep
        // coming cannot keep a non-blocking receive busy.
        for _ in 0..ROUTE_PER_RECEIVE {
            {
                let mut slots = self.slots.borrow_mut();
                let s = &mut slots.slot[slot as usize];
                if let Some(r) = s.queue.pop_front() {
                    return Ok(Some(r));
                }
                if s.ended {
                    if std::mem::take(&mut s.aborted) {
                        return Err(ReqResReceiveError::Aborted);
                    }
                    return Ok(None);
                }
            }
            match self.route_one(Some(slot))? {
                Routed::Mine(raw, elems) => return Ok(Some((raw, elems))),
                Routed::Elsewhere => {}
                Routed::Nothing => {
                    return if self.server_listed(slot) {
                        Ok(None)
                    } else {
                        Err(ReqResReceiveError::ServerGone)
                    };
                }
            }
        }
        Ok(None)
    }

    /// Whether `slot`'s stream ended and every response was taken.
    pub(crate) fn finished(&self, slot: u32) -> bool {
        let slots = self.slots.borrow();
        let s = &slots.slot[slot as usize];
        s.ended && s.queue.is_empty()
    }

    /// Whether responses of `slot`'s request wait in its queue.
    pub(crate) fn queued_for(&self, slot: u32) -> bool {
        !self.slots.borrow().slot[slot as usize].queue.is_empty()
    }

    /// Whether `slot` still holds the request of `generation` (its pending
    /// response or ticket did not end it).
    pub(crate) fn current(&self, slot: u32, generation: u32) -> bool {
        let slots = self.slots.borrow();
        slots
            .slot
            .get(slot as usize)
            .is_some_and(|s| s.active && s.generation == generation)
    }

    /// Streams ended on our side whose responses may still come.
    pub(super) fn stale_streams(&self) -> u32 {
        self.slots.borrow().stale
    }

    /// Releases the slots of tickets dropped while their requests were in
    /// flight (their responses go back to the server unread, as a dropped
    /// pending response's do). One load when there are none.
    #[inline]
    pub(crate) fn release_dropped(&self) {
        // Relaxed: a hint; take() looks again with Acquire.
        if self.dropped.any.load(Ordering::Relaxed) {
            for (slot, generation) in self.dropped.take() {
                if self.current(slot, generation) {
                    self.release(slot);
                }
            }
        }
    }

    /// Ends a slot's request when its pending response goes.
    #[inline]
    pub(crate) fn release(&self, slot: u32) {
        let mut slots = self.slots.borrow_mut();
        let slots = &mut *slots;
        let s = &mut slots.slot[slot as usize];
        s.active = false;
        s.generation = s.generation.wrapping_add(1);
        if !s.queue.is_empty() {
            s.queue.clear();
        }
        let unended = !s.ended;
        slots.free.push(slot);
        if unended {
            self.count_stale(slots, slot);
        }
    }

    /// A stream ended on our side before the server ended it: its
    /// responses go on arriving (stale) if its server is still listed; one
    /// whose server left never will. The server learns of it through the
    /// slot's withdrawal word, so that it does not wait for room in our
    /// queue for responses nobody reads.
    #[cold]
    fn count_stale(&self, slots: &mut Slots, slot: u32) {
        let s = &slots.slot[slot as usize];
        if self.port.tx.served_port(s.conn) == Some(s.server) {
            slots.stale += 1;
            // The generation was bumped already: the request that ended
            // had the one before.
            let w = withdrawal(request_id(slot, s.generation.wrapping_sub(1)));
            self.port.rx.withdraw(s.server, w.key, w.value);
        }
    }

    /// Whether a response was taken from the receiver for a request whose
    /// pending response has not asked for it yet.
    pub(super) fn has_queued(&self) -> bool {
        self.slots.borrow().slot.iter().any(|s| !s.queue.is_empty())
    }

    /// The server of `slot`'s request and the connection to it.
    fn server_of(&self, slot: u32) -> (usize, u64) {
        let slots = self.slots.borrow();
        let s = &slots.slot[slot as usize];
        (s.conn, s.server)
    }

    /// Whether the server of `slot`'s request is still in the service's
    /// table. A busy-polling client asks after every empty poll: while the
    /// table's generation is the one it was last found listed at, one load
    /// answers (a server leaves the table only with a new generation; a
    /// connection the client itself gives up on, in a send that fails,
    /// forgets every slot's answer).
    #[inline]
    pub(super) fn server_listed(&self, slot: u32) -> bool {
        let generation = self.port.tx.generation();
        let (conn, server) = {
            let slots = self.slots.borrow();
            let s = &slots.slot[slot as usize];
            if s.listed_at == generation {
                return true;
            }
            (s.conn, s.server)
        };
        let listed = self.port.tx.served_port(conn) == Some(server);
        if listed {
            self.slots.borrow_mut().slot[slot as usize].listed_at = generation;
        }
        listed
    }

    /// Forgets when every slot's server was last found listed.
    pub(super) fn forget_listed(&self) {
        for s in &mut self.slots.borrow_mut().slot {
            s.listed_at = u64::MAX;
        }
    }

    /// Whether the server of `slot`'s request is still there: listed, and
    /// its process alive (a lock probe). A dead one's ports are reclaimed.
    pub(crate) fn server_alive(&self, slot: u32) -> bool {
        let (conn, server) = self.server_of(slot);
        self.server_listed(slot) && self.port.tx.peer_alive(conn, server)
    }
}
