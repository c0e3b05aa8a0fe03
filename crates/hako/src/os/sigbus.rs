//! Surviving a truncated file: a SIGBUS inside one of hako's mappings
//! turns into zeros, not a dead process.
//!
//! A process that may write a service's files can shrink one while others
//! map it; the next access past the new end raises SIGBUS, whose default
//! effect ends the process. Checking the size before each access cannot
//! help (the file can shrink between the check and the load), so hako
//! installs a SIGBUS handler (once, when the first mapping is made) that
//! looks the faulting address up in a table of its mappings:
//!
//! ```text
//!   TABLE: SLOTS entries, each  [ state | start | len | lost ]
//!          state: FREE -> CLAIMED (being filled) -> USED -> FREE
//!   fault at addr in [start, start + len) of a USED entry:
//!          page = addr rounded down to its page
//!          mmap(page, start + len - page, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS)
//!          (the mapping from the faulting page on becomes private zero
//!          pages: the file ends before it, while the pages below may still
//!          be the file's), and so do the other mappings of the same file
//!          (its group), whole; lost = true for each, LOST_ANY += 1; the
//!          faulting access runs again and reads zeros
//!   any other fault: the handler the program had before, or the default
//!          (the process ends, as it would without hako)
//! ```
//!
//! Zeros are what a fresh segment holds, so the code reading it sees an
//! empty or garbled structure and its usual validation reports the peer as
//! corrupted; [`lost`] and [`lost_count`] say it plainly for the paths that
//! look. Everything the handler does is async-signal-safe: loads and
//! stores of atomics and one `mmap` call.
//!
//! A mapping is in the table from `Mapping::new` until its drop, which
//! removes it before `munmap`: an address the table names is mapped (by the
//! file or by the zeros that replaced it).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// Mappings tracked at once; beyond it a mapping works untracked (a
/// truncation of its file ends the process, as without hako).
const SLOTS: usize = 16384;

/// The page size of the mappings (4 KiB on the machines hako runs on; a
/// larger page only makes the zeroed range start lower).
const PAGE: usize = 4096;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const USED: u8 = 2;

struct Entry {
    state: AtomicU8,
    start: AtomicUsize,
    len: AtomicUsize,
    /// Mappings of one file share a group (the start of the first): a
    /// fault in one turns them all to zeros, so that whatever part of the
    /// file a reader looks at first (a "connected" word, a queue index)
    /// tells it the file is gone.
    group: AtomicUsize,
    lost: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array
const EMPTY: Entry = Entry {
    state: AtomicU8::new(FREE),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    group: AtomicUsize::new(0),
    lost: AtomicBool::new(false),
};

/// The mappings (zero pages until touched: 400 KiB of address space).
static TABLE: [Entry; SLOTS] = [EMPTY; SLOTS];
/// Entries ever claimed: the handler scans only these.
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// Mappings lost so far in this process.
static LOST_ANY: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

/// What SIGBUS did before hako's handler (set before the handler is
/// installed; the handler only reads it).
static PREVIOUS: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

/// A mapping's entry in the table, or none when the table is full.
#[derive(Debug)]
pub struct Tracked(Option<usize>);

/// Puts the mapping at `start`, `len` bytes long, in the table (installing
/// the handler first, once), in the group of the mapping that starts at
/// `group` (another mapping of the same file), or in a group of its own.
pub fn track(start: *mut u8, len: usize, group: Option<*mut u8>) -> Tracked {
    INSTALL.call_once(install);
    for (i, e) in TABLE.iter().enumerate() {
        // ORDERING: Acquire on success: the previous owner's FREE store
        // (Release) is seen before the fields are overwritten.
        if e.state
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // Relaxed (three): published by the Release store of USED.
            e.start.store(start as usize, Ordering::Relaxed);
            e.len.store(len, Ordering::Relaxed);
            e.group
                .store(group.unwrap_or(start) as usize, Ordering::Relaxed);
            e.lost.store(false, Ordering::Relaxed);
            // ORDERING: Release; the handler's Acquire load of the state
            // then sees the fields.
            e.state.store(USED, Ordering::Release);
            // Relaxed: HIGH only widens the handler's scan; the entry is
            // published by its state.
            HIGH.fetch_max(i + 1, Ordering::Relaxed);
            return Tracked(Some(i));
        }
    }
    tracing::warn!(
        slots = SLOTS,
        "every SIGBUS-tracking slot is taken; a new mapping is untracked"
    );
    Tracked(None)
}

