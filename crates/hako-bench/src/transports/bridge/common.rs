//! What the bridge transports share: the probes, the checks of a payload
//! that Zenoh hands over in pieces, and a free port of loopback.

use std::time::Duration;

use ::zenoh::bytes::ZBytes;
use bytes::{Bytes, BytesMut};

use crate::error::Result;
use crate::transport::{byte_sum, PayloadMode};

/// The first and last byte of a probe.
pub const PROBE: u8 = 255;

/// The first and last byte of a probe's answer.
pub const PROBE_ANSWER: u8 = 254;

/// How long [`Leader::connect`](crate::transport::Leader::connect) sends
/// probes before it gives up on the link.
pub const LINK_WATCHDOG: Duration = Duration::from_secs(30);

/// How long a follower waits for a ping: the link may take up to
/// [`LINK_WATCHDOG`] to form before the first one.
pub const FOLLOWER_WAIT: Duration = Duration::from_secs(45);

/// How long the leader waits for a probe's answer before it sends the next.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(50);

/// Why a transport measures ping-pong only.
pub(crate) const PING_PONG_ONLY: &str = "measures ping-pong only (a round trip through Zenoh)";

/// A payload's length, first byte and last byte (0 when empty).
pub(crate) fn ends(bytes: &ZBytes) -> (usize, u8, u8) {
    let mut first = None;
    let mut last = 0;
    for s in bytes.slices() {
        if let (Some(&a), Some(&b)) = (s.first(), s.last()) {
            first.get_or_insert(a);
            last = b;
        }
    }
    (bytes.len(), first.unwrap_or(0), last)
}

/// Whether `bytes` is a whole `size`-byte message tagged `t` at both ends.
pub(crate) fn tagged_as(len_first_last: (usize, u8, u8), size: usize, t: u8) -> bool {
    len_first_last == (size, t, t)
}

/// Checks a Zenoh payload as [`PayloadMode::check`] checks a slice, over
/// the payload's pieces as Zenoh received them (a large message arrives in
/// fragments; joining them would add a copy plain Zenoh does not need).
pub(crate) fn check_zbytes(
    mode: PayloadMode,
    bytes: &ZBytes,
    size: usize,
    t: u8,
    what: &str,
) -> Result<()> {
    let (len, first, last) = ends(bytes);
    if !tagged_as((len, first, last), size, t) {
        return Err(format!(
            "{what}: expected {size} bytes tagged {t}, got {len} bytes tagged {first} / {last}"
        )
        .into());
    }
    if mode == PayloadMode::Full {
        let sum: u64 = bytes.slices().map(byte_sum).sum();
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

/// The payloads one side of the plain transport puts, from one buffer it
/// keeps: each message is written into it and handed to Zenoh without a
/// copy (a `Bytes` shares its buffer). By the time the next message is
/// written, Zenoh has sent the last and let go of it, so the buffer is
/// taken back as it is, and touch mode writes two bytes of it, not `size`.
/// If Zenoh still held it, the next message would be a copy.
#[derive(Debug)]
pub(crate) struct Outgoing {
    buf: Option<Bytes>,
    payload: PayloadMode,
}

impl Outgoing {
    /// A buffer of `size` zero bytes.
    pub(crate) fn new(size: usize, payload: PayloadMode) -> Self {
        Self {
            buf: Some(Bytes::from(vec![0u8; size])),
            payload,
        }
    }

    /// The next message, tagged `t`.
    pub(crate) fn next(&mut self, t: u8) -> Bytes {
        let mut m = match self.buf.take().unwrap_or_default().try_into_mut() {
            Ok(m) => m,
            Err(shared) => BytesMut::from(&shared[..]),
        };
        self.payload.write(&mut m, t);
        let out = m.freeze();
        self.buf = Some(out.clone());
        out
    }
}

/// A free TCP port on 127.0.0.1: one the kernel picks for a socket that is
/// closed again at once. Another program may take it before the caller
/// binds it; the caller then fails with a clear error.
pub(crate) fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
    Ok(l.local_addr()?.port())
}

/// The endpoint of `port` on loopback.
pub(crate) fn endpoint(port: u16) -> String {
    format!("tcp/127.0.0.1:{port}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_reuse_their_buffer_and_check_in_pieces() {
        for mode in PayloadMode::ALL {
            let mut out = Outgoing::new(100, mode);
            let first = out.next(7);
            let ptr = first.as_ptr();
            check_zbytes(mode, &ZBytes::from(first), 100, 7, "x").unwrap();
            // Zenoh let go of it: the same buffer again, retagged.
            let second = out.next(9);
            assert_eq!(second.as_ptr(), ptr);
            // Still held: a copy, with the right tag.
            let third = out.next(11);
            assert_ne!(third.as_ptr(), ptr);
            let z = ZBytes::from(third);
            check_zbytes(mode, &z, 100, 11, "x").unwrap();
            assert!(check_zbytes(mode, &z, 100, 12, "x").is_err());
            assert!(check_zbytes(mode, &z, 99, 11, "x").is_err());
            drop(second);
        }
        // A message in two pieces, as Zenoh hands a fragmented one over.
        let mut w = ZBytes::writer();
        w.append(ZBytes::from(vec![5u8; 10]));
        w.append(ZBytes::from(vec![5u8; 6]));
        let z = w.finish();
        assert_eq!(z.slices().count(), 2);
        check_zbytes(PayloadMode::Full, &z, 16, 5, "x").unwrap();
        assert!(tagged_as(ends(&z), 16, 5));
        assert!(!tagged_as(ends(&z), 16, PROBE));
        assert_eq!(ends(&ZBytes::new()), (0, 0, 0));
    }
}
