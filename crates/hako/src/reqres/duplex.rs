//! A port that sends and receives: one entry in its service's table, a
//! sender (its data segment, for its requests or responses) and a receiver
//! (its wake block and FIFO, for the other direction) sharing it. Clients
//! and servers are each one.

use std::sync::Arc;

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
