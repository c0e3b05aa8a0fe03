//! Loans (writable, zero-copy) and received samples (read-only, zero-copy)
//! as Python objects with the buffer protocol.
//!
//! A view of a sample's memory (a `memoryview`, a numpy array) holds an
//! export of the sample object: the object, and so the chunk, lives as
//! long as the view does. A loan that is sent, or a sample that is
//! released, while a view of it is exported would leave that view looking
//! at a chunk the pool hands out again: both refuse with `BufferError`
//! (as `bytearray` refuses to resize while exported).

use std::ffi::c_int;

use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::{ffi, IntoPyObjectExt};

use crate::common::{with_bytes, Exports, Slot};
use crate::errors::PyResultExt;
use crate::payload::{ArraySpec, Payload};
use crate::view::{array_over, Memory};

/// A loan that borrows its port's Python object (a client's request): the
/// pattern that made it sends it and lets it go, under that port's lock.
pub trait BorrowedLoan: Send {
    /// Where its payload is.
    fn ptr(&mut self) -> *mut u8;
    /// Sends it; what `Loan.send()` returns (a request's
    /// `PendingResponse`).
    fn send(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>>;
    /// Lets it go unsent.
    fn release(self: Box<Self>, py: Python<'_>);
}

/// What a [`Loan`] holds.
pub enum LoanKind {
    /// A sample to publish.
    Sample(hako::SampleMutUninit<[u8]>),
    /// A request, borrowing its client.
    Request(Box<dyn BorrowedLoan>),
    /// A response to an active request.
    Response(hako::ResponseMutUninit<[u8]>),
}

impl LoanKind {
    fn ptr(&mut self) -> *mut u8 {
        match self {
            LoanKind::Sample(s) => s.as_mut_ptr(),
            LoanKind::Request(r) => r.ptr(),
            LoanKind::Response(r) => r.as_mut_ptr(),
        }
    }
}

/// A loaned chunk of shared memory to write a sample, request or response
/// into, in place, then ``send()``. It supports the buffer protocol
/// (writable): ``memoryview(loan)``, ``numpy.frombuffer(loan, ...)``,
/// ``loan.numpy()``, ``file.readinto(loan)``, ``loan.write(data)``. Delete
/// every view of it before ``send()``. Dropped unsent, it returns to the
/// pool.
#[pyclass(module = "hako", frozen)]
pub struct Loan {
    state: Slot<LoanKind>,
    exports: Exports,
    payload: Payload,
    elements: usize,
    array: Option<ArraySpec>,
}

impl Loan {
    /// A loan of `elements` elements of `payload`.
    pub fn new(
        kind: LoanKind,
        payload: Payload,
        elements: usize,
        array: Option<ArraySpec>,
    ) -> Self {
        Loan {
            state: Slot::new("the loan", kind),
            exports: Exports::default(),
            payload,
            elements,
            array,
        }
    }

    fn nbytes(&self) -> usize {
        self.elements * self.payload.elem_size
    }

    /// Takes the loan out for sending or releasing: refused while views of
    /// it are exported, or once it is gone.
    fn take(&self, py: Python<'_>, doing: &str) -> PyResult<LoanKind> {
        let mut g = self.state.lock(py);
        // Checked under the lock that `__getbuffer__` takes, so no view can
        // appear between the check and the take.
        self.exports.refuse(doing, "loan")?;
        g.take()
            .ok_or_else(|| PyValueError::new_err("the loan was sent or released already"))
    }
}

/// Lets a loan go unsent: a request under its client's lock (it borrows
/// the client).
fn drop_kind(py: Python<'_>, kind: LoanKind) {
    if let LoanKind::Request(r) = kind {
        r.release(py);
    }
}

#[pymethods]
impl Loan {
    /// Payload bytes.
    fn __len__(&self) -> usize {
        self.nbytes()
    }

    /// Elements of the payload type (1 unless it is a slice).
    #[getter]
    fn elements(&self) -> usize {
        self.elements
    }

    /// A writable numpy array over the loan, zero-copy: ``dtype`` and
    /// ``shape`` default to those of ``loan_array``, else to the payload
    /// type's and a flat array. Delete it before ``send()``.
    #[pyo3(signature = (dtype=None, shape=None))]
    fn numpy<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        shape: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let (dtype, shape) = array_form(slf.py(), &me.payload, dtype, shape, me.array.as_ref())?;
        let mut g = me.state.lock(slf.py());
        let k = g
            .as_mut()
            .ok_or_else(|| PyBufferError::new_err("the loan was sent or released already"))?;
        let mem = Memory {
            ptr: k.ptr(),
            len: me.nbytes(),
            writable: true,
        };
        // SAFETY: as in __getbuffer__: the chunk stays ours until `send`
        // or `release`, both refused while the view counted here lasts,
        // and we hold the lock they take.
        unsafe { array_over(slf.as_any(), &me.exports, mem, &dtype, shape.as_deref()) }
    }

    /// The payload as its ctypes type, zero-copy (``Frame.from_buffer``):
    /// assign its fields, delete it, then ``send()``. For byte payloads a
    /// ``memoryview``.
    #[getter]
    fn value<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        typed(slf.as_any(), &me.payload, "from_buffer")
    }

