//! Surviving a truncated file: a SIGBUS inside one of hako's mappings
//! turns into zeros, not a dead process.
//!
//! A process that may write a service's files can shrink one while others
//! map it; the next access past the new end raises SIGBUS (`BUS_ADRERR`),
//! whose default effect ends the process. Checking the size before each
//! access cannot help (the file can shrink between the check and the load),
//! so hako installs a SIGBUS handler (once, when the first mapping is made)
//! that looks the faulting address up in a table of its mappings:
//!
//! ```text
//!   TABLE: SLOTS entries, each [ state | start | len | group | writable | zeroed_from | lost ]
//!          state: FREE -> CLAIMED (being filled) -> USED <-> BUSY (a handler
//!                 reads and replaces it) ; USED -> FREE (untrack, which
//!                 waits while BUSY)
//!   a BUS_ADRERR fault at addr in [start, zeroed_from) of a USED entry:
//!          page = addr rounded down to the page size
//!          mmap(page, start + len - page, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS)
//!          (from the faulting page on, private zero pages: the file ends
//!          before it, while the pages below may still be the file's), and
//!          the same over the whole of the other mappings of its group (the
//!          other parts of the same file); lost = true for each,
//!          LOST_ANY += 1; the faulting access runs again and reads zeros
//!   anything else (another si_code, a signal sent by a process, an
//!   address hako does not map or has zeroed already): the handler the
//!   program had before, or the default (the process ends, as it would
//!   without hako)
//! ```
//!
//! Zeros are what a fresh segment holds, so the code reading it sees an
//! empty or garbled structure and its usual validation reports the peer as
//! corrupted; [`Tracked::lost`] and [`lost_count`] say it plainly for the
//! paths that look. Everything the handler does is async-signal-safe:
//! atomics, `mmap`, `sigaction`, `raise`, and errno saved and restored.
//!
//! A mapping is in the table from `Mapping::new` until its drop, which takes
//! it out (waiting for a handler busy with it) before `munmap`: an address
//! the table names is mapped, by the file or by the zeros that replaced it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// Mappings tracked at once; beyond it a mapping works untracked (a
/// truncation of its file ends the process, as without hako).
const SLOTS: usize = 16384;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const USED: u8 = 2;
const BUSY: u8 = 3;

struct Entry {
    state: AtomicU8,
    start: AtomicUsize,
    len: AtomicUsize,
    /// Mappings of one file share a group (an id from `GROUPS`): a fault in
    /// one turns them all to zeros, so that whatever part of the file a
    /// reader looks at first (a "connected" word, a queue index) tells it
    /// the file is gone.
    group: AtomicU64,
    writable: AtomicBool,
    /// Where the zero pages start (`usize::MAX`: none): a fault at or
    /// above it is not a truncation (it would loop), and goes on.
    zeroed_from: AtomicUsize,
    lost: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array
const EMPTY: Entry = Entry {
    state: AtomicU8::new(FREE),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    group: AtomicU64::new(0),
    writable: AtomicBool::new(false),
    zeroed_from: AtomicUsize::new(usize::MAX),
    lost: AtomicBool::new(false),
};

/// The mappings (zero pages until touched: 768 KiB of address space).
static TABLE: [Entry; SLOTS] = [EMPTY; SLOTS];
/// Entries ever claimed: the handler scans only these.
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// Mappings lost so far in this process.
static LOST_ANY: AtomicU64 = AtomicU64::new(0);
/// The next group id (never reused, unlike an address).
static GROUPS: AtomicU64 = AtomicU64::new(1);
/// The page size, read once at install.
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();

/// What SIGBUS did before hako's handler (set before the handler is
/// installed; the handler only reads it).
static PREVIOUS: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

/// A mapping's entry in the table (none when the table is full) and its
/// group.
#[derive(Debug)]
pub struct Tracked(Option<usize>, u64);

/// Puts the mapping at `start`, `len` bytes long, in the table (installing
/// the handler first, once), in the group of `beside` (a mapping of
/// another part of the same file) or in a new group.
pub fn track(start: *mut u8, len: usize, writable: bool, beside: Option<&Tracked>) -> Tracked {
    INSTALL.call_once(install);
    // Relaxed: only uniqueness matters.
    let group = beside.map_or_else(|| GROUPS.fetch_add(1, Ordering::Relaxed), |t| t.1);
    for (i, e) in TABLE.iter().enumerate() {
        // ORDERING: Acquire on success: the previous owner's FREE store
        // (Release) is seen before the fields are overwritten.
        if e.state
            .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // Relaxed (all): published by the Release store of USED.
            e.start.store(start as usize, Ordering::Relaxed);
            e.len.store(len, Ordering::Relaxed);
            e.group.store(group, Ordering::Relaxed);
            e.writable.store(writable, Ordering::Relaxed);
            e.zeroed_from.store(usize::MAX, Ordering::Relaxed);
            e.lost.store(false, Ordering::Relaxed);
            // ORDERING: Release; the handler's Acquire of the state then
            // sees the fields.
            e.state.store(USED, Ordering::Release);
            // Relaxed: HIGH only widens the handler's scan; the entry is
            // published by its state.
            HIGH.fetch_max(i + 1, Ordering::Relaxed);
            return Tracked(Some(i), group);
        }
    }
    tracing::warn!(
        slots = SLOTS,
        "every SIGBUS-tracking slot is taken; a new mapping is untracked"
    );
    Tracked(None, group)
}

