//! Publish/subscribe: `PubSubService`, `Publisher`, `Subscriber`.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::common::{
    deadline, port_methods, wait_sliced, wait_strategy, with_bytes, Attachments, Slot,
};
use crate::errors::PyResultExt;
use crate::payload::Payload;
use crate::sample::{Loan, LoanKind, Received, Sample};

/// A publish/subscribe service: make its publishers and subscribers here.
#[pyclass(module = "hako", frozen)]
pub struct PubSubService {
    svc: hako::PubSubService<[u8]>,
    payload: Payload,
}

impl PubSubService {
    /// Wraps an opened service.
    pub fn new(svc: hako::PubSubService<[u8]>, payload: Payload) -> Self {
        PubSubService { svc, payload }
    }
}

#[pymethods]
impl PubSubService {
    /// The service's name.
    #[getter]
    fn name(&self) -> String {
        self.svc.name().to_string()
    }

    /// The payload type's name as the service records it.
    #[getter]
    fn type_name(&self) -> String {
        self.svc.payload().type_name.clone()
    }

    /// Creates a publisher.
    ///
    /// Args:
    ///     max_slice_len: most elements of one sample (slices; default 1).
    ///     max_loans: samples loaned at once (default 2).
    ///     backpressure: when a queue is full under the backpressure
    ///         policy: ``"block"`` (default), ``"retry"`` (``retries``
    ///         times) or ``"discard"``.
    ///     pool_size: chunks in the publisher's pool (default: enough for
    ///         every queue, history and loan).
    #[pyo3(signature = (*, max_slice_len=None, max_loans=None, backpressure="block",
        retries=0, pool_size=None))]
    fn publisher(
        &self,
        max_slice_len: Option<usize>,
        max_loans: Option<u32>,
        backpressure: &str,
        retries: u32,
        pool_size: Option<u32>,
    ) -> PyResult<Publisher> {
        let mut b = self
            .svc
            .publisher_builder()
            .backpressure(crate::common::backpressure(backpressure, retries)?);
        if let Some(n) = max_slice_len {
            if !self.payload.slice && n != 1 {
                return Err(PyValueError::new_err(
                    "max_slice_len is for slice payloads (payload=..., slice=True)",
                ));
            }
            b = b.max_slice_len(n);
        }
        if let Some(n) = max_loans {
            b = b.max_loaned_samples(n);
        }
        if let Some(n) = pool_size {
            b = b.pool_size(n);
        }
        let p = b.create().py()?;
        Ok(Publisher {
            max_len: p.max_slice_len(),
            port: Slot::new("the publisher", p),
            payload: self.payload.clone(),
        })
    }

    /// Creates a subscriber. ``wait``: how its blocking receives wait,
    /// ``"spin_then_park"`` (default), ``"busy_spin"`` or ``"park"``.
    /// ``end_when_publishers_gone``: a wait raises ``PeersGoneError`` once
    /// every publisher it saw has left or died with nothing queued (default
    /// False: it waits on, so the subscriber outlives a restart of its
    /// publisher; ``take_publisher_changes()`` tells that one happened).
    /// ``lossy``: publishers never wait for it; on a backpressure service a
    /// full queue loses its oldest sample, counted as the publisher's
    /// overflow (default False).
    #[pyo3(signature = (*, wait="spin_then_park", end_when_publishers_gone=false, lossy=false))]
    fn subscriber(
        &self,
        wait: &str,
        end_when_publishers_gone: bool,
        lossy: bool,
    ) -> PyResult<Subscriber> {
        let s = self
            .svc
            .subscriber_builder()
            .wait_strategy(wait_strategy(wait)?)
            .end_when_publishers_gone(end_when_publishers_gone)
            .lossy(lossy)
            .create()
            .py()?;
        Ok(Subscriber {
            port: Slot::new("the subscriber", s),
            attached: Attachments::default(),
            payload: self.payload.clone(),
            end_when_gone: end_when_publishers_gone,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "hako.PubSubService({:?}, type {:?})",
            self.svc.name().to_string(),
            self.svc.payload().type_name
        )
    }
}

/// Publishes samples: ``loan()`` a chunk, write it in place, ``send()`` it;
/// or ``send_copy(data)``.
#[pyclass(module = "hako", frozen)]
pub struct Publisher {
    port: Slot<hako::Publisher<[u8]>>,
    payload: Payload,
    max_len: usize,
}

impl Publisher {
    fn loan_kind(&self, py: Python<'_>, elements: usize) -> PyResult<LoanKind> {
        self.port.with(py, |p| {
            Ok(LoanKind::Sample(p.loan_slice_uninit(elements).py()?))
        })
    }
}

