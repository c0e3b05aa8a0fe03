//! `hako.WaitSet`: one thread waits on many ports, descriptors, intervals
//! and deadlines at once (the Rust `WaitSet`, epoll).
//!
//! The Rust waitset borrows the ports it waits on. Here it holds a
//! reference to each port's Python object (so it stays alive), counts
//! itself in the port's `attached` (`common::Attachments`, so `close()` is
//! refused), and takes every attached port's lock while it waits (so no
//! other thread uses a port the waitset arms): the borrow lasts as long as
//! the waitset.

use std::os::fd::BorrowedFd;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::board::BoardReader;
use crate::common::{deadline, wait_sliced, Attachments, Owned, SLICE};
use crate::errors::{PyResultExt, TerminationRequest};
use crate::event::Listener;
use crate::pubsub::Subscriber;
use crate::reqres::client::Client;
use crate::reqres::server::Server;

/// An attached port, kept alive by the waitset.
enum Port {
    Subscriber(Py<Subscriber>),
    Listener(Py<Listener>),
    Server(Py<Server>),
    Client(Py<Client>),
}

type BoxedServer = Box<hako::Server<[u8], [u8]>>;
type BoxedClient = Box<hako::Client<[u8], [u8]>>;

/// The lock of an attached port, held while the waitset waits.
#[allow(dead_code)] // held for its drop
enum Held<'a> {
    Subscriber(MutexGuard<'a, Option<hako::Subscriber<[u8]>>>),
    Listener(MutexGuard<'a, Option<hako::Listener>>),
    Server(MutexGuard<'a, Option<BoxedServer>>),
    Client(MutexGuard<'a, Option<BoxedClient>>),
}

impl Port {
    fn attached(&self) -> &Attachments {
        match self {
            Port::Subscriber(p) => &p.get().attached,
            Port::Listener(p) => &p.get().attached,
            Port::Server(p) => &p.get().attached,
            Port::Client(p) => &p.get().attached,
        }
    }

    fn hold(&self, py: Python<'_>) -> Held<'_> {
        match self {
            Port::Subscriber(p) => Held::Subscriber(p.get().port.lock(py)),
            Port::Listener(p) => Held::Listener(p.get().port.lock(py)),
            Port::Server(p) => Held::Server(p.get().port.lock(py)),
            Port::Client(p) => Held::Client(p.get().port.lock(py)),
        }
    }
}

/// Waits on many sources at once: subscribers, listeners, servers and
/// clients (ready when they have something to take), blackboard readers
/// (ready while an entry they ``watch()`` changed since it was read), file descriptors
/// (objects with ``fileno()``, or ints: ready when readable), intervals
/// and deadlines. ``attach_*`` return ids; ``wait()`` returns what
/// happened as ``(kind, id)`` pairs, ``kind`` one of ``"ready"``,
/// ``"tick"``, ``"deadline_missed"``. A port attached to a waitset cannot
/// be closed until the waitset is closed or dropped.
#[pyclass(module = "hako", frozen)]
pub struct WaitSet {
    /// Borrows the ports in `ports` and the descriptors in `fds`.
    ws: Mutex<Option<Owned<hako::WaitSet<'static>>>>,
    ports: Mutex<Vec<Port>>,
    fds: Mutex<Vec<Py<PyAny>>>,
}

/// A waitset's lock, or an error while another thread waits in it (a
/// wait holds its locks with the GIL released; blocking here with the GIL
/// held could keep that thread from ever taking it back).
fn try_hold<T>(m: &Mutex<T>) -> PyResult<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "the waitset is waiting in another thread",
        )),
    }
}

impl WaitSet {
    fn with_ws<R>(
        &self,
        f: impl FnOnce(&mut hako::WaitSet<'static>) -> PyResult<R>,
    ) -> PyResult<R> {
        let mut g = try_hold(&self.ws)?;
        let ws = g
            .as_mut()
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("the waitset is closed"))?;
        f(&mut ws.0)
    }
}

