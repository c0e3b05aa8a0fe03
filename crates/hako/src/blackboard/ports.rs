//! The blackboard's two ports as registered in the service: the writer's
//! ([`WriterPort`]: choosing a buffer no reader holds, waking the readers
//! that wait for an entry) and a reader's ([`ReaderPort`]: its pins,
//! interest bits and wake-up FIFO). The faces over them are `writer.rs`
//! and `reader.rs`; an entry handle keeps its port alive.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use super::access::{BlackboardError, Board, Parts};
use crate::core::board::State;
use crate::core::park::{publish_barrier, Kernel};
use crate::domain::nodefile::new_id;
use crate::domain::service::error::io_err;
use crate::domain::service::files::fifo_file;
use crate::domain::service::inner::NewPort;
use crate::domain::service::tables::PortKind;
use crate::os::futex::OsKernel;
use crate::port::pokes::Pokes;
use crate::port::wait::{Adaptive, WaitStrategy};

/// The registered writer.
#[derive(Debug)]
pub(crate) struct WriterPort {
    pub board: Board,
    pub port_id: u64,
    index: usize,
    /// Write ends of readers' FIFOs, opened when first needed.
    pokes: Pokes,
}

impl WriterPort {
    /// Registers the writer; [`BlackboardError::WriterExists`] while
    /// another one lives.
    pub(crate) fn register(s: Parts) -> Result<Self, BlackboardError> {
        let svc = s.svc.clone();
        let port_id = new_id();
        let entry = NewPort {
            kind: PortKind::Publisher,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: 1,
        };
        let Some(index) = svc.register(entry, |_| {}, |_| {})? else {
            return Err(BlackboardError::WriterExists {
                service: svc.name.to_string(),
            });
        };
        let readers = s.settings.qos.max_readers as usize;
        Ok(Self {
            board: Board::new(s),
            port_id,
            index,
            pokes: Pokes::new(readers),
        })
    }

    /// Entry `i`'s current state.
    pub(crate) fn current(&self, i: usize) -> Result<State, BlackboardError> {
        let b = &self.board;
        // ORDERING: Acquire; pairs with the Release publish of a writer before
        // this one (a writer that died): its value is visible.
        b.entry(i)
            .state(Ordering::Acquire)
            .map_err(|_| b.corrupted(i))
    }

    /// A buffer of entry `i` that no reader holds, with the current state.
    pub(crate) fn claim(&self, i: usize) -> Result<(State, u64), BlackboardError> {
        let b = &self.board;
        let svc = &b.svc;
        let current = self.current(i)?;
        let readers = svc.table_len(PortKind::Subscriber);
        let pinned = |buf: u64| {
            (0..readers).any(|j| {
                // ORDERING: Acquire; pairs with the Release store of the port
                // id in register(), which follows the zeroing of the pins.
                svc.port_slot(PortKind::Subscriber, j)
                    .port_id
                    .load(Ordering::Acquire)
                    != 0
                    // ORDERING: Acquire; after the barrier of free_buffer(),
                    // pairs with the reader's pin store and barrier, and with
                    // the Release of its unpin (see core/board.rs).
                    && b.pin(j, i).load(Ordering::Acquire) == buf + 1
            })
        };
        let buf = b
            .entry(i)
            .free_buffer(current.buffer, pinned)
            .ok_or_else(|| b.corrupted(i))?;
        Ok((current, buf))
    }

