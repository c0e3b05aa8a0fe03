//! A port that sends and receives: one entry in its service's table, a
//! sender (its data segment, for its requests or responses) and a receiver
//! (its wake block and FIFO, for the other direction) sharing it. Clients
//! and servers are each one.

use std::sync::Arc;

use super::envelope::Envelope;
use super::errors::PortCreateError;
use crate::domain::nodefile::new_id;
use crate::domain::service::error::ServiceError;
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::port::receiver::inner::{Receiver, ReceiverCreateError};
use crate::port::receiver::settings::ReceiverSettings;
use crate::port::sender::inner::SenderInner;
use crate::port::sender::settings::{SenderCreateError, SenderSettings};

/// A sender and a receiver on one entry. The receiver owns the entry: it
/// goes once the receiver and every sample it handed out are gone (samples
/// may outlive the port), while the sender's segment file goes with the
/// sender.
pub(crate) struct Duplex {
    pub(crate) rx: Receiver,
    pub(crate) tx: Arc<SenderInner>,
    /// The port's id.
    pub(crate) port_id: u64,
}

/// Why a duplex port could not be made.
#[derive(Debug)]
pub(crate) enum DuplexError {
    /// Its table holds `limit` ports already.
    TooMany,
    /// Its data segment would be too large.
    Geometry,
    /// Its files could not be made.
    Service(ServiceError),
}

impl Duplex {
    /// Makes the port: first its data segment (so that a peer that sees
    /// the entry finds the file), then the entry in `tx.own`'s table (at
    /// most `limit` of them), then its receiver on that entry.
    pub(crate) fn create(
        service: Arc<ServiceInner>,
        mut tx: SenderSettings,
        mut rx: ReceiverSettings,
        limit: usize,
    ) -> Result<Self, DuplexError> {
        let port_id = new_id();
        tx.shared_id = Some(port_id);
        let sender = SenderInner::create(service.clone(), tx).map_err(|e| match e {
            SenderCreateError::TooMany => DuplexError::TooMany,
            SenderCreateError::Geometry => DuplexError::Geometry,
            SenderCreateError::Segment { source, .. } => DuplexError::Service(source),
        })?;
        let new = NewPort {
            kind: tx.own,
            port_id,
            max_len: tx.max_len,
            chunk_count: tx.chunk_count,
            limit,
        };
        let index = service
            .register(new, |_| {}, |_| {})
            .map_err(DuplexError::Service)?
            .ok_or(DuplexError::TooMany)?;
        rx.shared = Some((port_id, index));
        let receiver = Receiver::create(service.clone(), rx).map_err(|e| {
            service.unregister(tx.own, index, port_id);
            match e {
                ReceiverCreateError::TooMany => DuplexError::TooMany,
                ReceiverCreateError::Service(e) => DuplexError::Service(e),
            }
        })?;
        Ok(Self {
            rx: receiver,
            tx: sender,
            port_id,
        })
    }
}

/// The checks and names a client's or server's builder shares.
pub(crate) struct PortSpec {
    /// "clients" or "servers", and how many the service admits.
    pub kind: &'static str,
    pub max: u32,
    /// Elements of the largest slice the port sends.
    pub max_slice_len: usize,
}

impl PortSpec {
    /// Loans a user may hold: `n`, or `default`; refused out of range.
    pub(crate) fn loans(
        &self,
        field: &'static str,
        n: Option<u32>,
        default: u32,
    ) -> Result<u32, PortCreateError> {
        let n = n.unwrap_or(default);
        if n == 0 || n > 1 << 20 {
            return Err(PortCreateError::InvalidSetting {
                field,
                value: n.into(),
                rule: "between 1 and 1048576",
            });
        }
        Ok(n)
    }

    /// Bytes of the largest message the port sends, laid out as `env`.
    pub(crate) fn max_len(&self, env: &Envelope) -> Result<u64, PortCreateError> {
        env.max_bytes().ok_or(self.slice_too_long(
            "a message of that many elements would not fit in memory",
        ))
    }

    fn slice_too_long(&self, rule: &'static str) -> PortCreateError {
        PortCreateError::InvalidSetting {
            field: "max_slice_len",
            value: self.max_slice_len as u64,
            rule,
        }
    }

    /// Makes the port (see [`Duplex::create`]), its errors as the
    /// builder's.
    pub(crate) fn create(
        &self,
        service: Arc<ServiceInner>,
        tx: SenderSettings,
        rx: ReceiverSettings,
    ) -> Result<Duplex, PortCreateError> {
        let name = service.name.to_string();
        Duplex::create(service, tx, rx, self.max as usize).map_err(|e| match e {
            DuplexError::TooMany => PortCreateError::TooMany {
                service: name,
                kind: self.kind,
                max: self.max,
            },
            DuplexError::Geometry => {
                self.slice_too_long("the data segment would exceed 64 TiB or the pool 2^32 chunks")
            }
            DuplexError::Service(e) => e.into(),
        })
    }
}
