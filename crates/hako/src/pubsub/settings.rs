//! The settings of a publish/subscribe service, as its static description
//! records them: the payload type and the quality of service.

use serde::{Deserialize, Serialize};

use crate::core::layout::{MAX_ALIGN, SUB_COUNTERS_SIZE};
use crate::domain::config::OverflowPolicy;
use crate::domain::service::error::{check_range, ServiceError};
use crate::domain::service::open::PatternSettings;
use crate::domain::service::tables::Tables;
use crate::port::payload::PayloadDescription;

/// Quality of service of a publish/subscribe service, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PubSubQos {
    /// Publishers the service admits.
    pub max_publishers: u32,
    /// Subscribers the service admits.
    pub max_subscribers: u32,
    /// Nodes that may hold the service open at once.
    pub max_nodes: u32,
    /// Samples a subscriber's queue holds per publisher.
    pub subscriber_max_buffer_size: u32,
    /// Samples a subscriber may hold at once.
    pub subscriber_max_borrowed_samples: u32,
    /// Samples delivered to a late-joining subscriber.
    pub history_size: u32,
    /// What happens when a subscriber's queue is full.
    pub overflow: OverflowPolicy,
}

/// A publish/subscribe service's settings, after the fields every static
/// description has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PubSubSettings {
    /// The payload type.
    pub payload: PayloadDescription,
    /// Quality of service.
    pub qos: PubSubQos,
}

impl PatternSettings for PubSubSettings {
    const NAME: &'static str = "publish_subscribe";

    fn validate(&self) -> Result<(), ServiceError> {
        validate_qos(&self.qos)?;
        if !self.payload.align.is_power_of_two() || self.payload.align > MAX_ALIGN {
            return Err(ServiceError::InvalidSetting {
                field: "payload alignment",
                value: self.payload.align,
                rule: "a power of two, at most 4096",
            });
        }
        Ok(())
    }

    fn tables(&self) -> Tables {
        let q = &self.qos;
        Tables {
            nodes: q.max_nodes,
            // Twice the publishers: a retired publisher (see
            // port/segment.rs) keeps its entry until its queued samples are
            // collected, and must not keep a new publisher out.
            first: q.max_publishers.saturating_mul(2),
            second: q.max_subscribers,
            extra_per_second: SUB_COUNTERS_SIZE,
            shared: 0,
        }
    }
}

/// Checks the ranges of publish/subscribe settings.
pub(crate) fn validate_qos(q: &PubSubQos) -> Result<(), ServiceError> {
    check_range(
        "max_publishers",
        q.max_publishers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range(
        "max_subscribers",
        q.max_subscribers,
        1,
        4096,
        "between 1 and 4096",
    )?;
    check_range("max_nodes", q.max_nodes, 1, 65536, "between 1 and 65536")?;
    check_range(
        "subscriber_max_buffer_size",
        q.subscriber_max_buffer_size,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check_range(
        "subscriber_max_borrowed_samples",
        q.subscriber_max_borrowed_samples,
        1,
        1 << 20,
        "between 1 and 1048576",
    )?;
    check_range(
        "history_size",
        q.history_size,
        0,
        1 << 20,
        "at most 1048576",
    )?;
    // A late subscriber gets the history in its queue, all of it: a longer
    // history would lose its oldest samples on the way (drop-oldest) or
    // hold the publisher (backpressure).
    if q.history_size > q.subscriber_max_buffer_size {
        return Err(ServiceError::HistoryExceedsBuffer {
            history: q.history_size,
            buffer: q.subscriber_max_buffer_size,
        });
    }
    Ok(())
}
