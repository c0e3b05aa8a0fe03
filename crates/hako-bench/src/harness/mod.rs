//! Leader and follower processes, and the timing of round trips.
//!
//! The leader (the process the user started) starts one or more followers as
//! child processes of the *same binary*, with [`FOLLOWER_ARG`] as their first
//! argument; such a binary hands control to
//! [`follower_main`](follower::follower_main) before parsing
//! anything else. Leader and followers talk over the children's
//! stdin/stdout, one line per message, only between rows (never while
//! timing):
//!
//! ```text
//!  follower → leader   hello <cpu>                        (after pinning)
//!  leader → follower   row <transport> <pattern> <payload> <size> <warmup>
//!                          <iterations> <row id> <followers> <index> <depth>
//!  follower → leader   ready                              (its side is built)
//!                      … <warmup> + <iterations> messages …
//!  follower → leader   done <cpu ns> <user ns> <system ns> <sleeps> <last ns>
//!  leader → follower   quit
//!  follower → leader   error <message>                    (instead of any reply)
//! ```
//!
//! A ping-pong row runs with the first follower; a fan-out row with the
//! first `followers` of them, so a [`Session`] starts as many as its widest
//! row needs ([`SessionConfig::followers`]).
//!
//! All processes take their CPU time (the process CPU clock,
//! `CLOCK_PROCESS_CPUTIME_ID`, with `getrusage`'s user/system split beside
//! it) and their count of voluntary context switches (sleeps) around the
//! timed messages only; the followers' figures come back in their
//! `done` lines, with (one-way patterns) the `CLOCK_MONOTONIC` time at which
//! they had checked the last message: the clock is the same in every
//! process, so the leader knows when the last receiver was through.
//!
//! Followers die with the leader: each asks the kernel for `SIGKILL` when
//! its parent exits (`PR_SET_PDEATHSIG`), and [`Session`]'s `Drop` kills and
//! reaps them.
//!
//! The folder, bottom up: `stats.rs` (a row's statistics), `rows.rs` (what
//! a row runs and gives), `followers.rs` (the follower processes' pipes and
//! `done` lines), `session.rs` (the [`Session`] and [`RunRow`]),
//! `follower.rs` (the follower's side), `blocks.rs` (rows in blocks against
//! a probe), `rounds.rs` (one-way and in-flight rows), `progress.rs`.

pub mod blocks;
pub mod follower;
mod followers;
pub mod progress;
pub mod rounds;
mod rows;
mod session;
mod stats;

pub use followers::FollowerReport;
pub use rows::{OneWay, OneWayResult, RowResult};
pub use session::{RunRow, Session, SessionConfig, FOLLOWER_ARG};
pub use stats::{floor_level, Stats};
