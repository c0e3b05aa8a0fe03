//! A reference zero-copy transport: a minimal descriptor ring by hand.
//!
//! A pool of chunks, a submission ring of lap-stamped descriptors that name
//! a chunk (and announce the next one), and a completion ring that returns
//! chunks — single-owner and minimal: no locks, no reference counts, no
//! atomic read-modify-write at all, no port tables, no validation beyond
//! the chunk index and length. It shows what moving a message by
//! descriptor costs on this machine (two cache-line transfers per message,
//! the descriptor and the chunk it names, which the receiver fetches at
//! once because each descriptor announces the next message's chunk), so
//! hako's figure can be read as "mechanism + library".
//!
//! It is the bare mechanism, not hako's layout: hako's two-word descriptor
//! also carries the length and names a return word per connection through
//! which the chunk comes back (no completion ring), and its reader's head
//! lives in shared memory for drop-oldest; here the length is in the
//! chunk's header and a completion ring returns chunks.
//!
//! One file per direction:
//!
//! ```text
//!  0      submission slots  [SLOTS × u64]   producer writes, consumer polls
//!  128    completion slots  [SLOTS × u64]   consumer writes, producer drains
//!  4096   chunk 0 | chunk 1 | … (SLOTS chunks of chunk_size bytes)
//!  chunk: +0 len (u64) | +8 payload (size bytes) | padding to 64
//!
//!  slot value: (lap stamp << 32) | (next chunk + 1) << 16 | chunk index;
//!  stamp of position p = p / SLOTS + 1; next chunk + 1 = 0: none announced
//! ```
//!
//! The sender sets aside the chunk of its next message and announces it in
//! each descriptor (hako announces its guess of the chunk it loans next,
//! which in a lockstep exchange is right every time), and the receiver
//! prefetches that chunk's first and last payload line while it polls the
//! slot (as hako's ring does).
//!
//! The pool has as many chunks as each ring has slots, so neither ring can
//! overflow and no shared head index is needed.
//!
//! One way (`throughput`), the leader streams on "ping" alone: a sender
//! that finds no free chunk polls the completion ring until the receiver
//! returns one (the flow control of a raw descriptor ring). One receiver
//! only: fan-out rows are skipped.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::sys::shm::SharedRegion;
use crate::transport::{
    poll, prefetch, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};

/// Slots per ring, and chunks in the pool.
const SLOTS: u64 = 4;
const SUB_OFFSET: usize = 0;
const COMP_OFFSET: usize = 128;
const POOL_OFFSET: usize = 4096;
const HEADER: usize = 8;

/// The reference transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reference;

fn chunk_size(size: usize) -> usize {
    (HEADER + size).div_ceil(64) * 64
}

fn region_len(size: usize) -> usize {
    POOL_OFFSET + SLOTS as usize * chunk_size(size)
}

fn encode(pos: u64, index: u64, next: Option<u64>) -> u64 {
    ((pos / SLOTS + 1) << 32) | (next.map_or(0, |n| n + 1) << 16) | index
}

fn paths(row: &RowSpec) -> [PathBuf; 2] {
    [
        row.root.join(format!("ref_{}_ping", row.row_id)),
        row.root.join(format!("ref_{}_pong", row.row_id)),
    ]
}

/// Sending end of one direction.
#[derive(Debug)]
struct Tx {
    region: SharedRegion,
    size: usize,
    /// Touch: the first and last payload byte; full: every byte.
    mode: PayloadMode,
    chunk: usize,
    free: Vec<u64>,
    /// The chunk of the next message, announced with this one.
    next: Option<u64>,
    tail: u64,
    comp_head: u64,
}

/// Receiving end of one direction.
#[derive(Debug)]
struct Rx {
    region: SharedRegion,
    size: usize,
    mode: PayloadMode,
    chunk: usize,
    head: u64,
    comp_tail: u64,
    /// Offsets of the first and last payload byte of the announced chunk.
    ahead: [usize; 2],
}

impl Tx {
    fn new(region: SharedRegion, size: usize, mode: PayloadMode) -> Self {
        Self {
            region,
            size,
            mode,
            chunk: chunk_size(size),
            free: (0..SLOTS - 1).rev().collect(),
            next: Some(SLOTS - 1),
            tail: 0,
            comp_head: 0,
        }
    }

