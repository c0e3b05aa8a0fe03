//! The blackboard pattern: shared state rather than messages. A service is
//! created with its entries (a key and a plain-data value type each, with a
//! default); one writer updates them, any number of readers (up to the
//! service's `max_readers`) read the latest value of each, with no queue:
//! a reader that looks twice between two updates sees the same value, and
//! one that looks after ten updates sees the tenth.
//!
//! A read is never torn and never holds the writer back; the writer never
//! waits for a reader. How: `core/board.rs` (a sequence word per buffer,
//! `max_readers + 2` buffers per entry, readers pinning a buffer to read
//! it in place). Each entry has a version, the count of its updates, so a
//! reader learns whether it changed since it last looked.
//!
//! Files: `settings.rs` (the entries and the quality of service as the
//! static description records them, where each entry lies), `access.rs`
//! (an entry of an open service, its errors), `ports.rs` (the writer's
//! and a reader's registration and machinery), `service.rs` (the builder
//! and the service handle), `writer.rs` and `reader.rs` (their faces, by
//! entry, typed and as bytes).

pub mod access;
pub mod ports;
pub mod reader;
pub mod service;
pub mod settings;
pub mod writer;
