//! `iceoryx2-board`: iceoryx2 0.10's blackboard, measured as `hako-board`
//! is (crate::transports::board): the leader writes the value of key 0 of
//! the board `hako-bench/<row>/ping-board`, the follower busy-polls until
//! the value it holds is no longer up to date (`is_up_to_date`, which reads
//! a counter, not the value), takes the new one and checks it, and answers
//! on `.../pong-board`. Values are `[u8; N]`, a type fixed at compile time,
//! so the sizes are those of the suite's defaults up to 1 MiB (64 B, 1 KiB,
//! 4 KiB, 64 KiB, 1 MiB); others are skipped. Writing goes in place
//! (`loan_uninit`); reading returns a copy of the whole value, as
//! iceoryx2's typed reader does, so the row includes that copy. Throughput
//! rows measure one reader's reads per second while the writer updates,
//! as `hako-board`'s do (its reader's signals are the first byte of
//! "pong": 1 when its timed reads begin, 2 when they end).

use iceoryx2::port::reader::{BlackboardValue, EntryHandle};
use iceoryx2::port::writer::EntryHandleMut;
use iceoryx2::prelude::*;

use super::iceoryx2::{err, node, service_name};
use crate::error::Result;
use crate::sys::clock::monotonic_ns;
use crate::sys::cpu::CpuTime;
use crate::transport::{
    poll, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};
use crate::transports::board::{stream_until_read, ONE_READER};

/// The sizes a board value may have here.
const SIZES: [usize; 5] = [64, 1 << 10, 4 << 10, 64 << 10, 1 << 20];

/// iceoryx2's blackboard.
#[derive(Debug, Clone, Copy, Default)]
pub struct Iceoryx2Board;

/// A side's work, whatever its value's size.
trait BoardPorts {
    /// Publishes a value tagged `t`.
    fn write(&mut self, t: u8) -> Result<()>;
    /// Waits for a new value and checks it carries `t`.
    fn wait(&mut self, t: u8, what: &str) -> Result<()>;
    /// Whether the other side's ports are there (the leader's view).
    fn linked(&self) -> bool;
    /// Reads the latest value once and checks it is whole.
    fn read_whole(&mut self) -> Result<()>;
    /// The first byte of the latest input value (the reader's signal).
    fn signal(&mut self) -> Result<u64>;
    /// Waits until the input changes (the writer's first update).
    fn first_update(&mut self) -> Result<()>;
}

type Svc = iceoryx2::service::port_factory::blackboard::PortFactory<ipc::Service, u64>;

/// The ports of one side for values of `N` bytes.
struct Ports<const N: usize> {
    // Field order is drop order: entries and ports before services before
    // the node.
    out: Option<EntryHandleMut<ipc::Service, u64, [u8; N]>>,
    input: EntryHandle<ipc::Service, u64, [u8; N]>,
    last: Box<BlackboardValue<[u8; N]>>,
    _writer: iceoryx2::port::writer::Writer<ipc::Service, u64>,
    _reader: iceoryx2::port::reader::Reader<ipc::Service, u64>,
    boards: [Svc; 2],
    _node: Node<ipc::Service>,
    payload: PayloadMode,
}

fn open_board<const N: usize>(
    node: &Node<ipc::Service>,
    row: &RowSpec,
    what: &str,
    leader: bool,
) -> Result<Svc> {
    let name = service_name(row, what)?;
    let b = node.service_builder(&name);
    if leader {
        b.blackboard_creator::<u64>()
            .max_readers(1)
            .add::<[u8; N]>(0, [0; N])
            .create()
            .map_err(|e| err("creating a blackboard", e))
    } else {
        b.blackboard_opener::<u64>()
            .open()
            .map_err(|e| err("opening a blackboard", e))
    }
}

impl<const N: usize> Ports<N> {
    fn new(leader: bool, row: &RowSpec) -> Result<Self> {
        let node = node(row, !leader)?;
        let ping = open_board::<N>(&node, row, "ping-board", leader)?;
        let pong = open_board::<N>(&node, row, "pong-board", leader)?;
        let (out_board, in_board) = if leader {
            (&ping, &pong)
        } else {
            (&pong, &ping)
        };
        let writer = out_board
            .writer_builder()
            .create()
            .map_err(|e| err("creating a writer", e))?;
        let reader = in_board
            .reader_builder()
            .create()
            .map_err(|e| err("creating a reader", e))?;
        let out = writer
            .entry::<[u8; N]>(&0)
            .map_err(|e| err("the writer's entry", e))?;
        let input = reader
            .entry::<[u8; N]>(&0)
            .map_err(|e| err("the reader's entry", e))?;
        let last = Box::new(input.get());
        Ok(Self {
            out: Some(out),
            input,
            last,
            _writer: writer,
            _reader: reader,
            boards: [ping, pong],
            _node: node,
            payload: row.payload,
        })
    }
}

