//! What every class shares: the one-thread-at-a-time slot a port or sample
//! lives in, waits that release the GIL and answer Ctrl-C, the buffer
//! protocol's two halves, a port's count of the waitsets it is attached
//! to, and the settings given as strings.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::{ffi, PyErr};

/// How long a blocking wait sleeps, the GIL released, before it looks for
/// a signal (Ctrl-C) and gives other checks their turn: the longest a
/// KeyboardInterrupt waits. Longer than hako's own liveness period (100 ms),
/// so each slice asks at least once whether the peers are alive.
pub const SLICE: Duration = Duration::from_millis(250);

/// A port or loan held by a Python object. hako's ports are `Send` but not
/// `Sync` (one thread at a time, no lock on the hot path); Python objects
/// can be reached from any thread, so each lives behind a lock (taken once
/// per call, uncontended in the usual one-thread program).
pub struct Slot<T> {
    what: &'static str,
    cell: Mutex<Option<T>>,
}

impl<T> Slot<T> {
    /// A slot holding `value`; `what` names it in errors ("the subscriber").
    pub fn new(what: &'static str, value: T) -> Self {
        Self {
            what,
            cell: Mutex::new(Some(value)),
        }
    }

    /// The lock. When another thread holds it, this one waits for it with
    /// the GIL released (the holder may need the GIL to finish).
    pub fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Option<T>>
    where
        T: Send,
    {
        loop {
            match self.cell.try_lock() {
                Ok(g) => return g,
                // A panic while it was held became a Python exception
                // already; every method leaves the value whole.
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| {
                    drop(self.cell.lock());
                }),
            }
        }
    }

    /// Runs `f` on the value; an error if it was closed.
    pub fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut T) -> PyResult<R>) -> PyResult<R>
    where
        T: Send,
    {
        let mut g = self.lock(py);
        let v = g.as_mut().ok_or_else(|| self.closed())?;
        f(v)
    }

    /// Takes the value out (closing the slot); `None` if it was closed.
    pub fn take(&self, py: Python<'_>) -> Option<T>
    where
        T: Send,
    {
        self.lock(py).take()
    }

    /// The value, for a drop (no lock needed: the slot is ours alone).
    pub fn get_mut(&mut self) -> &mut Option<T> {
        self.cell.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// The error for a use after close.
    pub fn closed(&self) -> PyErr {
        PyValueError::new_err(format!("{} is closed", self.what))
    }
}

/// A value that is not `Send` by its type (it borrows a port that is not
/// `Sync`), moved into a GIL-free section only while the lock of the port
/// it borrows is held by the moving thread: no other thread can touch that
/// port meanwhile.
pub struct Owned<T>(pub T);

// SAFETY: see the type's comment: every use happens under the lock of the
// port the value borrows, so the port is never used from two threads at
// once, which is all that its missing `Sync` guards against.
unsafe impl<T> Send for Owned<T> {}

/// A timeout in seconds as given by Python: `None` for no limit; negative
/// and NaN refused.
pub fn deadline(timeout: Option<f64>) -> PyResult<Option<Instant>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_nan() || t < 0.0 => Err(PyValueError::new_err(format!(
            "a timeout is a number of seconds, zero or more (got {t})"
        ))),
        Some(t) => Ok(Some(
            Instant::now() + Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX / 4),
        )),
    }
}

/// Waits as `once` does, a slice at a time with the GIL released, until it
/// yields, the deadline passes (`None`) or a signal handler raises (Ctrl-C:
/// `KeyboardInterrupt`). `once(port, slice)` waits at most `slice`;
/// `between(port)` runs, with the GIL, after each empty slice.
pub fn wait_sliced<P: Send, R: Send>(
    py: Python<'_>,
    port: &mut P,
    until: Option<Instant>,
    mut once: impl FnMut(&mut P, Duration) -> PyResult<Option<R>> + Send,
    mut between: impl FnMut(&mut P) -> PyResult<()>,
) -> PyResult<Option<R>> {
    loop {
        let slice = match until {
            None => SLICE,
            Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
        };
        let got = py.detach(|| once(port, slice))?;
        if got.is_some() {
            return Ok(got);
        }
        if until.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        py.check_signals()?;
        between(port)?;
    }
}

/// From this many bytes a copy into shared memory is split across threads.
const PARALLEL_COPY: usize = 4 << 20;
/// Most threads one copy uses.
const COPY_THREADS: usize = 4;

/// A destination pointer handed to the threads of one copy.
#[derive(Clone, Copy)]
struct Dst(*mut u8);

// SAFETY: each thread writes its own disjoint range of the destination,
// and the scope joins them all before the copy returns.
unsafe impl Send for Dst {}

