//! `hako-board`: update-to-visible through two blackboards. The leader
//! writes entry "v" of the board `board/<row>/ping`, the follower, which
//! busy-polls the entry's version, sees the new value, checks it in place
//! (pinned, no copy) and answers on `board/<row>/pong`, which the leader
//! reads the same way. A round trip is two updates made visible, so half
//! of it is the update-to-visible latency the blackboard goals speak of.
//!
//! The value is `[u8; size]` (described at run time; alignment 8), one
//! reader per board (so `max_readers + 2 = 3` buffers). Values of one line
//! (64 B) are read by copy (the reader writes nothing), larger ones in
//! place (pinned, no copy). In touch mode the writer writes the first and last
//! byte of the loaned buffer and the reader checks them; in full mode
//! every byte is written, and summed.
//!
//! Throughput rows measure reads instead of messages (a board queues
//! nothing): the leader updates "v" without pause while the follower reads
//! it, each read checked whole (first and last byte alike in touch mode,
//! every byte in full mode); the follower says on "pong" when its timed
//! reads begin and when they end, and its reads per second are the row's
//! rate. Fan-out and request/response rows are skipped.

use hako::{
    BlackboardService, Config, Node, NodeBuilder, RawReaderEntry, RawWriterEntry, Reader,
    ServiceName, TypeDetails, Writer,
};

use crate::error::Result;
use crate::sys::clock::monotonic_ns;
use crate::sys::cpu::CpuTime;
use crate::transport::{
    poll, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting, PEER_TIMEOUT,
};

/// Why a board has no fan-out or request/response rows.
pub const ONE_READER: &str =
    "a blackboard row measures one reader: its round trip, or its reads per second";

/// The reads-per-second row of a board, as both boards' transports run it
/// (see the module documentation): the writer updates without pause
/// (`write(k)`) while the reader's "pong" version (`version()`) is `base`
/// or `base + 1` (its timed reads began), and stops at `base + 2` (they
/// ended). The start it returns is the last time it saw `base`: at most
/// one update before the reads began, so a row's time is never short.
pub(crate) fn stream_until_read(
    mut write: impl FnMut(u64) -> Result<()>,
    mut version: impl FnMut() -> Result<u64>,
) -> Result<(u64, CpuTime)> {
    let before = CpuTime::now()?;
    let deadline = std::time::Instant::now() + PEER_TIMEOUT * 6;
    let base = version()?;
    let mut quiet_at = monotonic_ns();
    let mut k = 0u64;
    loop {
        write(k)?;
        k += 1;
        let v = version()?;
        if v == base {
            quiet_at = monotonic_ns();
        } else if v.wrapping_sub(base) >= 2 {
            return Ok((quiet_at, CpuTime::now()?.since(before)));
        }
        if k % 4096 == 0 && std::time::Instant::now() > deadline {
            return Err("the reader never finished its reads".into());
        }
    }
}

/// hako's blackboard.
#[derive(Debug, Clone, Copy, Default)]
pub struct HakoBoard;

/// One side: the board it writes and the board it reads.
pub struct BoardSide {
    // Field order is drop order: entries before ports before services
    // before the node.
    out: RawWriterEntry,
    input: RawReaderEntry,
    _writer: Writer,
    _reader: Reader,
    _boards: [BlackboardService; 2],
    _node: Node,
    /// The version of the input last read.
    seen: u64,
    payload: PayloadMode,
    /// Where a value read by copy goes (values up to [`COPY_UP_TO`]).
    copy: Vec<u8>,
}

/// Values up to this size are read by copy (a sequence lock: the reader
/// writes nothing), larger ones in place (pinned). Measured on the AMD
/// EPYC VM (`hako bench --transports hako,hako-board,iceoryx2-board
/// --sizes 64,4K --quick`, low floor state): a 4 KiB value copied, 0.37 µs
/// a round trip in touch mode; read in place, 0.29.
pub const COPY_UP_TO: usize = 64;

fn value_type(size: usize) -> TypeDetails {
    TypeDetails {
        type_name: format!("[u8; {size}]"),
        size: size as u64,
        align: if size % 8 == 0 { 8 } else { 1 },
        slice: false,
    }
}

fn board(node: &Node, row: &RowSpec, what: &str, leader: bool) -> Result<BlackboardService> {
    let name = ServiceName::new(&format!("board/{}/{what}", row.row_id))?;
    let b = node
        .service_builder(&name)
        .blackboard()
        .entry_described("v", value_type(row.size), &vec![0; row.size])
        .max_readers(1)
        .max_nodes(2);
    Ok(if leader { b.create()? } else { b.open()? })
}

