//! `Watcher`: a domain's changes as they happen (discovery).

use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Watches a domain: services created and removed; nodes and ports that
/// come, leave, die and are reclaimed. Each change is a dict with a
/// ``"change"`` key (``"service_created"``, ``"port_added"``, ...) and the
/// fields of that change. ``changes(timeout)`` waits for some; iterating
/// waits for each; ``fileno()`` is readable when there may be changes
/// (for ``select``, asyncio's ``add_reader`` or a ``WaitSet``).
#[pyclass(module = "hako._hako")]
pub struct Watcher {
    watcher: hako::Watcher,
    pending: std::collections::VecDeque<hako::Change>,
}

fn hex(id: u64) -> String {
    format!("{id:016x}")
}

/// A change as a dict.
fn dict<'py>(py: Python<'py>, c: &hako::Change) -> PyResult<Bound<'py, PyDict>> {
    use hako::Change as C;
    let d = PyDict::new(py);
    let port = |d: &Bound<'py, PyDict>, kind: &str, p: &hako::PortChange| -> PyResult<()> {
        d.set_item("change", kind)?;
        d.set_item("service", &p.service)?;
        d.set_item("role", p.role.name())?;
        d.set_item("port", hex(p.port))?;
        d.set_item("node", hex(p.node))
    };
    match c {
        C::ServiceCreated { service, pattern } => {
            d.set_item("change", "service_created")?;
            d.set_item("service", service)?;
            d.set_item("pattern", *pattern)?;
        }
        C::ServiceRemoved { service } => {
            d.set_item("change", "service_removed")?;
            d.set_item("service", service)?;
        }
        C::NodeJoined { node, pid, name } => {
            d.set_item("change", "node_joined")?;
            d.set_item("node", hex(*node))?;
            d.set_item("pid", *pid)?;
            d.set_item("name", name)?;
        }
        C::NodeLeft { node } => {
            d.set_item("change", "node_left")?;
            d.set_item("node", hex(*node))?;
        }
        C::NodeDied { node } => {
            d.set_item("change", "node_died")?;
            d.set_item("node", hex(*node))?;
        }
        C::NodeReclaimed { node } => {
            d.set_item("change", "node_reclaimed")?;
            d.set_item("node", hex(*node))?;
        }
        C::PortAdded(p) => port(&d, "port_added", p)?,
        C::PortRemoved(p) => port(&d, "port_removed", p)?,
        C::PortDied(p) => port(&d, "port_died", p)?,
        C::PortReclaimed(p) => port(&d, "port_reclaimed", p)?,
        other => {
            d.set_item("change", format!("{other:?}"))?;
        }
    }
    Ok(d)
}

impl Watcher {
    /// Waits up to `timeout` (None: until some come) for changes, in
    /// slices, so that Ctrl-C ends the wait (`KeyboardInterrupt`).
    fn fill(&mut self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if !self.pending.is_empty() {
                return Ok(());
            }
            let step = match deadline {
                Some(d) => d
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
                None => Duration::from_millis(100),
            };
            let watcher = &mut self.watcher;
            let got = py.detach(|| watcher.wait(Some(step)))?;
            self.pending.extend(got);
            if !self.pending.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
            py.check_signals()?;
        }
    }
}

#[pymethods]
impl Watcher {
    /// Watches the domain at ``root`` (default: the configuration in
    /// effect: ``HAKO_ROOT``, ``HAKO_CONFIG``), which must exist.
    #[new]
    #[pyo3(signature = (root=None))]
    fn new(root: Option<String>) -> PyResult<Self> {
        let mut config = hako::Config::from_env()
            .map_err(|e| crate::errors::ConfigError::new_err(e.to_string()))?;
        if let Some(r) = root {
            config = config.with_root(r);
        }
        Ok(Self {
            watcher: hako::Watcher::new(&config)?,
            pending: Default::default(),
        })
    }

    /// The changes: at once with ``timeout=0``, within ``timeout``
    /// seconds, or (``None``) as soon as there are some. A list of dicts,
    /// empty on a timeout.
    #[pyo3(signature = (timeout=None))]
    fn changes<'py>(
        &mut self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let timeout = timeout
            .map(|t| {
                Duration::try_from_secs_f64(t).map_err(|_| {
                    pyo3::exceptions::PyValueError::new_err("timeout must be a non-negative number")
                })
            })
            .transpose()?;
        if timeout == Some(Duration::ZERO) {
            let got = self.watcher.try_changes()?;
            self.pending.extend(got);
        } else {
            self.fill(py, timeout)?;
        }
        self.pending.drain(..).map(|c| dict(py, &c)).collect()
    }

    /// A descriptor readable when there may be changes.
    fn fileno(&self) -> i32 {
        self.watcher.as_fd().as_raw_fd()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.fill(py, None)?;
        let c = self.pending.pop_front().expect("filled");
        dict(py, &c)
    }
}
