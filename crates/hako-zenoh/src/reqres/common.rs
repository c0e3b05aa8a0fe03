//! What both directions of a request/response link share: the shapes of
//! the messages, how long the bridge's ports are made, and how a link's
//! thread waits.

use std::time::Duration;

use hako::{WaitSet, WaitSetError};

use crate::link::POLL;
use crate::payload::Shape;

/// Bytes of room the bridge's client (requests) or server (responses)
/// starts with, for a slice type: more if other domains' ports send more.
const FIRST_SLICE_BYTES: usize = 4096;

/// What the thread of a link moves bytes with.
#[derive(Clone, Copy)]
pub(crate) struct Shapes {
    pub request: Shape,
    pub response: Shape,
}

/// Elements of the first port for messages of `shape`: a few KiB worth of
/// a slice, or `known` (what other domains send) if more; 1 for a type
/// that is no slice.
pub(super) fn first_len(shape: Shape, known: usize) -> usize {
    if shape.slice {
        (FIRST_SLICE_BYTES / shape.size.max(1)).max(known).max(1)
    } else {
        1
    }
}

/// Elements of a port made anew for a message of `need` elements, when
/// other domains send up to `known` and no port could be made for
/// `refused`: the next power of two, if it stays below `refused`.
pub(super) fn grown(need: usize, known: usize, refused: usize) -> usize {
    let n = need.max(known);
    match n.checked_next_power_of_two() {
        Some(p) if p < refused => p,
        _ => n,
    }
}

/// How a link's thread waits for either side: a waitset over its port and
/// its mailbox (asleep until one has something), or, with `--low-latency`,
/// a yield of the CPU before the next look at both.
pub(super) enum Idle<'a> {
    Sleep(WaitSet<'a>),
    Spin,
}

impl<'a> Idle<'a> {
    /// Sleeping on what `attach` attaches, or spinning.
    pub(super) fn new(
        spin: bool,
        attach: impl FnOnce(&mut WaitSet<'a>) -> Result<hako::AttachmentId, WaitSetError>,
    ) -> Result<Self, WaitSetError> {
        if spin {
            return Ok(Self::Spin);
        }
        let mut w = WaitSet::without_signal_handling()?;
        attach(&mut w)?;
        Ok(Self::Sleep(w))
    }

    /// Waits until something may have come, `timeout` (at most [`POLL`])
    /// passed, or, spinning, a moment.
    pub(super) fn wait(&mut self, timeout: Option<Duration>, name: &str) {
        match self {
            Self::Spin => std::thread::yield_now(),
            Self::Sleep(w) => {
                let t = timeout.map_or(POLL, |t| t.min(POLL));
                if let Err(e) = w.wait_and_process_timeout(|_| {}, t) {
                    tracing::warn!(service = name, "cannot wait: {e}");
                    std::thread::sleep(POLL);
                }
            }
        }
    }
}
