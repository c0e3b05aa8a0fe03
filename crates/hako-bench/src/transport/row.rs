//! What a row is: how its messages flow ([`Pattern`]), how much of each is
//! touched ([`PayloadMode`]), what both sides know of it ([`RowSpec`]), and
//! how a message is tagged and checked ([`tag`], [`check_tagged`],
//! [`check_reached`]).

use std::mem::MaybeUninit;
use std::path::PathBuf;

use crate::error::Result;

/// How messages flow in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Pattern {
    /// Round trips between the leader and one follower.
    #[default]
    PingPong,
    /// One way, leader to one follower, back to back.
    Throughput,
    /// One way, leader to every follower, back to back.
    FanOut,
    /// Requests from the leader, each answered by the follower, with up to
    /// [`RowSpec::depth`] of them in flight.
    RequestResponse,
    /// Request/response through the async transports ([`crate::transports::runtimes`]) and
    /// their blocking counterparts: a group of the suite, whose rows run
    /// as [`Pattern::RequestResponse`].
    Async,
    /// hako through two `hako-bridge` processes against plain Zenoh (the
    /// `bridge` feature): a group of the suite, whose rows run as
    /// [`Pattern::PingPong`].
    Bridge,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 6] = [
        Pattern::PingPong,
        Pattern::Throughput,
        Pattern::FanOut,
        Pattern::RequestResponse,
        Pattern::Async,
        Pattern::Bridge,
    ];

    /// `pingpong`, `throughput`, `fanout`, `reqres`, `async`, `bridge`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PingPong => "pingpong",
            Pattern::Throughput => "throughput",
            Pattern::FanOut => "fanout",
            Pattern::RequestResponse => "reqres",
            Pattern::Async => "async",
            Pattern::Bridge => "bridge",
        }
    }

    /// The pattern called `name`.
    pub fn parse(name: &str) -> Result<Pattern, String> {
        let name = name.trim();
        Pattern::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown pattern {name:?}; known: pingpong, throughput, fanout, reqres, async, \
                     bridge"
                )
            })
    }

    /// Whether messages flow one way only (no answers).
    pub fn one_way(self) -> bool {
        matches!(self, Pattern::Throughput | Pattern::FanOut)
    }
}

/// How much of each message the sending and the receiving side touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PayloadMode {
    /// The sender writes the first and last byte, the receiver checks them
    /// (the iceperf method): the cost of moving a message, whatever it holds.
    #[default]
    Touch,
    /// The sender writes every byte, the receiver reads every byte into a
    /// checksum and compares it: the cost of producing and consuming the data
    /// as well.
    Full,
}

impl PayloadMode {
    /// Both modes.
    pub const ALL: [PayloadMode; 2] = [PayloadMode::Touch, PayloadMode::Full];

    /// `touch` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            PayloadMode::Touch => "touch",
            PayloadMode::Full => "full",
        }
    }

    /// The mode called `name`.
    pub fn parse(name: &str) -> Result<PayloadMode, String> {
        match name.trim() {
            "touch" => Ok(PayloadMode::Touch),
            "full" => Ok(PayloadMode::Full),
            other => Err(format!(
                "unknown payload mode {other:?}; known: touch, full"
            )),
        }
    }

    /// Writes message tag `t` into `buf` (touch: its first and last byte;
    /// full: every byte).
    #[inline]
    pub fn write(self, buf: &mut [u8], t: u8) {
        let n = buf.len();
        if n == 0 {
            return;
        }
        match self {
            PayloadMode::Touch => {
                buf[0] = t;
                buf[n - 1] = t;
            }
            PayloadMode::Full => buf.fill(t),
        }
    }

    /// [`Self::write`] into memory that may be uninitialised (a loaned
    /// sample). In touch mode only the first and last byte are written.
    #[inline]
    pub fn write_uninit(self, buf: &mut [MaybeUninit<u8>], t: u8) {
        let n = buf.len();
        if n == 0 {
            return;
        }
        match self {
            PayloadMode::Touch => {
                buf[0].write(t);
                buf[n - 1].write(t);
            }
            PayloadMode::Full => buf.fill(MaybeUninit::new(t)),
        }
    }

    /// Checks that `bytes` is a whole `size`-byte message tagged `t`: its
    /// first and last byte, and in full mode the sum of all its bytes
    /// (`t × size`), so a message written only in part, or read only in
    /// part, fails. `what` names the message in the error.
    #[inline]
    pub fn check(self, bytes: &[u8], size: usize, t: u8, what: &str) -> Result<()> {
        check_tagged(bytes, size, t, what)?;
        if self == PayloadMode::Full {
            let sum = byte_sum(bytes);
            let want = u64::from(t) * size as u64;
            if sum != want {
                return Err(format!(
                    "{what}: the checksum of {size} bytes tagged {t} is {sum}, expected {want}"
                )
                .into());
            }
        }
        Ok(())
    }
}

