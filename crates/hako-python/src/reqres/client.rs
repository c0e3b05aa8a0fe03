//! `Client` and `PendingResponse`.

// Relaxed (the `live` count): changed and read with the GIL held, which
// orders it.
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::common::{deadline, port_methods, wait_sliced, with_bytes, Attachments, Owned, Slot};
use crate::errors::PyResultExt;
use crate::payload::{ArraySpec, Payload};
use crate::sample::{BorrowedLoan, Loan, LoanKind, Received, Sample};

type RustClient = hako::Client<[u8], [u8]>;

/// Sends requests and receives their responses.
#[pyclass(module = "hako", frozen)]
pub struct Client {
    /// Boxed: loans and pending responses borrow it at a fixed address.
    pub(crate) port: Slot<Box<RustClient>>,
    /// Loans and pending responses that borrow it.
    pub(crate) live: AtomicUsize,
    /// Waitsets it is attached to.
    pub(crate) attached: Attachments,
    req: Payload,
    pub(crate) resp: Payload,
}

impl Client {
    /// Wraps a new client.
    pub fn new(c: RustClient, req: Payload, resp: Payload) -> Self {
        Client {
            port: Slot::new("the client", Box::new(c)),
            live: AtomicUsize::new(0),
            attached: Attachments::default(),
            req,
            resp,
        }
    }

    /// A request loan of `elements`, counted in `live`.
    fn loan_kind(slf: &Bound<'_, Self>, elements: usize) -> PyResult<LoanKind> {
        let me = slf.get();
        me.port.with(slf.py(), |c| {
            // SAFETY: the box's address is fixed, and the box lives until
            // `close`, which waits for `live` (counted here, uncounted
            // when the loan or its pending response goes) to reach zero;
            // the Python object it lives in is kept alive by the reference
            // the loan holds. That span is what 'static stands for.
            let c: &'static RustClient = unsafe { &*(&**c as *const RustClient) };
            let loan = c.loan_slice_uninit(elements).py()?;
            me.live.fetch_add(1, Relaxed);
            Ok(LoanKind::Request(Box::new(RequestLoan {
                loan: Owned(loan),
                client: slf.clone().unbind(),
            })))
        })
    }
}

/// A loaned request: it borrows its client, and is sent or dropped under
/// the client's lock.
struct RequestLoan {
    loan: Owned<hako::RequestMutUninit<'static, [u8], [u8]>>,
    client: Py<Client>,
}

impl BorrowedLoan for RequestLoan {
    fn ptr(&mut self) -> *mut u8 {
        self.loan.0.as_mut_ptr()
    }

    fn send(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let RequestLoan { loan, client } = *self;
        let c = client.bind(py).get();
        let sent = {
            let _g = c.port.lock(py);
            // SAFETY: u8 elements have no padding and a chunk is never
            // uninitialised at the byte level (zeros or earlier payloads);
            // see `SampleMutUninit::assume_init`.
            unsafe { loan.0.assume_init() }.send()
        };
        match sent {
            // The loan's count in `live` passes to the pending response.
            Ok(p) => {
                let resp = c.resp.clone();
                PendingResponse::new(p, client, resp).into_py_any(py)
            }
            Err(e) => {
                c.live.fetch_sub(1, Relaxed);
                Err(crate::errors::ToPy::to_py(e))
            }
        }
    }

    fn release(self: Box<Self>, py: Python<'_>) {
        let RequestLoan { loan, client } = *self;
        let client = client.bind(py).get();
        let _g = client.port.lock(py);
        drop(loan);
        client.live.fetch_sub(1, Relaxed);
    }
}

port_methods! { wakeup impl Client {
    /// Loans a request of ``elements`` elements (slices; 1 otherwise).
    #[pyo3(signature = (elements=1))]
    fn loan(slf: &Bound<'_, Self>, elements: usize) -> PyResult<Loan> {
        let me = slf.get();
        if !me.req.slice && elements != 1 {
            return Err(PyValueError::new_err(
                "this service's request is one value, not a slice: loan() takes no length",
            ));
        }
        let k = Self::loan_kind(slf, elements)?;
        Ok(Loan::new(k, me.req.clone(), elements, None))
    }

    /// Loans a request for a numpy array of ``shape`` and ``dtype``.
    fn loan_array(
        slf: &Bound<'_, Self>,
        shape: Bound<'_, PyAny>,
        dtype: Bound<'_, PyAny>,
    ) -> PyResult<Loan> {
        let me = slf.get();
        let (n, spec): (usize, ArraySpec) = me.req.array(slf.py(), shape, dtype)?;
        let k = Self::loan_kind(slf, n)?;
        Ok(Loan::new(k, me.req.clone(), n, Some(spec)))
    }

    /// Copies ``data`` into a request and sends it; returns its
    /// ``PendingResponse``.
    fn send_copy(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let me = slf.get();
        let n = with_bytes(data, |b| me.req.elements_of(b.len()))??;
        let k = Self::loan_kind(slf, n)?;
        let loan = Loan::new(k, me.req.clone(), n, None);
        loan.write(slf.py(), data, 0)?;
        loan.send(slf.py())
    }

    /// Servers connected now.
    #[getter]
    fn server_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |c| Ok(c.server_count()))
    }

    /// Waits, asleep, until a server is there to take a request, so that a
    /// client may start before its server: True once one is, False if none
    /// came within ``timeout`` seconds (None: no limit). Ctrl-C raises
    /// ``KeyboardInterrupt``.
    #[pyo3(signature = (timeout=None))]
    fn wait_for_server(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let until = deadline(timeout)?;
        self.port.with(py, |c| {
            let got = wait_sliced(
                py,
                c,
                until,
                |c, slice: Duration| match c.wait_for_server(slice) {
                    Ok(()) => Ok(Some(())),
                    Err(hako::ServerWaitError::NoServer { .. }) => Ok(None),
                    Err(e) => Err(PyRuntimeError::new_err(e.to_string())),
                },
                |_| Ok(()),
            )?;
            Ok(got.is_some())
        })
    }

    /// Requests sent whose response streams have not ended.
    #[getter]
    fn requests_in_flight(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |c| Ok(c.requests_in_flight()))
    }

    /// Whether a response is waiting (for any request).
    fn has_responses(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |c| Ok(c.has_responses()))
    }

    /// Whether the servers' queues have room (under backpressure).
    fn has_room(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |c| Ok(c.has_room()))
    }

    /// The client's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |c| Ok(c.id()))
    }

    /// Leaves the service now. Refused while loans or pending responses
    /// of it exist.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.port.lock(py);
        let n = self.live.load(Relaxed);
        if n > 0 {
            return Err(PyRuntimeError::new_err(format!(
                "{n} request loan(s) or pending response(s) still use the client: drop them first"
            )));
        }
        self.attached.refuse_close()?;
        drop(g.take());
        Ok(())
    }
} }

