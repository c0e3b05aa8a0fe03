//! Fixed-capacity strings and vectors: variable-length text and lists
//! inside a fixed-size, shared-memory-safe payload.
//!
//! Both keep their length beside an inline array. Every bit pattern is a
//! valid value of them (integers and `ShmSafe` elements), so they are
//! [`ShmSafe`]; a length another process wrote is checked when read
//! ([`FixedString::as_str`], [`FixedVec::as_slice`]): a misbehaving
//! writer yields an error, never an out-of-bounds read or invalid UTF-8.

use super::payload::ShmSafe;

/// Why a fixed-capacity value cannot be made or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FixedError {
    /// More than the capacity.
    #[error("{len} items do not fit a capacity of {capacity}")]
    TooLong {
        /// What was given.
        len: usize,
        /// The capacity.
        capacity: usize,
    },
    /// The stored length is above the capacity (the writer broke it).
    #[error("the stored length {len} is above the capacity {capacity}")]
    BadLength {
        /// The stored length.
        len: u32,
        /// The capacity.
        capacity: usize,
    },
    /// The stored bytes are not UTF-8 (the writer broke them).
    #[error("the stored text is not UTF-8")]
    NotUtf8,
}

/// A UTF-8 string of at most `N` bytes, stored inline (`#[repr(C)]`: a
/// `u32` length, then `N` bytes), for payloads:
///
/// ```
/// use hako::{FixedString, ShmSafe};
/// #[derive(Debug, Clone, Copy, ShmSafe)]
/// #[repr(C)]
/// struct Status {
///     code: u32,
///     text: FixedString<60>,
/// }
/// let s = Status { code: 7, text: FixedString::new("overheating")? };
/// assert_eq!(s.text.as_str()?, "overheating");
/// # Ok::<(), hako::FixedError>(())
/// ```
#[derive(Clone, Copy)]
#[repr(C)]
pub struct FixedString<const N: usize> {
    len: u32,
    bytes: [u8; N],
}

// SAFETY: `#[repr(C)]`, an integer and a byte array: no pointers, no Drop,
// and every bit pattern is a value (the length is checked on read).
unsafe impl<const N: usize> ShmSafe for FixedString<N> {
    const TYPE_NAME: &'static str = "hako::FixedString";
    fn type_name() -> String {
        format!("hako::FixedString<{N}>")
    }
}

impl<const N: usize> FixedString<N> {
    /// The empty string.
    pub const fn empty() -> Self {
        Self {
            len: 0,
            bytes: [0; N],
        }
    }

    /// `s`, if it fits `N` bytes.
    pub fn new(s: &str) -> Result<Self, FixedError> {
        let mut out = Self::empty();
        if s.len() > N || u32::try_from(s.len()).is_err() {
            return Err(FixedError::TooLong {
                len: s.len(),
                capacity: N,
            });
        }
        out.bytes[..s.len()].copy_from_slice(s.as_bytes());
        out.len = s.len() as u32;
        Ok(out)
    }

    /// The text, checked: its stored length within `N` and its bytes
    /// UTF-8.
    pub fn as_str(&self) -> Result<&str, FixedError> {
        let len = self.len as usize;
        if len > N {
            return Err(FixedError::BadLength {
                len: self.len,
                capacity: N,
            });
        }
        std::str::from_utf8(&self.bytes[..len]).map_err(|_| FixedError::NotUtf8)
    }

    /// The capacity in bytes.
    pub const fn capacity(&self) -> usize {
        N
    }
}

impl<const N: usize> Default for FixedString<N> {
    fn default() -> Self {
        Self::empty()
    }
}

impl<const N: usize> PartialEq for FixedString<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<const N: usize> std::fmt::Debug for FixedString<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_str() {
            Ok(s) => write!(f, "{s:?}"),
            Err(e) => write!(f, "<{e}>"),
        }
    }
}

impl<const N: usize> TryFrom<&str> for FixedString<N> {
    type Error = FixedError;
    fn try_from(s: &str) -> Result<Self, FixedError> {
        Self::new(s)
    }
}

/// A list of at most `N` elements of `T`, stored inline (`#[repr(C)]`: a
/// `u32` length, then `N` elements; those past the length hold whatever
/// was last written there).
///
/// ```
/// use hako::FixedVec;
/// let mut v: FixedVec<u16, 8> = FixedVec::new();
/// v.push(3)?;
/// v.push(4)?;
/// assert_eq!(v.as_slice()?, &[3, 4]);
/// # Ok::<(), hako::FixedError>(())
/// ```
#[derive(Clone, Copy)]
#[repr(C)]
pub struct FixedVec<T: ShmSafe + Copy + Default, const N: usize> {
    len: u32,
    items: [T; N],
}

