//! hako through two `hako-bridge` processes (transports `hako-bridge` and
//! `hako-bridge-low-latency`, whose bridges poll: `--low-latency`).
//!
//! A row has two hako domains in the run's root,
//! `<transport>_<row>_a` (the leader's) and `<transport>_<row>_b` (the
//! follower's), each with the services `bench/ping` and `bench/pong`
//! (payload `[u8]`, publishers with `max_slice_len` = the row's size). Both
//! sides create them with the same settings (`open_or_create`), room for a
//! bridge's ports beside their own, and take samples with hako's blocking
//! `receive_timeout` (the subscriber's default wait, spin then park).
//!
//! [`Leader::connect`] starts two `hako-bridge` processes ([`program`]):
//! the one of domain A listens on a free port of 127.0.0.1, the one of
//! domain B listens on another and connects to it (peer mode, multicast
//! scouting off, key expressions under a prefix of the row). The bridge of
//! A runs on the leader's CPUs and the bridge of B on the follower's (the
//! follower writes its CPUs to `<transport>_<row>_cpus`): each side is a
//! host of its own, as with plain Zenoh the leader's session threads run
//! on its CPU and the follower's on the follower's. Then the leader sends
//! probes until one comes back: both services bridged both ways. The
//! bridges are stopped when the leader's side is dropped.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hako::{
    Config, Node, NodeBuilder, OverflowPolicy, PubSubService, Publisher, Sample, SampleMutUninit,
    ServiceName, Subscriber,
};
use rustix::thread::CpuSet;

use super::common::{
    free_port, FOLLOWER_WAIT, LINK_WATCHDOG, PING_PONG_ONLY, PROBE, PROBE_ANSWER, PROBE_EVERY,
};
use super::program::{self, BridgeSpec, Bridges};
use crate::error::Result;
use crate::transport::{
    tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting, PEER_TIMEOUT,
};

/// hako publish/subscribe across two domains joined by `hako-bridge`:
/// `hako-bridge`, or with the bridges' `--low-latency`
/// (`hako-bridge-low-latency`: they poll their local ports instead of
/// sleeping between messages).
#[derive(Debug, Clone, Copy, Default)]
pub struct HakoBridge {
    /// The bridges run with `--low-latency`.
    pub low_latency: bool,
}

/// Publishers a service allows: the program's, the bridge's, and a second
/// of the bridge's (it makes a roomier one, before it drops the first,
/// when a slice outgrows it).
const MAX_PUBLISHERS: u32 = 3;
/// Subscribers a service allows: the program's and the bridge's.
const MAX_SUBSCRIBERS: u32 = 2;
/// Nodes a service allows: the program's and the bridge's, and one to spare.
const MAX_NODES: u32 = 3;
/// Samples a subscriber may queue: one ping or pong at a time, and a few
/// probes or answers to them still on their way when the row starts.
const BUFFER: u32 = 4;

/// One side: a node, its two services and its ports. Field order is drop
/// order.
struct Side {
    out: Publisher<[u8]>,
    inbox: Subscriber<[u8]>,
    _services: [PubSubService<[u8]>; 2],
    _node: Node,
    size: usize,
    payload: PayloadMode,
}

/// The leader's side: publishes pings in domain A, takes pongs there;
/// starts and stops the bridges.
pub struct BridgedLeader {
    /// First: the bridges stop before the leader's ports go.
    bridges: Option<Bridges>,
    side: Side,
    program: PathBuf,
    roots: [PathBuf; 2],
    prefix: String,
    cpus_file: PathBuf,
    logs: [PathBuf; 2],
    low_latency: bool,
}

/// The follower's side: takes pings in domain B, publishes pongs there.
pub struct BridgedFollower {
    side: Side,
}

/// The root of domain `ab` (`a`: the leader's, `b`: the follower's) of
/// transport `name`.
fn root(row: &RowSpec, name: &str, ab: &str) -> PathBuf {
    row.path(name, ab)
}

