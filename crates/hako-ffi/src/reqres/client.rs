//! Clients, their request loans and pending responses.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::service::{
    busy, hako_client, hako_message_mut, hako_pending, hako_port_options, hako_reqres_service,
    hako_response, strategy, Req, M_CLIENT, M_OWNER, M_TAG, M_VALUE, REQUEST_MARK,
};
use hako::{Response, ResponseMutUninit};

use crate::error::{
    guard, hako_status, Failure, HAKO_ERROR_MISUSE, HAKO_ERROR_TERMINATED, HAKO_ERROR_TIMED_OUT,
};
use crate::handle::{get, get_mut, give, put, take};
use crate::node::HAKO_FOREVER;
use crate::sample::{load, load_at, store, store_at, LIVE, TAG};

/// Creates a client. `options` may be NULL.
///
/// # Safety
/// `service` is a service handle; `options` is NULL or valid; `out` is
/// writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_create(
    service: *const hako_reqres_service,
    options: *const hako_port_options,
    out: *mut *mut hako_client,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let s = unsafe { get(service, "the service") }?;
        let mut b = s.svc.client_builder();
        // SAFETY: NULL or valid.
        if let Some(o) = unsafe { options.as_ref() } {
            if o.max_slice_len != 0 {
                b = b.max_slice_len(o.max_slice_len);
            }
            if o.max_loans != 0 {
                b = b.max_loaned_requests(o.max_loans);
            }
            b = b.backpressure(strategy(o)).wait_strategy(o.wait.into());
        }
        let c = hako_client {
            client: b.create()?,
            req_size: s.req_size,
            resp_size: s.resp_size,
            live: AtomicUsize::new(0),
            attached: AtomicUsize::new(0),
        };
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, c) }
    })
}

/// Waits until a server of the client's service is there to take a
/// request, at most `timeout_us` microseconds (`HAKO_FOREVER`: no limit),
/// asleep, so that a client may start before its server:
/// `HAKO_ERROR_TIMED_OUT` when none came, `HAKO_ERROR_TERMINATED` on
/// SIGINT or SIGTERM (unless the node leaves signals alone).
///
/// # Safety
/// `client` is a client handle.
#[no_mangle]
pub unsafe extern "C" fn hako_client_wait_for_server(
    client: *const hako_client,
    timeout_us: u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let c = unsafe { get(client, "the client") }?;
        let timeout = match timeout_us {
            HAKO_FOREVER => Duration::MAX,
            us => Duration::from_micros(us),
        };
        c.client.wait_for_server(timeout).map_err(|e| {
            let status = match e {
                hako::ServerWaitError::TerminationRequest => HAKO_ERROR_TERMINATED,
                _ => HAKO_ERROR_TIMED_OUT,
            };
            Failure::new(status, e.to_string())
        })
    })
}

/// Drops a client and sets `*client` to NULL; refused
/// (`HAKO_ERROR_MISUSE`) while loans or pending responses of it live.
///
/// # Safety
/// `client` is NULL or points to NULL or a client handle.
#[no_mangle]
pub unsafe extern "C" fn hako_client_drop(client: *mut *mut hako_client) -> hako_status {
    guard(|| {
        // SAFETY: NULL or a readable slot (the caller's promise).
        if let Some(c) = unsafe { client.as_ref().and_then(|p| p.as_ref()) } {
            // Relaxed: the counter is the client's own thread's.
            let n = c.live.load(Ordering::Relaxed) + c.attached.load(Ordering::Relaxed);
            if n > 0 {
                return Err(Failure::new(
                    HAKO_ERROR_MISUSE,
                    format!(
                        "{n} loans, pending responses or waitsets hold this client: drop them first"
                    ),
                ));
            }
        }
        // SAFETY: the caller's promise, passed on.
        unsafe { take(client, "the client") }.map(drop)
    })
}

/// Loans a request of `len` elements (1 unless requests are slices) into
/// `*out`, which must not hold a live message.
///
/// # Safety
/// `client` is a client handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_loan(
    client: *mut hako_client,
    len: usize,
    out: *mut hako_message_mut,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let c: &'static hako_client = unsafe { get(client, "the client") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[M_TAG] == LIVE {
            return Err(busy("the out message"));
        }
        // The loan borrows the client; the client refuses to drop while it
        // lives (`live`), which is what 'static stands for here.
        let mut loan: Req<'static> = c.client.loan_slice_uninit(len)?;
        out.data = loan.as_mut_ptr().cast();
        out.len = len;
        out.size = len * c.req_size;
        out._private[M_OWNER] = c.client.id() | REQUEST_MARK;
        out._private[M_CLIENT] = c as *const hako_client as u64;
        store_at(&mut out._private, M_VALUE, M_TAG, loan);
        // Relaxed: the client's own thread's counter.
        c.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// Sends a loaned request through the client that loaned it, marks it
