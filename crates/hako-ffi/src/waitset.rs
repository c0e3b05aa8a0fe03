//! The waitset: one thread waits on many subscribers, listeners, servers,
//! clients, file descriptors, intervals and deadlines.

use std::collections::VecDeque;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hako::{WaitEvent, WaitOutcome, WaitSet};

use crate::blackboard::hako_board_reader;
use crate::error::{guard, hako_status, Failure, ToFailure, HAKO_ERROR_BUFFER_TOO_SMALL};
use crate::event::hako_listener;
use crate::handle::{get, get_mut, give, put, take};
use crate::node::HAKO_FOREVER;
use crate::pubsub::hako_subscriber;
use crate::reqres::service::{hako_client, hako_server};

/// A waitset. Owning handle; one thread at a time. The ports attached to
/// it refuse to drop (`HAKO_ERROR_MISUSE`) until it is dropped.
pub struct hako_waitset {
    ws: WaitSet<'static>,
    /// The attachment counters of the ports attached, released on drop.
    attached: Vec<&'static AtomicUsize>,
    /// Events of the last wait not yet handed out.
    pending: VecDeque<hako_wait_event>,
}

/// What happened to an attachment.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_wait_event_kind {
    /// A port has something to take, or a descriptor is readable.
    HAKO_EVENT_READY = 0,
    /// An interval elapsed.
    HAKO_EVENT_TICK = 1,
    /// The source a deadline watches stayed silent for the deadline.
    HAKO_EVENT_DEADLINE_MISSED = 2,
}

/// One event: its kind and the attachment (the id an attach call gave).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hako_wait_event {
    /// What happened.
    pub kind: hako_wait_event_kind,
    /// The attachment.
    pub id: usize,
}

/// How a wait ended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_wait_outcome {
    /// Events came (`*count` of them were written).
    HAKO_WAIT_EVENTS = 0,
    /// The timeout passed with nothing.
    HAKO_WAIT_TIMED_OUT = 1,
    /// SIGINT or SIGTERM arrived: the program should stop.
    HAKO_WAIT_TERMINATION = 2,
}

impl ToFailure for hako::WaitSetError {
    fn status(&self) -> hako_status {
        match self {
            hako::WaitSetError::Io(_) => hako_status::HAKO_ERROR_IO,
            _ => hako_status::HAKO_ERROR_INVALID_ARGUMENT,
        }
    }
}

/// Creates a waitset. Like hako's Rust waitset, the first one installs
/// handlers of SIGINT and SIGTERM: a wait then ends with
/// `HAKO_WAIT_TERMINATION` (a second signal ends the process).
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_create(out: *mut *mut hako_waitset) -> hako_status {
    guard(|| {
        let w = hako_waitset {
            ws: WaitSet::new()?,
            attached: Vec::new(),
            pending: VecDeque::new(),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, w) }
    })
}

/// Creates a waitset that leaves SIGINT and SIGTERM alone (installs no
/// handler, never returns `HAKO_WAIT_TERMINATION`), for programs that
/// handle signals themselves (their nodes made with `no_signal_handling`).
///
/// # Safety
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_create_without_signal_handling(
    out: *mut *mut hako_waitset,
) -> hako_status {
    guard(|| {
        let w = hako_waitset {
            ws: WaitSet::without_signal_handling()?,
            attached: Vec::new(),
            pending: VecDeque::new(),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, w) }
    })
}

