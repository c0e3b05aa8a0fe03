//! What a request or response chunk holds: a header that says which
//! request it belongs to, then the payload.
//!
//! ```text
//!  +0   id: u64       generation << 32 | the client's request slot
//!  +8   flags: u64    END (a response: the stream is over, no payload),
//!                     LAST (a response with a payload, and the stream's
//!                     last: it ends the stream too),
//!                     NO_RESPONSE (a request: fire and forget)
//!  +hdr payload       hdr = 16, or the payload's alignment if larger
//! ```
//!
//! The port layer moves the chunk as bytes (element size 1, the length in
//! the descriptor counts the header too); this module turns a length into
//! a count of payload elements, and refuses lengths no honest peer sends.
//! The header is read once, as a copy, and checked before use: a peer
//! may write anything there. A slot index plus a generation, never a bare
//! index, names a request, so a response to a request whose pending
//! response was dropped can never land on the slot's next request.

use crate::port::payload::Payload;

/// Bytes of the header.
const HEADER: usize = 16;
/// A response that ends its stream (it carries no payload).
pub const END: u64 = 1;
/// A request that expects no response.
pub const NO_RESPONSE: u64 = 2;
/// A response that carries a payload and ends its stream: one message
/// where a response and an END would be two.
pub const LAST: u64 = 4;

/// How one side's messages are laid out in its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Offset of the payload: the header, padded to the payload's alignment.
    pub hdr: usize,
    /// Bytes of one payload element.
    pub size: usize,
    /// Whether the payload is a slice.
    pub slice: bool,
    /// Most payload elements of one message.
    pub max_elems: usize,
    /// Alignment of the chunk (at least the header's).
    pub align: u64,
}

impl Envelope {
    /// The envelope of payload `T` with at most `max_elems` elements (1 for
    /// a value).
    pub fn of<T: Payload + ?Sized>(max_elems: usize) -> Self {
        let t = T::details();
        let align = t.align.max(8);
        Self {
            hdr: HEADER.next_multiple_of(align as usize),
            size: t.size as usize,
            slice: t.slice,
            max_elems: if t.slice { max_elems } else { 1 },
            align,
        }
    }

    /// Bytes of the largest message; `None` if that does not fit a `u64`
    /// (a slice length no segment can hold).
    pub fn max_bytes(&self) -> Option<u64> {
        let body = self.size.checked_mul(self.max_elems)?;
        u64::try_from(self.hdr.checked_add(body)?).ok()
    }

    /// Bytes of a message of `elems` elements, at most `max_elems` (so
    /// within `max_bytes`, which the port's creation checked).
    pub fn bytes(&self, elems: usize) -> usize {
        debug_assert!(elems <= self.max_elems);
        self.hdr + self.size * elems
    }

    /// Payload elements of a message of `len` bytes (the port layer checked
    /// it against the largest), or why no honest peer sends that length.
    #[inline]
    pub fn elems(&self, len: usize) -> Result<usize, &'static str> {
        let body = len
            .checked_sub(self.hdr)
            .ok_or("message shorter than its header")?;
        if !self.slice {
            return if body == self.size {
                Ok(1)
            } else {
                Err("payload length does not match its type")
            };
        }
        if self.size == 0 {
            return if body == 0 {
                Ok(0)
            } else {
                Err("payload length does not match its type")
            };
        }
        let whole = "payload length is not a whole number of elements";
        // Most element sizes are powers of two: a mask and a shift, where a
        // division would cost tens of cycles on every message.
        if self.size.is_power_of_two() {
            if body & (self.size - 1) != 0 {
                return Err(whole);
            }
            return Ok(body >> self.size.trailing_zeros());
        }
        if body % self.size != 0 {
            return Err(whole);
        }
        Ok(body / self.size)
    }
}

/// What a received message's header and length say, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The request's slot in its client.
    pub slot: u32,
    /// The slot's generation when the request was sent.
    pub generation: u32,
    /// A response that ends its stream (no payload).
    pub end: bool,
    /// A response with a payload that also ends its stream.
    pub last: bool,
    /// A request that expects no response.
    pub no_response: bool,
    /// Payload elements.
    pub elems: usize,
}