impl Side {
    /// Joins the domain at `root` as `node_name`, opens or creates both
    /// services, publishes on `out` and subscribes to `inbox`.
    fn new(row: &RowSpec, root: &std::path::Path, node_name: &str, out: &str) -> Result<Self> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let node = NodeBuilder::new()
            .name(node_name)?
            .config(&Config::default().with_root(root))
            .create()?;
        let service = |name: &str| -> Result<PubSubService<[u8]>> {
            Ok(node
                .service_builder(&ServiceName::new(&format!("bench/{name}"))?)
                .publish_subscribe::<[u8]>()
                .max_publishers(MAX_PUBLISHERS)
                .max_subscribers(MAX_SUBSCRIBERS)
                .max_nodes(MAX_NODES)
                .history_size(0)
                .subscriber_max_buffer_size(BUFFER)
                .subscriber_max_borrowed_samples(1)
                .overflow_policy(OverflowPolicy::Backpressure)
                .open_or_create()?)
        };
        let services = [service("ping")?, service("pong")?];
        let (o, i) = if out == "ping" { (0, 1) } else { (1, 0) };
        let publisher = services[o]
            .publisher_builder()
            .max_slice_len(row.size)
            .max_loaned_samples(1)
            .create()?;
        let subscriber = services[i].subscriber_builder().create()?;
        Ok(Self {
            out: publisher,
            inbox: subscriber,
            _services: services,
            _node: node,
            size: row.size,
            payload: row.payload,
        })
    }

    /// Publishes a message tagged `t` (nobody may get it: before the link
    /// is up no bridge subscribes).
    #[inline]
    fn send(&self, t: u8) -> Result<()> {
        let mut sample: SampleMutUninit<[u8]> = self.out.loan_slice_uninit(self.size)?;
        self.payload.write_uninit(sample.payload_mut(), t);
        // SAFETY: in full mode every byte was written. In touch mode only
        // the first and last were; the others hold what the chunk held
        // before (zeros from the segment's creation, or bytes of earlier
        // messages): initialised memory, and any byte is a valid `u8`. As
        // in the `hako` transport, touch mode measures moving a message,
        // not writing it.
        let sample = unsafe { sample.assume_init() };
        sample.send();
        Ok(())
    }

    /// The next sample within `wait`; `None` if none came.
    #[inline]
    fn take_within(&self, wait: Duration) -> Result<Option<Sample<[u8]>>> {
        Ok(self.inbox.receive_timeout(wait)?)
    }

    /// The next sample within `wait`, or an error naming `what`.
    #[inline]
    fn take(&self, wait: Duration, what: &str) -> Result<Sample<[u8]>> {
        self.take_within(wait)?.ok_or_else(|| {
            format!("gave up after {wait:?} waiting for {what}; a bridge died or lost a message")
                .into()
        })
    }

    /// Whether `sample` is a whole message tagged `t` at both ends.
    #[inline]
    fn is(&self, sample: &[u8], t: u8) -> bool {
        sample.len() == self.size && sample.first() == Some(&t) && sample.last() == Some(&t)
    }
}

/// The CPUs of the calling thread, as a list (`0,1`).
fn cpu_list() -> Result<String> {
    Ok(crate::sys::cpu::allowed_cpus()?
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(","))
}

/// The CPU set of a list [`cpu_list`] wrote.
fn parse_cpus(text: &str) -> Result<CpuSet> {
    let mut set = CpuSet::new();
    for c in text.trim().split(',').filter(|c| !c.is_empty()) {
        let c: usize = c.parse()?;
        if c >= CpuSet::MAX_CPU {
            return Err(format!("no such CPU: {c}").into());
        }
        set.set(c);
    }
    Ok(set)
}

impl Transport for HakoBridge {
    type Leader = BridgedLeader;
    type Follower = BridgedFollower;

