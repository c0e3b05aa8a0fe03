//! A receiving port: its registration, its connections behind a
//! single-threaded cell, and its waiting. The typed faces (a subscriber,
//! and the receivers of other patterns) own one; receiving itself is in
//! `receive.rs`.

use std::cell::{RefCell, RefMut};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::conn::Registration;
use super::sample::RawSample;
use super::settings::{ReceiveError, ReceiverSettings};
use super::state::{PublisherChanges, SubState};
use crate::core::layout::{PORT_LOSSY, PORT_SKIP_OWN_NODE};
use crate::domain::nodefile::{new_id, node_alive_in};
use crate::domain::service::files::fifo_file;
use crate::domain::service::error::{io_err, ServiceError};
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::domain::service::tables::PortKind;
use crate::os::fifo;
use crate::port::wait::{Adaptive, Terminated, Waiter};

/// A receiving port. `Send` but not `Sync`: one thread at a time uses it,
/// so receiving needs no lock.
pub(crate) struct Receiver {
    pub(super) reg: Arc<Registration>,
    /// The service's generation word, in its mapping (kept alive by `reg`):
    /// loaded by every receive, so one load away.
    pub(super) generation: &'static AtomicU64,
    pub(super) max_borrowed: usize,
    /// `os::sigbus::lost_count()` when the mappings were last looked at.
    pub(super) seen_lost: std::cell::Cell<u64>,
    adaptive: Adaptive,
    pub(super) state: RefCell<SubState>,
}

/// Why a receiving port could not be made.
#[derive(Debug)]
pub(crate) enum ReceiverCreateError {
    /// The service's second table is full.
    TooMany,
    /// The service's files could not be used.
    Service(ServiceError),
}