/// The sum of all bytes, read 8 at a time: each 16-bit lane of an
/// accumulator adds two bytes per word, and is folded into the total every
/// 1 KiB (128 words, at most 65 280 per lane), so the loop vectorises and
/// runs at memory speed.
#[inline]
pub fn byte_sum(bytes: &[u8]) -> u64 {
    const LANES: u64 = 0x00ff_00ff_00ff_00ff;
    let fold =
        |acc: u64| (acc & 0xffff) + ((acc >> 16) & 0xffff) + ((acc >> 32) & 0xffff) + (acc >> 48);
    let mut total = 0u64;
    let mut blocks = bytes.chunks_exact(1024);
    for block in &mut blocks {
        let mut acc = 0u64;
        for word in block.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let w = u64::from_le_bytes(w);
            acc += (w & LANES) + ((w >> 8) & LANES);
        }
        total += fold(acc);
    }
    total
        + blocks
            .remainder()
            .iter()
            .map(|&b| u64::from(b))
            .sum::<u64>()
}

/// What both sides of one row know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpec {
    /// The domain root of this run (a private directory on a tmpfs).
    pub root: PathBuf,
    /// Unique per row within a run; names files and services of the row.
    pub row_id: u64,
    /// Message size in bytes (at least 1).
    pub size: usize,
    /// How messages flow.
    pub pattern: Pattern,
    /// How much of each message is written and read.
    pub payload: PayloadMode,
    /// Followers (receivers) of the row: 1 unless the pattern is fan-out.
    pub followers: u32,
    /// Which follower this is, `0..followers` (0 on the leader's side).
    pub index: u32,
    /// Requests the leader keeps in flight: 1 unless the pattern is
    /// request/response.
    pub depth: u32,
}

impl RowSpec {
    /// A file of the row in the run's root: `<kind>_<row>_<what>`.
    pub fn path(&self, kind: &str, what: &str) -> std::path::PathBuf {
        self.root.join(format!("{kind}_{}_{what}", self.row_id))
    }

    /// A ping-pong row in touch mode.
    pub fn ping_pong(root: PathBuf, row_id: u64, size: usize) -> Self {
        Self {
            root,
            row_id,
            size,
            pattern: Pattern::PingPong,
            payload: PayloadMode::Touch,
            followers: 1,
            index: 0,
            depth: 1,
        }
    }

    /// The queue depth of a one-way row for a transport whose deepest queue
    /// is `most` messages: `most`, except in full mode, where at most
    /// [`FULL_IN_FLIGHT`] bytes of payload (and at least 2 messages, if
    /// `most` allows) may be in flight. Every byte of a full-mode payload is written and read, so
    /// the messages in flight are the working set the caches must hold; a
    /// touch-mode message touches two cache lines whatever its size.
    pub fn stream_depth(&self, most: usize) -> usize {
        match self.payload {
            PayloadMode::Touch => most,
            PayloadMode::Full => (FULL_IN_FLIGHT / self.size.max(1)).max(2).min(most.max(1)),
        }
    }
}

/// Most payload bytes in flight in a full-mode one-way row (see
/// [`RowSpec::stream_depth`]). With hako at 4 MiB here, 2 messages in flight
/// streamed 6.3k-6.9k messages/s, 32 of them (128 MiB, far beyond the
/// caches) 2.8k-3.3k; at 1 MiB, 8 or fewer 25k-28k, 32 13k-18k.
pub const FULL_IN_FLIGHT: usize = 8 << 20;