    fn name(&self) -> &'static str {
        if self.low_latency {
            "hako-bridge-low-latency"
        } else {
            "hako-bridge"
        }
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        if pattern.one_way() {
            return Some(PING_PONG_ONLY.to_owned());
        }
        program::find().err()
    }

    fn leader(&self, row: &RowSpec) -> Result<BridgedLeader> {
        let program = program::find()?;
        let name = self.name();
        let roots = [root(row, name, "a"), root(row, name, "b")];
        let side = Side::new(row, &roots[0], "pingpong-leader", "ping")?;
        Ok(BridgedLeader {
            bridges: None,
            side,
            program,
            roots,
            prefix: format!("hako-bench-{}-{}", std::process::id(), row.row_id),
            cpus_file: row.path(name, "cpus"),
            logs: [row.path(name, "a.log"), row.path(name, "b.log")],
            low_latency: self.low_latency,
        })
    }

    fn follower(&self, row: &RowSpec) -> Result<BridgedFollower> {
        let side = Side::new(
            row,
            &root(row, self.name(), "b"),
            "pingpong-follower",
            "pong",
        )?;
        let path = row.path(self.name(), "cpus");
        std::fs::write(&path, cpu_list()? + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(BridgedFollower { side })
    }
}

impl BridgedLeader {
    /// Starts the bridges of domains A and B.
    fn start_bridges(&mut self) -> Result<()> {
        let follower_cpus = std::fs::read_to_string(&self.cpus_file)
            .map_err(|e| format!("cannot read {}: {e}", self.cpus_file.display()))?;
        let (port_a, port_b) = (free_port()?, free_port()?);
        let spec = |what, i: usize, listen, connect, cpus| BridgeSpec {
            what,
            root: self.roots[i].clone(),
            prefix: self.prefix.clone(),
            listen,
            connect,
            cpus,
            log: self.logs[i].clone(),
            low_latency: self.low_latency,
        };
        let specs = [
            spec("domain A (the leader's)", 0, port_a, None, None),
            spec(
                "domain B (the follower's)",
                1,
                port_b,
                Some(port_a),
                Some(parse_cpus(&follower_cpus)?),
            ),
        ];
        self.bridges = Some(Bridges::start(&self.program, &specs)?);
        Ok(())
    }
}

impl Leader for BridgedLeader {
    /// Starts the bridges, then sends probes until one comes back.
    fn connect(&mut self) -> Result<()> {
        self.start_bridges()?;
        let start = Instant::now();
        loop {
            self.side.send(PROBE)?;
            if let Some(s) = self.side.take_within(PROBE_EVERY)? {
                if self.side.is(&s, PROBE_ANSWER) {
                    return Ok(());
                }
            }
            let bridges = self.bridges.as_mut().ok_or("the bridges did not start")?;
            bridges.check_running()?;
            if start.elapsed() > LINK_WATCHDOG {
                return Err(format!(
                    "no probe came back through the bridges within {LINK_WATCHDOG:?}; {}",
                    bridges.logs()
                )
                .into());
            }
        }
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.side.send(t)?;
        sent();
        loop {
            let answer = self.side.take(PEER_TIMEOUT, "a pong")?;
            // An answer to a probe that was still on its way.
            if self.side.is(&answer, PROBE_ANSWER) {
                continue;
            }
            return self
                .side
                .payload
                .check(&answer, self.side.size, t.wrapping_add(1), "pong");
        }
    }
}

impl Follower for BridgedFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        loop {
            let ping = self.side.take(FOLLOWER_WAIT, "a ping")?;
            if self.side.is(&ping, PROBE) {
                drop(ping);
                self.side.send(PROBE_ANSWER)?;
                continue;
            }
            self.side.payload.check(&ping, self.side.size, t, "ping")?;
            // The sample drops here, handing its chunk back.
            drop(ping);
            return self.side.send(t.wrapping_add(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        let set = parse_cpus(&cpu_list().unwrap()).unwrap();
        for c in crate::sys::cpu::allowed_cpus().unwrap() {
            assert!(set.is_set(c));
        }
        assert!(parse_cpus("1,x").is_err());
        assert!(parse_cpus(&format!("{}", CpuSet::MAX_CPU)).is_err());
        assert!(parse_cpus("0,3\n").unwrap().is_set(3));
    }
}
