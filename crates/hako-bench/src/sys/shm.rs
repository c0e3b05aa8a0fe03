//! A small shared mapping of a tmpfs file, for the floors.
//!
//! Kept apart from hako's own OS layer on purpose: the floor must not change
//! when the library does.

use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};

use rustix::fs::{ftruncate, open, Mode, OFlags};
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};

/// A read-write shared mapping of a whole file; unmapped on drop.
#[derive(Debug)]
pub struct SharedRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory shared with other processes; it is only
// reached through the atomics handed out by `atomic_u64`, `atomic_u32` and
// `atomic_u8`.
unsafe impl Send for SharedRegion {}
// SAFETY: as above.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// Creates `path` (which must not exist) with `len` zero bytes and maps it.
    pub fn create(path: &Path, len: usize) -> io::Result<Self> {
        let fd = open(
            path,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        ftruncate(&fd, len as u64)?;
        Self::map(&fd, len)
    }

    /// Maps the existing file `path`, which must hold at least `len` bytes.
    pub fn open(path: &Path, len: usize) -> io::Result<Self> {
        let fd = open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())?;
        let size = rustix::fs::fstat(&fd)?.st_size;
        if u64::try_from(size).unwrap_or(0) < len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} holds {size} bytes, {len} expected", path.display()),
            ));
        }
        Self::map(&fd, len)
    }

    fn map(fd: &rustix::fd::OwnedFd, len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty region"));
        }
        // SAFETY: a fresh shared mapping at an address the kernel picks (null
        // hint), so no existing memory is affected; `Drop` unmaps it.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )?
        };
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null pointer"))?;
        Ok(Self { ptr, len })
    }

    /// The `AtomicU64` at byte `offset`.
    ///
    /// # Panics
    /// If `offset` is not 8-byte aligned or the word is out of range.
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(offset & 7 == 0 && offset + 8 <= self.len);
        // SAFETY: in range and aligned (the mapping is page aligned; checked
        // above); the memory lives as long as `self`, zero-initialised by the
        // kernel, and every process touches it only through atomics.
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU64>() }
    }
}

impl SharedRegion {
    /// The `AtomicU32` at byte `offset` (usable as a futex word shared
    /// between processes).
    ///
    /// # Panics
    /// If `offset` is not 4-byte aligned or the word is out of range.
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset & 3 == 0 && offset + 4 <= self.len);
        // SAFETY: in range and aligned (the mapping is page aligned; checked
        // above); the memory lives as long as `self`, zero-initialised by the
        // kernel, and every process touches it only through atomics.
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// The byte at `offset`, as an atomic (a plain byte load or store on
    /// x86-64, but sound while another process writes the same memory).
    ///
    /// # Panics
    /// If `offset` is out of range.
    pub fn atomic_u8(&self, offset: usize) -> &AtomicU8 {
        assert!(offset < self.len);
        // SAFETY: in range (checked above); the memory lives as long as
        // `self`, is initialised (zero-filled by the kernel) and is only
        // accessed through atomics.
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU8>() }
    }

    /// `len` bytes at `offset`, for a transport that hands them over by a
    /// protocol of its own (the reference's full payload mode).
    ///
    /// # Safety
    /// Until the returned slice is dropped, no other process or thread
    /// writes those bytes (the protocol gives them to the caller).
    ///
    /// # Panics
    /// If the range is out of the mapping.
    #[allow(clippy::mut_from_ref)] // shared memory: the caller's protocol guards it
    pub unsafe fn bytes_mut(&self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        // SAFETY: in range (checked above), initialised (zero-filled by
        // the kernel), exclusively the caller's (its promise).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), len) }
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: empty regions are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: we mapped exactly this range in `map` and hand out no
        // reference that outlives `self`.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
