//! The settings of an event service, event ids, and why an event port
//! could not be made.

use serde::{Deserialize, Serialize};

use super::counters::counter_area_size;
use crate::domain::service::error::{check_range, ServiceError};
use crate::domain::service::open::PatternSettings;
use crate::domain::service::tables::Tables;

/// Largest `event_id_max` a service may have.
pub const MAX_EVENT_ID: u64 = 4095;

/// The id of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EventId(pub u64);

impl EventId {
    /// The id as a number.
    pub fn value(self) -> u64 {
        self.0
    }
}

impl From<u64> for EventId {
    fn from(v: u64) -> Self {
        Self(v)
    }
}

/// Quality of service of an event service, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventQos {
    /// Notifiers the service admits.
    pub max_notifiers: u32,
    /// Listeners the service admits.
    pub max_listeners: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
    /// Largest event id (at most 4095).
    pub event_id_max: u64,
}

/// An event service's settings, after the fields every static description
/// has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EventSettings {
    /// Quality of service.
    pub qos: EventQos,
}

impl PatternSettings for EventSettings {
    const NAME: &'static str = "event";

    fn validate(&self) -> Result<(), ServiceError> {
        validate_qos(&self.qos)
    }

    fn tables(&self) -> Tables {
        let q = &self.qos;
        Tables {
            nodes: q.max_nodes,
            first: q.max_notifiers,
            second: q.max_listeners,
            extra_per_second: counter_area_size(q.event_id_max),
            shared: 0,
        }
    }
}

pub(crate) fn validate_qos(q: &EventQos) -> Result<(), ServiceError> {
    check_range(
        "max_notifiers",
        q.max_notifiers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range(
        "max_listeners",
        q.max_listeners,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    if q.event_id_max > MAX_EVENT_ID {
        return Err(ServiceError::InvalidSetting {
            field: "event_id_max",
            value: q.event_id_max,
            rule: "at most 4095",
        });
    }
    Ok(())
}

/// Why a port of an event service could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventPortCreateError {
    /// The service's table for this kind of port is full.
    #[error("service {service:?} admits no more {kind} (max_{kind} = {max}); raise it when creating the service")]
    TooMany {
        /// The service.
        service: String,
        /// "notifiers" or "listeners".
        kind: &'static str,
        /// The limit.
        max: u32,
    },
    /// The default event id is above the service's `event_id_max`.
    #[error("event id {id} is above the service's event_id_max {max}")]
    EventIdOutOfRange {
        /// The id.
        id: u64,
        /// The maximum.
        max: u64,
    },
    /// The service's files could not be used.
    #[error(transparent)]
    Service(#[from] ServiceError),
}
