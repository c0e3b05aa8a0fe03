//! A port that sends and receives: one entry in its service's table, a
//! sender (its data segment, for its requests or responses) and a receiver
//! (its wake block and FIFO, for the other direction) sharing it. Clients
//! and servers are each one.

use std::sync::Arc;

use crate::domain::nodefile::new_id;
use crate::domain::service::error::ServiceError;
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::domain::service::tables::PortKind;
use crate::port::receiver::inner::{Receiver, ReceiverCreateError};
use crate::port::receiver::settings::ReceiverSettings;
use crate::port::sender::inner::SenderInner;
use crate::port::sender::settings::{SenderCreateError, SenderSettings};

/// The entry of a duplex port in its table; removed when dropped.
pub(crate) struct Entry {
    service: Arc<ServiceInner>,
    kind: PortKind,
    pub(crate) index: usize,
    pub(crate) port_id: u64,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.service.unregister(self.kind, self.index, self.port_id);
    }
}

/// A sender and a receiver on one entry. Field order is drop order: the
/// halves go before the entry that names them.
pub(crate) struct Duplex {
    pub(crate) rx: Receiver,
    pub(crate) tx: Arc<SenderInner>,
    pub(crate) entry: Entry,
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
        let entry = Entry {
            service: service.clone(),
            kind: tx.own,
            index,
            port_id,
        };
        rx.shared = Some((port_id, index));
        let receiver = Receiver::create(service, rx).map_err(|e| match e {
            ReceiverCreateError::TooMany => DuplexError::TooMany,
            ReceiverCreateError::Service(e) => DuplexError::Service(e),
        })?;
        Ok(Self {
            rx: receiver,
            tx: sender,
            entry,
        })
    }
}