    /// Takes back every chunk the receiver returned.
    fn drain(&mut self) -> Result<()> {
        loop {
            let pos = self.comp_head;
            let slot = self
                .region
                .atomic_u64(COMP_OFFSET + 8 * (pos % SLOTS) as usize);
            // ORDERING: Acquire; pairs with the Release store in Rx::recv: the
            // receiver's reads of the chunk happened before we reuse it.
            let v = slot.load(Ordering::Acquire);
            if v >> 32 != pos / SLOTS + 1 {
                return Ok(());
            }
            let idx = v & 0xffff_ffff;
            if idx >= SLOTS {
                return Err(format!("completion ring returned chunk {idx}").into());
            }
            self.free.push(idx);
            self.comp_head += 1;
        }
    }

    #[inline]
    fn send(&mut self, t: u8) -> Result<()> {
        let idx = match self.next.take() {
            Some(i) => i,
            // Every chunk is with the receiver (one way, it is behind):
            // wait for one to come back.
            None => poll("a returned reference chunk", || {
                self.drain()?;
                Ok(self.free.pop())
            })?,
        };
        self.next = self.free.pop();
        let base = POOL_OFFSET + idx as usize * self.chunk;
        if self.mode == PayloadMode::Full {
            // SAFETY: the chunk is ours until its descriptor is published
            // below (the receiver returned it, or never had it).
            self.mode.write(
                unsafe { self.region.bytes_mut(base + HEADER, self.size) },
                t,
            );
        } else {
            // Relaxed (both): published by the Release store of the slot.
            self.region
                .atomic_u8(base + HEADER)
                .store(t, Ordering::Relaxed);
            self.region
                .atomic_u8(base + HEADER + self.size - 1)
                .store(t, Ordering::Relaxed);
        }
        // Relaxed: published by the Release store of the slot.
        self.region
            .atomic_u64(base)
            .store(self.size as u64, Ordering::Relaxed);
        let pos = self.tail;
        // ORDERING: Release; pairs with the Acquire load in Rx::recv: publishes
        // the chunk written above.
        self.region
            .atomic_u64(SUB_OFFSET + 8 * (pos % SLOTS) as usize)
            .store(encode(pos, idx, self.next), Ordering::Release);
        self.tail += 1;
        // After the store, off the critical path: so the next send finds a
        // chunk to announce.
        if self.free.is_empty() {
            self.drain()?;
        }
        Ok(())
    }
}

impl Rx {
    fn new(region: SharedRegion, size: usize, mode: PayloadMode) -> Self {
        Self {
            region,
            size,
            mode,
            chunk: chunk_size(size),
            head: 0,
            comp_tail: 0,
            ahead: [POOL_OFFSET; 2],
        }
    }

    #[inline]
    fn recv(&mut self, t: u8) -> Result<()> {
        let pos = self.head;
        let slot = self
            .region
            .atomic_u64(SUB_OFFSET + 8 * (pos % SLOTS) as usize);
        let ahead = self.ahead.map(|off| self.region.atomic_u8(off).as_ptr());
        let v = poll("a reference message", || {
            // The announced chunk's lines travel with the slot's.
            for p in ahead {
                prefetch(p.cast_const());
            }
            // ORDERING: Acquire; pairs with the Release store in Tx::send.
            let v = slot.load(Ordering::Acquire);
            Ok((v >> 32 == pos / SLOTS + 1).then_some(v))
        })?;
        let (idx, next) = (v & 0xffff, (v >> 16) & 0xffff);
        if idx >= SLOTS || next > SLOTS {
            return Err(format!("submission ring named chunk {idx}, next {next}").into());
        }
        self.ahead = match next.checked_sub(1) {
            Some(n) => {
                let first = POOL_OFFSET + n as usize * self.chunk + HEADER;
                [first, first + self.size - 1]
            }
            None => [POOL_OFFSET + idx as usize * self.chunk; 2],
        };
        let base = POOL_OFFSET + idx as usize * self.chunk;
        if self.mode == PayloadMode::Full {
            // Relaxed: ordered after the writer's stores by the Acquire
            // load of the slot.
            let len = self.region.atomic_u64(base).load(Ordering::Relaxed);
            if len != self.size as u64 {
                return Err(format!("reference: expected {} bytes, got {len}", self.size).into());
            }
            // SAFETY: the chunk is ours until we return it below (the
            // sender wrote it before publishing its descriptor).
            let bytes = unsafe { self.region.bytes_mut(base + HEADER, self.size) };
            self.mode
                .check(bytes, self.size, t, "a reference message")?;
            return self.give_back(idx);
        }
        // Relaxed (all three): ordered after the writer's stores by the
        // Acquire load of the slot.
        let len = self.region.atomic_u64(base).load(Ordering::Relaxed);
        let first = self.region.atomic_u8(base + HEADER).load(Ordering::Relaxed);
        let last = self
            .region
            .atomic_u8(base + HEADER + self.size - 1)
            .load(Ordering::Relaxed);
        if len != self.size as u64 || first != t || last != t {
            return Err(format!(
                "reference: expected {} bytes tagged {t}, got {len} tagged {first} / {last}",
                self.size
            )
            .into());
        }
        self.give_back(idx)
    }

