//! Shared-memory files and their mappings.
//!
//! Segments are ordinary files on a tmpfs (the domain root, by default under
//! `/dev/shm`), made and opened relative to their directory (`os::dir`).
//! Their space is reserved with `fallocate` when they are created, so a full
//! tmpfs is an error at creation, never a `SIGBUS` later. This module says
//! who may use them ([`Access`], [`distrust`]) and maps them.

use std::io;
use std::os::fd::AsFd;
use std::ptr::NonNull;

use rustix::fs::{fchmod, fchown, fstat, Gid, Mode};
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};

/// Permissions of the files hako creates by default: owner read/write only.
pub const FILE_MODE: u32 = 0o600;

/// Who may use the files of a domain: the owner only (the default), or also
/// the members of one group (files `0660`, directories `2770`, so that new
/// files inherit the group). Set through [`Config::group`](crate::Config::group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// The group that shares the domain, if any.
    pub group: Option<u32>,
}

impl Access {
    /// Mode of files.
    pub fn file_mode(&self) -> u32 {
        if self.group.is_some() {
            0o660
        } else {
            FILE_MODE
        }
    }

    /// Mode of directories.
    pub fn dir_mode(&self) -> u32 {
        if self.group.is_some() {
            0o2770
        } else {
            0o700
        }
    }

    /// Gives a file or directory just made its mode (whatever the umask)
    /// and group.
    pub fn apply(&self, fd: impl AsFd, dir: bool) -> io::Result<()> {
        if let Some(g) = self.group {
            fchown(&fd, None, Some(Gid::from_raw(g)))?;
        }
        let mode = if dir {
            self.dir_mode()
        } else {
            self.file_mode()
        };
        fchmod(&fd, Mode::from_raw_mode(mode))?;
        Ok(())
    }
}

/// Size of an open file.
pub fn file_size(fd: &impl AsFd) -> io::Result<u64> {
    Ok(fstat(fd)?.st_size as u64)
}

/// Why an entry owned by `uid`/`gid` with `mode` is not to be trusted
/// (see `os::dir`); `group_owner`: a member of the configured group
/// may own it (files in a shared domain), else only this user or root.
pub fn distrust(uid: u32, gid: u32, mode: u32, access: Access, group_owner: bool) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    let shared = access.group == Some(gid);
    if uid != me && uid != 0 && !(group_owner && shared) {
        return Some(format!(
            "it belongs to uid {uid}, neither this user (uid {me}) nor root{}, who could swap \
             its files; use a directory of your own (HAKO_ROOT), or have its owner share \
             the domain with a group (the config's `group`)",
            if group_owner {
                ", nor a member of the domain's group"
            } else {
                ""
            }
        ));
    }
    let mode = mode & 0o7777;
    if mode & 0o002 != 0 {
        return Some(format!(
            "every user may write to it (mode {mode:04o}) and could swap its files; \
             remove that right (chmod o-w)"
        ));
    }
    if mode & 0o020 != 0 && !shared {
        return Some(format!(
            "group {gid} may write to it (mode {mode:04o}) but the config shares the domain \
             with {}; name that group in the config's `group`, or remove the right (chmod g-w)",
            access
                .group
                .map_or_else(|| "no group".to_owned(), |g| format!("group {g}"))
        ));
    }
    None
}

/// A shared mapping of part of a file. Unmapped on drop. Tracked by the
/// SIGBUS handler ([`sigbus`](super::sigbus)): if its file is truncated,
/// the lost range reads zeros and [`lost`](Self::lost) says so.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    tracked: super::sigbus::Tracked,
}