/// consumed, and gives the pending response in `*pending`.
///
/// # Safety
/// `client` is a client handle; `request` was filled by
/// `hako_client_loan`; `pending` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_client_send(
    client: *mut hako_client,
    request: *mut hako_message_mut,
    pending: *mut *mut hako_pending,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let c: &'static hako_client = unsafe { get(client, "the client") }?;
        // SAFETY: as above.
        let m = unsafe { get_mut(request, "the request") }?;
        if pending.is_null() {
            return Err(Failure::null("the pending pointer"));
        }
        if m._private[M_TAG] != LIVE {
            return Err(Failure::null("the request"));
        }
        if m._private[M_OWNER] != c.client.id() | REQUEST_MARK {
            return Err(Failure::new(
                HAKO_ERROR_MISUSE,
                "the request was loaned by another client (or is a response)",
            ));
        }
        // SAFETY: live request words hold a request loan (hako_client_loan).
        let loan = unsafe { load_at::<Req<'static>>(&mut m._private, M_VALUE, M_TAG) }
            .ok_or_else(|| Failure::null("the request"))?;
        m.data = std::ptr::null_mut();
        // SAFETY: chunks hold initialised bytes (see hako_publisher_send).
        let sent = unsafe { loan.assume_init() }.send();
        let p = match sent {
            Ok(p) => p,
            Err(e) => {
                // The loan is gone (given back by send).
                // Relaxed: the client's own thread's counter.
                c.live.fetch_sub(1, Ordering::Relaxed);
                return Err(e.into());
            }
        };
        // The loan's count passes to the pending response.
        let h = hako_pending {
            pending: p,
            client: c,
        };
        // SAFETY: writable, checked above.
        unsafe { give(pending, h) }
    })
}

/// Gives a loaned request or response back unsent and marks it consumed.
///
/// # Safety
/// `message` is NULL or was filled by `hako_client_loan` or
/// `hako_active_request_loan`.
#[no_mangle]
pub unsafe extern "C" fn hako_message_mut_drop(message: *mut hako_message_mut) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let m = unsafe { get_mut(message, "the message") }?;
        if m._private[M_TAG] != LIVE {
            return Err(Failure::null("the message"));
        }
        if m._private[M_OWNER] & REQUEST_MARK != 0 {
            let client = m._private[M_CLIENT] as *const hako_client;
            // SAFETY: live request words hold a request loan.
            let loan = unsafe { load_at::<Req<'static>>(&mut m._private, M_VALUE, M_TAG) };
            drop(loan);
            // SAFETY: the loan's client, which refuses to drop while the
            // loan lived (its count).
            if let Some(c) = unsafe { client.as_ref() } {
                // Relaxed: the client's own thread's counter.
                c.live.fetch_sub(1, Ordering::Relaxed);
            }
        } else {
            // SAFETY: live response words hold a response loan.
            drop(unsafe { load_at::<ResponseMutUninit<[u8]>>(&mut m._private, M_VALUE, M_TAG) });
        }
        m.data = std::ptr::null_mut();
        Ok(())
    })
}

/// Takes the next response to `pending` into `*out` (which must not hold a
/// live one): at once (`timeout_us` 0), waiting up to `timeout_us`
/// microseconds, or until one comes or the stream ends (`HAKO_FOREVER`).
/// `out->data` is NULL if none came; then `*ended` (may be NULL) tells
/// whether the stream has ended. `HAKO_ERROR_PEER_GONE` when the server
/// went without ending it.
///
/// # Safety
/// `pending` is a pending response handle; `out` is writable; `ended` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_pending_receive(
    pending: *mut hako_pending,
    timeout_us: u64,
    out: *mut hako_response,
    ended: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let p = unsafe { get_mut(pending, "the pending response") }?;
        // SAFETY: writable (see hako_publisher_loan).
        let out = unsafe { out.as_mut() }.ok_or_else(|| Failure::null("the out pointer"))?;
        if out._private[TAG] == LIVE {
            return Err(busy("the out response"));
        }
        let got = match timeout_us {
            0 => p.pending.receive()?,
            HAKO_FOREVER => p.pending.blocking_receive()?,
            us => p.pending.receive_timeout(Duration::from_micros(us))?,
        };
        // SAFETY: the pending response's client, alive while it is.
        let resp_size = unsafe { (*p.client).resp_size };
        match got {
            Some(r) => {
                out.data = r.as_ptr().cast();
                out.len = r.len();
                out.size = out.len * resp_size;
                out.server_id = r.server_id();
                store(&mut out._private, r);
                // SAFETY: NULL or writable.
                unsafe { put(ended, false) };
            }
            None => {
                out.data = std::ptr::null();
                out.size = 0;
                out.len = 0;
                out.server_id = 0;
                out._private[TAG] = 0;
                // SAFETY: NULL or writable.
                unsafe { put(ended, p.pending.is_finished()) };
            }
        }
        Ok(())
    })
}

/// Gives a received response back and marks it consumed.
///
/// # Safety
/// `response` is NULL or was filled by `hako_pending_receive`.
#[no_mangle]
pub unsafe extern "C" fn hako_response_drop(response: *mut hako_response) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let r = unsafe { get_mut(response, "the response") }?;
        // SAFETY: live response words hold a Response.
        let v = unsafe { load::<Response<[u8]>>(&mut r._private) }
            .ok_or_else(|| Failure::null("the response"))?;
        r.data = std::ptr::null();
        drop(v);
        Ok(())
    })
}

/// Drops a pending response and sets `*pending` to NULL: responses still
/// on their way go back to the server unread.
///
/// # Safety
/// `pending` is NULL or points to NULL or a pending response handle.
#[no_mangle]
pub unsafe extern "C" fn hako_pending_drop(pending: *mut *mut hako_pending) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let p = unsafe { take(pending, "the pending response") }?;
        let client = p.client;
        drop(p);
        // SAFETY: its client, which refuses to drop while this lived.
        if let Some(c) = unsafe { client.as_ref() } {
            // Relaxed: the client's own thread's counter.
            c.live.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    })
}
