//! What says which request a message belongs to, and how a message's
//! length turns into payload elements.
//!
//! Requests and responses travel in tagged rings (see `core::ring`): the
//! two words of a descriptor's tag are the message's header, and the chunk
//! holds the payload alone, from its first byte. So a payload of up to 64
//! bytes is one cache line to write and to fetch, as in publish/subscribe,
//! and the header costs no line of its own.
//!
//! ```text
//!  tag word 0   id: u64       generation << 32 | the client's request slot
//!  tag word 1   flags: u64    END (a response: the stream is over, no payload),
//!                             LAST (a response with a payload, and the stream's
//!                             last: it ends the stream too),
//!                             NO_RESPONSE (a request: fire and forget)
//!  chunk +0     payload       (its length, in bytes, in the descriptor)
//! ```
//!
//! The port layer moves the chunk as bytes (element size 1); this module
//! turns a length into a count of payload elements, and refuses lengths no
//! honest peer sends. The tag is a copy taken from the ring slot, checked
//! before use: a peer may write anything there. A slot index plus a
//! generation, never a bare index, names a request, so a response to a
//! request whose pending response was dropped can never land on the
//! slot's next request.

use crate::core::ring::Tag;
use crate::port::payload::Payload;
use crate::port::sender::settings::Withdrawal;

/// A response that ends its stream (it carries no payload).
pub const END: u64 = 1;
/// A request that expects no response.
pub const NO_RESPONSE: u64 = 2;
/// A response that carries a payload and ends its stream: one message
/// where a response and an END would be two.
pub const LAST: u64 = 4;
/// With END: the server gave up on the request (a bridge whose remote
/// server never answered); the client's next receive reports it.
pub const ABORTED: u64 = 8;

/// How one side's messages are laid out in its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Bytes of one payload element.
    pub size: usize,
    /// Whether the payload is a slice.
    pub slice: bool,
    /// Most payload elements of one message.
    pub max_elems: usize,
    /// Alignment of the payload (chunks are aligned at least as much).
    pub align: u64,
}

impl Envelope {
    /// The envelope of payload `T` with at most `max_elems` elements (1 for
    /// a value).
    pub fn of<T: Payload + ?Sized>(max_elems: usize) -> Self {
        let t = T::details();
        Self {
            size: t.size as usize,
            slice: t.slice,
            max_elems: if t.slice { max_elems } else { 1 },
            align: t.align.max(1),
        }
    }

    /// The envelope of the payload a service recorded (`T`'s, checked when
    /// the service was opened, or one described at run time), with at most
    /// `max_elems` elements (1 for a value).
    pub fn described(d: &crate::port::payload::PayloadDescription, max_elems: usize) -> Self {
        Self {
            size: usize::try_from(d.size).unwrap_or(usize::MAX),
            slice: d.slice,
            max_elems: if d.slice { max_elems } else { 1 },
            align: d.align.max(1),
        }
    }

    /// Bytes a chunk must hold: those of the largest message, and at least
    /// one (an end of stream has no payload, and a payload may have no
    /// bytes, but a pool's chunks do); `None` if that does not fit a `u64`
    /// (a slice length no segment can hold).
    pub fn max_bytes(&self) -> Option<u64> {
        let body = self.size.checked_mul(self.max_elems)?;
        u64::try_from(body.max(1)).ok()
    }

    /// Bytes of a message of `elems` elements, at most `max_elems` (so
    /// within `max_bytes`, which the port's creation checked).
    #[inline]
    pub fn bytes(&self, elems: usize) -> usize {
        debug_assert!(elems <= self.max_elems);
        self.size * elems
    }

    /// Payload elements of a message of `len` bytes (the port layer checked
    /// it against the largest), or why no honest peer sends that length.
    #[inline]
    pub fn elems(&self, len: usize) -> Result<usize, &'static str> {
        if !self.slice {
            return if len == self.size {
                Ok(1)
            } else {
                Err("payload length does not match its type")
            };
        }
        if self.size == 0 {
            return if len == 0 {
                Ok(0)
            } else {
                Err("payload length does not match its type")
            };
        }
        let whole = "payload length is not a whole number of elements";
        // Most element sizes are powers of two: a mask and a shift, where a
        // division would cost tens of cycles on every message.
        if self.size.is_power_of_two() {
            if len & (self.size - 1) != 0 {
                return Err(whole);
            }
            return Ok(len >> self.size.trailing_zeros());
        }
        if len % self.size != 0 {
            return Err(whole);
        }
        Ok(len / self.size)
    }
}