/// Drops a waitset and sets `*waitset` to NULL; its ports may drop after.
///
/// # Safety
/// `waitset` is NULL or points to NULL or a waitset handle.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_drop(waitset: *mut *mut hako_waitset) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { take(waitset, "the waitset") }?;
        let hako_waitset { ws, attached, .. } = *w;
        drop(ws);
        for counter in attached {
            // Relaxed: a count the ports' owner thread reads before a drop.
            counter.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

/// Records an attachment of a port with counter `c`; its id in `*id`.
fn attached(
    w: &mut hako_waitset,
    c: &'static AtomicUsize,
    id: *mut usize,
    got: Result<hako::AttachmentId, hako::WaitSetError>,
) -> Result<(), Failure> {
    let got = got?;
    // Relaxed: as in hako_waitset_drop.
    c.fetch_add(1, Ordering::Relaxed);
    w.attached.push(c);
    // SAFETY: NULL or writable (the caller's promise).
    unsafe { put(id, got.index()) };
    Ok(())
}

/// Attaches a subscriber: ready when it has samples. Its id in `*id` (may be NULL).
///
/// # Safety
/// `waitset` is a waitset handle; `port` is a live handle; `id` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_subscriber(
    waitset: *mut hako_waitset,
    port: *const hako_subscriber,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        // SAFETY: a live port handle, which refuses to drop while attached
        // (its counter): what 'static stands for here.
        let p: &'static hako_subscriber = unsafe { get(port, "the subscriber") }?;
        let got = w.ws.attach_subscriber(&p.sub);
        attached(w, &p.attached, id, got)
    })
}

/// Attaches a listener: ready when it has events. Its id in `*id` (may be NULL).
///
/// # Safety
/// `waitset` is a waitset handle; `port` is a live handle; `id` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_listener(
    waitset: *mut hako_waitset,
    port: *const hako_listener,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        // SAFETY: a live port handle, which refuses to drop while attached
        // (its counter): what 'static stands for here.
        let p: &'static hako_listener = unsafe { get(port, "the listener") }?;
        let got = w.ws.attach_listener(&p.listener);
        attached(w, &p.attached, id, got)
    })
}

/// Attaches a server: ready when it has requests. Its id in `*id` (may be NULL).
///
/// # Safety
/// `waitset` is a waitset handle; `port` is a live handle; `id` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_server(
    waitset: *mut hako_waitset,
    port: *const hako_server,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        // SAFETY: a live port handle, which refuses to drop while attached
        // (its counter): what 'static stands for here.
        let p: &'static hako_server = unsafe { get(port, "the server") }?;
        let got = w.ws.attach_server(&p.server);
        attached(w, &p.attached, id, got)
    })
}

/// Attaches a client: ready when responses to its requests came. Its id in `*id` (may be NULL).
///
/// # Safety
/// `waitset` is a waitset handle; `port` is a live handle; `id` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_client(
    waitset: *mut hako_waitset,
    port: *const hako_client,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        // SAFETY: a live port handle, which refuses to drop while attached
        // (its counter): what 'static stands for here.
        let p: &'static hako_client = unsafe { get(port, "the client") }?;
        let got = w.ws.attach_client(&p.client);
        attached(w, &p.attached, id, got)
    })
}

/// Attaches a blackboard reader: ready while an entry it watches
/// (`hako_board_reader_entry_watch`) changed since its handle last read
/// it. Its id in `*id` (may be NULL).
///
/// # Safety
/// `waitset` is a waitset handle; `reader` is a live handle; `id` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_board_reader(
    waitset: *mut hako_waitset,
    reader: *const hako_board_reader,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        // SAFETY: a live reader handle, which refuses to drop while
        // attached (its counter): what 'static stands for here.
        let r: &'static hako_board_reader = unsafe { get(reader, "the reader") }?;
        let got = w.ws.attach_reader(&r.reader);
        attached(w, &r.attached, id, got)
    })
}

/// Attaches a file descriptor: ready when readable (read it, or it stays
/// ready). It must stay open while attached.
///
/// # Safety
/// `waitset` is a waitset handle; `fd` stays open while the waitset
/// lives; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_fd(
    waitset: *mut hako_waitset,
    fd: i32,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        if fd < 0 {
            return Err(Failure::invalid("the descriptor is negative"));
        }
        // SAFETY: open while the waitset lives (the caller's promise).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let got = w.ws.attach_fd(fd)?;
        // SAFETY: NULL or writable.
        unsafe { put(id, got.index()) };
        Ok(())
    })
}

