//! Request/response through the C API: a C client and a Rust server, a
//! C server streaming to a Rust client, and misuse reported (a client or
//! server dropped under live requests, a response sent for another
//! request, a request sent twice).

use std::ptr::{null, null_mut};
use std::time::Duration;

use hako::{Config, NodeBuilder};
use hako_c::*;

mod common;
use common::{node, ok, Root};

fn u64_type() -> hako_payload_type {
    hako_payload_type {
        type_name: c"u64".as_ptr(),
        size: 8,
        align: 8,
        slice: false,
    }
}

fn message() -> hako_message_mut {
    hako_message_mut {
        data: null_mut(),
        size: 0,
        len: 0,
        _private: [0; 11],
    }
}

fn response() -> hako_response {
    hako_response {
        data: null(),
        size: 0,
        len: 0,
        server_id: 0,
        _private: [0; 8],
    }
}

/// A C node and a `u64 -> u64` service in `root`.
fn c_side(root: &Root, name: &std::ffi::CStr) -> (*mut hako_node, *mut hako_reqres_service) {
    let n = node(root);
    let opts = hako_reqres_options {
        max_requests_in_flight: 4,
        max_response_buffer: 4,
        ..Default::default()
    };
    let mut svc = null_mut();
    ok!(hako_reqres_service_open(
        n,
        name.as_ptr(),
        &u64_type(),
        &u64_type(),
        &opts,
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut svc
    ));
    (n, svc)
}