    /// Copies ``data`` (any bytes-like object) into the loan at byte
    /// ``offset``.
    #[pyo3(signature = (data, offset=0))]
    pub fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
        let nbytes = self.nbytes();
        self.state.with(py, |k| {
            let dst = k.ptr();
            with_bytes(data, |src| {
                if offset.checked_add(src.len()).is_none_or(|end| end > nbytes) {
                    return Err(PyValueError::new_err(format!(
                        "{} bytes at offset {offset} do not fit a loan of {nbytes} bytes",
                        src.len()
                    )));
                }
                // SAFETY: in bounds (checked), the loan is ours (its lock is
                // held), and `src` is another object's memory.
                unsafe { crate::common::copy_in(py, dst.add(offset), src) };
                Ok(())
            })?
        })
    }

    /// Sends it: a sample to every subscriber (returns how many got it), a
    /// request to the servers (returns its ``PendingResponse``), a response
    /// to its client (returns None). Refused (``BufferError``) while a view
    /// of it exists.
    pub fn send(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.take(py, "send")? {
            LoanKind::Sample(s) => {
                // SAFETY: (assume_init, here and below) u8 elements have no
                // padding and a chunk is never uninitialised at the byte
                // level (zeros or earlier payloads); see
                // `SampleMutUninit::assume_init`.
                unsafe { s.assume_init() }.send().into_py_any(py)
            }
            LoanKind::Request(r) => r.send(py),
            LoanKind::Response(r) => {
                // SAFETY: as above.
                unsafe { r.assume_init() }.send().py()?;
                Ok(py.None())
            }
        }
    }

    /// Returns the chunk unsent. Refused while a view of it exists.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let k = self.take(py, "release")?;
        drop_kind(py, k);
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving a ``with`` block releases the loan if it was not sent.
    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let k = self.state.take(py);
        if let Some(k) = k {
            drop_kind(py, k);
        }
        Ok(false)
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let me = slf.get();
        let mut g = me.state.lock(slf.py());
        let k = g
            .as_mut()
            .ok_or_else(|| PyBufferError::new_err("the loan was sent or released already"))?;
        // SAFETY: the chunk stays ours until `send` or `release`, both
        // refused while the export counted here lasts; nobody else writes
        // to a loan.
        unsafe {
            me.exports
                .export(slf.as_any(), view, k.ptr(), me.nbytes(), false, flags)
        }?;
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        self.exports.release();
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        if let Some(k) = self.state.get_mut().take() {
            Python::attach(|py| drop_kind(py, k));
        }
    }
}

/// What a [`Sample`] holds.
pub enum Received {
    /// A published sample.
    Sample(hako::Sample<[u8]>),
    /// A response.
    Response(hako::Response<[u8]>),
}

impl Received {
    fn ptr(&self) -> *const u8 {
        match self {
            Received::Sample(s) => s.as_ptr().cast(),
            Received::Response(r) => r.as_ptr(),
        }
    }

    fn elements(&self) -> usize {
        match self {
            Received::Sample(s) => s.len(),
            Received::Response(r) => r.len(),
        }
    }
}

/// A received sample or response: read-only shared memory, zero-copy,
/// through the buffer protocol (``memoryview(s)``, ``s.numpy()``,
/// ``bytes(s)``). A view keeps it, and its chunk, alive; ``release()``
/// (or dropping the last reference) returns the chunk to its sender.
#[pyclass(module = "hako", frozen)]
pub struct Sample {
    state: Slot<Received>,
    exports: Exports,
    payload: Payload,
    elements: usize,
    origin: u64,
}

impl Sample {
    /// A received sample or response.
    pub fn new(r: Received, payload: Payload) -> Self {
        let origin = match &r {
            Received::Sample(s) => s.publisher_id(),
            Received::Response(r) => r.server_id(),
        };
        Sample {
            elements: r.elements(),
            state: Slot::new("the sample", r),
            exports: Exports::default(),
            payload,
            origin,
        }
    }
}