// SAFETY: `#[repr(C)]`, an integer and an array of ShmSafe elements: no
// pointers, no Drop, every bit pattern a value (the length is checked on
// read) but those the elements' is_valid refuses.
unsafe impl<T: ShmSafe + Copy + Default, const N: usize> ShmSafe for FixedVec<T, N> {
    const TYPE_NAME: &'static str = "hako::FixedVec";
    fn type_name() -> String {
        format!("hako::FixedVec<{}, {N}>", T::type_name())
    }
    const CHECKED: bool = T::CHECKED;
    unsafe fn is_valid(p: *const u8) -> bool {
        // SAFETY: the items lie inside the value (the caller's promise
        // covers all of it); every slot is checked, used or not, since
        // all of them are values of the array.
        unsafe { <[T; N]>::is_valid(p.add(std::mem::offset_of!(Self, items))) }
    }
}

impl<T: ShmSafe + Copy + Default, const N: usize> FixedVec<T, N> {
    /// The empty list.
    pub fn new() -> Self {
        Self {
            len: 0,
            items: [T::default(); N],
        }
    }

    /// A copy of `items`, if they fit.
    pub fn from_slice(items: &[T]) -> Result<Self, FixedError> {
        let mut out = Self::new();
        if items.len() > N || u32::try_from(items.len()).is_err() {
            return Err(FixedError::TooLong {
                len: items.len(),
                capacity: N,
            });
        }
        out.items[..items.len()].copy_from_slice(items);
        out.len = items.len() as u32;
        Ok(out)
    }

    /// Appends `item`, if there is room.
    pub fn push(&mut self, item: T) -> Result<(), FixedError> {
        let len = self.as_slice()?.len();
        if len == N {
            return Err(FixedError::TooLong {
                len: len + 1,
                capacity: N,
            });
        }
        self.items[len] = item;
        self.len += 1;
        Ok(())
    }

    /// The elements, checked: the stored length within `N`.
    pub fn as_slice(&self) -> Result<&[T], FixedError> {
        let len = self.len as usize;
        if len > N {
            return Err(FixedError::BadLength {
                len: self.len,
                capacity: N,
            });
        }
        Ok(&self.items[..len])
    }

    /// The capacity in elements.
    pub const fn capacity(&self) -> usize {
        N
    }
}

impl<T: ShmSafe + Copy + Default, const N: usize> Default for FixedVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ShmSafe + Copy + Default + PartialEq, const N: usize> PartialEq for FixedVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: ShmSafe + Copy + Default + std::fmt::Debug, const N: usize> std::fmt::Debug
    for FixedVec<T, N>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_slice() {
            Ok(s) => f.debug_list().entries(s).finish(),
            Err(e) => write!(f, "<{e}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_fit_or_say_why() {
        let s = FixedString::<8>::new("héllo").unwrap();
        assert_eq!(s.as_str(), Ok("héllo"));
        assert_eq!(
            FixedString::<4>::new("hello"),
            Err(FixedError::TooLong {
                len: 5,
                capacity: 4
            })
        );
        assert_eq!(FixedString::<4>::default().as_str(), Ok(""));
        assert_eq!(FixedString::<16>::type_name(), "hako::FixedString<16>");
    }

    #[test]
    fn a_broken_writer_yields_errors_not_bad_reads() {
        let mut s = FixedString::<4>::new("abc").unwrap();
        s.len = 99;
        assert_eq!(
            s.as_str(),
            Err(FixedError::BadLength {
                len: 99,
                capacity: 4
            })
        );
        let mut s = FixedString::<4>::new("abc").unwrap();
        s.bytes[1] = 0xff;
        assert_eq!(s.as_str(), Err(FixedError::NotUtf8));
        let mut v = FixedVec::<u32, 2>::from_slice(&[1, 2]).unwrap();
        assert_eq!(v.push(3), Err(FixedError::TooLong { len: 3, capacity: 2 }));
        v.len = 5;
        assert!(v.as_slice().is_err());
        assert_eq!(FixedVec::<u16, 3>::type_name(), "hako::FixedVec<u16, 3>");
    }
}