#[test]
fn a_c_client_asks_a_rust_server_and_a_c_server_streams_to_a_rust_client() {
    let root = Root::new("rr-both");
    let (mut n, mut svc) = c_side(&root, c"ffi/double");
    let rust = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rust_svc = rust
        .service_builder(&"ffi/double".try_into().unwrap())
        .request_response::<u64, u64>()
        .open()
        .unwrap();

    // C client -> Rust server.
    let server = rust_svc.server_builder().create().unwrap();
    let mut client = null_mut();
    ok!(hako_client_create(svc, null(), &mut client));
    let mut req = message();
    ok!(hako_client_loan(client, 1, &mut req));
    assert_eq!(req.size, 8);
    // SAFETY: a live loan of 8 bytes, aligned for u64.
    unsafe { req.data.cast::<u64>().write(21) };
    let mut pending = null_mut();
    ok!(hako_client_send(client, &mut req, &mut pending));
    assert!(req.data.is_null());
    // SAFETY: a consumed request.
    let again = unsafe { hako_client_send(client, &mut req, &mut pending) };
    assert_eq!(again, hako_status::HAKO_ERROR_NULL_ARGUMENT);
    // The client refuses to go while its request is pending.
    // SAFETY: a live client with a live pending response.
    let early = unsafe { hako_client_drop(&mut client) };
    assert_eq!(early, hako_status::HAKO_ERROR_MISUSE);
    assert!(!client.is_null());
    let active = server
        .receive_timeout(Duration::from_secs(5))
        .unwrap()
        .unwrap();
    let n2 = *active * 2;
    active.send_last_copy(n2).unwrap();
    let (mut resp, mut ended) = (response(), false);
    ok!(hako_pending_receive(
        pending, 5_000_000, &mut resp, &mut ended
    ));
    assert!(!ended && resp.size == 8);
    // SAFETY: a live response of 8 bytes.
    assert_eq!(unsafe { *resp.data.cast::<u64>() }, 42);
    ok!(hako_response_drop(&mut resp));
    ok!(hako_pending_receive(
        pending, 5_000_000, &mut resp, &mut ended
    ));
    assert!(
        resp.data.is_null() && ended,
        "the stream ended with its last response"
    );
    ok!(hako_pending_drop(&mut pending));
    ok!(hako_client_drop(&mut client));
    drop(server);

    // C server -> Rust client: a stream of three, then the end.
    let rust_client = rust_svc.client_builder().create().unwrap();
    let mut c_server = null_mut();
    ok!(hako_server_create(svc, null(), &mut c_server));
    let pending = rust_client.send_copy(5).unwrap();
    let mut active = null_mut();
    ok!(hako_server_receive(c_server, 5_000_000, &mut active));
    assert!(!active.is_null());
    // SAFETY: a live active request of 8 bytes.
    let asked = unsafe {
        assert_eq!(hako_active_request_size(active), 8);
        *hako_active_request_data(active).cast::<u64>()
    };
    assert_eq!(asked, 5);
    for i in 0..3u64 {
        let mut r = message();
        ok!(hako_active_request_loan(active, 1, &mut r));
        // SAFETY: a live loan of 8 bytes.
        unsafe { r.data.cast::<u64>().write(asked + i) };
        ok!(hako_active_request_send(active, &mut r));
    }
    // The server refuses to go while a request is active.
    // SAFETY: a live server with an active request.
    let early = unsafe { hako_server_drop(&mut c_server) };
    assert_eq!(early, hako_status::HAKO_ERROR_MISUSE);
    ok!(hako_active_request_drop(&mut active));
    assert!(active.is_null());
    let mut got = Vec::new();
    while let Some(r) = pending.receive_timeout(Duration::from_secs(5)).unwrap() {
        got.push(*r);
    }
    assert_eq!(got, [5, 6, 7]);
    assert!(pending.is_finished());
    ok!(hako_server_drop(&mut c_server));
    ok!(hako_reqres_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

#[test]
fn responses_go_to_their_own_request_and_send_last_consumes_it() {
    let root = Root::new("rr-misuse");
    let (mut n, mut svc) = c_side(&root, c"ffi/echo");
    let (mut client, mut server) = (null_mut(), null_mut());
    ok!(hako_client_create(svc, null(), &mut client));
    ok!(hako_server_create(svc, null(), &mut server));
    let mut pendings = [null_mut(), null_mut()];
    for (i, p) in pendings.iter_mut().enumerate() {
        let mut req = message();
        ok!(hako_client_loan(client, 1, &mut req));
        // SAFETY: a live loan of 8 bytes.
        unsafe { req.data.cast::<u64>().write(i as u64) };
        ok!(hako_client_send(client, &mut req, p));
    }
    let (mut a, mut b) = (null_mut(), null_mut());
    ok!(hako_server_receive(server, 5_000_000, &mut a));
    ok!(hako_server_receive(server, 5_000_000, &mut b));
    let mut for_a = message();
    ok!(hako_active_request_loan(a, 1, &mut for_a));
    // SAFETY: (all below) live handles and loans, valid pointers.
    unsafe {
        // A response of request `a` cannot go out through `b`, nor a
        // request through a server's call.
        assert_eq!(
            hako_active_request_send(b, &mut for_a),
            hako_status::HAKO_ERROR_MISUSE
        );
        let mut req = message();
        assert_eq!(hako_client_loan(client, 1, &mut req), hako_status::HAKO_OK);
        assert_eq!(
            hako_active_request_send(a, &mut req),
            hako_status::HAKO_ERROR_MISUSE
        );
        assert_eq!(hako_message_mut_drop(&mut req), hako_status::HAKO_OK);
        assert_eq!(
            hako_message_mut_drop(&mut req),
            hako_status::HAKO_ERROR_NULL_ARGUMENT
        );
        for_a.data.cast::<u64>().write(100);
    }
    ok!(hako_active_request_send_last(&mut a, &mut for_a));
    assert!(a.is_null(), "send_last consumed the request");
    ok!(hako_active_request_drop(&mut b));
    // The first request got its one response and the end; the second only
    // the end.
    let (mut r, mut ended) = (response(), false);
    ok!(hako_pending_receive(
        pendings[0],
        5_000_000,
        &mut r,
        &mut ended
    ));
    // SAFETY: a live response.
    assert_eq!(unsafe { *r.data.cast::<u64>() }, 100);
    ok!(hako_response_drop(&mut r));
    ok!(hako_pending_receive(
        pendings[1],
        5_000_000,
        &mut r,
        &mut ended
    ));
    assert!(r.data.is_null() && ended);
    for p in &mut pendings {
        ok!(hako_pending_drop(p));
    }
    ok!(hako_server_drop(&mut server));
    ok!(hako_client_drop(&mut client));
    ok!(hako_reqres_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

#[test]
fn a_c_client_waits_for_a_server_that_comes_later() {
    let root = Root::new("rr-wait");
    let (mut n, mut svc) = c_side(&root, c"ffi/later");
    let mut client = null_mut();
    ok!(hako_client_create(svc, null(), &mut client));
    // SAFETY: a live client.
    let none = unsafe { hako_client_wait_for_server(client, 1000) };
    assert_eq!(none, hako_status::HAKO_ERROR_TIMED_OUT);
    let rust = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rust_svc = rust
        .service_builder(&"ffi/later".try_into().unwrap())
        .request_response::<u64, u64>()
        .open()
        .unwrap();
    let server = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let server = rust_svc.server_builder().create().unwrap();
        let request = server.blocking_receive().unwrap();
        let asked = *request;
        request.send_last_copy(asked + 1).unwrap();
    });
    ok!(hako_client_wait_for_server(client, HAKO_FOREVER));
    let mut pending = null_mut();
    let mut m = message();
    ok!(hako_client_loan(client, 1, &mut m));
    // SAFETY: a live loan of 8 bytes.
    unsafe { m.data.cast::<u64>().write(41) };
    ok!(hako_client_send(client, &mut m, &mut pending));
    let mut r = response();
    ok!(hako_pending_receive(
        pending,
        HAKO_FOREVER,
        &mut r,
        null_mut()
    ));
    // SAFETY: a live response of 8 bytes.
    assert_eq!(unsafe { r.data.cast::<u64>().read() }, 42);
    ok!(hako_response_drop(&mut r));
    ok!(hako_pending_drop(&mut pending));
    server.join().unwrap();
    ok!(hako_client_drop(&mut client));
    ok!(hako_reqres_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}
