//! Opening a bridged service locally, whatever its payload type, from its
//! description: the local one if the service exists here, else the one a
//! remote bridge served. A service made from a remote description gets its
//! payload type and settings, so local programs open it as if it had been
//! made here.
//!
//! Across hosts, as on one, the payload type must be the same (name, size,
//! alignment, slice or not) and so must what changes the meaning of the
//! traffic (the overflow policy, the highest event id); capacities (ports,
//! nodes, buffers) are each host's own business.

use hako::{
    EventService, Node, Pattern, PayloadDescription, PubSubService, ReqResService, ServiceName,
    StaticDescription, TypeDetails,
};

/// Why a service cannot be bridged.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The library refused to open or create it.
    #[error("cannot open service {service:?}: {source}")]
    Service {
        /// The service.
        service: String,
        /// Why.
        source: hako::ServiceError,
    },
    /// The two hosts disagree on what the service is.
    #[error("service {service:?} differs between this host and domain {remote}: {what}")]
    Mismatch {
        /// The service.
        service: String,
        /// The remote domain.
        remote: String,
        /// What differs.
        what: String,
    },
}

/// The type details of a description's payload.
pub(crate) fn details(p: &PayloadDescription) -> TypeDetails {
    TypeDetails {
        type_name: p.type_name.clone(),
        size: p.size,
        align: p.align,
        slice: p.slice,
    }
}

/// Checks that `remote` (from domain `domain`) describes the same service
/// as `local`.
pub(crate) fn check_same(
    local: &StaticDescription,
    remote: &StaticDescription,
    domain: &str,
) -> Result<(), OpenError> {
    let differ = |what: String| OpenError::Mismatch {
        service: local.name.clone(),
        remote: domain.to_owned(),
        what,
    };
    let ty = |p: &PayloadDescription| {
        format!(
            "{}{} ({} B, align {})",
            p.type_name,
            if p.slice { " slice" } else { "" },
            p.size,
            p.align
        )
    };
    match (&local.pattern, &remote.pattern) {
        (
            Pattern::PublishSubscribe {
                payload: a,
                qos: qa,
            },
            Pattern::PublishSubscribe {
                payload: b,
                qos: qb,
            },
        ) => {
            if a != b {
                return Err(differ(format!("payload {} here, {} there", ty(a), ty(b))));
            }
            if qa.overflow != qb.overflow {
                return Err(differ(format!(
                    "overflow {:?} here, {:?} there",
                    qa.overflow, qb.overflow
                )));
            }
        }
        (Pattern::Event { qos: a }, Pattern::Event { qos: b }) => {
            if a.event_id_max != b.event_id_max {
                return Err(differ(format!(
                    "highest event id {} here, {} there",
                    a.event_id_max, b.event_id_max
                )));
            }
        }
        (
            Pattern::RequestResponse {
                request: ra,
                response: pa,
                ..
            },
            Pattern::RequestResponse {
                request: rb,
                response: pb,
                ..
            },
        ) => {
            if ra != rb {
                return Err(differ(format!("request {} here, {} there", ty(ra), ty(rb))));
            }
            if pa != pb {
                return Err(differ(format!(
                    "response {} here, {} there",
                    ty(pa),
                    ty(pb)
                )));
            }
        }
        (a, b) => {
            return Err(differ(format!(
                "pattern {} here, {} there",
                a.name(),
                b.name()
            )));
        }
    }
    Ok(())
}

fn service_error(name: &ServiceName) -> impl Fn(hako::ServiceError) -> OpenError + '_ {
    move |source| OpenError::Service {
        service: name.as_str().to_owned(),
        source,
    }
}

/// Opens publish/subscribe service `name` as bytes; with `create`, makes it
/// with `desc`'s type and settings if it does not exist.
pub(crate) fn pubsub(
    node: &Node,
    name: &ServiceName,
    payload: &PayloadDescription,
    qos: &hako::PubSubQos,
    create: bool,
) -> Result<PubSubService<[u8]>, OpenError> {
    let b = node
        .service_builder(name)
        .publish_subscribe::<[u8]>()
        .payload_type(details(payload));
    let r = if create {
        b.max_publishers(qos.max_publishers)
            .max_subscribers(qos.max_subscribers)
            .max_nodes(qos.max_nodes)
            .subscriber_max_buffer_size(qos.subscriber_max_buffer_size)
            .subscriber_max_borrowed_samples(qos.subscriber_max_borrowed_samples)
            .history_size(qos.history_size)
            .overflow_policy(qos.overflow)
            .open_or_create()
    } else {
        b.open()
    };
    r.map_err(service_error(name))
}

/// Opens event service `name`; with `create`, makes it with `qos`.
pub(crate) fn event(
    node: &Node,
    name: &ServiceName,
    qos: &hako::EventQos,
    create: bool,
) -> Result<EventService, OpenError> {
    let b = node.service_builder(name).event();
    let r = if create {
        b.max_notifiers(qos.max_notifiers)
            .max_listeners(qos.max_listeners)
            .max_nodes(qos.max_nodes)
            .event_id_max(qos.event_id_max)
            .open_or_create()
    } else {
        b.open()
    };
    r.map_err(service_error(name))
}

/// Opens request/response service `name` as bytes; with `create`, makes
/// it with the types and settings given.
pub(crate) fn reqres(
    node: &Node,
    name: &ServiceName,
    (request, response): (&PayloadDescription, &PayloadDescription),
    qos: &hako::ReqResQos,
    create: bool,
) -> Result<ReqResService<[u8], [u8]>, OpenError> {
    let b = node
        .service_builder(name)
        .request_response::<[u8], [u8]>()
        .payload_types(details(request), details(response));
    let r = if create {
        b.max_clients(qos.max_clients)
            .max_servers(qos.max_servers)
            .max_nodes(qos.max_nodes)
            .max_requests_in_flight(qos.max_requests_in_flight)
            .max_response_buffer(qos.max_response_buffer)
            .open_or_create()
    } else {
        b.open()
    };
    r.map_err(service_error(name))
}
