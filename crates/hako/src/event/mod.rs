//! The event pattern: notifiers signal event ids, listeners wait for them
//! and learn which ids fired and how often. Events carry no payload, so the
//! pattern needs no data segment: each listener's counters live in its
//! service's dynamic segment (`counters.rs`).
//!
//! Within the folder imports point down: `counters` → `settings` →
//! `notifier`, `listener` → `service`.

pub(crate) mod counters;
pub(crate) mod listener;
pub(crate) mod notifier;
pub(crate) mod service;
pub(crate) mod settings;