// SAFETY: a Mapping is plain memory shared with other processes; all access
// goes through raw pointers and atomics whose users uphold the protocols.
unsafe impl Send for Mapping {}
// SAFETY: as above; the mapping itself has no interior state.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` starting at `offset` (page aligned).
    pub fn new(fd: &impl AsFd, offset: u64, len: u64, writable: bool) -> io::Result<Self> {
        Self::new_beside(fd, offset, len, writable, None)
    }

    /// [`new`](Self::new), for another part of the file `other` maps: if
    /// the file is truncated, both read zeros once either faults.
    pub fn new_beside(
        fd: &impl AsFd,
        offset: u64,
        len: u64,
        writable: bool,
        other: Option<&Mapping>,
    ) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mapping too large"))?;
        let prot = if writable {
            ProtFlags::READ | ProtFlags::WRITE
        } else {
            ProtFlags::READ
        };
        // SAFETY: we ask the kernel for a fresh mapping (null hint), so no
        // existing memory is affected; the result is owned by the Mapping.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                prot,
                // POPULATE: set up the page tables now. The file's pages
                // were allocated by fallocate when it was created, so this
                // takes no memory, only time here instead of a page fault on
                // the first touch of every 4 KiB page later, in the middle of
                // a send or a receive (about 1 ms per 4 MiB chunk).
                MapFlags::SHARED | MapFlags::POPULATE,
                fd,
                offset,
            )?
        };
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null pointer"))?;
        let tracked =
            super::sigbus::track(ptr.as_ptr(), len, writable, other.map(|m| &m.tracked));
        Ok(Self { ptr, len, tracked })
    }

    /// Whether the file was truncated under the mapping (an access past
    /// its new end faulted): the mapping now holds zeros, not the file.
    pub fn lost(&self) -> bool {
        self.tracked.lost()
    }

    /// The flag [`lost`](Self::lost) reads, for the hot path's
    /// `sigbus::touch_then_lost`; set (never cleared) while the mapping
    /// lives.
    pub fn lost_flag(&self) -> &'static std::sync::atomic::AtomicBool {
        self.tracked.lost_flag()
    }

    /// Start of the mapping.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// A reference to the `AtomicU64` at `offset`.
    ///
    /// # Panics
    /// If `offset` is out of range or not 8-byte aligned; offsets come from a
    /// validated geometry, never straight from shared memory.
    pub fn atomic(&self, offset: u64) -> &std::sync::atomic::AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.len as u64);
        // SAFETY: in range and aligned (checked above; mappings are page
        // aligned); the memory lives as long as `self`, and AtomicU64 may alias
        // memory that other processes access atomically.
        unsafe { &*self.ptr.as_ptr().add(offset as usize).cast() }
    }

    /// A slice of `count` atomics starting at `offset`.
    ///
    /// # Panics
    /// As [`Mapping::atomic`].
    pub fn atomics(&self, offset: u64, count: u64) -> &[std::sync::atomic::AtomicU64] {
        assert!(offset % 8 == 0 && offset + 8 * count <= self.len as u64);
        // SAFETY: as in `atomic`, for the whole range.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().add(offset as usize).cast(),
                count as usize,
            )
        }
    }

    /// [`Mapping::atomic`] with the lifetime detached from `self`, for views
    /// stored next to the mapping they point into.
    ///
    /// # Safety
    /// The reference must not be used after this mapping is dropped.
    pub unsafe fn atomic_detached(&self, offset: u64) -> &'static std::sync::atomic::AtomicU64 {
        // SAFETY: the memory stays mapped until `self` drops; the caller
        // promises not to use the reference past that.
        unsafe { &*std::ptr::from_ref(self.atomic(offset)) }
    }

    /// [`Mapping::atomics`] with the lifetime detached from `self`.
    ///
    /// # Safety
    /// As [`Mapping::atomic_detached`].
    pub unsafe fn atomics_detached(
        &self,
        offset: u64,
        count: u64,
    ) -> &'static [std::sync::atomic::AtomicU64] {
        // SAFETY: as in atomic_detached.
        unsafe { &*std::ptr::from_ref(self.atomics(offset, count)) }
    }

    /// Copies a `T` out of the mapping at `offset` (for headers, which are
    /// then validated).
    ///
    /// # Panics
    /// If the range is outside the mapping.
    pub fn read<T: Copy>(&self, offset: u64) -> T {
        assert!(offset + std::mem::size_of::<T>() as u64 <= self.len as u64);
        assert!(offset % std::mem::align_of::<T>() as u64 == 0);
        // SAFETY: in range and aligned (asserted; the mapping is page aligned);
        // volatile keeps the compiler from assuming the memory is stable.
        // Callers only use plain-old-data T for which every bit pattern is
        // valid (integers).
        unsafe {
            std::ptr::read_volatile(
                self.ptr
                    .as_ptr()
                    .add(offset as usize)
                    .cast::<T>()
                    .cast_const(),
            )
        }
    }

    /// Writes a `T` into the mapping at `offset`.
    ///
    /// # Panics
    /// If the range is outside the mapping.
    pub fn write<T: Copy>(&self, offset: u64, value: T) {
        assert!(offset + std::mem::size_of::<T>() as u64 <= self.len as u64);
        assert!(offset % std::mem::align_of::<T>() as u64 == 0);
        // SAFETY: in range and aligned (asserted); the mapping is writable when callers write (they
        // own the segment they initialise).
        unsafe {
            std::ptr::write_volatile(self.ptr.as_ptr().add(offset as usize).cast::<T>(), value)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Out of the SIGBUS handler's table before the range can be reused.
        self.tracked.untrack();
        // SAFETY: ptr/len describe a mapping we created and nobody else unmaps;
        // every reference into it borrows `self`, so none outlives this call.
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