/// Checks that message `seq` (`what`: "ping", "pong", "message") reached
/// `want` receivers, as a publisher's `send` reports.
#[inline]
pub fn check_reached(what: &str, seq: u64, reached: usize, want: usize) -> Result<()> {
    if reached != want {
        return Err(format!("{what} {seq} reached {reached} subscribers, expected {want}").into());
    }
    Ok(())
}

/// The tag a message with sequence number `seq` carries (in its first and
/// last byte); answers carry `tag(seq).wrapping_add(1)`.
#[inline]
pub fn tag(seq: u64) -> u8 {
    // Truncation intended: neighbouring messages differ in the low byte.
    (seq % 251) as u8
}

/// Checks that `bytes` is a whole `size`-byte message tagged `t` in its
/// first and last byte; `what` names the message in the error.
#[inline]
pub fn check_tagged(bytes: &[u8], size: usize, t: u8, what: &str) -> Result<()> {
    if size == 0 || bytes.len() != size || bytes[0] != t || bytes[size - 1] != t {
        return Err(format!(
            "{what}: expected {size} bytes tagged {t}, got {} bytes tagged {} / {}",
            bytes.len(),
            bytes.first().copied().unwrap_or(0),
            bytes.last().copied().unwrap_or(0),
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_mode_streams_keep_the_bytes_in_flight_within_the_caches() {
        let row = |size, payload| RowSpec {
            pattern: Pattern::Throughput,
            payload,
            ..RowSpec::ping_pong(PathBuf::new(), 0, size)
        };
        assert_eq!(row(4 << 20, PayloadMode::Touch).stream_depth(32), 32);
        assert_eq!(row(64, PayloadMode::Full).stream_depth(32), 32);
        assert_eq!(row(256 << 10, PayloadMode::Full).stream_depth(32), 32);
        assert_eq!(row(1 << 20, PayloadMode::Full).stream_depth(32), 8);
        assert_eq!(row(4 << 20, PayloadMode::Full).stream_depth(32), 2);
        assert_eq!(row(64 << 20, PayloadMode::Full).stream_depth(32), 2);
        assert_eq!(row(64 << 20, PayloadMode::Full).stream_depth(1), 1);
    }

    #[test]
    fn byte_sum_matches_a_plain_sum() {
        for n in [0usize, 1, 7, 8, 1023, 1024, 1025, 4096 + 13] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + 250) as u8).collect();
            let plain: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
            assert_eq!(byte_sum(&bytes), plain, "{n}");
        }
        assert_eq!(byte_sum(&[255; 1 << 20]), 255 << 20);
    }

    #[test]
    fn payload_modes_write_and_check() {
        for mode in PayloadMode::ALL {
            let mut buf = vec![0u8; 100];
            mode.write(&mut buf, 9);
            mode.check(&buf, 100, 9, "x").unwrap();
            assert!(mode.check(&buf, 100, 8, "x").is_err());
            assert!(mode.check(&buf[..99], 100, 9, "x").is_err());
            assert_eq!(PayloadMode::parse(mode.name()), Ok(mode));
        }
        // Full mode sees a message written only in part.
        let mut buf = vec![0u8; 100];
        PayloadMode::Touch.write(&mut buf, 9);
        PayloadMode::Touch.check(&buf, 100, 9, "x").unwrap();
        let e = PayloadMode::Full.check(&buf, 100, 9, "x").unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
        let mut un = vec![MaybeUninit::new(0u8); 10];
        PayloadMode::Full.write_uninit(&mut un, 3);
        assert!(un.iter().all(|b| {
            // SAFETY: every byte was initialised above.
            let v = unsafe { b.assume_init() };
            v == 3
        }));
    }

    #[test]
    fn patterns_parse() {
        for p in Pattern::ALL {
            assert_eq!(Pattern::parse(p.name()), Ok(p));
        }
        assert!(Pattern::parse("carrier").is_err());
        assert!(!Pattern::PingPong.one_way());
        assert!(!Pattern::RequestResponse.one_way());
        assert!(Pattern::FanOut.one_way());
    }
}
