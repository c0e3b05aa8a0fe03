//! Waking a waitset that sleeps on another port's FIFO: the write ends of
//! the FIFOs of a service's receiving ports, opened when first needed and
//! kept per table entry (reopened when the entry holds another port).

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use crate::domain::service::files::fifo_file;
use crate::domain::service::inner::ServiceInner;
use crate::os::fifo;

/// The FIFOs of the second table's ports, as one sending port keeps them.
#[derive(Debug)]
pub(crate) struct Pokes {
    fifos: Mutex<Vec<Option<(u64, OwnedFd)>>>,
}

impl Pokes {
    /// Room for `ports` receiving ports.
    pub(crate) fn new(ports: usize) -> Self {
        Self {
            fifos: Mutex::new((0..ports).map(|_| None).collect()),
        }
    }

    /// Writes a byte to the FIFO of port `port_id`, entry `j` of the
    /// second table (a waitset or an async task sleeps on it). A FIFO that
    /// cannot be opened (the port just left) is skipped.
    pub(crate) fn poke(&self, service: &ServiceInner, j: usize, port_id: u64) {
        let mut fifos = self.fifos.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = fifos.get_mut(j) else {
            return;
        };
        if entry.as_ref().is_none_or(|(p, _)| *p != port_id) {
            *entry = service
                .dir
                .open_fifo_writer(&fifo_file(port_id))
                .ok()
                .map(|fd| (port_id, fd));
        }
        if let Some((_, fd)) = entry {
            fifo::poke(fd);
        }
    }
}
