//! Publish/subscribe: services, publishers, subscribers and their samples.

use std::ffi::{c_char, c_void};

use hako::{PubSubService, Publisher, Subscriber, TypeDetails};

use crate::error::{guard, hako_status, Failure};
use crate::handle::{get, get_mut, give, put, take, take_port, text};

use crate::node::{hako_node, hako_open_mode, hako_wait_strategy};
/// Relaxed: attachment counts are read by the port's own thread, before a
/// drop.
use std::sync::atomic::Ordering::Relaxed;

/// A payload type, as a Rust process's type describes itself: the full
/// name of the element type (`my_crate::Frame`, `u8`, `[f32; 4]`), its
/// size and alignment in bytes, and whether the payload is a slice of
/// such elements (of a length chosen per sample).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_payload_type {
    /// The element type's name (NUL-terminated, UTF-8).
    pub type_name: *const c_char,
    /// Bytes per element: `sizeof` of the C type.
    pub size: u64,
    /// Alignment: `_Alignof` of the C type.
    pub align: u64,
    /// A slice of elements (`[T]` in Rust) rather than one.
    pub slice: bool,
}

/// What a service does when a subscriber's queue is full.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum hako_overflow {
    /// On create: the configured default; on open: whatever it is.
    #[default]
    HAKO_OVERFLOW_ANY = 0,
    /// The oldest queued sample makes room.
    HAKO_OVERFLOW_DROP_OLDEST = 1,
    /// The publisher waits, retries or skips (its `hako_backpressure`).
    HAKO_OVERFLOW_BACKPRESSURE = 2,
}

/// What a publisher does under backpressure when a queue is full.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_backpressure {
    /// Wait until the subscriber makes room (or goes). The default.
    HAKO_BACKPRESSURE_BLOCK = 0,
    /// Try again `retries` times, then skip that subscriber.
    HAKO_BACKPRESSURE_RETRY = 1,
    /// Skip that subscriber at once.
    HAKO_BACKPRESSURE_DISCARD = 2,
}

/// Settings of a publish/subscribe service. Zero means: the configured
/// default on create, anything on open.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hako_pubsub_options {
    /// Publishers the service admits.
    pub max_publishers: u32,
    /// Subscribers the service admits.
    pub max_subscribers: u32,
    /// Nodes that may hold it open at once.
    pub max_nodes: u32,
    /// Samples each subscriber queues per publisher.
    pub buffer_size: u32,
    /// Samples a subscriber may hold at once.
    pub max_borrowed: u32,
    /// Samples kept for late-joining subscribers.
    pub history_size: u32,
    /// Overflow policy.
    pub overflow: hako_overflow,
}

/// A publish/subscribe service. Owning handle; any thread.
pub struct hako_pubsub_service {
    svc: PubSubService<[u8]>,
    elem_size: usize,
}

/// A publisher. Owning handle; one thread at a time.
pub struct hako_publisher {
    pub(crate) publisher: Publisher<[u8]>,
    pub(crate) elem_size: usize,
}

/// Settings of a publisher. Zero means the default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_publisher_options {
    /// Most elements of a slice sample (slices only; default 1).
    pub max_slice_len: usize,
    /// Samples loaned at once (default 2).
    pub max_loans: u32,
    /// Under backpressure: block (default), retry or discard.
    pub backpressure: hako_backpressure,
    /// Tries of `HAKO_BACKPRESSURE_RETRY`.
    pub retries: u32,
}

/// A subscriber. Owning handle; one thread at a time.
pub struct hako_subscriber {
    pub(crate) sub: Subscriber<[u8]>,
    pub(crate) elem_size: usize,
    /// Waitsets it is attached to.
    pub(crate) attached: std::sync::atomic::AtomicUsize,
}

/// Settings of a subscriber.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_subscriber_options {
    /// How a receive with a timeout waits.
    pub wait: hako_wait_strategy,
    /// A receive that waits ends with `HAKO_ERROR_PEER_GONE` once every
    /// publisher seen during the wait has left or died and nothing is
    /// queued. False (the default, and what a NULL `options` gives): it
    /// waits on, so the subscriber outlives a restart of its publisher.
    pub end_when_publishers_gone: bool,
    /// Publishers never wait for this subscriber: on a backpressure service
    /// a full queue loses its oldest sample, counted as the publisher's
    /// overflow, as on a drop-oldest one (for forwarders that must not
    /// slow the service). False by default.
    pub lossy: bool,
}

/// The payload type of byte slices: `{"u8", 1, 1, true}` (Rust `[u8]`).
#[no_mangle]
pub extern "C" fn hako_payload_bytes() -> hako_payload_type {
    hako_payload_type {
        type_name: c"u8".as_ptr(),
        size: 1,
        align: 1,
        slice: true,
    }
}

