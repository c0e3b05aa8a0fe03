//! Blackboards: `Blackboard`, `BoardWriter`, `BoardReader` and their
//! entries. Values are described as payloads are (a ctypes scalar, array
//! or Structure class, or a numpy number type): read by copy (`get`) or in
//! place (`read`: a numpy view of the pinned value, released on exit),
//! written by copy (`update`) or in place (`loan`: a writable numpy view,
//! published on exit).

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::common::{deadline, wait_sliced, wait_strategy, Exports, Slot};
use crate::errors::PyResultExt;
use crate::payload::Payload;
use crate::view::{array_over, dtype_of, Memory};

/// A blackboard: its entries are fixed when it is created.
#[pyclass(module = "hako", frozen)]
pub struct Blackboard {
    pub(crate) board: hako::BlackboardService,
}

#[pymethods]
impl Blackboard {
    /// The service's name.
    #[getter]
    fn name(&self) -> String {
        self.board.name().to_string()
    }

    /// The entries: (key, type name, size in bytes), in creation order.
    #[getter]
    fn entries(&self) -> Vec<(String, String, u64)> {
        self.board
            .entries()
            .iter()
            .map(|e| (e.key.clone(), e.value.type_name.clone(), e.value.size))
            .collect()
    }

    /// How many readers it has now.
    #[getter]
    fn reader_count(&self) -> usize {
        self.board.reader_count()
    }

    /// Creates the writer (one at a time).
    fn writer(&self) -> PyResult<BoardWriter> {
        let w = self.board.writer_builder().create().py()?;
        Ok(BoardWriter { writer: w })
    }

    /// Creates a reader; ``wait`` as for subscribers.
    #[pyo3(signature = (*, wait="spin_then_park"))]
    fn reader(&self, wait: &str) -> PyResult<BoardReader> {
        let r = self
            .board
            .reader_builder()
            .wait_strategy(wait_strategy(wait)?)
            .create()
            .py()?;
        Ok(BoardReader { reader: r })
    }
}

/// The blackboard's writer.
#[pyclass(module = "hako", frozen)]
pub struct BoardWriter {
    writer: hako::Writer,
}

#[pymethods]
impl BoardWriter {
    /// The entry ``key``, whose values are ``type`` (checked against the
    /// board's).
    #[pyo3(name = "entry")]
    fn entry_of(
        &self,
        py: Python<'_>,
        key: &str,
        r#type: Bound<'_, PyAny>,
    ) -> PyResult<WriterEntry> {
        let (entry, payload) = open_entry(py, r#type, "the writer's entry", |d| {
            self.writer.entry_described(key, d).py()
        })?;
        Ok(WriterEntry { entry, payload })
    }
}