/// `r` as 'static.
///
/// # Safety
/// The value lives, at this address, as long as the waitset: its Python
/// object is referenced by the waitset, and closing it is refused while
/// it is attached.
unsafe fn forever<T>(r: &T) -> &'static T {
    // SAFETY: the caller's promise.
    unsafe { &*(r as *const T) }
}

#[pymethods]
impl WaitSet {
    #[new]
    fn new() -> PyResult<Self> {
        Ok(WaitSet {
            // Python handles its signals itself (KeyboardInterrupt between
            // the wait's slices): hako installs nothing.
            ws: Mutex::new(Some(Owned(hako::WaitSet::without_signal_handling().py()?))),
            ports: Mutex::new(Vec::new()),
            fds: Mutex::new(Vec::new()),
        })
    }

    /// Attaches a subscriber, listener, server, client or blackboard
    /// reader, or a file descriptor (an int, or an object with
    /// ``fileno()``); returns its id.
    fn attach(&self, py: Python<'_>, source: Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(r) = source.cast::<BoardReader>() {
            // SAFETY: see `forever`: the waitset keeps the reader's object
            // (below, with the descriptors' owners), which owns the Reader
            // and has no close.
            let reader = unsafe { forever(&r.get().reader) };
            let id = self.with_ws(|ws| ws.attach_reader(reader).py())?;
            try_hold(&self.fds)?.push(source.unbind());
            return Ok(id.index());
        }
        let port = if let Ok(p) = source.cast::<Subscriber>() {
            Port::Subscriber(p.clone().unbind())
        } else if let Ok(p) = source.cast::<Listener>() {
            Port::Listener(p.clone().unbind())
        } else if let Ok(p) = source.cast::<Server>() {
            Port::Server(p.clone().unbind())
        } else if let Ok(p) = source.cast::<Client>() {
            Port::Client(p.clone().unbind())
        } else {
            let fd: i32 = if let Ok(fd) = source.extract::<i32>() {
                fd
            } else if source.hasattr("fileno")? {
                source.call_method0("fileno")?.extract()?
            } else {
                return Err(PyTypeError::new_err(
                    "attach takes a Subscriber, Listener, Server, Client, BoardReader, or a file descriptor",
                ));
            };
            // SAFETY: the object owning the descriptor is kept alive by the
            // waitset; a descriptor closed anyway only leaves epoll's set.
            let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
            let id = self.with_ws(|ws| ws.attach_fd(bfd).py())?;
            try_hold(&self.fds)?.push(source.unbind());
            return Ok(id.index());
        };
        let held = port.hold(py);
        let id = self.with_ws(|ws| {
            let id = match (&port, &held) {
                (Port::Subscriber(_), Held::Subscriber(g)) => {
                    let p = g.as_ref().ok_or_else(closed)?;
                    // SAFETY: see `forever`: the waitset keeps the port's
                    // object and counts itself in `attached` (below, under
                    // the port's lock held here), so `close` is refused.
                    ws.attach_subscriber(unsafe { forever(p) })
                }
                (Port::Listener(_), Held::Listener(g)) => {
                    let p = g.as_ref().ok_or_else(closed)?;
                    // SAFETY: see `forever`: the waitset keeps the port's
                    // object and counts itself in `attached` (below, under
                    // the port's lock held here), so `close` is refused.
                    ws.attach_listener(unsafe { forever(p) })
                }
                (Port::Server(_), Held::Server(g)) => {
                    let p = g.as_ref().ok_or_else(closed)?;
                    // SAFETY: see `forever`: the waitset keeps the port's
                    // object and counts itself in `attached` (below, under
                    // the port's lock held here), so `close` is refused.
                    ws.attach_server(unsafe { forever(&**p) })
                }
                (Port::Client(_), Held::Client(g)) => {
                    let p = g.as_ref().ok_or_else(closed)?;
                    // SAFETY: see `forever`: the waitset keeps the port's
                    // object and counts itself in `attached` (below, under
                    // the port's lock held here), so `close` is refused.
                    ws.attach_client(unsafe { forever(&**p) })
                }
                _ => unreachable!("a port and its own lock"),
            };
            id.py()
        })?;
        port.attached().attach();
        drop(held);
        try_hold(&self.ports)?.push(port);
        Ok(id.index())
    }

    /// Attaches an interval of ``period`` seconds: a ``"tick"`` each time.
    fn attach_interval(&self, period: f64) -> PyResult<usize> {
        let d = period_of(period)?;
        self.with_ws(|ws| Ok(ws.attach_interval(d).index()))
    }

    /// A deadline on attachment ``of``: ``"deadline_missed"`` (with the
    /// deadline's id) when it stays silent for ``seconds``.
    fn attach_deadline(&self, of: usize, seconds: f64) -> PyResult<usize> {
        let d = period_of(seconds)?;
        self.with_ws(|ws| {
            Ok(ws
                .attach_deadline(hako::AttachmentId::from_index(of), d)
                .py()?
                .index())
        })
    }

    /// Waits until something happens, up to ``timeout`` seconds (None: no
    /// limit); returns the ``(kind, id)`` pairs, empty on timeout. Raises
    /// ``KeyboardInterrupt`` on Ctrl-C (Python's own signal handling runs
    /// between the wait's slices; hako installs no handler).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Vec<(&'static str, usize)>> {
        let until = deadline(timeout)?;
        let ports = try_hold(&self.ports)?;
        let mut g = try_hold(&self.ws)?;
        let _held: Vec<Held<'_>> = ports.iter().map(|p| p.hold(py)).collect();
        let ws = g
            .as_mut()
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("the waitset is closed"))?;
        let mut terminated = false;
        let got = wait_sliced(
            py,
            ws,
            until,
            |ws, slice: Duration| {
                let mut events = Vec::new();
                let outcome =
                    ws.0.wait_and_process_timeout(|e| events.push(e), slice.min(SLICE))
                        .py()?;
                Ok(match outcome {
                    hako::WaitOutcome::TerminationRequest => Some(None),
                    _ if events.is_empty() => None,
                    _ => Some(Some(events)),
                })
            },
            |_| Ok(()),
        )?;
        let events = match got {
            Some(Some(e)) => e,
            Some(None) => {
                terminated = true;
                Vec::new()
            }
            None => Vec::new(),
        };
        if terminated {
            py.check_signals()?;
            return Err(TerminationRequest::new_err(
                "termination requested (SIGINT or SIGTERM)",
            ));
        }
        Ok(events
            .into_iter()
            .map(|e| match e {
                hako::WaitEvent::Ready(id) => ("ready", id.index()),
                hako::WaitEvent::Tick(id) => ("tick", id.index()),
                hako::WaitEvent::DeadlineMissed(id) => ("deadline_missed", id.index()),
            })
            .collect())
    }

    /// Attachments so far.
    fn __len__(&self) -> PyResult<usize> {
        self.with_ws(|ws| Ok(ws.len()))
    }

    /// Detaches everything (the ports can be closed again).
    fn close(&self) -> PyResult<()> {
        let mut ports = try_hold(&self.ports)?;
        let ws = try_hold(&self.ws)?.take();
        // The waitset goes before the ports it borrows are let go.
        drop(ws);
        for p in ports.drain(..) {
            p.attached().detach();
        }
        try_hold(&self.fds)?.clear();
        Ok(())
    }
}

impl Drop for WaitSet {
    fn drop(&mut self) {
        // Nobody else can hold the locks of an object being dropped.
        drop(self.ws.get_mut().unwrap_or_else(|e| e.into_inner()).take());
        for p in self
            .ports
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            p.attached().detach();
        }
    }
}

fn closed() -> PyErr {
    pyo3::exceptions::PyValueError::new_err("the port is closed")
}

fn period_of(seconds: f64) -> PyResult<Duration> {
    if seconds.is_nan() || seconds <= 0.0 || !seconds.is_finite() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a period is a positive number of seconds (got {seconds})"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}