/// `t` as a Rust process's type describes itself.
///
/// # Safety
/// `t.type_name` is NUL-terminated.
pub(crate) unsafe fn details(t: &hako_payload_type, what: &str) -> Result<TypeDetails, Failure> {
    // SAFETY: the caller's promise.
    let element = unsafe { text(t.type_name, what) }?;
    Ok(TypeDetails {
        type_name: if t.slice {
            format!("[{element}]")
        } else {
            element.to_owned()
        },
        size: t.size,
        align: t.align,
        slice: t.slice,
    })
}

/// Opens or creates (`mode`) the publish/subscribe service `name` carrying
/// `payload`. `options` may be NULL.
///
/// # Safety
/// `node` is a node handle; `name` and `payload->type_name` are
/// NUL-terminated; `options` is NULL or valid; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_pubsub_service_open(
    node: *const hako_node,
    name: *const c_char,
    payload: *const hako_payload_type,
    options: *const hako_pubsub_options,
    mode: hako_open_mode,
    out: *mut *mut hako_pubsub_service,
) -> hako_status {
    guard(|| {
        // SAFETY: a node handle (the caller's promise).
        let node = unsafe { get(node, "the node") }?;
        // SAFETY: NUL-terminated (the caller's promise).
        let name = unsafe { text(name, "the service name") }?;
        // SAFETY: a payload type (the caller's promise).
        let payload = unsafe { get(payload, "the payload type") }?;
        // SAFETY: NULL or valid.
        let o = unsafe { options.as_ref() }.copied().unwrap_or_default();
        // SAFETY: a NUL-terminated name (the caller's promise).
        let details = unsafe { details(payload, "the payload type name") }?;
        let mut b = node
            .node
            .service_builder(&name.try_into()?)
            .publish_subscribe::<[u8]>()
            .payload_type(details);
        let set = |v: u32| (v != 0).then_some(v);
        if let Some(v) = set(o.max_publishers) {
            b = b.max_publishers(v);
        }
        if let Some(v) = set(o.max_subscribers) {
            b = b.max_subscribers(v);
        }
        if let Some(v) = set(o.max_nodes) {
            b = b.max_nodes(v);
        }
        if let Some(v) = set(o.buffer_size) {
            b = b.subscriber_max_buffer_size(v);
        }
        if let Some(v) = set(o.max_borrowed) {
            b = b.subscriber_max_borrowed_samples(v);
        }
        if let Some(v) = set(o.history_size) {
            b = b.history_size(v);
        }
        match o.overflow {
            hako_overflow::HAKO_OVERFLOW_ANY => {}
            hako_overflow::HAKO_OVERFLOW_DROP_OLDEST => {
                b = b.overflow_policy(hako::OverflowPolicy::DropOldest)
            }
            hako_overflow::HAKO_OVERFLOW_BACKPRESSURE => {
                b = b.overflow_policy(hako::OverflowPolicy::Backpressure)
            }
        }
        let svc = match mode {
            hako_open_mode::HAKO_OPEN_OR_CREATE => b.open_or_create(),
            hako_open_mode::HAKO_CREATE => b.create(),
            hako_open_mode::HAKO_OPEN => b.open(),
        }?;
        let elem_size = usize::try_from(svc.payload().size)
            .map_err(|_| Failure::invalid("the payload size does not fit this machine"))?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_pubsub_service { svc, elem_size }) }
    })
}

/// Drops a service handle and sets `*service` to NULL.
///
/// # Safety
/// `service` is NULL or points to NULL or a service handle.
#[no_mangle]
pub unsafe extern "C" fn hako_pubsub_service_drop(
    service: *mut *mut hako_pubsub_service,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(service, "the service") }.map(drop))
}

/// Creates a publisher. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_create(
    service: *const hako_pubsub_service,
    options: *const hako_publisher_options,
    out: *mut *mut hako_publisher,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(service, "the service") }?;
        // SAFETY: NULL or valid.
        let o = unsafe { options.as_ref() };
        let mut b = s.svc.publisher_builder();
        if let Some(o) = o {
            if o.max_slice_len != 0 {
                b = b.max_slice_len(o.max_slice_len);
            }
            if o.max_loans != 0 {
                b = b.max_loaned_samples(o.max_loans);
            }
            b = b.backpressure(match o.backpressure {
                hako_backpressure::HAKO_BACKPRESSURE_BLOCK => hako::BackpressureStrategy::Block,
                hako_backpressure::HAKO_BACKPRESSURE_RETRY => {
                    hako::BackpressureStrategy::Retry(o.retries)
                }
                hako_backpressure::HAKO_BACKPRESSURE_DISCARD => hako::BackpressureStrategy::Discard,
            });
        }
        let publisher = b.create()?;
        let p = hako_publisher {
            publisher,
            elem_size: s.elem_size,
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, p) }
    })
}