#[pymethods]
impl Sample {
    /// Payload bytes.
    fn __len__(&self) -> usize {
        self.elements * self.payload.elem_size
    }

    /// Elements of the payload type (1 unless it is a slice).
    #[getter]
    fn elements(&self) -> usize {
        self.elements
    }

    /// The port id of its publisher (or, for a response, its server).
    #[getter]
    fn origin(&self) -> u64 {
        self.origin
    }

    /// A read-only numpy array over the sample, zero-copy.
    #[pyo3(signature = (dtype=None, shape=None))]
    fn numpy<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        shape: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let (dtype, shape) = array_form(slf.py(), &me.payload, dtype, shape, None)?;
        let g = me.state.lock(slf.py());
        let r = g
            .as_ref()
            .ok_or_else(|| PyBufferError::new_err("the sample was released"))?;
        let mem = Memory {
            ptr: r.ptr().cast_mut(),
            len: me.elements * me.payload.elem_size,
            writable: false,
        };
        // SAFETY: as in __getbuffer__: the chunk stays mapped and unchanged
        // until the sample is dropped, which `release` refuses while the
        // view counted here lasts. Read-only.
        unsafe { array_over(slf.as_any(), &me.exports, mem, &dtype, shape.as_deref()) }
    }

    /// A copy of the payload as its ctypes type (``Frame.from_buffer_copy``);
    /// for byte payloads, ``bytes``.
    #[getter]
    fn value<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        typed(slf.as_any(), &slf.get().payload, "from_buffer_copy")
    }

    /// A copy of the payload as ``bytes``.
    fn tobytes<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().get_type::<pyo3::types::PyBytes>().call1((slf,))
    }

    /// Returns the chunk to its sender now. Refused while a view exists.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.state.lock(py);
        self.exports.refuse("release", "sample")?;
        g.take();
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving a ``with`` block releases the sample (refused while a view
    /// of it exists).
    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release(py)?;
        Ok(false)
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let me = slf.get();
        let g = me.state.lock(slf.py());
        let r = g
            .as_ref()
            .ok_or_else(|| PyBufferError::new_err("the sample was released"))?;
        let len = me.elements * me.payload.elem_size;
        // SAFETY: the chunk stays mapped and unchanged until the sample is
        // dropped, which `release` refuses while this export lasts (and a
        // view holds a reference to this object). Read-only.
        unsafe {
            me.exports
                .export(slf.as_any(), view, r.ptr().cast_mut(), len, true, flags)
        }?;
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        self.exports.release();
    }
}

/// The dtype and shape of a `numpy()` call: those given, else the
/// array's of `loan_array` (`spec`), else the payload type's and flat.
pub fn array_form<'py>(
    py: Python<'py>,
    payload: &Payload,
    dtype: Option<Bound<'py, PyAny>>,
    shape: Option<Bound<'py, PyAny>>,
    spec: Option<&ArraySpec>,
) -> PyResult<(Bound<'py, numpy::PyArrayDescr>, Option<Vec<isize>>)> {
    let dtype = match (dtype, spec) {
        (Some(d), _) => crate::view::dtype_of(&d)?,
        (None, Some(s)) => crate::view::dtype_of(s.dtype.bind(py))?,
        (None, None) => payload.dtype(py)?,
    };
    let shape = match (shape, spec) {
        (Some(s), _) => Some(crate::view::shape_of(&s)?),
        (None, Some(s)) => Some(crate::view::shape_of(s.shape.bind(py))?),
        (None, None) => None,
    };
    Ok((dtype, shape))
}

/// `obj` as its payload's ctypes type, by `how` (`from_buffer`, zero-copy,
/// or `from_buffer_copy`); a memoryview or bytes for byte payloads.
pub fn typed<'py>(
    obj: &Bound<'py, PyAny>,
    payload: &Payload,
    how: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let class = payload.class.bind(py);
    if class.hasattr("from_buffer")? {
        if payload.slice {
            return Err(PyValueError::new_err(
                "a slice payload has no single value: use numpy(), or memoryview(...).cast()",
            ));
        }
        return class.call_method1(how, (obj,));
    }
    let mv = pyo3::types::PyMemoryView::from(obj)?.into_any();
    if how == "from_buffer" {
        Ok(mv)
    } else {
        py.get_type::<pyo3::types::PyBytes>().call1((mv,))
    }
}
