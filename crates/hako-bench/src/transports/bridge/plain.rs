//! Plain Zenoh: the round trip a program gets that uses Zenoh itself
//! (transport `zenoh`).
//!
//! The leader opens a Zenoh session (peer mode, multicast scouting off)
//! listening on `127.0.0.1` at a free port, which it writes to the file
//! `zenoh_<row>_port` in the run's root; the follower's session connects
//! to it. Pings go on `hako-bench/<row>/ping`, pongs on
//! `hako-bench/<row>/pong`, through a publisher declared once per side
//! and a subscriber whose samples the side takes with a blocking
//! `recv_timeout` (Zenoh's default handler, a FIFO channel: the way a
//! program waits for a sample on its own thread).
//!
//! The settings, chosen for the lowest round trip (the bridge's own
//! settings are its business, and part of what is measured):
//!
//! * publishers are declared once (not a `session.put` per message), with
//!   `CongestionControl::Block`, so that no message is ever dropped, and
//!   `express(true)`, so that Zenoh sends each message at once instead of
//!   giving it a chance to be batched with the next (in a ping-pong there
//!   is no next). Five runs each, alternating, gave 117-119 µs at 64 B and
//!   1 250-1 273 µs at 1 MiB with it, 119-125 µs and 1 269-1 296 µs
//!   without: a few per cent;
//! * a payload is handed over without a copy (`Outgoing`) and checked
//!   where it lies, in the pieces it arrived in (`check_zbytes`): Zenoh
//!   copies a message into its batches and out of them, nothing more.
//!
//! Answering inside the subscriber's callback, on Zenoh's own thread, as
//! Zenoh's `z_pong` example does, instead of on the follower's thread,
//! changed nothing measurable here (three alternating pairs of runs: 117-143
//! µs at 64 B and 1 267-1 316 µs at 1 MiB either way), so the follower
//! keeps the shape of every other transport's: a loop that takes a message
//! and answers it.
//!
//! Zenoh's session configuration is its default otherwise (as the bridges
//! run it): the comparison is of the bridge against what it is built on.

use std::path::PathBuf;

use ::zenoh::handlers::FifoChannelHandler;
use ::zenoh::pubsub::{Publisher, Subscriber};
use ::zenoh::qos::CongestionControl;
use ::zenoh::sample::Sample;
use ::zenoh::{Session, Wait};

use super::common::{
    check_zbytes, endpoint, ends, free_port, tagged_as, Outgoing, FOLLOWER_WAIT, LINK_WATCHDOG,
    PING_PONG_ONLY, PROBE, PROBE_ANSWER, PROBE_EVERY,
};
use crate::error::Result;
use crate::transport::{
    tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting, PEER_TIMEOUT,
};

/// Plain Zenoh publishers and subscribers.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainZenoh;

/// How many times the leader tries a new port when its session cannot
/// listen on the one it picked (another program took it meanwhile).
const LISTEN_TRIES: u32 = 5;

type Inbox = Subscriber<FifoChannelHandler<Sample>>;

/// One side's session, publisher and subscriber. Field order is drop
/// order: the ports go before the session closes.
struct Side {
    out: Publisher<'static>,
    inbox: Inbox,
    _session: Session,
    outgoing: Outgoing,
    size: usize,
    payload: PayloadMode,
}

/// The leader's side: puts pings, takes pongs.
pub struct ZenohLeader {
    side: Side,
    port_file: PathBuf,
}

/// The follower's side: takes pings, puts pongs.
pub struct ZenohFollower {
    side: Side,
}

/// A Zenoh configuration: peer mode, no multicast scouting, listening on
/// or connecting to a port of 127.0.0.1.
fn config(listen: Option<u16>, connect: Option<u16>) -> Result<::zenoh::Config> {
    let mut c = ::zenoh::Config::default();
    let mut set = |key: &str, value: String| {
        c.insert_json5(key, &value)
            .map_err(|e| format!("bad Zenoh setting {key} = {value}: {e}"))
    };
    set("mode", "\"peer\"".into())?;
    set("scouting/multicast/enabled", "false".into())?;
    if let Some(port) = listen {
        set("listen/endpoints", format!("[\"{}\"]", endpoint(port)))?;
    }
    if let Some(port) = connect {
        set("connect/endpoints", format!("[\"{}\"]", endpoint(port)))?;
    }
    Ok(c)
}

fn key(row: &RowSpec, what: &str) -> String {
    format!("hako-bench/{}/{what}", row.row_id)
}

fn zerr(what: &str) -> impl Fn(::zenoh::Error) -> crate::error::BoxError + '_ {
    move |e| format!("zenoh: {what}: {e}").into()
}

