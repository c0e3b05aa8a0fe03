//! `hako bench`'s arguments.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::registry::Kind;
use crate::transport::{Pattern, PayloadMode};
use crate::units::parse_size;

/// Largest message size the suite accepts.
pub const MAX_SIZE: usize = 256 << 20;

/// Where the processes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pinning {
    /// Leader and followers on two different CPUs.
    Cross,
    /// Leader and followers on the leader's CPU (busy-polling transports
    /// are left out).
    Same,
    /// Not pinned: the scheduler decides.
    None,
    /// Cross, then same, in one run (each mode's report in turn).
    Both,
}

impl Pinning {
    /// `cross-cpu`, `same-cpu`, `unpinned` (`both`: `cross-cpu` first).
    pub fn label(self) -> &'static str {
        match self {
            Pinning::Cross | Pinning::Both => "cross-cpu",
            Pinning::Same => "same-cpu",
            Pinning::None => "unpinned",
        }
    }

    /// The modes a run measures, in order.
    pub fn modes(self) -> Vec<Pinning> {
        match self {
            Pinning::Both => vec![Pinning::Cross, Pinning::Same],
            mode => vec![mode],
        }
    }
}

/// Arguments of `hako bench`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Without --transports, every transport of the build runs and sizes a \
transport cannot carry are skipped with the reason; a transport named in --transports that \
cannot carry a size given is an error. See the README for what each column means."
)]
pub struct BenchArgs {
    /// Transports, in table order: hako, hako-spin-park, hako-park,
    /// hako-spin, iceoryx2, shmipc, floor, futex, pipe, fifo, unix, tcp, mq,
    /// reference (and the request/response, async and bridge ones)
    /// [default: all but hako-park, hako-spin and those of the
    /// request/response, async and bridge rows].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub transports: Option<Vec<Kind>>,
    /// Message sizes (e.g. 64,1K,4KiB,1M) [default: 8,32,48,64,1K,4K,64K,1M,4M;
    /// --quick: 8,48,64,4K,64K,1M].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Option<Vec<usize>>,
    /// Patterns: pingpong (round-trip latency), throughput (one way),
    /// fanout (one sender, --fanout receivers), reqres (request/response:
    /// round trips, and requests per second with --in-flight requests in
    /// flight), async (request/response under tokio, with --async-in-flight
    /// requests in flight, against tokio's sockets and hako's blocking
    /// calls), bridge (a round trip through two hako-bridge processes over
    /// Zenoh against plain Zenoh; needs a build with the `bridge` feature
    /// and the hako-bridge program).
    #[arg(long, value_delimiter = ',', value_parser = Pattern::parse,
          default_value = "pingpong,throughput,fanout,reqres,async,bridge")]
    pub patterns: Vec<Pattern>,
    /// Transports of the request/response rows, in table order [default:
    /// hako-reqres, hako (pub/sub ping-pong, the reference),
    /// iceoryx2-reqres, shmipc, unix, tcp].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub reqres_transports: Option<Vec<Kind>>,
    /// Requests in flight of the request/response rate rows.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub in_flight: Vec<u32>,
    /// Message sizes of the request/response rate rows [default: 64,1K;
    /// --quick: 64].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub in_flight_sizes: Option<Vec<usize>>,
    /// Transports of the async rows, in table order [default: hako-async,
    /// hako-async-busy, hako-async-park, tokio-unix, tokio-tcp, the same
    /// on a multi-threaded runtime (-mt), hako-reqres,
    /// hako-reqres-spin-park, hako-reqres-park, shmipc].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub async_transports: Option<Vec<Kind>>,
    /// Message sizes of the async round trips [default: 64,4K,64K,1M;
    /// --quick: 64,64K].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub async_sizes: Option<Vec<usize>>,
    /// Requests in flight of the async rate rows.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub async_in_flight: Vec<u32>,
    /// Message sizes of the async rate rows.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64")]
    pub async_in_flight_sizes: Vec<usize>,
    /// Transports of the bridge rows, in table order [default: zenoh,
    /// hako-bridge].
    #[arg(long, value_delimiter = ',', value_parser = Kind::parse)]
    pub bridge_transports: Option<Vec<Kind>>,
    /// Message sizes of the bridge rows.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64,1M")]
    pub bridge_sizes: Vec<usize>,
    /// Counts of allowed subscribers of the memory-footprint table: for a
    /// u64 service allowing that many subscribers (and one publisher), the
    /// bytes one publisher and one subscriber map, hako's and iceoryx2's.
    #[arg(long, value_delimiter = ',', default_value = "1,64,4096",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub footprint: Vec<u32>,
    /// Leave out the memory-footprint table.
    #[arg(long)]
    pub no_footprint: bool,
    /// Payload modes: touch (first and last byte written and checked), full
    /// (every byte written, every byte read into a checksum).
    #[arg(long, value_delimiter = ',', value_parser = PayloadMode::parse,
          default_value = "touch,full")]
    pub payload: Vec<PayloadMode>,
    /// Receivers of a fan-out row (follower processes).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub fanout: u32,
    /// Most timed round trips per ping-pong row and transport, over all
    /// blocks [default: 20000; --quick: 2000].
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Untimed round trips per ping-pong row and transport, over all blocks
    /// [default: iterations / 10].
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Blocks per row: ping-pong blocks between floor probes [default: 4;
    /// --quick: 2; bridge rows: 4], and one-way rounds, each running every
    /// transport once (at most 3).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// Time per block and transport that the round trips or messages are
    /// fitted to, in ms [default: 12; --quick: 3; bridge rows: 50 times
    /// it].
    #[arg(long)]
    pub block_ms: Option<u64>,
    /// Fewest messages per one-way run at sizes up to 1 MiB (fewer above,
    /// at most 1 GiB per run) [default: 1000; --quick: 100].
    #[arg(long)]
    pub min_messages: Option<u64>,
    /// A short run (under 20 s here): fewer sizes, fewer and shorter blocks.
    #[arg(long)]
    pub quick: bool,
    /// Where the processes run (both: cross, then same).
    #[arg(long, value_enum, default_value_t = Pinning::Cross)]
    pub pinning: Pinning,
    /// CPU of the leader [default: the first CPU this process may use].
    #[arg(long)]
    pub leader_cpu: Option<usize>,
    /// CPU of the followers [default: the second CPU this process may use].
    #[arg(long)]
    pub follower_cpu: Option<usize>,
    /// tmpfs directory for the run's files (`<dir>/hako-bench-<pid>`).
    #[arg(long, default_value = "/dev/shm")]
    pub shm_dir: PathBuf,
    /// Also write every figure, and the machine, to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also write the tables and the summary to this Markdown file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Also draw latency against payload size (log–log, one line per
    /// transport, a panel per payload mode) into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress bar (it is off anyway when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Timed round trips of each floor probe [default: 1000; --quick: 300].
    #[arg(long)]
    pub probe_iterations: Option<u64>,
    /// Fewest timed round trips per block and transport [default: 10].
    #[arg(long)]
    pub min_iterations: Option<u64>,
    /// Write each block's raw round-trip times (ns, in order) to files in
    /// this existing directory, one per row, transport and size.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Samples a hako subscriber queues (`subscriber_max_buffer_size`) in
    /// the publish/subscribe rows.
    #[arg(long, default_value_t = 2, help_heading = "hako settings",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub hako_buffer: u32,
    /// Samples a hako subscriber may hold at once
    /// (`subscriber_max_borrowed_samples`).
    #[arg(long, default_value_t = 1, help_heading = "hako settings",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub hako_borrowed: u32,
    /// Samples the leader's hako publisher may loan at once.
    #[arg(long, default_value_t = 1, help_heading = "hako settings",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub hako_loans: u32,
}
