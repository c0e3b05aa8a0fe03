//! `hako.Node`: a process's membership in a domain, and the services it
//! opens.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::board::Blackboard;
use crate::common::Mode;
use crate::errors::{PyResultExt, TerminationRequest};
use crate::event::EventService;
use crate::payload::Payload;
use crate::pubsub::PubSubService;
use crate::reqres::service::ReqResService;

/// A node: a process's membership in a hako domain (a directory of shared
/// memory files, by default ``/dev/shm/hako-<uid>``). It opens and creates
/// services; a process usually has one. Closing it (or the end of the
/// process, even by a crash) lets other processes reclaim what it held.
///
/// Args:
///     name: shown by ``hako list`` and ``hako monitor``.
///     root: the domain root; default from ``HAKO_ROOT`` or the config file.
///     config: a TOML config file to read instead of the environment's.
#[pyclass(module = "hako", frozen)]
pub struct Node {
    /// `None` once closed.
    node: std::sync::RwLock<Option<Arc<hako::Node>>>,
}

impl Node {
    /// The node, or the error of a use after ``close()``.
    fn get(&self) -> PyResult<Arc<hako::Node>> {
        self.node
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("the node is closed"))
    }
}

#[pymethods]
impl Node {
    #[new]
    #[pyo3(signature = (name=None, *, root=None, config=None))]
    fn new(name: Option<&str>, root: Option<String>, config: Option<String>) -> PyResult<Self> {
        let mut cfg = match config {
            Some(path) => hako::Config::from_file(path).py()?,
            None => hako::Config::from_env().py()?,
        };
        if let Some(root) = root {
            cfg = cfg.with_root(root);
        }
        // Python handles SIGINT itself (KeyboardInterrupt): the waits here
        // look for it between slices (common::wait_sliced), so hako's own
        // handling stays off.
        let mut b = hako::NodeBuilder::new().config(&cfg).signal_handling(false);
        if let Some(n) = name {
            b = b.name(n).py()?;
        }
        Ok(Node {
            node: std::sync::RwLock::new(Some(Arc::new(b.create().py()?))),
        })
    }

    /// Lets go of the node: its file goes once the services and ports made
    /// through it are closed too (they hold it). Using it afterwards
    /// raises ``ValueError``; closing twice is harmless. ``with
    /// hako.Node(...) as node:`` closes it at the block's end.
    fn close(&self) {
        self.node.write().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) {
        self.close();
    }

    /// The node's unique id.
    #[getter]
    fn id(&self) -> PyResult<u64> {
        Ok(self.get()?.id())
    }

