//! Servers, their active requests and response loans.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::service::{
    busy, hako_active_request, hako_message_mut, hako_port_options, hako_reqres_service,
    hako_server, strategy, M_OWNER, M_TAG, M_VALUE,
};
use hako::ResponseMutUninit;

use crate::error::{guard, hako_status, Failure, HAKO_ERROR_MISUSE};
use crate::handle::{get, get_mut, give, put, take};
use crate::node::HAKO_FOREVER;
use crate::sample::{load_at, store_at, LIVE};

/// Creates a server. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_server_create(
    service: *const hako_reqres_service,
    options: *const hako_port_options,
    out: *mut *mut hako_server,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get(service, "the service") }?;
        let mut b = s.svc.server_builder();
        // SAFETY: NULL or valid.
        if let Some(o) = unsafe { options.as_ref() } {
            if o.max_slice_len != 0 {
                b = b.max_slice_len(o.max_slice_len);
            }
            if o.max_loans != 0 {
                b = b.max_loaned_responses(o.max_loans);
            }
            b = b.backpressure(strategy(o)).wait_strategy(o.wait.into());
        }
        let h = hako_server {
            server: b.create()?,
            req_size: s.req_size,
            resp_size: s.resp_size,
            live: AtomicUsize::new(0),
            attached: AtomicUsize::new(0),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, h) }
    })
}

/// Drops a server and sets `*server` to NULL; refused
/// (`HAKO_ERROR_MISUSE`) while active requests of it live.
///
/// # Safety
/// `server` is NULL or points to NULL or a server handle.
#[no_mangle]
pub unsafe extern "C" fn hako_server_drop(server: *mut *mut hako_server) -> hako_status {
    guard(|| {
        // SAFETY: NULL or a readable slot (the caller's promise).
        if let Some(s) = unsafe { server.as_ref().and_then(|p| p.as_ref()) } {
            // Relaxed: the server's own thread's counter.
            let n = s.live.load(Ordering::Relaxed) + s.attached.load(Ordering::Relaxed);
            if n > 0 {
                return Err(Failure::new(
                    HAKO_ERROR_MISUSE,
                    format!("{n} active requests or waitsets hold this server: drop them first"),
                ));
            }
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { take(server, "the server") }.map(drop)
    })
}

/// Takes the next request: at once (`timeout_us` 0), waiting up to
/// `timeout_us` microseconds, or until one comes (`HAKO_FOREVER`).
/// `*out` is the active request, or NULL if none came in time.
///
/// # Safety
/// `server` is a server handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_server_receive(
    server: *mut hako_server,
    timeout_us: u64,
    out: *mut *mut hako_active_request,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let s: &'static hako_server = unsafe { get(server, "the server") }?;
        if out.is_null() {
            return Err(Failure::null("the out pointer"));
        }
        // The request borrows the server, which refuses to drop while it
        // lives (`live`): what 'static stands for here.
        let got = match timeout_us {
            0 => s.server.receive()?,
            HAKO_FOREVER => Some(s.server.blocking_receive()?),
            us => s.server.receive_timeout(Duration::from_micros(us))?,
        };
        match got {
            Some(active) => {
                // Relaxed: the server's own thread's counter.
                s.live.fetch_add(1, Ordering::Relaxed);
                let a = hako_active_request {
                    active,
                    server: s,
                    id: ACTIVE_IDS.fetch_add(1, Ordering::Relaxed),
                };
                // SAFETY: writable.
                unsafe { give(out, a) }
            }
            None => {
                // SAFETY: writable.
                unsafe { put(out, std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// Ids of active request handles, to tell whose loan a response is.
static ACTIVE_IDS: AtomicU64 = AtomicU64::new(1);

/// The request's payload (in the client's shared memory); NULL for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_data(
    request: *const hako_active_request,
) -> *const c_void {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { request.as_ref() }.map_or(std::ptr::null(), |a| a.active.as_ptr().cast())
}

/// The request's payload size in bytes; 0 for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_size(request: *const hako_active_request) -> usize {
    // SAFETY: NULL or live; its server outlives it.
    unsafe { request.as_ref() }.map_or(0, |a| a.active.len() * unsafe { (*a.server).req_size })
}

/// The id of the client that sent the request; 0 for NULL.
///
/// # Safety
/// `request` is NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_client_id(request: *const hako_active_request) -> u64 {
    // SAFETY: NULL or live (the caller's promise).
    unsafe { request.as_ref() }.map_or(0, |a| a.active.client_id())
}

/// Loans a response of `len` elements (1 unless responses are slices) to
/// this request into `*out`, which must not hold a live message.
///
/// # Safety
/// `request` is an active request handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_loan(
    request: *mut hako_active_request,
    len: usize,
    out: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let a = unsafe { get(request, "the request") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[M_TAG] == LIVE {
            return Err(busy("the out message"));
        }
        let mut loan = a.active.loan_slice_uninit(len)?;
        out.data = loan.as_mut_ptr().cast();
        out.len = len;
        // SAFETY: its server outlives it.
        out.size = len * unsafe { (*a.server).resp_size };
        out._private[M_OWNER] = a.id;
        store_at(&mut out._private, M_VALUE, M_TAG, loan);
        Ok(())
    })
}

