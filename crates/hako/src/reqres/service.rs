//! Opening a request/response service: its builder, the checks of its
//! settings against an existing service, and the service handle.

use std::marker::PhantomData;
use std::sync::Arc;

use super::client_builder::ClientBuilder;
use super::server::ServerBuilder;
use super::settings::{validate_qos, ReqResQos, ReqResSettings, Types};
use crate::core::layout::MAX_ALIGN;
use crate::domain::config::Defaults;
use crate::domain::name::ServiceName;
use crate::domain::nodefile::NodeInner;
use crate::domain::service::builder::{qos_setter, ServiceBuilder};
use crate::domain::service::error::{at_least, ServiceError};
use crate::domain::service::inner::ServiceInner;
use crate::domain::service::open::{acquire, Mode, PatternRequest};
use crate::port::payload::{check_described, check_payload, Payload, PayloadDescription, TypeDetails};

impl ServiceBuilder {
    /// A request/response service: clients send requests of `Req`, servers
    /// answer each with zero, one or many responses of `Resp`. Either may
    /// be a [`ShmSafe`](crate::ShmSafe) type or a slice of one.
    pub fn request_response<Req: Payload + ?Sized, Resp: Payload + ?Sized>(
        self,
    ) -> ReqResBuilder<Req, Resp> {
        ReqResBuilder {
            node: self.node,
            name: self.name,
            req: QosRequest::default(),
            described: None,
            _t: PhantomData,
        }
    }
}

#[derive(Debug, Default, Clone)]
struct QosRequest {
    max_clients: Option<u32>,
    max_servers: Option<u32>,
    max_nodes: Option<u32>,
    in_flight: Option<u32>,
    response_buffer: Option<u32>,
}

/// Builds a request/response service. Settings given here are what
/// `create` uses and what `open` requires of an existing service (at
/// least as many); settings left out take the config's defaults on
/// `create` and accept anything on `open`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-reqres-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// #[derive(Debug, Clone, Copy, hako::ShmSafe)]
/// #[repr(C)]
/// struct Query {
///     x: f64,
///     y: f64,
/// }
/// let service = node
///     .service_builder(&"Doc/Map/Height".try_into()?)
///     .request_response::<Query, f64>()
///     .max_servers(1)
///     .max_requests_in_flight(8) // per client
///     .create()?;
/// assert_eq!(service.qos().max_requests_in_flight, 8);
/// # Ok(()) }
/// ```
pub struct ReqResBuilder<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    node: Arc<NodeInner>,
    name: ServiceName,
    req: QosRequest,
    /// Request and response types described at run time
    /// ([`ReqResBuilder::payload_types`]).
    described: Option<(TypeDetails, TypeDetails)>,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for ReqResBuilder<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqResBuilder")
            .field("name", &self.name)
            .field("qos", &self.req)
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ReqResBuilder<Req, Resp> {
    qos_setter!(
        /// Clients the service admits (at most 4096).
        max_clients, max_clients);
    qos_setter!(
        /// Servers the service admits (at most 4096).
        max_servers, max_servers);
    qos_setter!(
        /// Nodes that may hold the service open at once.
        max_nodes, max_nodes);
    qos_setter!(
        /// Requests a client may have in flight at once (at most 65536).
        max_requests_in_flight, in_flight);
    qos_setter!(
        /// Responses a client may hold, or have queued, per request in
        /// flight (at most 65536).
        max_response_buffer, response_buffer);

    /// The request's and the response's type: `Req`'s and `Resp`'s, or
    /// those described at run time.
    fn details(&self) -> (TypeDetails, TypeDetails) {
        self.described
            .clone()
            .unwrap_or_else(|| (Req::details(), Resp::details()))
    }

    fn finish(self, mode: Mode) -> Result<ReqResService<Req, Resp>, ServiceError> {
        let (inner, settings) = acquire(&self.node, &self.name, &self, mode)?;
        Ok(ReqResService {
            inner: Arc::new(inner),
            settings: Arc::new(settings),
            _t: PhantomData,
        })
    }

    /// Creates the service; fails if it exists.
    pub fn create(self) -> Result<ReqResService<Req, Resp>, ServiceError> {
        self.finish(Mode::Create)
    }

    /// Opens an existing service, checking that it is compatible.
    pub fn open(self) -> Result<ReqResService<Req, Resp>, ServiceError> {
        self.finish(Mode::Open)
    }

    /// Opens the service if it exists, creates it otherwise. Safe to call
    /// from many processes at once: exactly one creates it.
    pub fn open_or_create(self) -> Result<ReqResService<Req, Resp>, ServiceError> {
        self.finish(Mode::OpenOrCreate)
    }
}

impl ReqResBuilder<[u8], [u8]> {
    /// For language bindings: the service carries requests and responses
    /// described at run time (see
    /// [`PubSubBuilder::payload_type`](crate::PubSubBuilder::payload_type)),
    /// so that a C or Python program shares a service with a Rust one. The
    /// ports of this builder's service see each message as bytes: reach a
    /// message's `len` elements of the described size through `as_ptr` /
    /// `as_mut_ptr`.
    pub fn payload_types(mut self, request: TypeDetails, response: TypeDetails) -> Self {
        self.described = Some((request, response));
        self
    }
}

