//! `Server` and `ActiveRequest`.

use std::ffi::c_int;
// Relaxed (the `live` count): changed and read with the GIL held, which
// orders it.
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::common::{deadline, port_methods, wait_sliced, with_bytes, Attachments, Exports, Slot};
use crate::errors::PyResultExt;
use crate::payload::Payload;
use crate::sample::{Loan, LoanKind};

type RustServer = hako::Server<[u8], [u8]>;
type RustActive = hako::ActiveRequest<'static, [u8], [u8]>;

/// Receives requests and answers them.
#[pyclass(module = "hako", frozen)]
pub struct Server {
    /// Boxed: active requests borrow it at a fixed address.
    pub(crate) port: Slot<Box<RustServer>>,
    /// Active requests that borrow it.
    live: AtomicUsize,
    /// Waitsets it is attached to.
    pub(crate) attached: Attachments,
    req: Payload,
    resp: Payload,
}

impl Server {
    /// Wraps a new server.
    pub fn new(s: RustServer, req: Payload, resp: Payload) -> Self {
        Server {
            port: Slot::new("the server", Box::new(s)),
            live: AtomicUsize::new(0),
            attached: Attachments::default(),
            req,
            resp,
        }
    }
}

/// The server as 'static.
///
/// # Safety
/// Only for an active request that is counted in `live` and holds a
/// reference to the server's Python object: the box's address is fixed,
/// and it lives until `close`, which waits for `live` to reach zero.
unsafe fn forever(s: &RustServer) -> &'static RustServer {
    // SAFETY: the caller's promise.
    unsafe { &*(s as *const RustServer) }
}

port_methods! { wakeup impl Server {
    /// The next request, or None. Waits up to ``timeout`` seconds (0, the
    /// default: never waits; None: until one comes). Raises
    /// ``KeyboardInterrupt`` on Ctrl-C.
    #[pyo3(signature = (timeout=0.0))]
    fn receive(slf: &Bound<'_, Self>, timeout: Option<f64>) -> PyResult<Option<ActiveRequest>> {
        let py = slf.py();
        let me = slf.get();
        let until = deadline(timeout)?;
        let mut g = me.port.lock(py);
        let s = g.as_mut().ok_or_else(|| me.port.closed())?;
        // SAFETY: what it returns is counted in `live` below, and holds a
        // reference to this object.
        let mut got = unsafe { forever(s) }.receive().py()?;
        if got.is_none() && until.is_none_or(|u| u > std::time::Instant::now()) {
            got = wait_sliced(
                py,
                s,
                until,
                // SAFETY: as above.
                |s, slice: Duration| unsafe { forever(s) }.receive_timeout(slice).py(),
                |_| Ok(()),
            )?;
        }
        Ok(got.map(|a| {
            me.live.fetch_add(1, Relaxed);
            ActiveRequest {
                elements: a.len(),
                active: Slot::new("the request", a),
                server: slf.clone().unbind(),
                exports: Exports::default(),
                req: me.req.clone(),
                resp: me.resp.clone(),
            }
        }))
    }

    /// Waits until a request comes: ``receive(timeout=None)``.
    fn blocking_receive(slf: &Bound<'_, Self>) -> PyResult<ActiveRequest> {
        Ok(Self::receive(slf, None)?.expect("an endless wait yields"))
    }

    /// ``await server.receive_async()``: the next request, waiting in the
    /// running asyncio loop.
    fn receive_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("hako._aio")?
            .call_method1("receive", (slf,))
    }

    /// Whether a request is waiting.
    fn has_requests(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |s| Ok(s.has_requests()))
    }

    /// Clients connected now.
    #[getter]
    fn client_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |s| Ok(s.client_count()))
    }

    /// The server's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |s| Ok(s.id()))
    }

    /// Leaves the service now. Refused while active requests exist.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.port.lock(py);
        let n = self.live.load(Relaxed);
        if n > 0 {
            return Err(PyRuntimeError::new_err(format!(
                "{n} active request(s) still use the server: finish them first"
            )));
        }
        self.attached.refuse_close()?;
        drop(g.take());
        Ok(())
    }
} }

/// A request a server received: read it (read-only buffer, zero-copy, as a
/// ``Sample``), answer with ``respond(data)`` or ``loan()`` + ``send()``,
/// as many times as the stream needs, then ``finish()`` (or drop it) to
/// end the stream.
#[pyclass(module = "hako", frozen)]
pub struct ActiveRequest {
    active: Slot<RustActive>,
    server: Py<Server>,
    exports: Exports,
    elements: usize,
    req: Payload,
    resp: Payload,
}

impl ActiveRequest {
    fn loan_kind(&self, py: Python<'_>, elements: usize) -> PyResult<LoanKind> {
        self.active.with(py, |a| {
            Ok(LoanKind::Response(a.loan_slice_uninit(elements).py()?))
        })
    }
}

