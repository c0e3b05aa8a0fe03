//! A receiver's private state: its connections, one per sender it has
//! found in the service's table, and how it follows the table.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::conn::{ConnHandle, Registration, SubConn};
use crate::core::ring::Tag;
use super::sample::RawSample;
use super::settings::{ReceiveError, TRUNCATED};
use crate::port::lock::process_barrier;
use crate::port::segment::reap_retired;

/// What `Receiver::take` found on one connection.
pub(super) enum Taken {
    /// A sample, and its tag (tagged rings).
    Sample(RawSample, Tag),
    /// Nothing queued.
    Nothing,
    /// The publisher wrote garbage; the connection must go.
    Broken(ReceiveError),
}

pub(super) struct ConnEntry {
    pub(super) conn: ConnHandle,
    /// The publisher left the table: drain what it queued, then drop.
    pub(super) draining: bool,
    /// Addresses of the first and last payload byte of the chunk the
    /// publisher announced for its next message (or of one in our cache),
    /// and of that chunk's return word: prefetched whenever the queue is
    /// polled, the payload for reading, so that when the message comes its
    /// payload and its descriptor arrive together, the return word for
    /// writing, so that dropping the sample does not wait for the
    /// publisher's CPU to give the line up (it reads it in every
    /// take-back).
    pub(super) ahead: [usize; 3],
}

pub(super) struct SubState {
    pub(super) seen_generation: u64,
    pub(super) conns: Vec<ConnEntry>,
    /// Publishers whose segments failed validation.
    pub(super) bad: Vec<u64>,
    pub(super) next: usize,
    /// Publishers connected and departed since the owner last asked.
    pub(super) changes: PublisherChanges,
    /// An error of an update (a publisher left out), for the next receive.
    pub(super) pending: Option<ReceiveError>,
    /// The generation that update scanned, while `pending` holds an error
    /// (`seen_generation` is then a value no table has).
    pub(super) scanned: u64,
}

/// How the publishers of a subscriber changed since it last asked
/// ([`Subscriber::take_publisher_changes`](crate::Subscriber::take_publisher_changes)):
/// publishers it connected to, and publishers that left the service (were
/// dropped, or died and were reclaimed). A restarted publisher shows as one
/// of each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublisherChanges {
    /// Publishers found in the service and connected.
    pub connected: u64,
    /// Publishers that left the service (what they queued stays readable).
    pub departed: u64,
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
    /// After a mapping of this process was replaced by zeros (a file
    /// truncated under it; `os::sigbus`): the error to report, once, if
    /// it was the service's file or one of this receiver's connections
    /// (those are closed). Cold: runs only when the process-wide count of
    /// lost mappings moved.
    #[cold]
    pub(super) fn take_lost(&mut self, reg: &Arc<Registration>) -> Option<ReceiveError> {
        if reg.service.lost() {
            tracing::error!(service = %reg.service.name, "the service's file was truncated while mapped");
            return Some(ReceiveError::CorruptedService(reg.service.name.to_string()));
        }
        let mut err = None;
        let mut i = 0;
        while i < self.conns.len() {
            let c = &self.conns[i].conn;
            if c.rw.lost() || c.pool.lost() {
                let publisher = c.publisher;
                tracing::error!(publisher, "a publisher's segment was truncated while mapped; its connection is closed");
                self.drop_broken(i);
                err.get_or_insert(ReceiveError::CorruptedPublisher {
                    publisher,
                    what: TRUNCATED,
                });
            } else {
                i += 1;
            }
        }
        err
    }

    /// Samples handed out and not yet dropped, over every connection. A
    /// connection stays in the list while any of its samples is held.
    pub(super) fn borrowed(&self) -> usize {
        self.conns.iter().map(|e| e.conn.held()).sum()
    }

    /// Follows the service's table: connects the publishers that came,
    /// marks those that left. A publisher whose segment fails validation
    /// (or may not be trusted) is left out, and the error kept for the next
    /// receive ([`take_pending`](Self::take_pending)), whoever looked at the
    /// table first (a wait's readiness check, a count).
    pub(super) fn update(&mut self, reg: &Arc<Registration>) {
        let svc = &reg.service;
        if svc.generation() == self.seen_generation {
            return;
        }
        svc.reclaim_dead_ports();
        let gen = svc.generation();
        self.seen_generation = gen;
        let mut err = None;
        let peers = reg.settings.peers;
        let n = svc.table_len(peers);
        let mut present = Vec::with_capacity(n);
        for i in 0..n {
            // ORDERING: Acquire; pairs with the Release store in register().
            let pid = svc
                .port_slot(peers, i)
                .port_id
                .load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            // Relaxed: node_id is published by the Acquire load of port_id.
            if reg.settings.skip_own_node
                && svc.port_slot(peers, i).node_id.load(Ordering::Relaxed) == svc.node.id
            {
                continue;
            }
            present.push(pid);
            // Once per publisher: a connection to it, draining or not, is
            // never opened twice (its ring has one reader).
            if self.bad.contains(&pid) || self.conns.iter().any(|e| e.conn.publisher == pid) {
                continue;
            }
            match SubConn::open(reg, i, pid) {
                Ok(Some(c)) => {
                    self.changes.connected += 1;
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
            if !e.draining && !present.contains(&e.conn.publisher) {
                e.draining = true;
                self.changes.departed += 1;
            }
        }
        self.bad.retain(|b| present.contains(b));
        reap_retired(svc);
        if let Some(e) = err {
            self.pending.get_or_insert(e);
        }
        if self.pending.is_some() {
            // Until a receive reports it, every receive comes here.
            self.scanned = gen;
            self.seen_generation = u64::MAX;
        }
    }

    /// The error an update kept for the receive (see [`update`](Self::update)).
    pub(super) fn take_pending(&mut self) -> Option<ReceiveError> {
        let e = self.pending.take();
        if e.is_some() {
            self.seen_generation = self.scanned;
        }
        e
    }

    /// Drops the connection at `i`, which broke: counted as a departure
    /// (unless its publisher had left already), never connected again.
    pub(super) fn drop_broken(&mut self, i: usize) {
        let gone = self.conns.swap_remove(i);
        if !gone.draining {
            self.changes.departed += 1;
        }
        self.bad.push(gone.conn.publisher);
    }
}