/// Copies `src` to `dst`, as `copy_nonoverlapping` does. A large copy
/// (from 4 MiB) releases the GIL and is split across up to four threads
/// (as many as the machine has cores): one core's copy is bound by what
/// one core can move through memory (measured here: 19 GB/s for one
/// thread, 22-23 GB/s for two), and a sender's other cores are often idle.
///
/// # Safety
/// `dst` is valid for `src.len()` bytes of writes, not overlapping `src`,
/// and nothing else accesses it during the copy.
pub unsafe fn copy_in(py: Python<'_>, dst: *mut u8, src: &[u8]) {
    if src.len() < PARALLEL_COPY {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        return;
    }
    let dst = Dst(dst);
    py.detach(move || {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, COPY_THREADS);
        // Whole pages per thread, so no two threads write one page.
        let part = src.len().div_ceil(threads).next_multiple_of(4096);
        std::thread::scope(|scope| {
            let mut parts = src.chunks(part).enumerate();
            let first = parts.next();
            for (i, chunk) in parts {
                scope.spawn(move || {
                    let d = dst;
                    // SAFETY: in bounds of the destination (the caller's
                    // promise), disjoint from the other threads' ranges.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            chunk.as_ptr(),
                            d.0.add(i * part),
                            chunk.len(),
                        )
                    };
                });
            }
            if let Some((_, chunk)) = first {
                // SAFETY: as above, the first range.
                unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), dst.0, chunk.len()) };
            }
        });
    });
}

/// The views of an object's memory that exist now (memoryviews, numpy
/// arrays, ctypes objects): counted by `__getbuffer__` and
/// `__releasebuffer__`, so that what would free or reuse the memory can
/// refuse while one lives.
///
/// Relaxed: the buffer protocol's calls, and the checks, all run with the
/// GIL held, which orders them; the count is added to under the object's
/// own lock, which the checks hold too, so no view appears between a check
/// and what it guards.
#[derive(Default)]
pub struct Exports(AtomicUsize);

impl Exports {
    /// Fills `view` with `len` bytes at `ptr`, exported by `owner`, and
    /// counts it.
    ///
    /// # Safety
    /// `view` is the view `__getbuffer__` was given; `ptr..ptr + len` stays
    /// valid, and unchanged by anyone else when `readonly` is false, until
    /// the matching `__releasebuffer__`; the caller holds the lock that the
    /// checks ([`refuse`](Self::refuse)) hold.
    pub unsafe fn export(
        &self,
        owner: &Bound<'_, PyAny>,
        view: *mut ffi::Py_buffer,
        ptr: *mut u8,
        len: usize,
        readonly: bool,
        flags: c_int,
    ) -> PyResult<()> {
        let len = isize::try_from(len).map_err(|_| PyBufferError::new_err("payload too large"))?;
        // SAFETY: the caller's promises; FillInfo takes a reference to `owner`,
        // which keeps the memory alive until the view is released.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                owner.as_ptr(),
                ptr.cast(),
                len,
                c_int::from(readonly),
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(owner.py()));
        }
        self.0.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A view made without the buffer protocol (a numpy array of
    /// `view.rs`) counted; its base releases it.
    pub fn count(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    /// A view went (`__releasebuffer__`).
    pub fn release(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    /// `BufferError` if a view of `what` exists: it cannot be `doing`.
    pub fn refuse(&self, doing: &str, what: &str) -> PyResult<()> {
        match self.0.load(Relaxed) {
            0 => Ok(()),
            n => Err(PyBufferError::new_err(format!(
                "cannot {doing} the {what} while {n} view(s) of it exist (memoryview, numpy \
                 array, ctypes object): delete them first"
            ))),
        }
    }
}

/// The waitsets a port is attached to: each borrows the port, so a port
/// attached to one refuses `close()`. Changed and read with the GIL held,
/// which orders it (Relaxed).
#[derive(Default)]
pub struct Attachments(AtomicUsize);

impl Attachments {
    /// A waitset attached the port.
    pub fn attach(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    /// A waitset let the port go.
    pub fn detach(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    /// The error of `close()` on a port attached to a waitset.
    pub fn refuse_close(&self) -> PyResult<()> {
        match self.0.load(Relaxed) {
            0 => Ok(()),
            n => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "the port is attached to {n} waitset(s): close them first"
            ))),
        }
    }
}

/// Runs `f` on the bytes of any object with the buffer protocol (bytes,
/// bytearray, memoryview, a C-contiguous numpy array, a ctypes instance).
pub fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    let mut view = MaybeUninit::<ffi::Py_buffer>::uninit();
    // SAFETY: a valid object and a writable view; on success the view is
    // filled and released below.
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_SIMPLE) } == -1
    {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: filled by PyObject_GetBuffer.
    let mut view = unsafe { view.assume_init() };
    let bytes = if view.len == 0 {
        &[][..]
    } else {
        // SAFETY: a simple (contiguous) buffer of `len` bytes, valid until
        // released.
        unsafe { std::slice::from_raw_parts(view.buf as *const u8, view.len as usize) }
    };
    let r = f(bytes);
    // SAFETY: the view filled above, released once.
    unsafe { ffi::PyBuffer_Release(&mut view) };
    Ok(r)
}

