//! How `hako record` lays out an MCAP file, and how `hako replay` reads it
//! back.
//!
//! * A **schema** per payload type: encoding `hako-type`, named after the
//!   type, its data the JSON `{"type_name", "size", "align", "slice"}` the
//!   service records.
//! * A **channel** per service and publisher: topic = the service's name,
//!   message encoding `hako` (the payload's bytes as they lay in shared
//!   memory), metadata `publisher` = the publisher's id (16 hex digits).
//! * A **message** per sample: log time = when it was received, in
//!   nanoseconds since the Unix epoch (publish time: the same; hako does
//!   not stamp samples), the channel's sequence number counting from 1.
//! * A **metadata** record `hako` at the end: per service, the samples
//!   received (`<service>.received`) and missed (`<service>.missed`: lost
//!   to overflow before the recorder could take them).

use std::collections::BTreeMap;

use serde_json::json;

use super::payload::PayloadType;
use crate::common::CliError;

/// The schema encoding of a hako payload type.
pub const SCHEMA_ENCODING: &str = "hako-type";
/// The message encoding: the payload's bytes.
pub const MESSAGE_ENCODING: &str = "hako";
/// The channel metadata key of the publisher's id.
pub const PUBLISHER: &str = "publisher";
/// The name of the metadata record of the recording.
pub const METADATA: &str = "hako";

/// The schema data of `ty`.
pub fn schema_data(ty: &PayloadType) -> Vec<u8> {
    json!({
        "type_name": ty.name,
        "size": ty.size,
        "align": ty.align,
        "slice": ty.slice,
    })
    .to_string()
    .into_bytes()
}

/// The payload type a schema describes; an error names what is wrong.
pub fn schema_type(topic: &str, schema: Option<&mcap::Schema>) -> Result<PayloadType, CliError> {
    let bad = |why: &str| {
        CliError::failure(format!(
            "channel {topic:?} of the recording: {why}; hako replay plays what hako record \
             wrote"
        ))
    };
    let schema = schema.ok_or_else(|| bad("it has no schema"))?;
    if schema.encoding != SCHEMA_ENCODING {
        return Err(bad(&format!(
            "its schema is {:?}, not {SCHEMA_ENCODING:?}",
            schema.encoding
        )));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&schema.data).map_err(|e| bad(&format!("its schema: {e}")))?;
    let field = |k: &str| {
        v.get(k)
            .ok_or_else(|| bad(&format!("its schema lacks {k:?}")))
    };
    Ok(PayloadType {
        name: field("type_name")?
            .as_str()
            .ok_or_else(|| bad("type_name is no string"))?
            .to_owned(),
        size: field("size")?
            .as_u64()
            .and_then(|s| usize::try_from(s).ok())
            .ok_or_else(|| bad("size is no size"))?,
        align: field("align")?
            .as_u64()
            .ok_or_else(|| bad("align is no number"))?,
        slice: field("slice")?
            .as_bool()
            .ok_or_else(|| bad("slice is no boolean"))?,
    })
}

/// The channel metadata of a publisher.
pub fn channel_metadata(publisher: u64) -> BTreeMap<String, String> {
    BTreeMap::from([(PUBLISHER.to_owned(), format!("{publisher:016x}"))])
}

/// The time now in nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