    /// The node's name, if it has one.
    #[getter]
    fn name(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.name().map(|n| n.to_string()))
    }

    /// The domain root the node lives in.
    #[getter]
    fn root(&self) -> PyResult<String> {
        Ok(self.get()?.config().root.display().to_string())
    }

    /// Sleeps one cycle of ``cycle`` seconds, for a plain cyclic loop:
    /// ``while node.wait(0.1): ...``. Returns True; raises
    /// ``KeyboardInterrupt`` on Ctrl-C (or what a handler of the program's,
    /// from the ``signal`` module, raises; it runs within the wait).
    fn wait(&self, py: Python<'_>, cycle: f64) -> PyResult<bool> {
        let until = crate::common::deadline(Some(cycle))?;
        loop {
            let left = until.map_or(Duration::ZERO, |u| {
                u.saturating_duration_since(std::time::Instant::now())
            });
            let step = left.min(crate::common::SLICE);
            let node = self.get()?;
            let r = py.detach(|| node.wait(step));
            py.check_signals()?;
            match r {
                Err(hako::NodeWaitError::TerminationRequest) => {
                    return Err(TerminationRequest::new_err(
                        "termination requested (SIGINT or SIGTERM)",
                    ))
                }
                Err(e) => return Err(pyo3::exceptions::PyOSError::new_err(e.to_string())),
                Ok(()) if left <= step => return Ok(true),
                Ok(()) => {}
            }
        }
    }

    /// Reclaims what dead processes left in the domain (their ports, the
    /// chunks they held, services nobody uses any more), as ``hako clean``
    /// does; hako also does it by itself when it meets a dead peer.
    /// Returns ``{"dead_nodes": n, "ports": n, "services": [names]}``.
    fn reclaim_dead_nodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let config = self.get()?.config().clone();
        let r = py
            .detach(|| hako::reclaim_dead_nodes(&config, false))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        let d = PyDict::new(py);
        d.set_item("dead_nodes", r.dead_nodes.len())?;
        d.set_item("ports", r.ports)?;
        d.set_item("services", r.services)?;
        Ok(d)
    }

    /// Opens or creates a publish/subscribe service.
    ///
    /// Args:
    ///     service: the service name (``"Camera/Front"``).
    ///     payload: the payload type: ``bytes`` (default, byte slices), a
    ///         ctypes type or ``Structure`` class, or a numpy number type.
    ///     slice: samples are slices of ``payload`` elements (default: True
    ///         for bytes, False otherwise).
    ///     mode: ``"open_or_create"`` (default), ``"open"`` or ``"create"``.
    ///     The other settings are those of Rust's ``PubSubBuilder``; left
    ///     out, they are the configured defaults on create and anything on
    ///     open.
    #[pyo3(signature = (service, payload=None, *, slice=None, mode="open_or_create",
        max_publishers=None, max_subscribers=None, max_nodes=None, buffer_size=None,
        max_borrowed=None, history_size=None, overflow=None))]
    #[allow(clippy::too_many_arguments)]
    fn publish_subscribe(
        &self,
        py: Python<'_>,
        service: &str,
        payload: Option<Bound<'_, PyAny>>,
        slice: Option<bool>,
        mode: &str,
        max_publishers: Option<u32>,
        max_subscribers: Option<u32>,
        max_nodes: Option<u32>,
        buffer_size: Option<u32>,
        max_borrowed: Option<u32>,
        history_size: Option<u32>,
        overflow: Option<&str>,
    ) -> PyResult<PubSubService> {
        let (payload, details) = Payload::describe(py, payload, slice)?;
        let mut b = self
            .get()?
            .service_builder(&service.try_into().py()?)
            .publish_subscribe::<[u8]>()
            .payload_type(details);
        if let Some(v) = max_publishers {
            b = b.max_publishers(v);
        }
        if let Some(v) = max_subscribers {
            b = b.max_subscribers(v);
        }
        if let Some(v) = max_nodes {
            b = b.max_nodes(v);
        }
        if let Some(v) = buffer_size {
            b = b.subscriber_max_buffer_size(v);
        }
        if let Some(v) = max_borrowed {
            b = b.subscriber_max_borrowed_samples(v);
        }
        if let Some(v) = history_size {
            b = b.history_size(v);
        }
        if let Some(o) = overflow {
            b = b.overflow_policy(crate::common::overflow(o)?);
        }
        let svc = match crate::common::mode(mode)? {
            Mode::OpenOrCreate => b.open_or_create(),
            Mode::Open => b.open(),
            Mode::Create => b.create(),
        }
        .py()?;
        Ok(PubSubService::new(svc, payload))
    }

    /// Opens or creates an event service (notifiers signal event ids,
    /// listeners learn which fired).
    #[pyo3(signature = (service, *, mode="open_or_create", max_notifiers=None,
        max_listeners=None, max_nodes=None, event_id_max=None))]
    fn event(
        &self,
        service: &str,
        mode: &str,
        max_notifiers: Option<u32>,
        max_listeners: Option<u32>,
        max_nodes: Option<u32>,
        event_id_max: Option<u64>,
    ) -> PyResult<EventService> {
        let mut b = self
            .get()?
            .service_builder(&service.try_into().py()?)
            .event();
        if let Some(v) = max_notifiers {
            b = b.max_notifiers(v);
        }
        if let Some(v) = max_listeners {
            b = b.max_listeners(v);
        }
        if let Some(v) = max_nodes {
            b = b.max_nodes(v);
        }
        if let Some(v) = event_id_max {
            b = b.event_id_max(v);
        }
        let svc = match crate::common::mode(mode)? {
            Mode::OpenOrCreate => b.open_or_create(),
            Mode::Open => b.open(),
            Mode::Create => b.create(),
        }
        .py()?;
        Ok(EventService { svc })
    }

    /// Opens or creates a blackboard. ``entries`` maps each key to
    /// ``(type, default)`` (a type as for ``publish_subscribe``, never a
    /// slice; the default is used on create); on open, the board must have
    /// each entry given, with that type (it may have more).
    #[pyo3(signature = (service, entries=None, *, mode="open_or_create", max_readers=None,
        max_nodes=None))]
    fn blackboard(
        &self,
        py: Python<'_>,
        service: &str,
        entries: Option<Bound<'_, pyo3::types::PyDict>>,
        mode: &str,
        max_readers: Option<u32>,
        max_nodes: Option<u32>,
    ) -> PyResult<Blackboard> {
        let mut b = self
            .get()?
            .service_builder(&service.try_into().py()?)
            .blackboard();
        let types = py.import("hako._types")?;
        for (key, spec) in entries.iter().flat_map(|d| d.iter()) {
            let key: String = key.extract()?;
            let (class, default): (Bound<'_, PyAny>, Bound<'_, PyAny>) = spec.extract()?;
            let bytes: Vec<u8> = types
                .call_method1("value_bytes", (&class, default))?
                .extract()?;
            let (_, details) = Payload::describe(py, Some(class), Some(false))?;
            b = b.entry_described(&key, details, &bytes);
        }
        if let Some(v) = max_readers {
            b = b.max_readers(v);
        }
        if let Some(v) = max_nodes {
            b = b.max_nodes(v);
        }
        let board = match crate::common::mode(mode)? {
            Mode::OpenOrCreate => b.open_or_create(),
            Mode::Open => b.open(),
            Mode::Create => b.create(),
        }
        .py()?;
        Ok(Blackboard { board })
    }

    /// Opens or creates a request/response service. ``request`` and
    /// ``response`` are payload types as for ``publish_subscribe``, with
    /// ``request_slice`` and ``response_slice``.
    #[pyo3(signature = (service, request=None, response=None, *, request_slice=None,
        response_slice=None, mode="open_or_create", max_clients=None, max_servers=None,
        max_nodes=None, max_requests_in_flight=None, max_response_buffer=None))]
    #[allow(clippy::too_many_arguments)]
    fn request_response(
        &self,
        py: Python<'_>,
        service: &str,
        request: Option<Bound<'_, PyAny>>,
        response: Option<Bound<'_, PyAny>>,
        request_slice: Option<bool>,
        response_slice: Option<bool>,
        mode: &str,
        max_clients: Option<u32>,
        max_servers: Option<u32>,
        max_nodes: Option<u32>,
        max_requests_in_flight: Option<u32>,
        max_response_buffer: Option<u32>,
    ) -> PyResult<ReqResService> {
        let (req, req_details) = Payload::describe(py, request, request_slice)?;
        let (resp, resp_details) = Payload::describe(py, response, response_slice)?;
        let mut b = self
            .get()?
            .service_builder(&service.try_into().py()?)
            .request_response::<[u8], [u8]>()
            .payload_types(req_details, resp_details);
        if let Some(v) = max_clients {
            b = b.max_clients(v);
        }
        if let Some(v) = max_servers {
            b = b.max_servers(v);
        }
        if let Some(v) = max_nodes {
            b = b.max_nodes(v);
        }
        if let Some(v) = max_requests_in_flight {
            b = b.max_requests_in_flight(v);
        }
        if let Some(v) = max_response_buffer {
            b = b.max_response_buffer(v);
        }
        let svc = match crate::common::mode(mode)? {
            Mode::OpenOrCreate => b.open_or_create(),
            Mode::Open => b.open(),
            Mode::Create => b.create(),
        }
        .py()?;
        Ok(ReqResService::new(svc, req, resp))
    }

    fn __repr__(&self) -> String {
        let Ok(node) = self.get() else {
            return "hako.Node(closed)".to_owned();
        };
        format!(
            "hako.Node(id={:016x}, name={}, root={:?})",
            node.id(),
            node.name()
                .map_or_else(|| "None".to_owned(), |n| format!("{:?}", n.to_string())),
            node.config().root
        )
    }
}