impl BoardSide {
    fn new(leader: bool, row: &RowSpec) -> Result<Self> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let config = Config::default().with_root(&row.root);
        let node = NodeBuilder::new()
            .name(if leader {
                "board-leader"
            } else {
                "board-follower"
            })?
            .config(&config)
            .create()?;
        let ping = board(&node, row, "ping", leader)?;
        let pong = board(&node, row, "pong", leader)?;
        let (out_board, in_board) = if leader {
            (&ping, &pong)
        } else {
            (&pong, &ping)
        };
        let writer = out_board.writer_builder().create()?;
        let reader = in_board.reader_builder().create()?;
        let out = writer.entry_described("v", value_type(row.size))?;
        let input = reader.entry_described("v", value_type(row.size))?;
        Ok(Self {
            out,
            input,
            _writer: writer,
            _reader: reader,
            _boards: [ping, pong],
            _node: node,
            seen: 0,
            payload: row.payload,
            copy: vec![0; if row.size <= COPY_UP_TO { row.size } else { 0 }],
        })
    }

    /// Publishes a value tagged `t`.
    #[inline]
    fn write(&mut self, t: u8) -> Result<()> {
        let mut loan = self.out.loan()?;
        self.payload.write(loan.bytes_mut(), t);
        loan.publish();
        Ok(())
    }

    /// Reads the latest value once (by copy up to [`COPY_UP_TO`], else in
    /// place) and checks it is whole, whatever its tag.
    #[inline]
    fn read_whole(&mut self) -> Result<()> {
        let size = self.input.size();
        if size <= COPY_UP_TO {
            self.input.get_bytes(&mut self.copy)?;
            return self.payload.check(&self.copy, size, self.copy[0], "a read");
        }
        let held = self.input.read_bytes()?;
        self.payload.check(&held, size, held[0], "a read")
    }

    /// Waits for the next version of the input and checks it carries `t`.
    #[inline]
    fn wait(&mut self, t: u8, what: &str) -> Result<()> {
        let seen = self.seen;
        let input = &self.input;
        let version = poll(what, || Ok(Some(input.version()?).filter(|&v| v != seen)))?;
        self.seen = version;
        let size = self.input.size();
        if size <= COPY_UP_TO {
            self.input.get_bytes(&mut self.copy)?;
            return self.payload.check(&self.copy, size, t, what);
        }
        let held = self.input.read_bytes()?;
        self.payload.check(&held, size, t, what)
    }
}

impl Transport for HakoBoard {
    type Leader = BoardSide;
    type Follower = BoardSide;

    fn name(&self) -> &'static str {
        "hako-board"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        matches!(pattern, Pattern::FanOut | Pattern::RequestResponse).then(|| ONE_READER.to_owned())
    }

    fn leader(&self, row: &RowSpec) -> Result<BoardSide> {
        BoardSide::new(true, row)
    }

    fn follower(&self, row: &RowSpec) -> Result<BoardSide> {
        BoardSide::new(false, row)
    }
}

impl Leader for BoardSide {
    fn connect(&mut self) -> Result<()> {
        // The follower's reader of "ping" and writer of "pong".
        let [ping, pong] = &self._boards;
        poll("the follower's ports", || {
            Ok((ping.reader_count() == 1 && pong.has_writer()).then_some(()))
        })
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.write(t)?;
        sent();
        self.wait(t.wrapping_add(1), "pong")
    }

    /// The reads row: updates until the reader has done its reads.
    fn send_timed(&mut self, _warmup: u64, _messages: u64) -> Result<(u64, CpuTime)> {
        let (out, input, payload) = (&mut self.out, &self.input, self.payload);
        let r = stream_until_read(
            |k| {
                let mut loan = out.loan()?;
                payload.write(loan.bytes_mut(), tag(k));
                loan.publish();
                Ok(())
            },
            || Ok(input.version()?),
        );
        self.seen = self.input.version()?;
        r
    }
}

impl Follower for BoardSide {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.wait(t, "ping")?;
        self.write(t.wrapping_add(1))
    }

    /// The reads row: `warmup` untimed reads, then `messages` timed ones
    /// between two updates of "pong" (begun, done).
    fn serve_timed(&mut self, warmup: u64, messages: u64, one_way: bool) -> Result<(u64, CpuTime)> {
        if !one_way {
            return crate::transport::serve_timed(self, warmup, messages, one_way);
        }
        // Not before the writer streams (it reads "pong" first).
        let (seen, input) = (self.seen, &self.input);
        poll("the writer's first update", || {
            Ok(Some(input.version()?).filter(|&v| v != seen))
        })?;
        for _ in 0..warmup {
            self.read_whole()?;
        }
        self.write(1)?;
        let before = CpuTime::now()?;
        for _ in 0..messages {
            self.read_whole()?;
        }
        let last = monotonic_ns();
        let cpu = CpuTime::now()?.since(before);
        self.write(2)?;
        Ok((last, cpu))
    }
}
