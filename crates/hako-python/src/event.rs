//! Events: `EventService`, `Notifier`, `Listener`.

use std::time::Duration;

use pyo3::prelude::*;

use crate::common::{deadline, port_methods, wait_sliced, wait_strategy, Attachments, Slot};
use crate::errors::PyResultExt;

/// An event service: make its notifiers and listeners here.
#[pyclass(module = "hako", frozen)]
pub struct EventService {
    pub(crate) svc: hako::EventService,
}

#[pymethods]
impl EventService {
    /// The service's name.
    #[getter]
    fn name(&self) -> String {
        self.svc.name().to_string()
    }

    /// Creates a notifier; ``notify()`` without an id signals
    /// ``default_event_id``.
    #[pyo3(signature = (*, default_event_id=0))]
    fn notifier(&self, default_event_id: u64) -> PyResult<Notifier> {
        let n = self
            .svc
            .notifier_builder()
            .default_event_id(hako::EventId(default_event_id))
            .create()
            .py()?;
        Ok(Notifier {
            port: Slot::new("the notifier", n),
        })
    }

    /// Creates a listener; ``wait`` as for subscribers.
    #[pyo3(signature = (*, wait="spin_then_park"))]
    fn listener(&self, wait: &str) -> PyResult<Listener> {
        let l = self
            .svc
            .listener_builder()
            .wait_strategy(wait_strategy(wait)?)
            .create()
            .py()?;
        Ok(Listener {
            port: Slot::new("the listener", l),
            attached: Attachments::default(),
        })
    }
}

/// Signals event ids to every listener of its service.
#[pyclass(module = "hako", frozen)]
pub struct Notifier {
    port: Slot<hako::Notifier>,
}

port_methods! { impl Notifier {
    /// Signals ``event_id`` (default: the notifier's default id); returns
    /// how many listeners were notified.
    #[pyo3(signature = (event_id=None))]
    fn notify(&self, py: Python<'_>, event_id: Option<u64>) -> PyResult<usize> {
        self.port.with(py, |n| match event_id {
            Some(id) => n.notify_with_id(hako::EventId(id)).py(),
            None => n.notify().py(),
        })
    }

    /// The notifier's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |n| Ok(n.id()))
    }

    /// Leaves the service now.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        drop(self.port.take(py));
        Ok(())
    }
} }

type Fired = Vec<(u64, u64)>;

fn fired(v: Vec<(hako::EventId, u64)>) -> Fired {
    v.into_iter().map(|(id, n)| (id.value(), n)).collect()
}

/// Learns which event ids fired, and how often, since it last looked.
#[pyclass(module = "hako", frozen)]
pub struct Listener {
    pub(crate) port: Slot<hako::Listener>,
    /// Waitsets it is attached to.
    pub(crate) attached: Attachments,
}

port_methods! { wakeup impl Listener {
    /// The events that fired, as ``[(event_id, count), ...]``: waits up to
    /// ``timeout`` seconds for one (0, the default: never waits; None: no
    /// limit); an empty list on timeout. Raises ``PeersGoneError`` when
    /// every notifier is gone (nothing could wake it), and
    /// ``KeyboardInterrupt`` on Ctrl-C.
    #[pyo3(signature = (timeout=0.0))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Fired> {
        let until = deadline(timeout)?;
        let mut g = self.port.lock(py);
        let l = g.as_mut().ok_or_else(|| self.port.closed())?;
        let now = fired(l.try_wait());
        if !now.is_empty() || until.is_some_and(|u| u <= std::time::Instant::now()) {
            return Ok(now);
        }
        let got = wait_sliced(
            py,
            l,
            until,
            |l, slice: Duration| {
                let v = l.timed_wait(slice).py()?;
                Ok((!v.is_empty()).then(|| fired(v)))
            },
            |_| Ok(()),
        )?;
        Ok(got.unwrap_or_default())
    }

    /// ``await listener.wait_async()``: the events that fired, waiting in
    /// the running asyncio loop.
    fn wait_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("hako._aio")?
            .call_method1("wait_events", (slf,))
    }

    /// Whether a notifier is there and its process alive: for event loops
    /// that wait on ``fileno()``.
    fn notifiers_alive(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |l| Ok(l.notifiers_alive()))
    }

    /// Whether an event is waiting.
    fn has_events(&self, py: Python<'_>) -> PyResult<bool> {
        self.port.with(py, |l| Ok(l.has_events()))
    }

    /// The listener's port id.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        self.port.with(py, |l| Ok(l.id()))
    }

    /// Leaves the service now. Refused while it is attached to a waitset.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut g = self.port.lock(py);
        self.attached.refuse_close()?;
        drop(g.take());
        Ok(())
    }
} }