/// An entry handle (`what`, for errors) that `open` makes of the values'
/// type, as `type` describes it, and that description.
fn open_entry<E>(
    py: Python<'_>,
    r#type: Bound<'_, PyAny>,
    what: &'static str,
    open: impl FnOnce(hako::TypeDetails) -> PyResult<E>,
) -> PyResult<(Slot<E>, Payload)> {
    let (payload, details) = Payload::describe(py, Some(r#type), Some(false))?;
    Ok((Slot::new(what, open(details)?), payload))
}

/// One entry of the writer.
#[pyclass(module = "hako", frozen)]
pub struct WriterEntry {
    entry: Slot<hako::RawWriterEntry>,
    payload: Payload,
}

#[pymethods]
impl WriterEntry {
    /// The entry's version: its updates so far.
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<u64> {
        self.entry.with(py, |e| e.version().py())
    }

    /// Publishes ``value`` as the next version (a copy); returns it.
    fn update(&self, py: Python<'_>, value: Bound<'_, PyAny>) -> PyResult<u64> {
        let bytes: Vec<u8> = py
            .import("hako._types")?
            .call_method1("value_bytes", (self.payload.class.bind(py), value))?
            .extract()?;
        self.entry.with(py, |e| e.update_bytes(&bytes).py())
    }

    /// Lends the next version's buffer, holding a copy of the latest value
    /// (``latest=True``, the default) or an older one: change it through
    /// ``numpy()`` and leave the ``with`` block (or call ``publish()``) to
    /// publish it; ``abandon()`` gives it back unpublished.
    #[pyo3(signature = (*, latest=true))]
    fn loan(slf: Bound<'_, Self>, latest: bool) -> PyResult<BoardLoan> {
        let py = slf.py();
        let me = slf.get();
        let (ptr, len) = me
            .entry
            .with(py, |e| Ok((e.begin(latest).py()?, e.size())))?;
        Ok(BoardLoan {
            owner: slf.unbind(),
            ptr: ptr as usize,
            len,
            exports: Exports::default(),
            open: std::sync::atomic::AtomicBool::new(true),
        })
    }
}

/// A writer's buffer lent for the next version; a context manager.
#[pyclass(module = "hako", frozen)]
pub struct BoardLoan {
    owner: Py<WriterEntry>,
    ptr: usize,
    len: usize,
    exports: Exports,
    open: std::sync::atomic::AtomicBool,
}

impl BoardLoan {
    fn end(&self, py: Python<'_>, publish: bool) -> PyResult<Option<u64>> {
        self.exports.refuse("publish", "loan")?;
        // Relaxed: guarded by the entry's lock below as well.
        if !self.open.swap(false, std::sync::atomic::Ordering::Relaxed) {
            return Err(PyValueError::new_err("the loan was published or abandoned"));
        }
        let entry = self.owner.get();
        entry.entry.with(py, |e| {
            if publish {
                e.commit().py().map(Some)
            } else {
                e.abandon();
                Ok(None)
            }
        })
    }
}

#[pymethods]
impl BoardLoan {
    /// A writable numpy view of the buffer (the entry's type: its elements
    /// for an array type, one value else).
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let class = me.owner.get().payload.class.clone_ref(slf.py());
        // SAFETY: the buffer is the loan's until publish or abandon, which
        // refuse while a view counted by `exports` lives; only this writer
        // writes it.
        unsafe {
            view_of(
                slf.as_any(),
                class.bind(slf.py()),
                Lent {
                    ptr: me.ptr,
                    len: me.len,
                    exports: &me.exports,
                    open: &me.open,
                },
                true,
                "the loan was published or abandoned",
            )
        }
    }

    /// Publishes the buffer as the next version; returns it.
    fn publish(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.end(py, true)?.unwrap_or(0))
    }

    /// Gives the buffer back unpublished.
    fn abandon(&self, py: Python<'_>) -> PyResult<()> {
        self.end(py, false).map(|_| ())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Publishes on a clean exit, abandons on an exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _trace: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        // Relaxed: a flag of this object.
        if self.open.load(std::sync::atomic::Ordering::Relaxed) {
            let publish = kind.is_none();
            match self.end(py, publish) {
                // After an exception, the loan's fate must not hide it.
                Err(e) if publish => return Err(e),
                _ => {}
            }
        }
        Ok(false)
    }
}

/// A blackboard's reader.
#[pyclass(module = "hako", frozen)]
pub struct BoardReader {
    /// Never closed: a waitset may borrow it while it keeps this object.
    pub(crate) reader: hako::Reader,
}

#[pymethods]
impl BoardReader {
    /// The entry ``key``, whose values are ``type`` (checked against the
    /// board's).
    #[pyo3(name = "entry")]
    fn entry_of(
        &self,
        py: Python<'_>,
        key: &str,
        r#type: Bound<'_, PyAny>,
    ) -> PyResult<ReaderEntry> {
        let (entry, payload) = open_entry(py, r#type, "the reader's entry", |d| {
            self.reader.entry_described(key, d).py()
        })?;
        Ok(ReaderEntry { entry, payload })
    }
}

/// One entry of a reader.
#[pyclass(module = "hako", frozen)]
pub struct ReaderEntry {
    entry: Slot<hako::RawReaderEntry>,
    payload: Payload,
}

#[pymethods]
impl ReaderEntry {
    /// The entry's version now (the default is version 0).
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<u64> {
        self.entry.with(py, |e| e.version().py())
    }

    /// Whether it changed since this handle last read it.
    #[getter]
    fn changed(&self, py: Python<'_>) -> PyResult<bool> {
        self.entry.with(py, |e| e.changed().py())
    }

    /// Asks the writer to wake this entry's reader when it changes: a
    /// ``WaitSet`` the reader is attached to reports it ready while the
    /// entry changed since this handle last read it.
    fn watch(&self, py: Python<'_>) -> PyResult<()> {
        self.entry.with(py, |e| {
            e.watch();
            Ok(())
        })
    }

    /// Stops ``watch``ing the entry.
    fn unwatch(&self, py: Python<'_>) -> PyResult<()> {
        self.entry.with(py, |e| {
            e.unwatch();
            Ok(())
        })
    }