/// `wait=`: how a port's blocking waits wait.
pub fn wait_strategy(s: &str) -> PyResult<hako::WaitStrategy> {
    Ok(match s {
        "spin_then_park" => hako::WaitStrategy::SpinThenPark,
        "busy_spin" => hako::WaitStrategy::BusySpin,
        "park" => hako::WaitStrategy::Park,
        _ => {
            return Err(PyValueError::new_err(format!(
                "wait is 'spin_then_park', 'busy_spin' or 'park' (got {s:?})"
            )))
        }
    })
}

/// `backpressure=` (with `retries=`): what a sender does when a receiver's
/// queue is full under the backpressure policy.
pub fn backpressure(s: &str, retries: u32) -> PyResult<hako::BackpressureStrategy> {
    Ok(match s {
        "block" => hako::BackpressureStrategy::Block,
        "retry" => hako::BackpressureStrategy::Retry(retries),
        "discard" => hako::BackpressureStrategy::Discard,
        _ => {
            return Err(PyValueError::new_err(format!(
                "backpressure is 'block', 'retry' or 'discard' (got {s:?})"
            )))
        }
    })
}

/// `overflow=`: what a service does when a subscriber's queue is full.
pub fn overflow(s: &str) -> PyResult<hako::OverflowPolicy> {
    Ok(match s {
        "drop_oldest" => hako::OverflowPolicy::DropOldest,
        "backpressure" => hako::OverflowPolicy::Backpressure,
        _ => {
            return Err(PyValueError::new_err(format!(
                "overflow is 'drop_oldest' or 'backpressure' (got {s:?})"
            )))
        }
    })
}

/// `mode=`: open, create or either.
#[derive(Clone, Copy)]
pub enum Mode {
    /// Open if it exists, else create.
    OpenOrCreate,
    /// Open only.
    Open,
    /// Create only.
    Create,
}

/// Parses `mode=`.
pub fn mode(s: &str) -> PyResult<Mode> {
    Ok(match s {
        "open_or_create" => Mode::OpenOrCreate,
        "open" => Mode::Open,
        "create" => Mode::Create,
        _ => {
            return Err(PyValueError::new_err(format!(
                "mode is 'open_or_create', 'open' or 'create' (got {s:?})"
            )))
        }
    })
}

/// The `#[pymethods]` block of a port class, with what every port shares
/// appended: `__enter__`/`__exit__` (a `with` block closes the port) and,
/// after `wakeup`, the wake-up descriptor that foreign event loops wait on
/// (`fileno`, `arm_wakeup`, `disarm_wakeup`, on the Rust port of the same
/// name). The class has a `port: Slot<_>` and a `close(py) -> PyResult<()>`.
macro_rules! port_methods {
    (wakeup impl $ty:ident { $($body:tt)* }) => {
        $crate::common::port_methods! { impl $ty {
            $($body)*

            /// The wake-up descriptor, for event loops (``arm_wakeup`` first).
            fn fileno(&self, py: ::pyo3::Python<'_>) -> ::pyo3::PyResult<i32> {
                use ::std::os::fd::{AsFd as _, AsRawFd as _};
                self.port.with(py, |p| Ok(p.as_fd().as_raw_fd()))
            }

            /// Asks the port's peers to write to ``fileno()`` after each
            /// send; True if something is waiting already (take it rather
            /// than sleep).
            fn arm_wakeup(&self, py: ::pyo3::Python<'_>) -> ::pyo3::PyResult<bool> {
                self.port.with(py, |p| Ok(p.arm_wakeup()))
            }

            /// Withdraws ``arm_wakeup`` and empties the descriptor.
            fn disarm_wakeup(&self, py: ::pyo3::Python<'_>) -> ::pyo3::PyResult<()> {
                self.port.with(py, |p| {
                    p.disarm_wakeup();
                    Ok(())
                })
            }
        } }
    };
    (impl $ty:ident { $($body:tt)* }) => {
        #[::pyo3::pymethods]
        impl $ty {
            $($body)*

            fn __enter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            /// Leaving a ``with`` block closes the port.
            fn __exit__(
                &self,
                py: ::pyo3::Python<'_>,
                _t: Option<::pyo3::Bound<'_, ::pyo3::PyAny>>,
                _v: Option<::pyo3::Bound<'_, ::pyo3::PyAny>>,
                _tb: Option<::pyo3::Bound<'_, ::pyo3::PyAny>>,
            ) -> ::pyo3::PyResult<bool> {
                self.close(py)?;
                Ok(false)
            }
        }
    };
}
pub(crate) use port_methods;