impl Side {
    /// Declares the publisher on `out` and the subscriber on `inbox`.
    fn new(session: Session, row: &RowSpec, out: &str, inbox: &str) -> Result<Self> {
        let inbox = session
            .declare_subscriber(key(row, inbox))
            .wait()
            .map_err(zerr("cannot declare a subscriber"))?;
        let out = session
            .declare_publisher(key(row, out))
            .congestion_control(CongestionControl::Block)
            .express(true)
            .wait()
            .map_err(zerr("cannot declare a publisher"))?;
        Ok(Self {
            out,
            inbox,
            _session: session,
            outgoing: Outgoing::new(row.size, row.payload),
            size: row.size,
            payload: row.payload,
        })
    }

    /// Puts a message tagged `t`.
    #[inline]
    fn put(&mut self, t: u8) -> Result<()> {
        let bytes = self.outgoing.next(t);
        self.out.put(bytes).wait().map_err(zerr("cannot put"))?;
        Ok(())
    }

    /// The next sample within `wait`, or an error naming `what`.
    #[inline]
    fn take(&self, wait: std::time::Duration, what: &str) -> Result<Sample> {
        self.inbox
            .recv_timeout(wait)
            .map_err(zerr("cannot receive"))?
            .ok_or_else(|| {
                format!("gave up after {wait:?} waiting for {what}; the peer died or a message was lost")
                    .into()
            })
    }
}

impl Transport for PlainZenoh {
    type Leader = ZenohLeader;
    type Follower = ZenohFollower;

    fn name(&self) -> &'static str {
        "zenoh"
    }

    fn waiting(&self) -> Waiting {
        Waiting::Blocking
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        pattern.one_way().then(|| PING_PONG_ONLY.to_owned())
    }

    fn leader(&self, row: &RowSpec) -> Result<ZenohLeader> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let mut tries = 0;
        let (session, port) = loop {
            let port = free_port()?;
            match ::zenoh::open(config(Some(port), None)?).wait() {
                Ok(s) => break (s, port),
                Err(e) if tries + 1 < LISTEN_TRIES => {
                    tries += 1;
                    let _ = e;
                }
                Err(e) => {
                    return Err(format!("zenoh: cannot listen on {}: {e}", endpoint(port)).into())
                }
            }
        };
        let side = Side::new(session, row, "ping", "pong")?;
        let port_file = row.path("zenoh", "port");
        std::fs::write(&port_file, format!("{port}\n"))
            .map_err(|e| format!("cannot write {}: {e}", port_file.display()))?;
        Ok(ZenohLeader { side, port_file })
    }

    fn follower(&self, row: &RowSpec) -> Result<ZenohFollower> {
        let path = row.path("zenoh", "port");
        let port: u16 = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .trim()
            .parse()?;
        let session = ::zenoh::open(config(None, Some(port))?)
            .wait()
            .map_err(|e| format!("zenoh: cannot connect to {}: {e}", endpoint(port)))?;
        Ok(ZenohFollower {
            side: Side::new(session, row, "pong", "ping")?,
        })
    }
}

impl Drop for ZenohLeader {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.port_file);
    }
}

impl Leader for ZenohLeader {
    /// Sends probes until one comes back: the follower's subscriber is
    /// known to this session and this one's to the follower's.
    fn connect(&mut self) -> Result<()> {
        let start = std::time::Instant::now();
        loop {
            self.side.put(PROBE)?;
            if let Some(s) = self
                .side
                .inbox
                .recv_timeout(PROBE_EVERY)
                .map_err(zerr("cannot receive"))?
            {
                if tagged_as(ends(s.payload()), self.side.size, PROBE_ANSWER) {
                    return Ok(());
                }
            }
            if start.elapsed() > LINK_WATCHDOG {
                return Err(format!(
                    "zenoh: no probe came back within {LINK_WATCHDOG:?}: the sessions did not link"
                )
                .into());
            }
        }
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.side.put(t)?;
        sent();
        loop {
            let s = self.side.take(PEER_TIMEOUT, "a pong")?;
            let p = s.payload();
            // An answer to a probe that was still on its way.
            if tagged_as(ends(p), self.side.size, PROBE_ANSWER) {
                continue;
            }
            return check_zbytes(
                self.side.payload,
                p,
                self.side.size,
                t.wrapping_add(1),
                "pong",
            );
        }
    }
}

impl Follower for ZenohFollower {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        loop {
            let s = self.side.take(FOLLOWER_WAIT, "a ping")?;
            let p = s.payload();
            if tagged_as(ends(p), self.side.size, PROBE) {
                self.side.put(PROBE_ANSWER)?;
                continue;
            }
            check_zbytes(self.side.payload, p, self.side.size, t, "ping")?;
            drop(s);
            return self.side.put(t.wrapping_add(1));
        }
    }
}