/// The flag of an untracked mapping: never set.
static NEVER_LOST: AtomicBool = AtomicBool::new(false);

impl Tracked {
    /// The flag that [`lost`](Self::lost) reads, for
    /// [`touch_then_lost`]: valid while this stays tracked.
    pub fn lost_flag(&self) -> &'static AtomicBool {
        self.0.map_or(&NEVER_LOST, |i| &TABLE[i].lost)
    }

    /// Whether a fault replaced the mapping with zeros (its file was
    /// truncated while it was mapped).
    pub fn lost(&self) -> bool {
        // ORDERING: Acquire; pairs with the handler's Release store.
        self.0.is_some_and(|i| TABLE[i].lost.load(Ordering::Acquire))
    }

    /// Takes the mapping out of the table, before it is unmapped; waits
    /// for a handler (on another thread) busy with it.
    pub fn untrack(&mut self) {
        if let Some(i) = self.0.take() {
            let e = &TABLE[i];
            // ORDERING: AcqRel on success: the handler's work (its BUSY ->
            // USED Release store) is seen, and the next claimer's Acquire
            // sees us done.
            while e
                .state
                .compare_exchange(USED, FREE, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.untrack();
    }
}

/// Reads the byte at `addr`, then the flag `lost` (a mapping's,
/// [`Tracked::lost_flag`]), and says whether it is set: a fault of that
/// very read counts, as the handler runs before the read completes. For
/// the hot path: on x86-64 both loads are one `asm!` block that only reads
/// memory, so the compiler keeps what it holds in registers across it (a
/// volatile read followed by an Acquire load made it reload them).
///
/// # Safety
/// `addr` must lie in a mapping of this process.
#[inline(always)]
pub unsafe fn touch_then_lost(addr: *const u8, lost: &AtomicBool) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let flag: u32;
        // SAFETY: the caller vouches for `addr`; `lost` is an AtomicBool
        // (a byte load is atomic). The block reads those two bytes and
        // writes only its output registers.
        unsafe {
            std::arch::asm!(
                "movzx {t:e}, byte ptr [{a}]",
                "movzx {l:e}, byte ptr [{f}]",
                a = in(reg) addr,
                f = in(reg) lost.as_ptr(),
                t = out(reg) _,
                l = out(reg) flag,
                options(nostack, readonly, preserves_flags),
            );
        }
        flag != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the caller vouches for `addr`.
        unsafe { std::ptr::read_volatile(addr) };
        // ORDERING: Acquire, after the volatile read: a fault of that read
        // has run the handler (its Release store) by now.
        lost.load(Ordering::Acquire)
    }
}

/// Mappings of this process replaced by zeros so far: a process-wide
/// count that the slow paths compare with what they saw before.
pub fn lost_count() -> u64 {
    // ORDERING: Acquire; pairs with the handler's Release increment.
    LOST_ANY.load(Ordering::Acquire)
}

