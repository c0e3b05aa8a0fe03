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
//! every byte is written, and summed. Ping-pong only: a blackboard keeps
//! the latest value, it does not queue.

use hako::{
    BlackboardService, Config, Node, NodeBuilder, RawReaderEntry, RawWriterEntry, Reader,
    ServiceName, TypeDetails, Writer,
};

use crate::error::Result;
use crate::transport::{poll, tag, Follower, Leader, PayloadMode, RowSpec, Transport, Waiting};

/// Why a board has no one-way rows.
pub const ONE_WAY: &str = "a blackboard keeps the latest value: ping-pong only";

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

    fn ping_pong_only(&self) -> bool {
        true
    }

    fn skip_reason(&self, _size: usize, pattern: crate::transport::Pattern) -> Option<String> {
        pattern.one_way().then(|| ONE_WAY.to_owned())
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
}

impl Follower for BoardSide {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.wait(t, "ping")?;
        self.write(t.wrapping_add(1))
    }
}