    /// Returns chunk `idx` to the sender and moves on to the next slot.
    #[inline]
    fn give_back(&mut self, idx: u64) -> Result<()> {
        let cpos = self.comp_tail;
        // ORDERING: Release; pairs with the Acquire load in Tx::drain: our reads
        // of the chunk happen before the sender reuses it.
        self.region
            .atomic_u64(COMP_OFFSET + 8 * (cpos % SLOTS) as usize)
            .store(encode(cpos, idx, None), Ordering::Release);
        self.comp_tail += 1;
        self.head += 1;
        Ok(())
    }
}

/// The leader's side: sends on "ping", receives on "pong"; removes the files.
#[derive(Debug)]
pub struct ReferenceLeader {
    tx: Tx,
    rx: Rx,
    paths: [PathBuf; 2],
}

/// The follower's side: receives on "ping", sends on "pong".
#[derive(Debug)]
pub struct ReferenceFollower {
    rx: Rx,
    tx: Tx,
}

impl Transport for Reference {
    type Leader = ReferenceLeader;
    type Follower = ReferenceFollower;

    fn name(&self) -> &'static str {
        "reference"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        let _ = size;
        (pattern == Pattern::FanOut).then(|| "one receiver only (a raw ring)".to_owned())
    }

    fn leader(&self, row: &RowSpec) -> Result<ReferenceLeader> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let paths = paths(row);
        let len = region_len(row.size);
        let create = |p: &PathBuf| {
            SharedRegion::create(p, len).map_err(|e| format!("cannot create {}: {e}", p.display()))
        };
        let (ping, pong) = (create(&paths[0])?, create(&paths[1])?);
        Ok(ReferenceLeader {
            tx: Tx::new(ping, row.size, row.payload),
            rx: Rx::new(pong, row.size, row.payload),
            paths,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<ReferenceFollower> {
        let paths = paths(row);
        let len = region_len(row.size);
        let open = |p: &PathBuf| {
            SharedRegion::open(p, len).map_err(|e| format!("cannot open {}: {e}", p.display()))
        };
        let (ping, pong) = (open(&paths[0])?, open(&paths[1])?);
        Ok(ReferenceFollower {
            rx: Rx::new(ping, row.size, row.payload),
            tx: Tx::new(pong, row.size, row.payload),
        })
    }
}

impl Leader for ReferenceLeader {
    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.tx.send(t)?;
        sent();
        self.rx.recv(t.wrapping_add(1))
    }

    #[inline]
    fn send(&mut self, seq: u64) -> Result<()> {
        self.tx.send(tag(seq))
    }
}

impl Follower for ReferenceFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.rx.recv(t)?;
        self.tx.send(t.wrapping_add(1))
    }

    #[inline]
    fn receive(&mut self, seq: u64) -> Result<()> {
        self.rx.recv(tag(seq))
    }
}

impl Drop for ReferenceLeader {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}