impl Tracked {
    /// Whether a fault replaced the mapping with zeros (its file was
    /// truncated while it was mapped).
    pub fn lost(&self) -> bool {
        // ORDERING: Acquire; pairs with the handler's Release store.
        self.0.is_some_and(|i| TABLE[i].lost.load(Ordering::Acquire))
    }
}

impl Tracked {
    /// Takes the mapping out of the table: before it is unmapped.
    pub fn untrack(&mut self) {
        if let Some(i) = self.0.take() {
            // ORDERING: Release; the next claimer's Acquire sees us done.
            TABLE[i].state.store(FREE, Ordering::Release);
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.untrack();
    }
}

/// Mappings of this process replaced by zeros so far: a process-wide
/// count that the slow paths compare with what they saw before.
pub fn lost_count() -> u64 {
    // ORDERING: Acquire; pairs with the handler's Release increment.
    LOST_ANY.load(Ordering::Acquire)
}

/// Replaces `e`'s mapping from `from` to its end with private zero pages
/// and marks it lost; false if the kernel refused.
fn zero(e: &Entry, from: usize) -> bool {
    // Relaxed (both): published by the state, which the caller loaded.
    let (start, len) = (e.start.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
    // SAFETY: [from, start + len) lies in a live mapping of hako's (its
    // entry is USED until the Mapping's drop, which comes after every
    // access through it); MAP_FIXED replaces it in place with private
    // zero pages, so the faulting access can run again.
    let r = unsafe {
        libc::mmap(
            from as *mut libc::c_void,
            start + len - from,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return false;
    }
    // ORDERING: Release; pairs with the Acquire load of lost().
    e.lost.store(true, Ordering::Release);
    true
}

fn install() {
    // SAFETY: a zeroed sigaction is a valid value (no handler, no flags,
    // an empty mask once sigemptyset fills it).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `act.sa_mask` is a valid sigset_t to fill; sigaction reads
    // `act` and writes `old`, both valid for the call.
    let installed = unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0
            && PREVIOUS.set(old).is_ok()
            && libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut()) == 0
    };
    if !installed {
        tracing::warn!("cannot install the SIGBUS handler; a truncated file ends the process");
    }
}

/// The SIGBUS handler (async-signal-safe: atomics and mmap only).
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    // Relaxed: entries beyond HIGH are FREE anyway.
    let high = HIGH.load(Ordering::Relaxed);
    for e in &TABLE[..high] {
        // ORDERING: Acquire; pairs with the Release store in track().
        if e.state.load(Ordering::Acquire) != USED {
            continue;
        }
        // Relaxed (all three): published by the state.
        let (start, len) = (e.start.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
        if addr < start || addr - start >= len {
            continue;
        }
        // The file ends at or before the faulting page; the pages below it
        // may still be the file's, shared with the other processes.
        let page = addr & !(PAGE - 1);
        if !zero(e, page.max(start)) {
            break;
        }
        // The other mappings of the file, whole.
        let group = e.group.load(Ordering::Relaxed);
        for other in &TABLE[..high] {
            // ORDERING: Acquire; as above.
            if !std::ptr::eq(other, e)
                && other.state.load(Ordering::Acquire) == USED
                && other.group.load(Ordering::Relaxed) == group
            {
                zero(other, other.start.load(Ordering::Relaxed));
            }
        }
        // ORDERING: Release; pairs with the Acquire load of lost_count().
        LOST_ANY.fetch_add(1, Ordering::Release);
        return;
    }
    // Not ours (or it could not be replaced): as if hako were not there.
    match PREVIOUS.get().copied() {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the program installed this function as an
                // SA_SIGINFO handler; it gets what it would have got.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the program installed this as a plain handler.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // The default: put it back and return, so the access faults
            // again and the process ends as it would have.
            // SAFETY: a zeroed sigaction with SIG_DFL (0) is the default
            // disposition; sigaction is async-signal-safe.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            }
        }
    }
}