impl Receiver {
    /// Makes a receiving port of `service`: its wake-up FIFO and its entry
    /// in the service's second table; connects the senders there now.
    pub(crate) fn create(
        service: Arc<ServiceInner>,
        settings: ReceiverSettings,
    ) -> Result<Self, ReceiverCreateError> {
        // Registers membarrier now (it can take a while in a process with
        // many threads), not in the middle of a receive.
        crate::port::lock::prepare();
        let svc = service;
        let port_id = match settings.shared {
            Some((id, _)) => id,
            None => new_id(),
        };
        let fifo_name = fifo_file(port_id);
        let fifo = svc
            .dir
            .make_fifo(&fifo_name, svc.node.access)
            .map_err(|e| {
                ReceiverCreateError::Service(io_err("create FIFO", &svc.dir.join(&fifo_name))(e))
            })?;
        let index = match settings.shared {
            Some((_, index)) => index,
            None => {
                let entry = NewPort {
                    kind: settings.own,
                    port_id,
                    max_len: 0,
                    chunk_count: 0,
                    limit: settings.max_receivers as usize,
                };
                let flags = if settings.skip_own_node { PORT_SKIP_OWN_NODE } else { 0 }
                    | if settings.lossy { PORT_LOSSY } else { 0 };
                let mark = |i: usize| {
                    if flags != 0 {
                        // Relaxed: published by the Release store of port_id.
                        svc.port_slot(settings.own, i)
                            .flags
                            .store(flags, Ordering::Relaxed);
                    }
                };
                match svc.register(entry, |_| {}, mark) {
                    Ok(Some(i)) => i,
                    other => {
                        let _ = svc.dir.remove_file(&fifo_name);
                        return Err(match other {
                            Err(e) => ReceiverCreateError::Service(e),
                            _ => ReceiverCreateError::TooMany,
                        });
                    }
                }
            }
        };
        // The count of samples received, for inspectors: in the service's
        // extra area for entries of the second table, else in memory of
        // our own (an entry of the first table has no extra area).
        let mut own_total = None;
        let received_total: &'static AtomicU64 = match settings.own {
            PortKind::Subscriber => {
                let (extra, off) = svc.extra(index);
                // SAFETY: the service's mapping outlives the Registration,
                // which holds the service.
                unsafe { extra.atomic_detached(off) }
            }
            PortKind::Publisher => {
                let leaked: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
                own_total = Some(std::ptr::NonNull::from(leaked));
                leaked
            }
        };
        // Relaxed: a counter for inspectors; ours starts from zero.
        received_total.store(0, Ordering::Relaxed);
        let reg = Arc::new(Registration {
            service: svc,
            port_id,
            index,
            fifo,
            fifo_name,
            received_total,
            settings,
            own_total,
        });
        // SAFETY: the generation word lives in the service's mapping, which
        // the registration keeps alive, and the receiver holds that.
        let generation = unsafe { &*std::ptr::from_ref(reg.service.generation_word()) };
        let rx = Self {
            reg,
            generation,
            seen_lost: std::cell::Cell::new(crate::os::sigbus::lost_count()),
            max_borrowed: settings.max_held,
            adaptive: Adaptive::default(),
            state: RefCell::new(SubState {
                seen_generation: u64::MAX,
                conns: Vec::new(),
                bad: Vec::new(),
                next: 0,
                changes: PublisherChanges::default(),
                pending: None,
                scanned: 0,
            }),
        };
        rx.lock().update(&rx.reg);
        Ok(rx)
    }

    /// Follows the service's table now: maps the segments of senders that
    /// came (one load when nothing changed).
    #[inline]
    pub(crate) fn update(&self) {
        let mut st = self.lock();
        // ORDERING: Acquire; as in receive().
        if self.generation.load(Ordering::Acquire) != st.seen_generation {
            st.update(&self.reg);
        }
    }

    /// The service's name.
    pub(crate) fn service_name(&self) -> &crate::domain::name::ServiceName {
        &self.reg.service.name
    }

    #[inline(always)]
    pub(super) fn lock(&self) -> RefMut<'_, SubState> {
        // No method of the subscriber calls another while holding the state,
        // and the subscriber is not Sync, so this never finds it borrowed.
        self.state.borrow_mut()
    }

    /// The subscriber's unique port id.
    pub(crate) fn id(&self) -> u64 {
        self.reg.port_id
    }

    /// Waits up to `timeout` for a sample; `Ok(None)` on timeout. A zero
    /// timeout is the same as [`receive`](Self::receive).
    pub(crate) fn receive_timeout<S>(
        &self,
        timeout: Duration,
        wrap: fn(RawSample) -> S,
    ) -> Result<Option<S>, ReceiveError> {
        self.wait(Some(Instant::now() + timeout), wrap)
    }

    /// Waits until a sample arrives; see [`publishers_gone`](Self::publishers_gone)
    /// for when it gives up.
    pub(crate) fn blocking_receive<S>(&self, wrap: fn(RawSample) -> S) -> Result<S, ReceiveError> {
        loop {
            if let Some(s) = self.wait(None, wrap)? {
                return Ok(s);
            }
        }
    }

    fn wait<S>(
        &self,
        deadline: Option<Instant>,
        wrap: fn(RawSample) -> S,
    ) -> Result<Option<S>, ReceiveError> {
        // A cheap look at the table (no system call); liveness is checked
        // only when a sleep times out.
        let mut saw_publisher = self.publishers_registered();
        self.wait_for(
            deadline,
            || self.receive(wrap),
            || self.ready(),
            || self.publishers_gone(&mut saw_publisher),
        )
    }

    /// The check of a wait that slept a while (a system call per
    /// publisher: its node's lock). Once every publisher seen during the
    /// wait (`saw`, which this keeps) has left or died and nothing is
    /// queued: a receiver built to end then fails with
    /// [`ReceiveError::PublishersGone`]; the others reclaim the dead
    /// publishers' entries (so that their departure is counted and their
    /// slots freed for a restart) and wait on.
    pub(crate) fn publishers_gone(&self, saw: &mut bool) -> Result<(), ReceiveError> {
        if self.publishers_alive() {
            *saw = true;
            return Ok(());
        }
        if !*saw || self.ready() {
            return Ok(());
        }
        if self.reg.settings.end_when_gone {
            return Err(ReceiveError::PublishersGone(
                self.reg.service.name.to_string(),
            ));
        }
        // Once per departure: a new publisher sets it again.
        *saw = false;
        self.reg.service.reclaim_dead_ports();
        self.update();
        Ok(())
    }

    /// How the senders changed since the last call (connections opened,
    /// senders departed), after following the table.
    pub(crate) fn take_changes(&self) -> PublisherChanges {
        let mut st = self.lock();
        st.update(&self.reg);
        std::mem::take(&mut st.changes)
    }

    /// Waits as the port's strategy says (spin, then park on its wake
    /// block) until `poll` yields, the deadline passes (`Ok(None)`) or
    /// `abort` fails; `ready` tells, without taking anything, whether
    /// `poll` would yield. For patterns that take more than one sample per
    /// answer (a client routing responses to its pending requests).
    pub(crate) fn wait_for<R, E: From<Terminated>>(
        &self,
        deadline: Option<Instant>,
        poll: impl FnMut() -> Result<Option<R>, E>,
        ready: impl Fn() -> bool,
        abort: impl FnMut() -> Result<(), E>,
    ) -> Result<Option<R>, E> {
        let waiter = Waiter {
            signals: self.reg.service.node.signals,
            strategy: self.reg.settings.strategy,
            adaptive: &self.adaptive,
            block: self
                .reg
                .service
                .wake_block(self.reg.settings.own, self.reg.index),
        };
        waiter.wait(deadline, poll, ready, abort)
    }

    /// The port's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn spin_policy(&self) -> (crate::port::wait::WaitStrategy, &Adaptive) {
        (self.reg.settings.strategy, &self.adaptive)
    }

    /// Whether a receive would find something (without taking it).
    fn ready(&self) -> bool {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .any(|e| e.conn.connected() && e.conn.submission().has_item())
    }

    /// Whether a publisher is in the table (a cheap look, no system call).
    pub(crate) fn publishers_registered(&self) -> bool {
        let svc = &self.reg.service;
        (0..svc.table_len(self.reg.settings.peers)).any(|i| {
            let slot = svc.port_slot(self.reg.settings.peers, i);
            // Relaxed (both): a hint; publishers_alive() does the real check.
            slot.port_id.load(Ordering::Relaxed) != 0 && slot.flags.load(Ordering::Relaxed) == 0
        })
    }

    pub(crate) fn publishers_alive(&self) -> bool {
        let svc = &self.reg.service;
        (0..svc.table_len(self.reg.settings.peers)).any(|i| {
            let slot = svc.port_slot(self.reg.settings.peers, i);
            // ORDERING: Acquire; pairs with the Release store in register().
            slot.port_id.load(Ordering::Acquire) != 0
                // Relaxed (both): published with the port id.
                && slot.flags.load(Ordering::Relaxed) == 0
                && node_alive_in(&svc.node.root, slot.node_id.load(Ordering::Relaxed))
        })
    }

    /// Registers interest before a waitset sleeps; true if samples wait.
    pub(crate) fn arm(&self) -> bool {
        self.reg
            .service
            .wake_block(self.reg.settings.own, self.reg.index)
            .register_fd(&crate::os::futex::OsKernel, || self.ready())
    }

    /// Withdraws the interest taken by [`arm`](Self::arm); empties the FIFO.
    pub(crate) fn disarm(&self) {
        self.reg
            .service
            .wake_block(self.reg.settings.own, self.reg.index)
            .unregister_fd();
        fifo::drain(&self.reg.fifo);
    }

    /// Whether a sample is waiting (a hint: another thread may take it).
    pub(crate) fn has_samples(&self) -> bool {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .any(|e| e.conn.connected() && e.conn.submission().has_item())
    }

    /// Withdraws a message the sender `sender` may still wait to queue
    /// for us (see `Withdrawal` in the sender): writes `value` to our
    /// withdrawal word `key` in its segment. Nothing if we are not
    /// connected to it or its blocks have no such word.
    pub(crate) fn withdraw(&self, sender: u64, key: u32, value: u64) {
        let st = self.lock();
        if let Some(e) = st.conns.iter().find(|e| e.conn.publisher == sender) {
            if let Some(word) = e.conn.withdrawn.get(key as usize) {
                // Relaxed: a hint the sender polls while it waits for
                // room; no data is published with it.
                word.store(value, Ordering::Relaxed);
            }
        }
    }

    /// Number of publishers this subscriber is connected to.
    pub(crate) fn publisher_count(&self) -> usize {
        let mut st = self.lock();
        st.update(&self.reg);
        st.conns
            .iter()
            .filter(|e| !e.draining && e.conn.connected())
            .count()
    }
}

impl AsFd for Receiver {
    /// The wake-up FIFO, readable after a send while a waitset waits on it.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.reg.fifo.as_fd()
    }
}
