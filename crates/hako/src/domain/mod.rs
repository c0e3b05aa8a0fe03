//! The domain: where a domain's files live and who is in it. Config and
//! names, node files and their liveness locks, services (their static
//! description, dynamic segment and port tables) and the cleaning up after
//! dead nodes. It knows that services exist and which ports they have, not
//! what flows through them: that is the patterns' business, above the
//! shared port machinery (`port/`).
//!
//! Within the folder, imports point down this list: `config`, `name` →
//! `nodefile` → `lockfile` → `service` → `cleanup` → `node`.

pub mod cleanup;
pub mod config;
pub mod lockfile;
pub mod name;
pub mod node;
pub(crate) mod nodefile;
pub(crate) mod service;