/// What a received message's tag and length say, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The request's slot in its client.
    pub slot: u32,
    /// The slot's generation when the request was sent.
    pub generation: u32,
    /// A response that ends its stream (no payload).
    pub end: bool,
    /// An end that says the server gave up on the request.
    pub aborted: bool,
    /// A response with a payload that also ends its stream.
    pub last: bool,
    /// A request that expects no response.
    pub no_response: bool,
    /// Payload elements.
    pub elems: usize,
}

impl Envelope {
    /// Opens a message of `len` bytes (the port layer checked it against
    /// the sender's largest) that came with `tag`: checks the length
    /// against the flags and the payload type. Ends of streams are taken
    /// only when `responses`.
    #[inline]
    pub fn open(&self, tag: Tag, len: usize, responses: bool) -> Result<Opened, &'static str> {
        let [id, flags] = tag;
        let (slot, generation) = split_id(id);
        let end = responses && flags & END != 0;
        let elems = if end { 0 } else { self.elems(len)? };
        Ok(Opened {
            slot,
            generation,
            end,
            aborted: end && flags & ABORTED != 0,
            last: responses && !end && flags & LAST != 0,
            no_response: !responses && flags & NO_RESPONSE != 0,
            elems,
        })
    }
}

/// A request's id: its client's slot and the slot's generation.
pub fn request_id(slot: u32, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(slot)
}

/// How the client of request `id` says it no longer wants the responses
/// (it dropped the pending response before the stream ended): 1 + the
/// generation in the withdrawal word of the request's slot.
#[inline]
pub(crate) fn withdrawal(id: u64) -> Withdrawal {
    let (slot, generation) = split_id(id);
    Withdrawal {
        key: slot,
        value: u64::from(generation) + 1,
    }
}

/// The slot and generation of a request id.
pub fn split_id(id: u64) -> (u32, u32) {
    (id as u32, (id >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_slices_fill_their_chunks_from_the_first_byte() {
        let e = Envelope::of::<u64>(1);
        assert_eq!((e.size, e.max_elems, e.align), (8, 1, 8));
        assert_eq!(e.elems(8), Ok(1));
        assert!(e.elems(7).is_err() && e.elems(0).is_err() && e.elems(16).is_err());
        let e = Envelope::of::<[u16]>(10);
        assert_eq!(e.max_bytes(), Some(20));
        assert_eq!(Envelope::of::<[u8]>(usize::MAX).max_bytes(), Some(u64::MAX));
        assert_eq!(Envelope::of::<[u16]>(usize::MAX).max_bytes(), None);
        assert_eq!(e.elems(0), Ok(0));
        assert_eq!(e.elems(4), Ok(2));
        assert!(e.elems(5).is_err());
        #[derive(Clone, Copy)]
        #[repr(C)]
        struct Odd([u8; 3]);
        // SAFETY: plain bytes, fixed layout.
        unsafe impl crate::port::payload::ShmSafe for Odd {
            const TYPE_NAME: &'static str = "Odd";
        }
        let e = Envelope::of::<[Odd]>(10);
        assert_eq!(e.elems(9), Ok(3));
        assert!(e.elems(10).is_err());
        #[derive(Clone, Copy)]
        #[repr(C, align(64))]
        struct Wide([u8; 64]);
        // SAFETY: plain bytes, fixed layout.
        unsafe impl crate::port::payload::ShmSafe for Wide {
            const TYPE_NAME: &'static str = "Wide";
        }
        assert_eq!(Envelope::of::<Wide>(1).align, 64);
        // A payload of no bytes still needs a chunk of one.
        let e = Envelope::of::<()>(1);
        assert_eq!((e.elems(0), e.max_bytes()), (Ok(1), Some(1)));
    }

    #[test]
    fn the_tag_says_which_request_and_what_kind_of_message() {
        let e = Envelope::of::<u32>(1);
        let m = e.open([request_id(7, 3), LAST], 4, true).unwrap();
        assert_eq!((m.slot, m.generation, m.last, m.end, m.elems), (7, 3, true, false, 1));
        // An end carries no payload, whatever the length says.
        let m = e.open([request_id(7, 3), END | LAST], 0, true).unwrap();
        assert_eq!((m.end, m.last, m.elems), (true, false, 0));
        // Requests know neither ends nor last responses; responses are
        // never fire and forget.
        let m = e.open([1, END | LAST | NO_RESPONSE], 4, false).unwrap();
        assert_eq!((m.end, m.last, m.no_response), (false, false, true));
        assert!(!e.open([1, NO_RESPONSE], 4, true).unwrap().no_response);
        assert!(e.open([1, 0], 3, true).is_err());
    }

    #[test]
    fn ids_carry_slot_and_generation() {
        assert_eq!(split_id(request_id(7, 3)), (7, 3));
        assert_eq!(split_id(request_id(u32::MAX, u32::MAX)), (u32::MAX, u32::MAX));
    }
}