#[pymethods]
impl ActiveRequest {
    /// Request payload bytes.
    fn __len__(&self) -> usize {
        self.elements * self.req.elem_size
    }

    /// Elements of the request's payload type.
    #[getter]
    fn elements(&self) -> usize {
        self.elements
    }

    /// The request as a read-only numpy array, zero-copy.
    #[pyo3(signature = (dtype=None, shape=None))]
    fn numpy<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        shape: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let (dtype, shape) = crate::sample::array_form(slf.py(), &me.req, dtype, shape, None)?;
        let g = me.active.lock(slf.py());
        let a = g
            .as_ref()
            .ok_or_else(|| PyBufferError::new_err("the request was finished"))?;
        let mem = crate::view::Memory {
            ptr: a.as_ptr().cast_mut(),
            len: me.elements * me.req.elem_size,
            writable: false,
        };
        // SAFETY: as in __getbuffer__: the request's chunk stays mapped and
        // unchanged until the request is dropped, which `finish` refuses
        // while the view counted here lasts. Read-only.
        unsafe { crate::view::array_over(slf.as_any(), &me.exports, mem, &dtype, shape.as_deref()) }
    }

    /// A copy of the request as its ctypes type (``bytes`` for bytes).
    #[getter]
    fn value<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::sample::typed(slf.as_any(), &slf.get().req, "from_buffer_copy")
    }

    /// Loans a response of ``elements`` elements (slices; 1 otherwise).
    #[pyo3(signature = (elements=1))]
    fn loan(&self, py: Python<'_>, elements: usize) -> PyResult<Loan> {
        if !self.resp.slice && elements != 1 {
            return Err(PyValueError::new_err(
                "this service's response is one value, not a slice: loan() takes no length",
            ));
        }
        Ok(Loan::new(
            self.loan_kind(py, elements)?,
            self.resp.clone(),
            elements,
            None,
        ))
    }

    /// Loans a response for a numpy array of ``shape`` and ``dtype``.
    fn loan_array(
        &self,
        py: Python<'_>,
        shape: Bound<'_, PyAny>,
        dtype: Bound<'_, PyAny>,
    ) -> PyResult<Loan> {
        let (n, spec) = self.resp.array(py, shape, dtype)?;
        Ok(Loan::new(
            self.loan_kind(py, n)?,
            self.resp.clone(),
            n,
            Some(spec),
        ))
    }

    /// Copies ``data`` (bytes-like, a ctypes instance, a C-contiguous numpy
    /// array) into a response and sends it.
    fn respond(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let resp = &self.resp;
        self.active.with(py, |a| {
            with_bytes(data, |b| {
                let n = resp.elements_of(b.len())?;
                let mut loan = a.loan_slice_uninit(n).py()?;
                // SAFETY: the loan holds `n` elements, `b.len()` bytes.
                unsafe { crate::common::copy_in(py, loan.as_mut_ptr(), b) };
                // SAFETY: every byte written just above.
                unsafe { loan.assume_init() }.send().py()
            })?
        })
    }

    /// The client's port id.
    #[getter]
    fn client_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.active.with(py, |a| Ok(a.client_id()))
    }

    /// Whether the client still waits for the responses: registered,
    /// alive, and it has not dropped the request's pending response.
    fn is_connected(&self, py: Python<'_>) -> PyResult<bool> {
        self.active.with(py, |a| Ok(a.is_connected()))
    }

    /// Whether the client asked for a response at all.
    #[getter]
    fn expects_response(&self, py: Python<'_>) -> PyResult<bool> {
        self.active.with(py, |a| Ok(a.expects_response()))
    }

    /// Ends the response stream. Refused while a view of the request exists.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.active.lock(py);
        self.exports.refuse("finish", "request")?;
        if g.take().is_some() {
            self.server.bind(py).get().live.fetch_sub(1, Relaxed);
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving a ``with`` block ends the stream.
    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.finish(py)?;
        Ok(false)
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let me = slf.get();
        let g = me.active.lock(slf.py());
        let a = g
            .as_ref()
            .ok_or_else(|| PyBufferError::new_err("the request was finished"))?;
        let len = me.elements * me.req.elem_size;
        // SAFETY: the request's chunk stays mapped and unchanged until the
        // request is dropped, which `finish` refuses while this export
        // lasts (and the view holds a reference to this object).
        unsafe {
            me.exports
                .export(slf.as_any(), view, a.as_ptr().cast_mut(), len, true, flags)
        }?;
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        self.exports.release();
    }
}

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        if self.active.get_mut().take().is_some() {
            Python::attach(|py| self.server.bind(py).get().live.fetch_sub(1, Relaxed));
        }
    }
}