impl<const N: usize> BoardPorts for Ports<N> {
    #[inline]
    fn write(&mut self, t: u8) -> Result<()> {
        let out = self.out.take().ok_or("the writer's entry is gone")?;
        let mut loan = out.loan_uninit();
        // SAFETY: the value's N bytes, as MaybeUninit bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                loan.value_mut()
                    .as_mut_ptr()
                    .cast::<std::mem::MaybeUninit<u8>>(),
                N,
            )
        };
        self.payload.write_uninit(bytes, t);
        // SAFETY: in full mode every byte was written; in touch mode the others
        // hold what the cell held before (zeros or bytes of earlier values):
        // initialised memory, and u8 has no invalid values. The same
        // reasoning as for hako (crate::transports::hako::pubsub).
        self.out = Some(unsafe { loan.assume_init_and_update() });
        Ok(())
    }

    #[inline]
    fn wait(&mut self, t: u8, what: &str) -> Result<()> {
        let input = &self.input;
        let last = &self.last;
        poll(what, || Ok((!input.is_up_to_date(last)).then_some(())))?;
        *self.last = input.get();
        self.payload.check(&self.last[..], N, t, what)
    }

    #[inline]
    fn read_whole(&mut self) -> Result<()> {
        let v = self.input.get();
        self.payload.check(&v[..], N, v[0], "a read")
    }

    fn first_update(&mut self) -> Result<()> {
        let (input, last) = (&self.input, &self.last);
        poll("the writer's first update", || {
            Ok((!input.is_up_to_date(last)).then_some(()))
        })?;
        *self.last = self.input.get();
        Ok(())
    }

    fn signal(&mut self) -> Result<u64> {
        if !self.input.is_up_to_date(&self.last) {
            *self.last = self.input.get();
        }
        Ok(u64::from(self.last[0]))
    }

    fn linked(&self) -> bool {
        let [ping, pong] = &self.boards;
        ping.dynamic_config().number_of_readers() == 1
            && pong.dynamic_config().number_of_writers() == 1
    }
}

/// One side, its value's size chosen at run time.
pub struct BoardSide(Box<dyn BoardPorts>);

fn side(leader: bool, row: &RowSpec) -> Result<BoardSide> {
    let ports: Box<dyn BoardPorts> = match row.size {
        64 => Box::new(Ports::<64>::new(leader, row)?),
        1024 => Box::new(Ports::<1024>::new(leader, row)?),
        4096 => Box::new(Ports::<4096>::new(leader, row)?),
        65536 => Box::new(Ports::<65536>::new(leader, row)?),
        1048576 => Box::new(Ports::<1048576>::new(leader, row)?),
        n => return Err(format!("no [u8; {n}] board here").into()),
    };
    Ok(BoardSide(ports))
}

impl Transport for Iceoryx2Board {
    type Leader = BoardSide;
    type Follower = BoardSide;

    fn name(&self) -> &'static str {
        "iceoryx2-board"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn skip_reason(&self, size: usize, pattern: Pattern) -> Option<String> {
        if matches!(pattern, Pattern::FanOut | Pattern::RequestResponse) {
            return Some(ONE_READER.into());
        }
        (!SIZES.contains(&size)).then(|| {
            "iceoryx2's blackboard values are types fixed at compile time: 64 B, 1 KiB, 4 KiB, \
             64 KiB and 1 MiB here"
                .into()
        })
    }

    fn leader(&self, row: &RowSpec) -> Result<BoardSide> {
        side(true, row)
    }

    fn follower(&self, row: &RowSpec) -> Result<BoardSide> {
        side(false, row)
    }
}

impl Leader for BoardSide {
    fn connect(&mut self) -> Result<()> {
        poll("the follower's ports", || Ok(self.0.linked().then_some(())))
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.0.write(t)?;
        sent();
        self.0.wait(t.wrapping_add(1), "pong")
    }

    /// The reads row: updates until the reader has done its reads.
    fn send_timed(&mut self, _warmup: u64, _messages: u64) -> Result<(u64, CpuTime)> {
        let ports = std::cell::RefCell::new(&mut self.0);
        stream_until_read(
            |k| ports.borrow_mut().write(tag(k)),
            || ports.borrow_mut().signal(),
        )
    }
}

impl Follower for BoardSide {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.0.wait(t, "ping")?;
        self.0.write(t.wrapping_add(1))
    }

    /// The reads row, as `hako-board`'s: timed reads between two signals.
    fn serve_timed(&mut self, warmup: u64, messages: u64, one_way: bool) -> Result<(u64, CpuTime)> {
        if !one_way {
            return crate::transport::serve_timed(self, warmup, messages, one_way);
        }
        // Not before the writer streams (it reads "pong" first).
        self.0.first_update()?;
        for _ in 0..warmup {
            self.0.read_whole()?;
        }
        self.0.write(1)?;
        let before = CpuTime::now()?;
        for _ in 0..messages {
            self.0.read_whole()?;
        }
        let last = monotonic_ns();
        let cpu = CpuTime::now()?.since(before);
        self.0.write(2)?;
        Ok((last, cpu))
    }
}