/// Attaches an interval: a tick every `period_us` microseconds.
///
/// # Safety
/// `waitset` is a waitset handle; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_interval(
    waitset: *mut hako_waitset,
    period_us: u64,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        if period_us == 0 {
            return Err(Failure::invalid(
                "an interval of zero would tick without end",
            ));
        }
        let got = w.ws.attach_interval(Duration::from_micros(period_us));
        // SAFETY: NULL or writable.
        unsafe { put(id, got.index()) };
        Ok(())
    })
}

/// Attaches a deadline on attachment `source` (a port or a descriptor):
/// an event whenever it stays silent for `deadline_us` microseconds.
///
/// # Safety
/// `waitset` is a waitset handle; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_attach_deadline(
    waitset: *mut hako_waitset,
    source: usize,
    deadline_us: u64,
    id: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        if source >= w.ws.len() {
            return Err(Failure::invalid(format!("no attachment {source}")));
        }
        let of = hako::AttachmentId::from_index(source);
        let got =
            w.ws.attach_deadline(of, Duration::from_micros(deadline_us))?;
        // SAFETY: NULL or writable.
        unsafe { put(id, got.index()) };
        Ok(())
    })
}

/// Waits until something happens (`HAKO_FOREVER`), or up to `timeout_us`
/// microseconds, then writes up to `capacity` events to `events`, their
/// number to `*count` and how the wait ended to `*outcome`. Events that do
/// not fit are handed out by the next calls, at once. Take what a ready
/// port has (receive until nothing is left) before waiting again.
///
/// # Safety
/// `waitset` is a waitset handle; `events` is writable for `capacity`
/// entries; `count` and `outcome` are writable.
#[no_mangle]
pub unsafe extern "C" fn hako_waitset_wait(
    waitset: *mut hako_waitset,
    timeout_us: u64,
    events: *mut hako_wait_event,
    capacity: usize,
    count: *mut usize,
    outcome: *mut hako_wait_outcome,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let w = unsafe { get_mut(waitset, "the waitset") }?;
        if events.is_null() || count.is_null() || outcome.is_null() {
            return Err(Failure::null("the events, count or outcome pointer"));
        }
        if capacity == 0 {
            return Err(Failure::new(
                HAKO_ERROR_BUFFER_TOO_SMALL,
                "room for no event: pass a capacity of at least 1",
            ));
        }
        let mut how = hako_wait_outcome::HAKO_WAIT_EVENTS;
        if w.pending.is_empty() {
            let pending = &mut w.pending;
            let mut push = |e: WaitEvent| {
                let (kind, id) = match e {
                    WaitEvent::Ready(id) => (hako_wait_event_kind::HAKO_EVENT_READY, id),
                    WaitEvent::Tick(id) => (hako_wait_event_kind::HAKO_EVENT_TICK, id),
                    WaitEvent::DeadlineMissed(id) => {
                        (hako_wait_event_kind::HAKO_EVENT_DEADLINE_MISSED, id)
                    }
                };
                pending.push_back(hako_wait_event {
                    kind,
                    id: id.index(),
                });
            };
            let r = if timeout_us == HAKO_FOREVER {
                w.ws.wait_and_process(&mut push)
            } else {
                w.ws.wait_and_process_timeout(&mut push, Duration::from_micros(timeout_us))
            }?;
            how = match r {
                WaitOutcome::TimedOut => hako_wait_outcome::HAKO_WAIT_TIMED_OUT,
                WaitOutcome::TerminationRequest => hako_wait_outcome::HAKO_WAIT_TERMINATION,
                _ => hako_wait_outcome::HAKO_WAIT_EVENTS,
            };
        }
        let n = capacity.min(w.pending.len());
        for (i, e) in w.pending.drain(..n).enumerate() {
            // SAFETY: i < capacity; writable (the caller's promise).
            unsafe { events.add(i).write(e) };
        }
        // SAFETY: writable.
        unsafe {
            put(count, n);
            put(outcome, how);
        }
        Ok(())
    })
}
