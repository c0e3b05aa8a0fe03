//! The Go transports: `hako-go`, hako's ping-pong and one-way stream
//! written in Go against the repository's Go module (`go/`, over the C API
//! through cgo), and `go-unix`, the same over Go's own `net` unix socket.
//! Both sides of a row are processes of the `hako-bench-go` program
//! ([`program`]), which run whole blocks of messages between each other
//! and report their own timings: the round trips timed as this crate times
//! its own ([`crate::transport::timed::measure`]), a one-way block's start
//! and end on the monotonic clock, and their CPU time. The processes of
//! this crate that start them only wait for their answers.
//!
//! `hako-go` uses the services and settings of the Rust `hako` transport
//! ([`crate::transports::hako::pubsub`]), busy-polled, and the same order
//! of calls (loan, write, send; receive, check, release), so the two
//! compare what Go and cgo add. Ping-pong and throughput only.

pub mod program;

use std::ops::RangeInclusive;

use crate::error::Result;
use crate::sys::cpu::CpuTime;
use crate::transport::{Follower, Leader, Pattern, RowSpec, Transport, Waiting};
use program::{cpu_time, GoProc};

/// A Go transport: hako through the Go module, or Go's unix socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Go {
    /// `hako-go` (else `go-unix`).
    pub hako: bool,
    /// The subscriber's queue in one-way rows (hako's `stream_buffer`).
    pub stream_buffer: u32,
}

/// One side of a row: a process of the Go program.
pub struct GoSide(GoProc);

impl Go {
    fn start(&self, leader: bool, row: &RowSpec) -> Result<GoSide> {
        let one_way = row.pattern.one_way();
        let buffer = if one_way {
            row.stream_depth(self.stream_buffer as usize)
        } else {
            2
        };
        let args = [
            (
                "-side",
                if leader { "leader" } else { "follower" }.to_owned(),
            ),
            (
                "-transport",
                if self.hako { "hako" } else { "unix" }.to_owned(),
            ),
            ("-root", row.root.display().to_string()),
            ("-row", row.row_id.to_string()),
            ("-size", row.size.to_string()),
            ("-payload", row.payload.name().to_owned()),
            (
                "-pattern",
                if one_way { "one-way" } else { "ping-pong" }.to_owned(),
            ),
            ("-followers", row.followers.max(1).to_string()),
            ("-index", row.index.to_string()),
            ("-buffer", buffer.to_string()),
        ];
        let args: Vec<String> = args
            .into_iter()
            .flat_map(|(k, v)| [k.to_owned(), v])
            .collect();
        Ok(GoSide(GoProc::start(&args)?))
    }
}

impl Transport for Go {
    type Leader = GoSide;
    type Follower = GoSide;

    fn name(&self) -> &'static str {
        if self.hako {
            "hako-go"
        } else {
            "go-unix"
        }
    }

    fn waiting(&self) -> Waiting {
        if self.hako {
            Waiting::BusyPoll
        } else {
            Waiting::Blocking
        }
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        if let Err(why) = program::find() {
            return Some(why);
        }
        matches!(pattern, Pattern::FanOut | Pattern::RequestResponse)
            .then(|| "the Go sides measure ping-pong and throughput only".into())
    }

    fn leader(&self, row: &RowSpec) -> Result<GoSide> {
        self.start(true, row)
    }

    fn follower(&self, row: &RowSpec) -> Result<GoSide> {
        self.start(false, row)
    }
}

/// The error of a call the Go sides do not take one message at a time.
fn whole_blocks() -> crate::error::BoxError {
    "the Go sides run whole blocks of messages, not one at a time".into()
}

impl Leader for GoSide {
    fn connect(&mut self) -> Result<()> {
        self.0.ask("connect")?;
        Ok(())
    }

    fn round_trip(&mut self, _seq: u64, _sent: impl FnOnce()) -> Result<()> {
        Err(whole_blocks())
    }

    fn round_trips(&mut self, warmup: u64, iterations: u64) -> Result<(Vec<u64>, CpuTime)> {
        let words = self.0.ask(&format!("round-trips {warmup} {iterations}"))?;
        let (cpu, samples) = cpu_time(&words)?;
        if samples.len() as u64 != iterations {
            return Err(format!(
                "the Go side timed {} round trips, not {iterations}",
                samples.len()
            )
            .into());
        }
        Ok((samples.to_vec(), cpu))
    }

    fn send_timed(&mut self, warmup: u64, messages: u64) -> Result<(u64, CpuTime)> {
        let words = self.0.ask(&format!("send {warmup} {messages}"))?;
        let (&start, rest) = words
            .split_first()
            .ok_or("the Go side sent no start time")?;
        Ok((start, cpu_time(rest)?.0))
    }
}

impl Follower for GoSide {
    fn serve_one(&mut self, _seq: u64) -> Result<()> {
        Err(whole_blocks())
    }

    fn serve_range(&mut self, _seqs: RangeInclusive<u64>, _one_way: bool) -> Result<()> {
        Err(whole_blocks())
    }

    fn serve_timed(&mut self, warmup: u64, messages: u64, one_way: bool) -> Result<(u64, CpuTime)> {
        let words = self
            .0
            .ask(&format!("serve {warmup} {messages} {}", u8::from(one_way)))?;
        let (&last, rest) = words.split_first().ok_or("the Go side sent no end time")?;
        Ok((last, cpu_time(rest)?.0))
    }
}
