//! Service descriptions for tools: a service's static description with its
//! pattern spelled out ([`StaticDescription`], [`Pattern`]), as inspection
//! and the `hako` command show it.
//!
//! This sits above the patterns: the domain reads a description without
//! knowing its pattern (`domain/service/files.rs`), each pattern parses
//! its own settings, and only here are they gathered into one enum. A
//! new pattern adds a variant here.

use serde::{Deserialize, Serialize};

use crate::blackboard::service::BlackboardService;
use crate::blackboard::settings::{BlackboardQos, BlackboardSettings, EntryDescription};
use crate::domain::service::error::ServiceError;
use crate::domain::service::files::{DescriptionError, RawDescription};
use crate::domain::service::open::PatternSettings;
use crate::domain::service::tables::Tables;
use crate::event::service::EventService;
use crate::event::settings::{EventQos, EventSettings};
use crate::port::payload::{Payload, PayloadDescription};
use crate::pubsub::service::PubSubService;
use crate::pubsub::settings::{PubSubQos, PubSubSettings};
use crate::reqres::service::ReqResService;
use crate::reqres::settings::{ReqResQos, ReqResSettings};

/// The static description of a service, as stored in `static.toml`:
///
/// ```toml
/// version = 5
/// name = "My/Funk/ServiceName"
/// pattern = "publish_subscribe"
///
/// [payload]
/// type_name = "Frame"
/// size = 4104
/// align = 8
/// slice = false
///
/// [qos]
/// max_publishers = 2
/// # ...
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticDescription {
    /// Layout version of the service's segments.
    pub version: u32,
    /// The service name.
    pub name: String,
    /// The messaging pattern and its settings.
    #[serde(flatten)]
    pub pattern: Pattern,
}

/// A service's messaging pattern with its fixed settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pattern {
    /// Publish/subscribe.
    PublishSubscribe {
        /// The payload type.
        payload: PayloadDescription,
        /// Quality of service.
        qos: PubSubQos,
    },
    /// Events (notifier/listener).
    Event {
        /// Quality of service.
        qos: EventQos,
    },
    /// Request/response (client/server).
    RequestResponse {
        /// The request type.
        request: PayloadDescription,
        /// The response type.
        response: PayloadDescription,
        /// Quality of service.
        qos: ReqResQos,
    },
    /// A blackboard (writer/readers of keyed entries).
    Blackboard {
        /// Quality of service.
        qos: BlackboardQos,
        /// The entries: key and value type.
        entries: Vec<EntryDescription>,
    },
}

impl Pattern {
    /// The pattern's name, as in messages ("publish_subscribe", "event").
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::PublishSubscribe { .. } => PubSubSettings::NAME,
            Pattern::Event { .. } => EventSettings::NAME,
            Pattern::RequestResponse { .. } => ReqResSettings::NAME,
            Pattern::Blackboard { .. } => BlackboardSettings::NAME,
        }
    }

    /// The sizes of the service's tables.
    pub(crate) fn tables(&self) -> Tables {
        match self {
            Pattern::PublishSubscribe { payload, qos } => PubSubSettings {
                payload: payload.clone(),
                qos: qos.clone(),
            }
            .tables(),
            Pattern::Event { qos } => EventSettings { qos: qos.clone() }.tables(),
            Pattern::RequestResponse {
                request,
                response,
                qos,
            } => ReqResSettings {
                request: request.clone(),
                response: response.clone(),
                qos: qos.clone(),
            }
            .tables(),
            Pattern::Blackboard { qos, entries } => BlackboardSettings {
                qos: qos.clone(),
                entries: entries.clone(),
            }
            .tables(),
        }
    }

    /// The pattern named by `raw`, its settings parsed and checked.
    fn from_raw(raw: &RawDescription) -> Result<Self, String> {
        fn parsed<S: PatternSettings>(raw: &RawDescription) -> Result<S, String> {
            let s: S = raw
                .settings_as()
                .map_err(|m| format!("does not parse: {m}"))?;
            s.validate().map_err(|e| e.to_string())?;
            Ok(s)
        }
        match raw.pattern.as_str() {
            PubSubSettings::NAME => {
                let PubSubSettings { payload, qos } = parsed(raw)?;
                Ok(Pattern::PublishSubscribe { payload, qos })
            }
            EventSettings::NAME => {
                let EventSettings { qos } = parsed(raw)?;
                Ok(Pattern::Event { qos })
            }
            ReqResSettings::NAME => {
                let ReqResSettings {
                    request,
                    response,
                    qos,
                } = parsed(raw)?;
                Ok(Pattern::RequestResponse {
                    request,
                    response,
                    qos,
                })
            }
            BlackboardSettings::NAME => {
                let BlackboardSettings { qos, entries } = parsed(raw)?;
                Ok(Pattern::Blackboard { qos, entries })
            }
            other => Err(format!("does not parse: unknown pattern {other:?}")),
        }
    }
}