type RustPending = hako::PendingResponse<'static, [u8], [u8]>;

/// A request sent, and its stream of responses to come: ``receive()`` them
/// one by one, or iterate (``for response in pending``) until the server
/// ends the stream. Dropping it tells the server nobody listens any more.
#[pyclass(module = "hako", frozen)]
pub struct PendingResponse {
    /// Used only under its client's lock.
    pending: Mutex<Option<Owned<RustPending>>>,
    client: Py<Client>,
    resp: Payload,
}

impl PendingResponse {
    /// Wraps a sent request (already counted in the client's `live`).
    pub fn new(p: RustPending, client: Py<Client>, resp: Payload) -> Self {
        PendingResponse {
            pending: Mutex::new(Some(Owned(p))),
            client,
            resp,
        }
    }

    /// Runs `f` on the pending response under its client's lock.
    fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(Python<'_>, &mut Owned<RustPending>) -> PyResult<R>,
    ) -> PyResult<R> {
        let client = self.client.bind(py).get();
        let _g = client.port.lock(py);
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let p = p
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the pending response was dropped"))?;
        f(py, p)
    }
}

#[pymethods]
impl PendingResponse {
    /// The next response, or None: None when nothing came within
    /// ``timeout`` seconds (0, the default: never waits; None: no limit)
    /// and, for good, once the stream has ended (``is_finished``). Raises
    /// ``PeersGoneError`` when the server went without ending the stream.
    #[pyo3(signature = (timeout=0.0))]
    fn receive(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Sample>> {
        let until = deadline(timeout)?;
        let resp = self.resp.clone();
        let wrap = move |r| Sample::new(Received::Response(r), resp.clone());
        self.with(py, |py, p| {
            if let Some(r) = p.0.receive().py()? {
                return Ok(Some(wrap(r)));
            }
            if p.0.is_finished() || until.is_some_and(|u| u <= std::time::Instant::now()) {
                return Ok(None);
            }
            let got = wait_sliced(
                py,
                p,
                until,
                |p, slice: Duration| match p.0.receive_timeout(slice).py()? {
                    Some(r) => Ok(Some(Some(r))),
                    None if p.0.is_finished() => Ok(Some(None)),
                    None => Ok(None),
                },
                |_| Ok(()),
            )?;
            Ok(got.flatten().map(&wrap))
        })
    }

    /// The next response, waiting for it; None at the end of the stream.
    fn blocking_receive(&self, py: Python<'_>) -> PyResult<Option<Sample>> {
        self.receive(py, None)
    }

    /// ``await pending.receive_async()``: the next response (None at the
    /// end of the stream), waiting in the running asyncio loop.
    fn receive_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("hako._aio")?
            .call_method1("receive_response", (slf,))
    }

    /// Whether the server ended the stream and every response was taken.
    #[getter]
    fn is_finished(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |_, p| Ok(p.0.is_finished()))
    }

    /// Whether the server the request went to is still there.
    fn server_there(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |_, p| Ok(p.0.server_there()))
    }

    /// The client it was sent by.
    #[getter]
    fn client(&self, py: Python<'_>) -> Py<Client> {
        self.client.clone_ref(py)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Sample>> {
        self.receive(py, None)
    }

    /// Drops the request now: the server is told nobody listens.
    fn close(&self, py: Python<'_>) {
        let client = self.client.bind(py).get();
        let _g = client.port.lock(py);
        let p = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if p.is_some() {
            drop(p);
            client.live.fetch_sub(1, Relaxed);
        }
    }
}

impl Drop for PendingResponse {
    fn drop(&mut self) {
        if self.pending.get_mut().is_ok_and(|p| p.is_some()) {
            Python::attach(|py| self.close(py));
        }
    }
}
