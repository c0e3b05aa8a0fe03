//! A client's incoming side: its port, and the slots of its requests in
//! flight with the responses routed to them. Every pending response of the
//! client works on it (see `client.rs` for the routing).

use std::cell::RefCell;
use std::collections::VecDeque;

use super::duplex::Duplex;
use super::envelope::Envelope;
use super::errors::ReqResReceiveError;
use crate::port::receiver::sample::RawSample;

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

/// The port of a client and the routing of its responses.
pub(crate) struct Inbox {
    pub(crate) port: Duplex,
    /// How responses are laid out.
    pub(super) resp_env: Envelope,
    pub(super) slots: RefCell<Slots>,
    /// The service's name, for errors.
    pub(super) name: String,
}

impl Inbox {
    /// Takes one response from the receiver and routes it to its slot; a
    /// response to slot `mine` (the caller's, whose queue is empty) is
    /// handed back instead of queued.
    pub(super) fn route_one(&self, mine: Option<u32>) -> Result<Routed, ReqResReceiveError> {
        let Some(raw) = self.port.rx.receive(|r| r)? else {
            return Ok(Routed::Nothing);
        };
        // SAFETY: a received chunk of `len` bytes, aligned to 64, mapped
        // while `raw` lives.
        let m = unsafe { self.resp_env.open(raw.payload(), raw.len(), true) }.map_err(|what| {
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

    /// Streams ended on our side whose responses may still come.
    pub(super) fn stale_streams(&self) -> u32 {
        self.slots.borrow().stale
    }

    /// Ends a slot's request when its pending response goes.
    pub(super) fn release(&self, slot: u32) {
        let unended = {
            let slots = self.slots.borrow();
            !slots.slot[slot as usize].ended
        };
        // A stream not ended by a server still listed goes on arriving
        // (stale); one whose server left never will.
        let stale = unended && self.server_listed(slot);
        let mut slots = self.slots.borrow_mut();
        slots.stale += u32::from(stale);
        let s = &mut slots.slot[slot as usize];
        s.active = false;
        s.queue.clear();
        s.generation = s.generation.wrapping_add(1);
        slots.free.push(slot);
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
    /// table (one load while the table does not change).
    pub(super) fn server_listed(&self, slot: u32) -> bool {
        let (conn, server) = self.server_of(slot);
        self.port.tx.served_port(conn) == Some(server)
    }

    /// Whether the server of `slot`'s request is still there: listed, and
    /// its process alive (a lock probe). A dead one's ports are reclaimed.
    pub(super) fn server_alive(&self, slot: u32) -> bool {
        let (conn, server) = self.server_of(slot);
        self.server_listed(slot) && self.port.tx.peer_alive(conn, server)
    }
}
