//! The memory footprint: how many bytes of shared memory one publisher and
//! one subscriber map, against the number of subscribers their service
//! allows.
//!
//! A hako publisher preallocates its worst case: its segment holds a connection
//! block for every subscriber the service allows and a chunk pool sized for
//! all of them (see the README, "How it works"). So its memory must grow
//! *linearly* with that number: the bytes per allowed subscriber may not
//! grow with it (they did, once: a `u64` service allowing 4,096 subscribers
//! took a 540 MB publisher segment). A subscriber maps its own connection
//! block and the publisher's pool, never the other subscribers' blocks.
//!
//! The measure, in this process, for a `u64` publish/subscribe service that
//! allows `n` subscribers and one publisher (every other setting the
//! library's default), each library in a fresh place of its own:
//!
//! 1. create a node; sum the sizes of the regions of `/proc/self/maps`
//!    backed by the library's files ([`mapped_bytes`]), create the
//!    service, sum again: the difference is what the service maps
//!    ([`Figures::service`]);
//! 2. create one publisher, sum again: the difference is what the
//!    publisher maps ([`Figures::publisher`]);
//! 3. create one subscriber (sum), send one sample (sum), receive it (sum):
//!    a subscriber maps a publisher's segment when it first receives from
//!    it. What changed while the subscriber was created and while it
//!    received is the subscriber's ([`Figures::subscriber`]); what changed
//!    while the publisher sent is the publisher's side of the new
//!    connection ([`Figures::at_first_send`]): only one port runs in each
//!    step, so each byte is put down to the port that mapped it.
//!
//! The bytes are address space mapped (virtual), not pages touched: what a
//! port reserves, which bounds what it can ever use. hako's files are those
//! under the domain root, a directory made for the measure and removed
//! after it; iceoryx2's (feature `peers`, see
//! `iceoryx2.rs`) those under its file prefix in
//! `/dev/shm` and under its root path. A failure is kept as the row's error text, never ends a run.

mod hako;
#[cfg(feature = "peers")]
mod iceoryx2;
mod maps;
mod report;

pub use maps::{mapped_bytes, Figures};
pub use report::{measure, Footprint, FootprintReport, DEFAULT_ALLOWED, LINEAR_SLACK};