/// Takes a live response loan of request `a` out of `m`.
fn response_of(
    a: &hako_active_request,
    m: &mut hako_message_mut,
) -> Result<ResponseMutUninit<[u8]>, Failure> {
    if m._private[M_TAG] != LIVE {
        return Err(Failure::null("the response"));
    }
    if m._private[M_OWNER] != a.id {
        return Err(Failure::new(
            HAKO_ERROR_MISUSE,
            "the response was loaned for another request (or is a request)",
        ));
    }
    // SAFETY: live words of this request's loan hold a response loan.
    let loan = unsafe { load_at::<ResponseMutUninit<[u8]>>(&mut m._private, M_VALUE, M_TAG) }
        .ok_or_else(|| Failure::null("the response"))?;
    m.data = std::ptr::null_mut();
    Ok(loan)
}

/// Sends a response loaned for this request, and marks it consumed; the
/// stream goes on.
///
/// # Safety
/// `request` is an active request handle; `response` was filled by
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_send(
    request: *mut hako_active_request,
    response: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let a = unsafe { get(request, "the request") }?;
        // SAFETY: as above.
        let m = unsafe { get_mut(response, "the response") }?;
        let loan = response_of(a, m)?;
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        unsafe { loan.assume_init() }.send()?;
        Ok(())
    })
}

/// Sends a response loaned for this request as the last of its stream (the
/// response and the end in one message), marks it consumed, and drops the
/// request (`*request` becomes NULL).
///
/// # Safety
/// `request` points to an active request handle; `response` was filled by
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_send_last(
    request: *mut *mut hako_active_request,
    response: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        if request.is_null() {
            return Err(Failure::null("the request"));
        }
        // SAFETY: a readable slot holding NULL or a live handle.
        let a = unsafe { get(*request, "the request") }?;
        // SAFETY: the caller's promise.
        let m = unsafe { get_mut(response, "the response") }?;
        let loan = response_of(a, m)?;
        // SAFETY: checked live above.
        let a = unsafe { take(request, "the request") }?;
        let server = a.server;
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        let sent = a.active.send_last(unsafe { loan.assume_init() });
        // SAFETY: its server, which refuses to drop while this lived.
        unsafe { (*server).live.fetch_sub(1, Ordering::Relaxed) };
        sent?;
        Ok(())
    })
}

/// Drops an active request and sets `*request` to NULL: its stream ends
/// (the client's pending response sees the end).
///
/// # Safety
/// `request` is NULL or points to NULL or an active request handle.
#[no_mangle]
pub unsafe extern "C" fn hako_active_request_drop(
    request: *mut *mut hako_active_request,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { take(request, "the request") }?;
        let server = a.server;
        drop(a);
        // SAFETY: its server, which refuses to drop while this lived.
        unsafe { (*server).live.fetch_sub(1, Ordering::Relaxed) };
        Ok(())
    })
}
