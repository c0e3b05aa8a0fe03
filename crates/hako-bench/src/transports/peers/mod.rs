//! Peer libraries measured against hako (feature `peers`).
//!
//! * [`iceoryx2`](mod@iceoryx2) — Eclipse iceoryx2, the closest peer: zero-copy
//!   publish/subscribe over shared memory, measured exactly as hako is
//!   (slices of `u8` loaned, written in place, sent; busy-polled
//!   `receive()`; the same queue depths and flow control).
//! * [`iceoryx2_reqres`] — iceoryx2's request/response, measured as hako's
//!   is ([`crate::transports::hako::reqres`]).
//! * [`shmipc`](mod@shmipc) — CloudWeGo shmipc: byte streams whose data goes
//!   through shared memory and whose wake-ups go through a unix socket or an
//!   eventfd, driven by tokio.
//! * [`uring`] — monoio and tokio-uring, the io_uring runtimes: a client
//!   and a server over a unix socket, each on its own runtime.
//!
//! Each keeps its files apart per run (see the modules), so that a run that
//! was killed leaves nothing that the next one does not clean up.

pub mod iceoryx2;
pub mod iceoryx2_board;
pub mod iceoryx2_reqres;
pub mod shmipc;
pub mod uring;
