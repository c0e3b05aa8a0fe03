//! The port machinery every pattern shares: payload types, data segments,
//! the sending and receiving halves of the data path (loans, connections,
//! rings, history, overflow), the port lock and the wait strategies.
//! Nothing here knows a pattern's name; the patterns put typed faces on it.
//!
//! Within the folder imports point down: `payload` → `fixed`; `payload`,
//! `lock`, `wait`, `pokes` (waking a waitset on another port's FIFO) →
//! `segment` → `sender/`, `receiver/`.

pub(crate) mod fixed;
pub(crate) mod lock;
pub(crate) mod payload;
pub(crate) mod pokes;
pub(crate) mod receiver;
pub(crate) mod segment;
pub(crate) mod sender;
pub(crate) mod wait;
