//! The settings of a request/response service, as its static description
//! records them: the request and response types and the quality of service.

use serde::{Deserialize, Serialize};

use crate::core::layout::{MAX_ALIGN, SUB_COUNTERS_SIZE};
use crate::domain::service::error::{check_range, ServiceError};
use crate::domain::service::open::PatternSettings;
use crate::domain::service::tables::Tables;
use crate::port::payload::PayloadDescription;

/// Quality of service of a request/response service, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReqResQos {
    /// Clients the service admits.
    pub max_clients: u32,
    /// Servers the service admits.
    pub max_servers: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
    /// Requests a client may have in flight at once (sent, its pending
    /// response not yet dropped); a server may hold as many of one client.
    pub max_requests_in_flight: u32,
    /// Responses a client may hold, or have queued, per request in flight.
    pub max_response_buffer: u32,
}

/// A request/response service's settings, after the fields every static
/// description has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReqResSettings {
    /// The request type.
    pub request: PayloadDescription,
    /// The response type.
    pub response: PayloadDescription,
    /// Quality of service.
    pub qos: ReqResQos,
}

impl PatternSettings for ReqResSettings {
    const NAME: &'static str = "request_response";

    fn validate(&self) -> Result<(), ServiceError> {
        validate_qos(&self.qos)?;
        for p in [&self.request, &self.response] {
            if !p.align.is_power_of_two() || p.align > MAX_ALIGN {
                return Err(ServiceError::InvalidSetting {
                    field: "payload alignment",
                    value: p.align,
                    rule: "a power of two, at most 4096",
                });
            }
        }
        Ok(())
    }

    fn tables(&self) -> Tables {
        let q = &self.qos;
        Tables {
            nodes: q.max_nodes,
            // Clients in the first table, servers in the second; each entry
            // is both a sender (its data segment) and a receiver (its wake
            // block and FIFO). A server counts what it received in the
            // extra area, as a subscriber does.
            first: q.max_clients,
            second: q.max_servers,
            extra_per_second: SUB_COUNTERS_SIZE,
            shared: 0,
        }
    }
}

/// Slots of a server's queue of requests from one client. A client has at
/// most `in_flight` requests in flight (and fire-and-forget ones besides);
/// the queue is twice that, so that the client takes back the chunks of
/// answered requests only every `in_flight` or so sends (it looks at them
/// once its outstanding chunks near the queue's size), not every other
/// one. The client's pool holds that many per server.
pub(crate) fn request_queue(q: &ReqResQos) -> u64 {
    2 * u64::from(q.max_requests_in_flight)
}

/// Checks the ranges of request/response settings.
pub(crate) fn validate_qos(q: &ReqResQos) -> Result<(), ServiceError> {
    check_range("max_clients", q.max_clients, 1, 4096, "between 1 and 4096")?;
    check_range("max_servers", q.max_servers, 1, 4096, "between 1 and 4096")?;
    check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    check_range(
        "max_requests_in_flight",
        q.max_requests_in_flight,
        1,
        1 << 16,
        "between 1 and 65536",
    )?;
    check_range(
        "max_response_buffer",
        q.max_response_buffer,
        1,
        1 << 16,
        "between 1 and 65536",
    )?;
    // A server's queue towards one client holds twice the requests in
    // flight times (the buffer and an end); a queue holds at most 2^20.
    let queue = 2 * u64::from(q.max_requests_in_flight) * (u64::from(q.max_response_buffer) + 1);
    if queue > 1 << 20 {
        return Err(ServiceError::InvalidSetting {
            field: "max_requests_in_flight",
            value: q.max_requests_in_flight.into(),
            rule: "2 x max_requests_in_flight x (max_response_buffer + 1) must be at most 1048576",
        });
    }
    Ok(())
}

/// The request and response types of a port or handle, as a marker that
/// keeps it `Send` and `Sync` whatever they are (they live in shared
/// memory, never in the handle).
pub(crate) type Types<Req, Resp> = std::marker::PhantomData<fn() -> (Box<Req>, Box<Resp>)>;
