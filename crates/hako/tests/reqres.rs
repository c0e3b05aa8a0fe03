//! Request/response within one process: the contract of clients, servers,
//! pending responses and active requests. (Across processes and under
//! crashes: crates/hako-tests.)
//!
//! Here: a request's responses and the end of its stream, pipelining, no
//! server and fire and forget, slices, waitsets and active requests on
//! other threads; responses that must go nowhere in `reqres/stale.rs`,
//! clients and servers that come and go in `reqres/departures.rs`.

use std::time::Duration;

use hako::{Config, Node, NodeBuilder, ReqResService, RequestSendError};

/// Responses that must reach no one: stale, late, unread, garbage-tagged,
/// or refused by a full queue.
#[path = "reqres/stale.rs"]
mod stale;

/// Clients and servers that leave, and what their peers see.
#[path = "reqres/departures.rs"]
mod departures;

struct Domain {
    root: std::path::PathBuf,
    node: Node,
}

impl Domain {
    fn new(tag: &str) -> Self {
        let root = std::path::PathBuf::from(format!(
            "/dev/shm/hako-test-reqres-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        let node = NodeBuilder::new()
            .config(&Config::default().with_root(&root))
            .create()
            .unwrap();
        Self { root, node }
    }

    fn service(&self, in_flight: u32, buffer: u32) -> ReqResService<u64, u64> {
        self.node
            .service_builder(&"test/reqres".try_into().unwrap())
            .request_response::<u64, u64>()
            .max_requests_in_flight(in_flight)
            .max_response_buffer(buffer)
            .open_or_create()
            .unwrap()
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn a_request_gets_its_response_and_the_end_of_the_stream() {
    let d = Domain::new("one");
    let svc = d.service(4, 4);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    assert_eq!(client.server_count(), 1);
    let pending = client.send_copy(41).unwrap();
    assert_eq!(client.requests_in_flight(), 1);
    let request = server.receive().unwrap().expect("a request");
    assert_eq!(*request, 41);
    assert_eq!(request.client_id(), client.id());
    assert!(request.is_connected());
    request.send_copy(*request + 1).unwrap();
    drop(request);
    let response = pending.receive().unwrap().expect("a response");
    assert_eq!(*response, 42);
    assert_eq!(response.server_id(), server.id());
    drop(response);
    assert_eq!(pending.receive().unwrap().map(|r| *r), None);
    assert!(pending.is_finished());
    drop(pending);
    assert_eq!(client.requests_in_flight(), 0);
}

#[test]
fn a_last_response_ends_the_stream_in_one_message() {
    let d = Domain::new("last");
    let svc = d.service(4, 4);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let (a, b) = (client.send_copy(1).unwrap(), client.send_copy(2).unwrap());
    let (ra, rb) = (
        server.receive().unwrap().unwrap(),
        server.receive().unwrap().unwrap(),
    );
    // A response of one request is refused as another's last: it is given
    // back unsent, and that request drops, ending its stream as usual.
    let wrong = ra.loan_uninit().unwrap().write_payload(99);
    assert!(matches!(
        rb.send_last(wrong),
        Err(hako::ResponseSendError::OtherRequest)
    ));
    ra.send_copy(10).unwrap();
    ra.send_last_copy(11).unwrap();
    assert_eq!(*a.receive().unwrap().unwrap(), 10);
    assert!(!a.is_finished());
    let last = a.receive().unwrap().unwrap();
    assert_eq!(*last, 11);
    // Finished as soon as the last response was taken: no end message
    // follows.
    assert!(a.is_finished());
    assert_eq!(a.receive().unwrap().map(|r| *r), None);
    drop((last, a));
    assert_eq!(client.requests_in_flight(), 1);
    // The other request got no response, only the end of its stream.
    assert_eq!(b.receive().unwrap().map(|r| *r), None);
    assert!(b.is_finished());
    drop(b);
    assert_eq!(client.requests_in_flight(), 0);
    drop(client);
    assert_eq!(server.free_chunks() as u32, server.pool_size());
}

#[test]
fn a_stream_of_responses_arrives_in_order_then_ends() {
    let d = Domain::new("stream");
    let svc = d.service(2, 16);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(10).unwrap();
    let request = server.receive().unwrap().unwrap();
    for i in 0..*request {
        request.send_copy(i).unwrap();
    }
    drop(request);
    let mut got = Vec::new();
    while let Some(r) = pending.blocking_receive().unwrap() {
        got.push(*r);
    }
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert!(pending.is_finished());
}

#[test]
fn pipelined_requests_each_get_their_own_responses() {
    let d = Domain::new("pipeline");
    let svc = d.service(16, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending: Vec<_> = (0..16).map(|i| client.send_copy(i).unwrap()).collect();
    assert!(matches!(
        client.send_copy(99),
        Err(RequestSendError::TooManyRequestsInFlight(16))
    ));
    let mut requests: Vec<_> = std::iter::from_fn(|| server.receive().unwrap()).collect();
    assert_eq!(requests.len(), 16);
    // Answered last to first: each response still reaches its own request.
    while let Some(r) = requests.pop() {
        r.send_copy(*r * 100).unwrap();
    }
    for (i, p) in pending.iter().enumerate().rev() {
        let r = p.blocking_receive().unwrap().expect("a response");
        assert_eq!(*r, i as u64 * 100);
        drop(r);
        assert!(p.blocking_receive().unwrap().is_none());
    }
}

#[test]
fn no_server_and_fire_and_forget() {
    let d = Domain::new("noserver");
    let svc = d.service(2, 2);
    let client = svc.client_builder().create().unwrap();
    let e = client.send_copy(1).unwrap_err();
    assert!(matches!(e, RequestSendError::NoServer(_)), "{e}");
    assert_eq!(client.requests_in_flight(), 0);
    let server = svc.server_builder().create().unwrap();
    client
        .loan_uninit()
        .unwrap()
        .write_payload(7)
        .send_without_response()
        .unwrap();
    assert_eq!(client.requests_in_flight(), 0);
    let request = server.receive().unwrap().unwrap();
    assert_eq!(*request, 7);
    assert!(!request.expects_response());
    assert!(matches!(
        request.send_copy(1),
        Err(hako::ResponseSendError::NoResponseExpected)
    ));
}

#[test]
fn slices_go_both_ways() {
    let d = Domain::new("slices");
    let svc = d
        .node
        .service_builder(&"test/slices".try_into().unwrap())
        .request_response::<[u8], [u32]>()
        .open_or_create()
        .unwrap();
    let server = svc.server_builder().max_slice_len(8).create().unwrap();
    let client = svc.client_builder().max_slice_len(16).create().unwrap();
    let pending = client.send_slice_copy(b"hello").unwrap();
    let request = server.receive().unwrap().unwrap();
    assert_eq!(&*request, b"hello");
    let lens: Vec<u32> = request.iter().map(|&b| u32::from(b)).collect();
    request.send_slice_copy(&lens).unwrap();
    assert!(request.loan_slice_uninit(9).is_err());
    drop(request);
    assert_eq!(
        &*pending.blocking_receive().unwrap().unwrap(),
        &[104, 101, 108, 108, 111]
    );
}

#[test]
fn a_waitset_wakes_for_requests_and_responses() {
    use hako::{WaitEvent, WaitSet};
    let d = Domain::new("waitset");
    let svc = d.service(4, 4);
    let server = svc.server_builder().create().unwrap();
    let mut ws = WaitSet::new().unwrap();
    let s = ws.attach_server(&server).unwrap();
    // A client in another thread sends while the waitset sleeps.
    let remote = svc.clone();
    let asker = std::thread::spawn(move || {
        let client = remote.client_builder().create().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let pending = client.send_copy(3).unwrap();
        *pending.blocking_receive().unwrap().unwrap()
    });
    let mut fired = false;
    while !fired {
        ws.wait_and_process_timeout(
            |e| fired |= e == WaitEvent::Ready(s),
            Duration::from_secs(10),
        )
        .unwrap();
    }
    let request = server.receive().unwrap().expect("the request");
    request.send_copy(*request * 10).unwrap();
    drop(request);
    assert_eq!(asker.join().unwrap(), 30);

    // A client's waitset fires for its responses.
    let client = svc.client_builder().create().unwrap();
    let mut ws = WaitSet::new().unwrap();
    let c = ws.attach_client(&client).unwrap();
    let pending = client.send_copy(4).unwrap();
    let request = server.receive().unwrap().expect("the request");
    request.send_copy(40).unwrap();
    drop(request);
    let mut fired = false;
    ws.wait_and_process_timeout(
        |e| fired |= e == WaitEvent::Ready(c),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(fired);
    assert_eq!(*pending.receive().unwrap().unwrap(), 40);
}

#[test]
fn an_active_request_may_move_to_another_thread() {
    fn send<T: Send>() {}
    send::<hako::ActiveRequest<'static, u64, u64>>();
    send::<hako::ActiveRequest<'static, [u8], [u8]>>();
    // And be answered there.
    let d = Domain::new("send");
    let svc = d.service(1, 1);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(20).unwrap();
    let request = server.receive().unwrap().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || {
            let n = *request;
            request.send_last_copy(n + 1).unwrap();
        });
    });
    assert_eq!(*pending.blocking_receive().unwrap().unwrap(), 21);
}