port_methods! { impl Publisher {
    /// Loans a chunk for ``elements`` elements (slices; 1 otherwise).
    #[pyo3(signature = (elements=1))]
    fn loan(&self, py: Python<'_>, elements: usize) -> PyResult<Loan> {
        if !self.payload.slice && elements != 1 {
            return Err(PyValueError::new_err(
                "this service's payload is one value, not a slice: loan() takes no length",
            ));
        }
        let k = self.loan_kind(py, elements)?;
        Ok(Loan::new(k, self.payload.clone(), elements, None))
    }

    /// Loans a chunk for a numpy array of ``shape`` and ``dtype``; its
    /// ``numpy()`` is that array, zero-copy.
    fn loan_array(
        &self,
        py: Python<'_>,
        shape: Bound<'_, PyAny>,
        dtype: Bound<'_, PyAny>,
    ) -> PyResult<Loan> {
        let (elements, spec) = self.payload.array(py, shape, dtype)?;
        let k = self.loan_kind(py, elements)?;
        Ok(Loan::new(k, self.payload.clone(), elements, Some(spec)))
    }

    /// Copies ``data`` (bytes-like, a ctypes instance, a C-contiguous numpy
    /// array) into a loan and sends it; returns how many subscribers got it.
    fn send_copy(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.port.with(py, |p| {
            with_bytes(data, |b| {
                let n = self.payload.elements_of(b.len())?;
                let mut loan = p.loan_slice_uninit(n).py()?;
                // SAFETY: the loan holds `n` elements, `b.len()` bytes.
                unsafe { crate::common::copy_in(py, loan.as_mut_ptr(), b) };
                // SAFETY: every byte written just above.
                Ok(unsafe { loan.assume_init() }.send())
            })?
        })
    }

    /// Subscribers connected now.
    #[getter]
    fn subscriber_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |p| Ok(p.subscriber_count()))
    }

    /// Chunks in the publisher's pool.
    #[getter]
    fn pool_size(&self, py: Python<'_>) -> PyResult<u32> {
        self.port.with(py, |p| Ok(p.pool_size()))
    }

    /// Chunks free now (neither loaned nor held by a subscriber).
    #[getter]
    fn free_chunks(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |p| Ok(p.free_chunks()))
    }

    /// Most elements of one sample.
    #[getter]
    fn max_slice_len(&self) -> usize {
        self.max_len
    }

    /// Whether every subscriber's queue has room (under backpressure).
    fn has_room(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |p| Ok(p.has_room()))
    }

    /// Connects subscribers that came since the last send (and delivers
    /// history to them) without sending.
    fn update_connections(&self, py: Python<'_>) -> PyResult<()> {
        self.port.with(py, |p| {
            p.update_connections();
            Ok(())
        })
    }

    /// The publisher's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |p| Ok(p.id()))
    }

    /// Leaves the service now (samples in flight stay readable).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        drop(self.port.take(py));
        Ok(())
    }
} }

/// Receives the samples of every publisher of a service.
#[pyclass(module = "hako", frozen)]
pub struct Subscriber {
    pub(crate) port: Slot<hako::Subscriber<[u8]>>,
    /// Waitsets it is attached to.
    pub(crate) attached: Attachments,
    payload: Payload,
    /// Built with ``end_when_publishers_gone=True``.
    end_when_gone: bool,
}

port_methods! { wakeup impl Subscriber {
    /// The next sample, or None. Waits up to ``timeout`` seconds (0, the
    /// default: never waits; None: until one comes). Publishers that leave
    /// or restart meanwhile do not end the wait, unless the subscriber was
    /// made with ``end_when_publishers_gone=True``: then it raises
    /// ``PeersGoneError`` when every publisher seen during the wait left or
    /// died with nothing queued. ``KeyboardInterrupt`` on Ctrl-C.
    #[pyo3(signature = (timeout=0.0))]
    fn receive(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Sample>> {
        let until = deadline(timeout)?;
        let mut g = self.port.lock(py);
        let sub = g.as_mut().ok_or_else(|| self.port.closed())?;
        if let Some(s) = sub.receive().py()? {
            return Ok(Some(Sample::new(Received::Sample(s), self.payload.clone())));
        }
        if until.is_some_and(|u| u <= std::time::Instant::now()) {
            return Ok(None);
        }
        // A publisher seen during the wait, kept across slices: the wait
        // ends with PeersGoneError once all such are gone.
        let mut saw = sub.publisher_count() > 0;
        let got = wait_sliced(
            py,
            sub,
            until,
            |s, slice: Duration| s.receive_timeout(slice).py(),
            |s| {
                if !self.end_when_gone {
                    // Rust's own slices reclaim the dead and wait on.
                } else if s.publishers_alive() {
                    saw = true;
                } else if saw && !s.has_samples() {
                    return Err(crate::errors::PeersGoneError::new_err(
                        "every publisher of the service is gone and nothing is queued",
                    ));
                }
                Ok(())
            },
        )?;
        Ok(got.map(|s| Sample::new(Received::Sample(s), self.payload.clone())))
    }

    /// Waits until a sample comes: ``receive(timeout=None)``.
    fn blocking_receive(&self, py: Python<'_>) -> PyResult<Sample> {
        Ok(self.receive(py, None)?.expect("an endless wait yields"))
    }

    /// ``await sub.receive_async()``: the next sample, waiting in the
    /// running asyncio loop on the subscriber's descriptor.
    fn receive_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("hako._aio")?
            .call_method1("receive", (slf,))
    }

    /// Whether a sample is waiting.
    fn has_samples(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |s| Ok(s.has_samples()))
    }

    /// Whether a publisher is there and its process alive (a system call
    /// per publisher): for event loops that wait on ``fileno()``.
    fn publishers_alive(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |s| Ok(s.publishers_alive()))
    }

    /// ``(connected, departed)``: the publishers connected and departed
    /// since the last call; a restarted publisher counts one of each.
    fn take_publisher_changes(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        self.port.with(py, |s| {
            let c = s.take_publisher_changes();
            Ok((c.connected, c.departed))
        })
    }

    /// Whether waits end when every publisher seen is gone
    /// (``end_when_publishers_gone`` when made).
    #[getter]
    fn end_when_publishers_gone(&self) -> bool {
        self.end_when_gone
    }

    /// Publishers connected now.
    #[getter]
    fn publisher_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.port.with(py, |s| Ok(s.publisher_count()))
    }

    /// The subscriber's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |s| Ok(s.id()))
    }

    /// Leaves the service now (samples held stay readable). Refused while
    /// it is attached to a waitset.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.port.lock(py);
        self.attached.refuse_close()?;
        drop(g.take());
        Ok(())
    }
} }
