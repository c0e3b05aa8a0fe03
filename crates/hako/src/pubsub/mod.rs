//! The publish/subscribe pattern: publishers loan chunks of their own pool,
//! write samples in place and send them; every subscriber reads them where
//! they were written. A typed face over the port layer's sender and
//! receiver (`port/sender/`, `port/receiver/`).
//!
//! Within the folder imports point down: `settings` → `sample_mut`,
//! `sample` → `publisher`, `subscriber` → `service`.

pub(crate) mod publisher;
pub(crate) mod sample;
pub(crate) mod sample_mut;
pub(crate) mod service;
pub(crate) mod settings;
pub(crate) mod subscriber;