/// Drops a publisher and sets `*publisher` to NULL. Its loaned samples
/// stay valid (send or drop them).
///
/// # Safety
/// `publisher` is NULL or points to NULL or a publisher handle.
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_drop(publisher: *mut *mut hako_publisher) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(publisher, "the publisher") }.map(drop))
}

/// Loans, copies `size` bytes from `data` (a whole number of elements)
/// and sends: for small payloads.
///
/// # Safety
/// `publisher` is a publisher handle; `data` is readable for `size`
/// bytes; `reached` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_send_copy(
    publisher: *mut hako_publisher,
    data: *const c_void,
    size: usize,
    reached: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get_mut(publisher, "the publisher") }?;
        if data.is_null() {
            return Err(Failure::null("the data"));
        }
        if size == 0 || size % p.elem_size != 0 {
            return Err(Failure::invalid(format!(
                "{size} bytes are not a whole number of {}-byte elements",
                p.elem_size
            )));
        }
        let mut loan = p.publisher.loan_slice_uninit(size / p.elem_size)?;
        // SAFETY: `data` is readable for `size` bytes (the caller's
        // promise); the loan holds size / elem_size elements of elem_size
        // bytes; the two do not overlap (the loan is in shared memory we
        // own now).
        unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), loan.as_mut_ptr(), size) };
        // SAFETY: every byte was written.
        let n = unsafe { loan.assume_init() }.send();
        // SAFETY: NULL or writable.
        unsafe { put(reached, n) };
        Ok(())
    })
}

/// The number of subscribers connected now.
///
/// # Safety
/// `publisher` is a publisher handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_publisher_subscriber_count(
    publisher: *const hako_publisher,
    out: *mut usize,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get(publisher, "the publisher") }?;
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // SAFETY: writable.
        unsafe { put(out, p.publisher.subscriber_count()) };
        Ok(())
    })
}

/// Creates a subscriber. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_create(
    service: *const hako_pubsub_service,
    options: *const hako_subscriber_options,
    out: *mut *mut hako_subscriber,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(service, "the service") }?;
        let mut b = s.svc.subscriber_builder();
        // SAFETY: NULL or valid.
        if let Some(o) = unsafe { options.as_ref() } {
            b = b
                .wait_strategy(o.wait.into())
                .end_when_publishers_gone(o.end_when_publishers_gone)
                .lossy(o.lossy);
        }
        let sub = b.create()?;
        // SAFETY: writable (the caller's promise).
        unsafe {
            give(
                out,
                hako_subscriber {
                    sub,
                    elem_size: s.elem_size,
                    attached: Default::default(),
                },
            )
        }
    })
}

/// Drops a subscriber and sets `*subscriber` to NULL. Samples it received
/// stay valid until dropped.
///
/// # Safety
/// `subscriber` is NULL or points to NULL or a subscriber handle.
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_drop(
    subscriber: *mut *mut hako_subscriber,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| {
        // SAFETY: the caller's promise, passed on.
        unsafe { take_port(subscriber, "the subscriber", |s| s.attached.load(Relaxed)) }.map(drop)
    })
}

/// The subscriber's wake-up descriptor, for an event loop (epoll, poll):
/// readable after `hako_subscriber_arm` returned false and a publisher
/// sent. The subscriber owns it.
///
/// # Safety
/// `subscriber` is a subscriber handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_fd(
    subscriber: *const hako_subscriber,
    out: *mut i32,
) -> hako_status {
    use std::os::fd::{AsFd, AsRawFd};
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(subscriber, "the subscriber") }?;
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // SAFETY: writable.
        unsafe { put(out, s.sub.as_fd().as_raw_fd()) };
        Ok(())
    })
}

/// Asks publishers to write to the wake-up descriptor after each send;
/// `*ready` is true if a sample came meanwhile (take it, and disarm).
/// Disarm once awake: armed, every send costs a system call.
///
/// # Safety
/// `subscriber` is a subscriber handle; `ready` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_arm(
    subscriber: *const hako_subscriber,
    ready: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s = unsafe { get(subscriber, "the subscriber") }?;
        if ready.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // SAFETY: writable.
        unsafe { put(ready, s.sub.arm_wakeup()) };
        Ok(())
    })
}

/// Withdraws `hako_subscriber_arm` and empties the wake-up descriptor.
///
/// # Safety
/// `subscriber` is a subscriber handle.
#[no_mangle]
pub unsafe extern "C" fn hako_subscriber_disarm(subscriber: *const hako_subscriber) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get(subscriber, "the subscriber") }?;
        s.sub.disarm_wakeup();
        Ok(())
    })
}
