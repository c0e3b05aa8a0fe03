//! `ReqResService`: a request/response service, which makes clients and
//! servers.

use pyo3::prelude::*;

use super::client::Client;
use super::server::Server;
use crate::common::wait_strategy;
use crate::errors::PyResultExt;
use crate::payload::Payload;

/// A request/response service: make its clients and servers here.
#[pyclass(module = "hako", frozen)]
pub struct ReqResService {
    svc: hako::ReqResService<[u8], [u8]>,
    req: Payload,
    resp: Payload,
}

impl ReqResService {
    /// Wraps an opened service.
    pub fn new(svc: hako::ReqResService<[u8], [u8]>, req: Payload, resp: Payload) -> Self {
        ReqResService { svc, req, resp }
    }
}

#[pymethods]
impl ReqResService {
    /// The service's name.
    #[getter]
    fn name(&self) -> String {
        self.svc.name().to_string()
    }

    /// Creates a client.
    ///
    /// Args:
    ///     max_slice_len: most elements of one request (slices; default 1).
    ///     max_loans: requests loaned at once.
    ///     backpressure: ``"block"`` (default), ``"retry"`` or ``"discard"``.
    ///     wait: how its waits for responses wait (see ``subscriber``).
    #[pyo3(signature = (*, max_slice_len=None, max_loans=None, backpressure="block",
        retries=0, wait="spin_then_park"))]
    fn client(
        &self,
        max_slice_len: Option<usize>,
        max_loans: Option<u32>,
        backpressure: &str,
        retries: u32,
        wait: &str,
    ) -> PyResult<Client> {
        let mut b = self
            .svc
            .client_builder()
            .backpressure(crate::common::backpressure(backpressure, retries)?)
            .wait_strategy(wait_strategy(wait)?);
        if let Some(n) = max_slice_len {
            b = b.max_slice_len(n);
        }
        if let Some(n) = max_loans {
            b = b.max_loaned_requests(n);
        }
        Ok(Client::new(
            b.create().py()?,
            self.req.clone(),
            self.resp.clone(),
        ))
    }

    /// Creates a server; the arguments are those of ``client`` (the slice
    /// length is the responses').
    #[pyo3(signature = (*, max_slice_len=None, max_loans=None, backpressure="block",
        retries=0, wait="spin_then_park"))]
    fn server(
        &self,
        max_slice_len: Option<usize>,
        max_loans: Option<u32>,
        backpressure: &str,
        retries: u32,
        wait: &str,
    ) -> PyResult<Server> {
        let mut b = self
            .svc
            .server_builder()
            .backpressure(crate::common::backpressure(backpressure, retries)?)
            .wait_strategy(wait_strategy(wait)?);
        if let Some(n) = max_slice_len {
            b = b.max_slice_len(n);
        }
        if let Some(n) = max_loans {
            b = b.max_loaned_responses(n);
        }
        Ok(Server::new(
            b.create().py()?,
            self.req.clone(),
            self.resp.clone(),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "hako.ReqResService({:?}, request {:?}, response {:?})",
            self.svc.name().to_string(),
            self.svc.request_payload().type_name,
            self.svc.response_payload().type_name
        )
    }
}