    /// After entry `i` was published: wakes the readers that wait for it
    /// (their interest bit set) and sleep; others cost a load or two.
    pub(crate) fn wake(&self, i: usize) {
        let b = &self.board;
        let svc = &b.svc;
        // Once for every reader: pairs with the fence and sleeper's barrier
        // a reader makes after it set its interest bit and registered as a
        // sleeper (core/park.rs): either this sees both, or its re-check
        // sees the new version.
        publish_barrier();
        for j in 0..svc.table_len(PortKind::Subscriber) {
            let slot = svc.port_slot(PortKind::Subscriber, j);
            // ORDERING: Acquire; pairs with the Release store in register(),
            // after the reader's area was zeroed.
            let pid = slot.port_id.load(Ordering::Acquire);
            if pid == 0 {
                continue;
            }
            let (word, bit) = b.interest(j, i);
            // Relaxed: ordered by the barrier above.
            if word.load(Ordering::Relaxed) & bit == 0 {
                continue;
            }
            let w = slot.wake.sleepers_after_fence();
            if w.futex {
                OsKernel.futex_wake(&slot.wake.epoch);
            }
            if w.fd {
                self.pokes.poke(svc, j, pid);
            }
        }
    }
}

impl Drop for WriterPort {
    fn drop(&mut self) {
        self.board
            .svc
            .unregister(PortKind::Publisher, self.index, self.port_id);
    }
}

/// A registered reader.
#[derive(Debug)]
pub(crate) struct ReaderPort {
    pub board: Board,
    pub port_id: u64,
    pub index: usize,
    pub fifo: OwnedFd,
    /// Its name in the service's directory.
    fifo_name: String,
    pub strategy: WaitStrategy,
    pub adaptive: Adaptive,
}

impl ReaderPort {
    /// Registers a reader: its pin words and interest bits, zeroed, and its
    /// wake-up FIFO.
    pub(crate) fn register(s: Parts, strategy: WaitStrategy) -> Result<Self, BlackboardError> {
        let svc = s.svc.clone();
        let port_id = new_id();
        let words = s.settings.entries.len() as u64 + s.settings.interest_words();
        let max = s.settings.qos.max_readers;
        let fifo_name = fifo_file(port_id);
        let fifo = svc
            .dir
            .make_fifo(&fifo_name, svc.node.access)
            .map_err(io_err("create FIFO", &svc.dir.join(&fifo_name)))?;
        let entry = NewPort {
            kind: PortKind::Subscriber,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: max as usize,
        };
        let index = svc.register(
            entry,
            |_| {},
            |j| {
                let (map, base) = svc.extra(j);
                for word in map.atomics(base, words) {
                    // Relaxed: published by the Release store of the port id.
                    word.store(0, Ordering::Relaxed);
                }
            },
        );
        let index = match index {
            Ok(Some(i)) => i,
            Ok(None) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(BlackboardError::TooManyReaders {
                    service: svc.name.to_string(),
                    max,
                });
            }
            Err(e) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(e.into());
            }
        };
        Ok(Self {
            board: Board::new(s),
            port_id,
            index,
            fifo,
            fifo_name,
            strategy,
            adaptive: Adaptive::default(),
        })
    }

    /// Whether a watched entry changed since its handle last read it.
    pub(crate) fn watched_changed(&self) -> bool {
        let b = &self.board;
        (0..b.places.len()).any(|i| {
            // Relaxed (both): in-process flags and a count; the read that
            // follows orders itself.
            b.watched[i].load(Ordering::Relaxed)
                && b.entry(i)
                    .state(Ordering::Relaxed)
                    .is_ok_and(|s| s.version != b.seen[i].load(Ordering::Relaxed))
        })
    }

    /// Sets or clears entry `i`'s interest bit (the writer wakes this
    /// reader on its changes while set).
    pub(crate) fn interest(&self, i: usize, on: bool) {
        let (word, bit) = self.board.interest(self.index, i);
        // Relaxed (both): the park protocol's fence orders the bit before a
        // sleep (see WriterPort::wake).
        if on {
            word.fetch_or(bit, Ordering::Relaxed);
        } else {
            word.fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

impl Drop for ReaderPort {
    fn drop(&mut self) {
        self.board
            .svc
            .unregister(PortKind::Subscriber, self.index, self.port_id);
        let _ = self.board.svc.dir.remove_file(&self.fifo_name);
    }
}