impl Envelope {
    /// Opens a message of `len` bytes (the port layer checked it against
    /// the sender's largest) whose chunk starts at `chunk`: reads its
    /// header once and checks the length against it and the payload type.
    /// Ends of streams are taken only when `responses`.
    ///
    /// # Safety
    /// `chunk` is the first byte of a received chunk of at least `len`
    /// bytes, aligned to 8, mapped while the caller uses the result.
    #[inline]
    pub unsafe fn open(
        &self,
        chunk: *const u8,
        len: usize,
        responses: bool,
    ) -> Result<Opened, &'static str> {
        if len < self.hdr {
            return Err("message shorter than its header");
        }
        // SAFETY: the chunk holds at least the header (checked above) and
        // is aligned and mapped (the caller's promise).
        let (id, flags) = unsafe { read_header(chunk) };
        let (slot, generation) = split_id(id);
        let end = responses && flags & END != 0;
        let elems = if end { 0 } else { self.elems(len)? };
        Ok(Opened {
            slot,
            generation,
            end,
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

/// The slot and generation of a request id.
pub fn split_id(id: u64) -> (u32, u32) {
    (id as u32, (id >> 32) as u32)
}

/// Writes the header at the start of a loaned chunk.
///
/// # Safety
/// `chunk` is the first byte of a chunk loaned to the caller (16 bytes at
/// least, aligned to 8).
pub unsafe fn write_header(chunk: *mut u8, id: u64, flags: u64) {
    // SAFETY: the caller's chunk holds the header's 16 bytes, aligned to 8,
    // and nobody else writes it while it is loaned.
    unsafe {
        chunk.cast::<u64>().write(id);
        chunk.cast::<u64>().add(1).write(flags);
    }
}

/// Reads the header of a received chunk, as a copy: (id, flags).
///
/// # Safety
/// `chunk` is the first byte of a received chunk of at least the header's
/// length (the caller checked the length), aligned to 8 and mapped while
/// the sample that holds it lives.
pub unsafe fn read_header(chunk: *const u8) -> (u64, u64) {
    // SAFETY: in range and aligned (see above); a volatile read takes one
    // copy of words a misbehaving peer might still change, and any bits
    // are a valid u64.
    unsafe {
        (
            chunk.cast::<u64>().read_volatile(),
            chunk.cast::<u64>().add(1).read_volatile(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_slices_are_laid_out_after_the_header() {
        let e = Envelope::of::<u64>(1);
        assert_eq!((e.hdr, e.size, e.max_elems), (16, 8, 1));
        assert_eq!(e.elems(24), Ok(1));
        assert!(e.elems(23).is_err() && e.elems(8).is_err() && e.elems(32).is_err());
        let e = Envelope::of::<[u16]>(10);
        assert_eq!(e.max_bytes(), Some(36));
        assert_eq!(Envelope::of::<[u8]>(usize::MAX).max_bytes(), None);
        assert_eq!(e.elems(16), Ok(0));
        assert_eq!(e.elems(20), Ok(2));
        assert!(e.elems(21).is_err());
        #[derive(Clone, Copy)]
        #[repr(C)]
        struct Odd([u8; 3]);
        // SAFETY: plain bytes, fixed layout.
        unsafe impl crate::port::payload::ShmSafe for Odd {
            const TYPE_NAME: &'static str = "Odd";
        }
        let e = Envelope::of::<[Odd]>(10);
        assert_eq!(e.elems(16 + 9), Ok(3));
        assert!(e.elems(16 + 10).is_err());
        #[derive(Clone, Copy)]
        #[repr(C, align(64))]
        struct Wide([u8; 64]);
        // SAFETY: plain bytes, fixed layout.
        unsafe impl crate::port::payload::ShmSafe for Wide {
            const TYPE_NAME: &'static str = "Wide";
        }
        let e = Envelope::of::<Wide>(1);
        assert_eq!((e.hdr, e.align), (64, 64));
        let e = Envelope::of::<()>(1);
        assert_eq!(e.elems(16), Ok(1));
    }

    #[test]
    fn ids_carry_slot_and_generation() {
        assert_eq!(split_id(request_id(7, 3)), (7, 3));
        assert_eq!(split_id(request_id(u32::MAX, u32::MAX)), (u32::MAX, u32::MAX));
    }
}
