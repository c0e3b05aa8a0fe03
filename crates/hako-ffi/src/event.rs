//! Events: services, notifiers and listeners.

use std::collections::VecDeque;
use std::ffi::c_char;
use std::time::Duration;

use hako::{EventId, EventService, Listener, Notifier};

use crate::error::{guard, hako_status, Failure, HAKO_ERROR_BUFFER_TOO_SMALL};
use crate::handle::{get, get_mut, give, put, take, take_port, text};
use crate::node::{hako_node, hako_open_mode, hako_wait_strategy, HAKO_FOREVER};

/// Settings of an event service. Zero means: the configured default on
/// create, anything on open.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hako_event_options {
    /// Largest event id.
    pub event_id_max: u64,
    /// Notifiers the service admits.
    pub max_notifiers: u32,
    /// Listeners the service admits.
    pub max_listeners: u32,
    /// Nodes that may hold it open at once.
    pub max_nodes: u32,
}

/// An event service. Owning handle; any thread.
pub struct hako_event_service {
    svc: EventService,
}

/// A notifier. Owning handle; one thread at a time.
pub struct hako_notifier {
    notifier: Notifier,
}

/// A listener. Owning handle; one thread at a time.
pub struct hako_listener {
    pub(crate) listener: Listener,
    /// Waitsets it is attached to.
    pub(crate) attached: std::sync::atomic::AtomicUsize,
    /// Events taken from the listener and not yet handed out (a wait gave
    /// more distinct ids than the caller had room for).
    pending: VecDeque<(EventId, u64)>,
}

/// One event id that fired, and how often since the last wait.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hako_event {
    /// The event id.
    pub id: u64,
    /// Notifications of it.
    pub count: u64,
}

/// Opens or creates (`mode`) the event service `name`. `options` may be
/// NULL.
///
/// # Safety
/// `node` is a node handle; `name` is NUL-terminated; `options` is NULL or
/// valid; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_event_service_open(
    node: *const hako_node,
    name: *const c_char,
    options: *const hako_event_options,
    mode: hako_open_mode,
    out: *mut *mut hako_event_service,
) -> hako_status {
    guard(|| {
        // SAFETY: a node handle (the caller's promise).
        let node = unsafe { get(node, "the node") }?;
        // SAFETY: NUL-terminated (the caller's promise).
        let name = unsafe { text(name, "the service name") }?;
        // SAFETY: NULL or valid.
        let o = unsafe { options.as_ref() }.copied().unwrap_or_default();
        let mut b = node.node.service_builder(&name.try_into()?).event();
        if o.event_id_max != 0 {
            b = b.event_id_max(o.event_id_max);
        }
        if o.max_notifiers != 0 {
            b = b.max_notifiers(o.max_notifiers);
        }
        if o.max_listeners != 0 {
            b = b.max_listeners(o.max_listeners);
        }
        if o.max_nodes != 0 {
            b = b.max_nodes(o.max_nodes);
        }
        let svc = match mode {
            hako_open_mode::HAKO_OPEN_OR_CREATE => b.open_or_create(),
            hako_open_mode::HAKO_CREATE => b.create(),
            hako_open_mode::HAKO_OPEN => b.open(),
        }?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_event_service { svc }) }
    })
}

/// Drops an event service handle and sets `*service` to NULL.
///
/// # Safety
/// `service` is NULL or points to NULL or an event service handle.
#[no_mangle]
pub unsafe extern "C" fn hako_event_service_drop(
    service: *mut *mut hako_event_service,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(service, "the event service") }.map(drop))
}

/// Creates a notifier.
///
/// # Safety
/// `service` is an event service handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_notifier_create(
    service: *const hako_event_service,
    out: *mut *mut hako_notifier,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(service, "the event service") }?;
        let notifier = s.svc.notifier_builder().create()?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_notifier { notifier }) }
    })
}

/// Drops a notifier and sets `*notifier` to NULL.
///
/// # Safety
/// `notifier` is NULL or points to NULL or a notifier handle.
#[no_mangle]
pub unsafe extern "C" fn hako_notifier_drop(notifier: *mut *mut hako_notifier) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(notifier, "the notifier") }.map(drop))
}

/// Fires event `id` (at most the service's `event_id_max`); `reached` (may
/// be NULL) gets the number of listeners notified.
///
/// # Safety
/// `notifier` is a notifier handle; `reached` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_notifier_notify(
    notifier: *mut hako_notifier,
    id: u64,
    reached: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let n = unsafe { get_mut(notifier, "the notifier") }?;
        let count = n.notifier.notify_with_id(EventId(id))?;
        // SAFETY: NULL or writable.
        unsafe { put(reached, count) };
        Ok(())
    })
}

/// Creates a listener that waits as `wait` says.
///
/// # Safety
/// `service` is an event service handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_listener_create(
    service: *const hako_event_service,
    wait: hako_wait_strategy,
    out: *mut *mut hako_listener,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(service, "the event service") }?;
        let listener = s
            .svc
            .listener_builder()
            .wait_strategy(wait.into())
            .create()?;
        let l = hako_listener {
            listener,
            attached: Default::default(),
            pending: VecDeque::new(),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, l) }
    })
}

/// Drops a listener and sets `*listener` to NULL.
///
/// # Safety
/// `listener` is NULL or points to NULL or a listener handle.
#[no_mangle]
pub unsafe extern "C" fn hako_listener_drop(listener: *mut *mut hako_listener) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| {
        // SAFETY: the caller's promise, passed on.
        unsafe {
            take_port(listener, "the listener", |l| {
                // Relaxed: read by the listener's own thread.
                l.attached.load(std::sync::atomic::Ordering::Relaxed)
            })
        }
        .map(drop)
    })
}

/// Waits for events: at once (`timeout_us` 0), up to `timeout_us`
/// microseconds, or until some come (`HAKO_FOREVER`). Writes up to
/// `capacity` of them (each id once, with its count) to `events` and their
/// number to `*count` (0 on a timeout). Ids that do not fit are kept for
/// the next call, which returns them at once; `HAKO_ERROR_BUFFER_TOO_SMALL`
/// only for a capacity of 0. `HAKO_ERROR_PEER_GONE` when a wait's
/// notifiers all left.
///
/// # Safety
/// `listener` is a listener handle; `events` is writable for `capacity`
/// entries; `count` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_listener_wait(
    listener: *mut hako_listener,
    timeout_us: u64,
    events: *mut hako_event,
    capacity: usize,
    count: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let l = unsafe { get_mut(listener, "the listener") }?;
        if events.is_null() || count.is_null() {
            return Err(Failure::null("the events or count pointer"));
        }
        if capacity == 0 {
            return Err(Failure::new(
                HAKO_ERROR_BUFFER_TOO_SMALL,
                "room for no event: pass a capacity of at least 1",
            ));
        }
        if l.pending.is_empty() {
            let got = match timeout_us {
                0 => l.listener.try_wait(),
                HAKO_FOREVER => l.listener.blocking_wait()?,
                us => l.listener.timed_wait(Duration::from_micros(us))?,
            };
            l.pending.extend(got);
        }
        let n = capacity.min(l.pending.len());
        for (i, (id, c)) in l.pending.drain(..n).enumerate() {
            // SAFETY: i < capacity; writable (the caller's promise).
            unsafe {
                events.add(i).write(hako_event {
                    id: id.value(),
                    count: c,
                })
            };
        }
        // SAFETY: writable.
        unsafe { put(count, n) };
        Ok(())
    })
}