    /// The latest value, copied (never torn): a number for a scalar type,
    /// an instance of an array or Structure type, a numpy value.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.get_with_version(py)?.0)
    }

    /// The latest value, copied, and its version.
    fn get_with_version<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, u64)> {
        let (bytes, version) = self.entry.with(py, |e| {
            let mut b = vec![0; e.size()];
            let v = e.get_bytes(&mut b).py()?;
            Ok((b, v))
        })?;
        let value = py.import("hako._types")?.call_method1(
            "from_bytes",
            (self.payload.class.bind(py), PyBytes::new(py, &bytes)),
        )?;
        Ok((value, version))
    }

    /// Waits until the entry changes from the version this handle last
    /// read, at most ``timeout`` seconds (``None``: no limit), sleeping
    /// until the writer's publish wakes it; the new version, or ``None`` on
    /// a timeout.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<u64>> {
        let until = deadline(timeout)?;
        let mut g = self.entry.lock(py);
        let e = g.as_mut().ok_or_else(|| self.entry.closed())?;
        wait_sliced(
            py,
            e,
            until,
            |e, slice: Duration| e.wait_for_change(Some(slice)).py(),
            |_| Ok(()),
        )
    }

    /// The latest value in place, without a copy: a context manager whose
    /// ``numpy()`` is a read-only view of it; the writer writes elsewhere
    /// until it is released (on exit, or ``release()``).
    fn read(slf: Bound<'_, Self>) -> PyResult<BoardView> {
        let py = slf.py();
        let me = slf.get();
        let (ptr, version, len) = me.entry.with(py, |e| {
            let (p, v) = e.hold().py()?;
            Ok((p as usize, v, e.size()))
        })?;
        Ok(BoardView {
            owner: slf.unbind(),
            ptr,
            len,
            version,
            exports: Exports::default(),
            open: std::sync::atomic::AtomicBool::new(true),
        })
    }
}

/// A reader's entry held in place; a context manager.
#[pyclass(module = "hako", frozen)]
pub struct BoardView {
    owner: Py<ReaderEntry>,
    ptr: usize,
    len: usize,
    version: u64,
    exports: Exports,
    open: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl BoardView {
    /// The version of the value held.
    #[getter]
    fn version(&self) -> u64 {
        self.version
    }

    /// A read-only numpy view of the value held (its elements for an array
    /// type, one value else).
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let class = me.owner.get().payload.class.clone_ref(slf.py());
        // SAFETY: the value stays pinned (the writer leaves it alone) until
        // release, which refuses while a view counted by `exports` lives.
        unsafe {
            view_of(
                slf.as_any(),
                class.bind(slf.py()),
                Lent {
                    ptr: me.ptr,
                    len: me.len,
                    exports: &me.exports,
                    open: &me.open,
                },
                false,
                "the value was released",
            )
        }
    }

    /// Releases the value (refused while a numpy view of it lives).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.exports.refuse("release", "value")?;
        // Relaxed: a flag of this object.
        if self.open.swap(false, std::sync::atomic::Ordering::Relaxed) {
            self.owner.get().entry.with(py, |e| {
                e.release();
                Ok(())
            })?;
        }
        Ok(())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Releases the value; after an exception, a value whose views still
    /// live stays held (until the entry is read again or dropped) and the
    /// exception goes on.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _trace: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match self.release(py) {
            Err(e) if kind.is_none() => Err(e),
            _ => Ok(false),
        }
    }
}

/// Memory a loan or a held value lends: where, how much, its count of
/// views, whether it is still lent.
struct Lent<'a> {
    ptr: usize,
    len: usize,
    exports: &'a Exports,
    open: &'a std::sync::atomic::AtomicBool,
}

/// A numpy view of `lent`, a value of `class`, made by `owner`; `closed`
/// is the error once it is no longer lent.
///
/// # Safety
/// As [`array_over`]'s: the memory stays valid (and written by nobody
/// else when `writable`) while a view counted by `lent.exports` lives.
unsafe fn view_of<'py>(
    owner: &Bound<'py, PyAny>,
    class: &Bound<'py, PyAny>,
    lent: Lent<'_>,
    writable: bool,
    closed: &'static str,
) -> PyResult<Bound<'py, PyAny>> {
    // Relaxed: a flag of the owner.
    if !lent.open.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(PyValueError::new_err(closed));
    }
    let (dtype, shape) = view_form(owner.py(), class)?;
    // SAFETY: the caller's promise.
    unsafe {
        array_over(
            owner,
            lent.exports,
            Memory {
                ptr: lent.ptr as *mut u8,
                len: lent.len,
                writable,
            },
            &dtype,
            Some(&shape),
        )
    }
}

/// The numpy dtype and shape a value of `class` is viewed as.
fn view_form<'py>(
    py: Python<'py>,
    class: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, numpy::PyArrayDescr>, Vec<isize>)> {
    let (dtype, shape): (Bound<'py, PyAny>, Vec<isize>) = py
        .import("hako._types")?
        .call_method1("view_form", (class,))?
        .extract()?;
    Ok((dtype_of(&dtype)?, shape))
}
