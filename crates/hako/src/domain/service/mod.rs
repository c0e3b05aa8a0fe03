//! Services: discovery with no daemon.
//!
//! A service lives in a directory `svc_<hash of name>` of the domain root:
//!
//! * `static.toml` — the immutable description (name, pattern, and the
//!   pattern's settings: payload type, quality of service), written to a
//!   temporary file and renamed into place, so it is either absent or whole
//!   (`files.rs`);
//! * `dynamic` — the dynamic segment: node and port tables, the generation
//!   counter and an extra area per receiving port, such as the listeners'
//!   counters of events (`tables.rs`, laid out in `core/layout.rs`);
//! * `pub_<port id>` — one data segment per publisher;
//! * `wake_<port id>` — a FIFO per port that a waitset can poll.
//!
//! Creating, opening and closing services and registering ports happen under
//! an exclusive `flock` on the domain root, so concurrent `open_or_create`
//! calls from many processes are safe; a process that dies while holding it
//! releases it. `dynamic` is created before `static.toml` is renamed into
//! place; a directory without `static.toml` is the debris of a creator that
//! died halfway and is cleaned by the next creator.
//!
//! Nothing here knows a pattern: each one (in its own folder) describes
//! itself through `PatternRequest` and `PatternSettings` (`open.rs`), and
//! gets back the open service (`ServiceInner`, `inner.rs`) with its
//! settings parsed. Of the data path the domain knows only that a sending
//! port may own a segment file (`pub_<id>`) that can outlive it while its
//! entry is marked retired, so that registering and cleaning can free both.

pub(crate) mod builder;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod inner;
pub(crate) mod open;
pub(crate) mod reclaim;
pub(crate) mod tables;
