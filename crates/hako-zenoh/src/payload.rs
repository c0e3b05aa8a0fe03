//! Payloads as bytes: a bridged port opens its service as `[u8]` with the
//! service's real type given at run time, so a message is `len` elements
//! of the type's size, and that many bytes travel.

use hako::PayloadDescription;

/// A payload type, as far as moving its bytes goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Bytes of one element (of the value, for a type that is no slice).
    pub size: usize,
    /// Whether a message holds any number of elements.
    pub slice: bool,
}

impl Shape {
    pub(crate) fn of(p: &PayloadDescription) -> Option<Self> {
        Some(Self {
            size: usize::try_from(p.size).ok()?,
            slice: p.slice,
        })
    }

    /// Elements in a message of `n` bytes, if `n` bytes make a message:
    /// exactly the size, or for a slice a whole number of elements.
    pub(crate) fn elements(&self, n: usize) -> Option<usize> {
        if self.slice {
            match self.size {
                0 => (n == 0).then_some(0),
                s => (n % s == 0).then_some(n / s),
            }
        } else {
            (n == self.size).then_some(1)
        }
    }
}

/// Copies `bytes` to `dst`, the payload of a loan.
///
/// # Safety
/// `dst` is writable for `bytes.len()` bytes (a loan of the elements
/// [`Shape::elements`] counted in them) and does not overlap `bytes`.
pub(crate) unsafe fn copy_in(dst: *mut u8, bytes: &[u8]) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
}

/// The `len * shape.size` bytes at `src`, the payload of a received
/// message of `len` elements.
///
/// # Safety
/// `src` points to `len` elements of `shape.size` bytes that stay valid
/// and unwritten during the call (a sample or request held by the caller).
pub(crate) unsafe fn copy_out(src: *const u8, len: usize, shape: Shape) -> Vec<u8> {
    let n = len * shape.size;
    let mut out = Vec::with_capacity(n);
    // SAFETY: the caller's promise for `src`; `out` has room for `n` bytes
    // and is our own memory; after the copy all `n` bytes are initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), n);
        out.set_len(n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_fits_its_shape() {
        let value = Shape {
            size: 8,
            slice: false,
        };
        assert_eq!(value.elements(8), Some(1));
        assert_eq!(value.elements(16), None);
        let slice = Shape {
            size: 4,
            slice: true,
        };
        assert_eq!(slice.elements(12), Some(3));
        assert_eq!(slice.elements(0), Some(0));
        assert_eq!(slice.elements(13), None);
        let zst = Shape {
            size: 0,
            slice: true,
        };
        assert_eq!(zst.elements(0), Some(0));
        assert_eq!(zst.elements(1), None);
    }

    #[test]
    fn bytes_copy_both_ways() {
        let shape = Shape {
            size: 2,
            slice: true,
        };
        let mut dst = [0u8; 6];
        // SAFETY: `dst` has room for the six bytes, and is another array.
        unsafe { copy_in(dst.as_mut_ptr(), &[1, 2, 3, 4, 5, 6]) };
        // SAFETY: `dst` holds 3 elements of 2 bytes.
        assert_eq!(
            unsafe { copy_out(dst.as_ptr(), 3, shape) },
            vec![1, 2, 3, 4, 5, 6]
        );
    }
}
