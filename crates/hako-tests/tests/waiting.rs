//! Waiting across processes (issue #3, scenarios 3, 4, 5, 6, 7 and 8).
//!
//! * a waitset on a listener and a subscriber fed by two other processes, a
//!   subscriber of a publisher process that never sends (watched by a
//!   deadline) and an interval: every source fires, the deadline on the
//!   silent source fires, and the interval fires at least once and at most
//!   span/period + 2 times (a lower bound and a sanity ceiling, never a tight
//!   timing bound);
//! * a subscriber asleep in `blocking_receive` with `WaitStrategy::Park`
//!   (the test waits until the process sleeps on the futex) wakes on a send
//!   from another process, three times from three publisher processes;
//! * SIGTERM and SIGINT end a `while node.wait(CYCLE).is_ok()` loop and a
//!   waitset loop (`WaitOutcome::TerminationRequest`); the helper prints,
//!   drops its ports and exits 0, leaving an empty domain root;
//! * a subscriber blocked in `blocking_receive` whose publisher process is
//!   killed (SIGKILL) or leaves returns `ReceiveError::PublishersGone`; so
//!   does one whose publisher was killed between two receives;
//! * zero timeouts (`timed_wait`, `receive_timeout`,
//!   `wait_and_process_timeout`) return at once: empty when nothing is
//!   pending, with the data when another process has notified and sent;
//! * for each `WaitStrategy`, a ping-pong of 3 000 round trips with
//!   `blocking_receive` (publish/subscribe) and with `blocking_wait`
//!   (events) completes, every message checked (correctness only).
//!
//! Synchronisation goes through files the helpers create, the library's own
//! counts, and the helpers' state in /proc (asleep on a futex); never through
//! sleeps. Each test has its own domain root, which must be empty once all
//! processes exited (except after a SIGKILL; see `crash.rs`).
//!
//! The tests are in `waiting/`, by subject: waitsets and zero timeouts,
//! blocking receives (woken by a send, ended by departed publishers),
//! termination requests, and the ping-pongs of each strategy.

/// A waitset on sources in other processes; zero timeouts.
#[path = "waiting/waitset.rs"]
mod waitset;

/// `blocking_receive`: woken by a send, ended when the publishers are gone.
#[path = "waiting/blocking_receive.rs"]
mod blocking_receive;

/// SIGTERM and SIGINT end the waits and loops.
#[path = "waiting/signals.rs"]
mod signals;

/// Ping-pongs for each `WaitStrategy`.
#[path = "waiting/ping_pong.rs"]
mod ping_pong;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
