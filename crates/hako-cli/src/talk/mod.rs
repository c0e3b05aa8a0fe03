//! `hako pub`, `hako sub`, `hako hz`, `hako notify`, `hako listen`, `hako
//! call`, `hako serve` and `hako board`: talking to a service from a
//! terminal, for debugging and scripts.
//!
//! The files import each other in one direction: `open.rs` (the node, the
//! service's name, `--create`, the error of a service that cannot be
//! opened) → `payload.rs` (a service's payload type, seen as bytes) → one
//! file per command family, `events.rs` (`notify`, `listen`), `publish.rs`
//! (`pub`), `subscribe.rs` (`sub`), `hz.rs` (`hz`), `reqres.rs` (`call`,
//! `serve`), `values.rs` (a value as numbers or hex) → `board.rs` (`board
//! get`, `set`, `watch`), `recording.rs` (how a recording is laid out in
//! MCAP) → `record.rs` (`record`) and `replay.rs` (`replay`); this
//! file only declares them and re-exports the commands.
//!
//! `pub` and `sub` work on publish/subscribe services of any payload type.
//! They read the type the service records (name, size, alignment, whether
//! it is a slice) and open the service with it, seeing each payload as its
//! bytes (`payload.rs`):
//!
//! * On a `[u8]` service, messages are text: the command-line arguments, or
//!   the lines of standard input; `sub` prints each payload as UTF-8
//!   (invalid bytes replaced), or as hex with `--hex`.
//! * On any other type, `sub` prints each sample as a hex dump headed by
//!   the type (`u64 (8 B, align 8): 0a 00 00 00 00 00 00 00`), and `pub`
//!   takes messages as hex (`--hex`, spaces allowed) or as raw bytes on
//!   standard input (`--binary`, cut into messages of the type's size; for
//!   a slice, all of it is one message). A message must fit the type:
//!   exactly its size, or for a slice a multiple of the element's size.
//!   `--hex` and `--binary` work on `[u8]` services too.
//!
//! Every command opens an existing service and creates one (with the
//! default settings) only with `--create`: a service a command made up
//! would later refuse the program it belongs to, whose settings differ.
//! `pub` and `sub` create only `[u8]` services (they cannot make up another
//! type), so `--create` on a service of another type is refused.

mod board;
mod events;
mod hz;
mod open;
mod payload;
mod publish;
mod record;
mod recording;
mod replay;
mod reqres;
mod subscribe;
mod values;

pub use board::{board, BoardArgs};
pub use events::{listen, notify, ListenArgs, NotifyArgs};
pub use hz::{hz, HzArgs};
pub use publish::{publish, PubArgs};
pub use record::{record, RecordArgs};
pub use replay::{replay, ReplayArgs};
pub use reqres::{call, serve, CallArgs, ServeArgs};
pub use subscribe::{subscribe, SubArgs};