impl StaticDescription {
    /// Parses and validates a static description (the text of a
    /// `static.toml`), as a process opening the service does: the layout
    /// version first, then the TOML, then every setting's range. The error
    /// says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let raw = RawDescription::parse(text).map_err(|e| match e {
            DescriptionError::Version(v) => format!(
                "layout version {v} (this build reads {})",
                crate::core::layout::LAYOUT_VERSION
            ),
            DescriptionError::Parse(m) => format!("does not parse: {m}"),
        })?;
        Self::from_raw(&raw)
    }

    /// The description of `raw`, read from the service `name`'s directory
    /// `dir`; a description whose settings do not parse or are out of
    /// range is corrupted.
    pub(crate) fn from_raw_of(
        raw: &RawDescription,
        name: &str,
        dir: &std::path::Path,
    ) -> Result<Self, ServiceError> {
        Self::from_raw(raw).map_err(|reason| ServiceError::Corrupted {
            service: name.to_owned(),
            reason: format!("static.toml {reason}"),
            path: dir.to_owned(),
        })
    }

    fn from_raw(raw: &RawDescription) -> Result<Self, String> {
        Ok(Self {
            version: raw.version,
            name: raw.name.clone(),
            pattern: Pattern::from_raw(raw)?,
        })
    }
}

impl<T: Payload + ?Sized> PubSubService<T> {
    /// The service's static description (type and quality of service).
    pub fn description(&self) -> StaticDescription {
        StaticDescription {
            version: crate::core::layout::LAYOUT_VERSION,
            name: self.inner.name.to_string(),
            pattern: Pattern::PublishSubscribe {
                payload: self.settings.payload.clone(),
                qos: self.settings.qos.clone(),
            },
        }
    }
}

impl EventService {
    /// The service's static description.
    pub fn description(&self) -> StaticDescription {
        StaticDescription {
            version: crate::core::layout::LAYOUT_VERSION,
            name: self.inner.name.to_string(),
            pattern: Pattern::Event {
                qos: (*self.qos).clone(),
            },
        }
    }
}

impl<Req: Payload + ?Sized, Resp: Payload + ?Sized> ReqResService<Req, Resp> {
    /// The service's static description (types and quality of service).
    pub fn description(&self) -> StaticDescription {
        StaticDescription {
            version: crate::core::layout::LAYOUT_VERSION,
            name: self.inner.name.to_string(),
            pattern: Pattern::RequestResponse {
                request: self.settings.request.clone(),
                response: self.settings.response.clone(),
                qos: self.settings.qos.clone(),
            },
        }
    }
}

impl BlackboardService {
    /// The service's static description (entries and quality of service).
    pub fn description(&self) -> StaticDescription {
        StaticDescription {
            version: crate::core::layout::LAYOUT_VERSION,
            name: self.inner.name.to_string(),
            pattern: Pattern::Blackboard {
                qos: self.settings.qos.clone(),
                entries: self.settings.entries.clone(),
            },
        }
    }
}