fn install() {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if let Ok(p) = usize::try_from(page) {
        if p.is_power_of_two() {
            // Relaxed: read by the handler, installed after this store
            // (sigaction orders it).
            PAGE.store(p, Ordering::Relaxed);
        }
    }
    // SAFETY: a zeroed sigaction is a valid value (no handler, no flags,
    // an empty mask once sigemptyset fills it).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
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

/// The SIGBUS handler (async-signal-safe: atomics, mmap, sigaction, raise).
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: errno is thread-local; saved and put back so that the code
    // the signal interrupted sees its own.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // A truncated file: an access to a page past its end. Anything else
    // (alignment, hardware errors, a signal sent by a process) is not ours.
    if code == libc::BUS_ADRERR && replace(addr) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        return;
    }
    pass_on(sig, info, ctx);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Replaces the lost range of the mapping holding `addr` (and the rest of
/// its group) with zero pages; false if `addr` is not in a mapping of
/// hako's, or in one already zeroed there (a fault a replacement cannot
/// cure), or the kernel refused.
fn replace(addr: usize) -> bool {
    // Relaxed: entries beyond HIGH are FREE anyway.
    let high = HIGH.load(Ordering::Relaxed);
    for e in &TABLE[..high] {
        // ORDERING: Acquire; pairs with the Release store in track().
        if e.state.load(Ordering::Acquire) != USED {
            continue;
        }
        // Relaxed (both): published by the state; checked again below,
        // once the entry is held.
        let (start, len) = (e.start.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
        if addr < start || addr - start >= len {
            continue;
        }
        if !hold(e) {
            // Untracked meanwhile: not a mapping any more.
            return false;
        }
        let done = replace_held(e, addr);
        // ORDERING: Release; pairs with untrack's Acquire.
        e.state.store(USED, Ordering::Release);
        return done;
    }
    false
}

/// Marks `e` BUSY (waiting while another handler holds it); false once it
/// is no longer USED.
fn hold(e: &Entry) -> bool {
    loop {
        // ORDERING: Acquire on success: the fields as track() left them.
        match e
            .state
            .compare_exchange(USED, BUSY, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => return true,
            Err(BUSY) => std::hint::spin_loop(),
            Err(_) => return false,
        }
    }
}

/// [`replace`] with `e` held.
fn replace_held(e: &Entry, addr: usize) -> bool {
    // Relaxed (all): the entry is held; its fields are stable.
    let (start, len) = (e.start.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
    if addr < start || addr - start >= len || addr >= e.zeroed_from.load(Ordering::Relaxed) {
        return false;
    }
    // Relaxed: set before the handler was installed.
    let page = addr & !(PAGE.load(Ordering::Relaxed) - 1);
    if !zero(e, page.max(start)) {
        return false;
    }
    // The other mappings of the file, whole.
    let group = e.group.load(Ordering::Relaxed);
    // Relaxed: as in replace().
    let high = HIGH.load(Ordering::Relaxed);
    for other in &TABLE[..high] {
        // Relaxed: compared only once held.
        if std::ptr::eq(other, e) || other.group.load(Ordering::Relaxed) != group {
            continue;
        }
        // Held by another handler (which zeroes it): left to that one.
        // Never waited for here: two handlers faulting in two mappings of
        // one group would each hold one and wait for the other.
        // ORDERING: Acquire on success; as in hold().
        if other
            .state
            .compare_exchange(USED, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            if other.group.load(Ordering::Relaxed) == group {
                zero(other, other.start.load(Ordering::Relaxed));
            }
            // ORDERING: Release; pairs with untrack's Acquire.
            other.state.store(USED, Ordering::Release);
        }
    }
    // ORDERING: Release; pairs with the Acquire load of lost_count().
    LOST_ANY.fetch_add(1, Ordering::Release);
    true
}

/// Replaces held entry `e`'s mapping from `from` to its end with private
/// zero pages (as writable as the mapping was) and marks it lost; false if
/// the kernel refused.
fn zero(e: &Entry, from: usize) -> bool {
    // Relaxed (all): the entry is held by the caller.
    let (start, len) = (e.start.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
    let end = start + len;
    let zeroed_from = e.zeroed_from.load(Ordering::Relaxed);
    if from >= zeroed_from.min(end) {
        return true;
    }
    let prot = if e.writable.load(Ordering::Relaxed) {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    // SAFETY: [from, end) lies in a mapping of hako's that cannot be
    // unmapped meanwhile (its entry is held: untrack waits, and munmap
    // comes after untrack); MAP_FIXED replaces it in place with private
    // zero pages, so the faulting access can run again.
    let r = unsafe {
        libc::mmap(
            from as *mut libc::c_void,
            end.min(zeroed_from) - from,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return false;
    }
    // Relaxed: the entry is held.
    e.zeroed_from.store(from, Ordering::Relaxed);
    // ORDERING: Release; pairs with the Acquire load of lost().
    e.lost.store(true, Ordering::Release);
    true
}

/// A SIGBUS that is not a truncation of hako's: what the program had
/// before hako, or the default (which ends the process).
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
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
            // The default, as if hako were not there: put it back and send
            // the signal again (it is blocked until this handler returns,
            // then ends the process; a fault would also recur on return).
            // SAFETY: a zeroed sigaction with SIG_DFL (0) is the default
            // disposition; sigaction and raise are async-signal-safe.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
                libc::raise(libc::SIGBUS);
            }
        }
    }
}