/// Field names of the request's and the response's type in errors.
const REQUEST_FIELDS: [&str; 4] = [
    "request type_name",
    "request slice",
    "request size",
    "request align",
];
const RESPONSE_FIELDS: [&str; 4] = [
    "response type_name",
    "response slice",
    "response size",
    "response align",
];

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> PatternRequest for ReqResBuilder<Req, Resp> {
    type Settings = ReqResSettings;

    fn for_create(&self, d: &Defaults) -> Result<ReqResSettings, ServiceError> {
        let r = &self.req;
        let qos = ReqResQos {
            max_clients: r.max_clients.unwrap_or(d.max_clients),
            max_servers: r.max_servers.unwrap_or(d.max_servers),
            max_nodes: r.max_nodes.unwrap_or(d.max_nodes),
            max_requests_in_flight: r.in_flight.unwrap_or(d.max_requests_in_flight),
            max_response_buffer: r.response_buffer.unwrap_or(d.max_response_buffer),
        };
        validate_qos(&qos)?;
        let (request, response) = self.details();
        for t in [&request, &response] {
            if self.described.is_some() {
                check_described(t)?;
            }
            if t.align > MAX_ALIGN {
                return Err(ServiceError::InvalidSetting {
                    field: "payload alignment",
                    value: t.align,
                    rule: "at most 4096",
                });
            }
        }
        Ok(ReqResSettings {
            request: request.into(),
            response: response.into(),
            qos,
        })
    }

    fn check(&self, svc: &str, existing: &ReqResSettings) -> Result<(), ServiceError> {
        let (request, response) = self.details();
        check_payload(svc, REQUEST_FIELDS, request, &existing.request)?;
        check_payload(svc, RESPONSE_FIELDS, response, &existing.response)?;
        let (r, q) = (&self.req, &existing.qos);
        at_least(svc, "max_clients", r.max_clients, q.max_clients)?;
        at_least(svc, "max_servers", r.max_servers, q.max_servers)?;
        at_least(svc, "max_nodes", r.max_nodes, q.max_nodes)?;
        at_least(
            svc,
            "max_requests_in_flight",
            r.in_flight,
            q.max_requests_in_flight,
        )?;
        at_least(
            svc,
            "max_response_buffer",
            r.response_buffer,
            q.max_response_buffer,
        )
    }
}

/// An open request/response service: clients send requests of `Req`,
/// servers answer with responses of `Resp`.
///
/// `Send` and `Sync`; cheap to clone. Create ports with
/// [`client_builder`](Self::client_builder) and
/// [`server_builder`](Self::server_builder).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-reqres-service", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"My/Echo".try_into()?)
///     .request_response::<[u8], [u8]>() // or ShmSafe types: ::<Query, Answer>()
///     .max_clients(8)
///     .max_requests_in_flight(16) // per client
///     .max_response_buffer(4) // responses queued per request
///     .open_or_create()?;
/// let server = service.server_builder().max_slice_len(4096).create()?;
/// let client = service.client_builder().max_slice_len(4096).create()?;
///
/// let pending = client.send_slice_copy(b"ping")?;
/// if let Some(request) = server.receive()? {
///     request.send_slice_copy(&request)?; // echoed
/// } // the stream ends as the request drops
/// let response = pending.blocking_receive()?.ok_or("no response")?;
/// assert_eq!(&*response, b"ping");
/// # Ok(()) }
/// ```
pub struct ReqResService<Req: Payload + ?Sized, Resp: Payload + ?Sized> {
    pub(crate) inner: Arc<ServiceInner>,
    pub(crate) settings: Arc<ReqResSettings>,
    _t: Types<Req, Resp>,
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> Clone for ReqResService<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            settings: self.settings.clone(),
            _t: PhantomData,
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> std::fmt::Debug for ReqResService<Req, Resp> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqResService")
            .field("name", &self.inner.name)
            .field("request", &self.settings.request)
            .field("response", &self.settings.response)
            .field("qos", &self.settings.qos)
            .finish()
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ReqResService<Req, Resp> {
    /// The service name.
    pub fn name(&self) -> &ServiceName {
        &self.inner.name
    }

    /// The request type recorded in the service.
    pub fn request_payload(&self) -> &PayloadDescription {
        &self.settings.request
    }

    /// The response type recorded in the service.
    pub fn response_payload(&self) -> &PayloadDescription {
        &self.settings.response
    }

    /// The service's quality of service.
    pub fn qos(&self) -> &ReqResQos {
        &self.settings.qos
    }

    /// Starts building a client.
    pub fn client_builder(&self) -> ClientBuilder<Req, Resp> {
        ClientBuilder::new(self.inner.clone(), self.settings.clone())
    }

    /// Starts building a server.
    pub fn server_builder(&self) -> ServerBuilder<Req, Resp> {
        ServerBuilder::new(self.inner.clone(), self.settings.clone())
    }
}
