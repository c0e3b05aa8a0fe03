//! Request/response within one process: the contract of clients, servers,
//! pending responses and active requests. (Across processes and under
//! crashes: crates/hako-tests.)

use std::time::Duration;

use hako::{Config, Node, NodeBuilder, ReqResReceiveError, ReqResService, RequestSendError};

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
fn a_response_to_a_dropped_request_never_reaches_the_next_one_in_its_slot() {
    let d = Domain::new("stale");
    let svc = d.service(1, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let first = client.send_copy(1).unwrap();
    let request = server.receive().unwrap().unwrap();
    drop(first);
    // The slot is free again, under a new generation.
    let second = client.send_copy(2).unwrap();
    request.send_copy(111).unwrap();
    drop(request);
    let request = server.receive().unwrap().unwrap();
    assert_eq!(*request, 2);
    request.send_copy(222).unwrap();
    drop(request);
    assert_eq!(*second.blocking_receive().unwrap().unwrap(), 222);
    assert!(second.blocking_receive().unwrap().is_none());
}

#[test]
fn streams_dropped_unread_go_back_before_the_next_send() {
    // A client that drops its pending responses at once and never
    // receives: the streams it left go back to the server as it sends, so
    // the server's queue towards it never fills (it holds two streams).
    let d = Domain::new("unread");
    let svc = d.service(1, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc
        .client_builder()
        .backpressure(hako::BackpressureStrategy::Discard)
        .create()
        .unwrap();
    const N: u64 = 200;
    std::thread::scope(move |s| {
        let answering = s.spawn(move || {
            for i in 0..N {
                let request = server
                    .receive_timeout(Duration::from_secs(10))
                    .unwrap()
                    .expect("a request");
                assert_eq!(*request, i);
                request.send_copy(i).unwrap();
                request.send_copy(i).unwrap();
                // Dropping it ends the stream: three messages.
            }
            server
        });
        // Without the routing the server blocks on a full queue after two
        // streams, stops taking requests, and they no longer get through.
        let stuck = (0..N).find(|&i| {
            for _ in 0..10_000 {
                match client.send_copy(i) {
                    Ok(_pending) => return false,
                    Err(RequestSendError::NotDelivered) => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(e) => panic!("request {i}: {e}"),
                }
            }
            true
        });
        if let Some(i) = stuck {
            // The client's going frees the blocked server.
            drop(client);
            let _ = answering.join();
            panic!("request {i} was not taken in 10 s");
        }
        let server = answering.join().unwrap();
        // The last stale stream goes as the next request is sent, and that
        // one is answered as usual.
        let pending = client.send_copy(7).unwrap();
        let request = server.blocking_receive().unwrap();
        request.send_last_copy(8).unwrap();
        assert_eq!(*pending.blocking_receive().unwrap().unwrap(), 8);
        assert!(pending.blocking_receive().unwrap().is_none());
    });
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
fn a_server_that_goes_ends_its_pending_responses_with_an_error() {
    let d = Domain::new("gone");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let answered = client.send_copy(5).unwrap();
    let request = server.receive().unwrap().unwrap();
    request.send_copy(50).unwrap();
    drop(request);
    // A request the server never takes: it leaves with it queued. (A server
    // killed in the middle of a stream: crates/hako-tests.)
    let unanswered = client.send_copy(6).unwrap();
    drop(server);
    // What it sent before going still arrives, with the end of its stream.
    assert_eq!(*answered.blocking_receive().unwrap().unwrap(), 50);
    assert!(answered.blocking_receive().unwrap().is_none());
    assert_eq!(
        unanswered.blocking_receive().unwrap_err(),
        ReqResReceiveError::ServerGone
    );
    assert!(!unanswered.server_there());
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
fn ten_thousand_clients_come_and_go_and_leak_nothing() {
    let d = Domain::new("churn");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    for i in 0..10_000u64 {
        let client = svc.client_builder().create().unwrap();
        let pending = client.send_copy(i).unwrap();
        if i % 3 != 0 {
            let request = server
                .receive_timeout(Duration::from_secs(5))
                .unwrap()
                .expect("the request");
            assert_eq!(*request, i);
            request.send_copy(i + 1).unwrap();
            drop(request);
            if i % 2 == 0 {
                assert_eq!(*pending.blocking_receive().unwrap().unwrap(), i + 1);
            }
        }
        // Half the time the client goes with its request (or its response)
        // unread.
    }
    // Requests of clients that left are still taken and answered into the
    // void; nothing is left after that.
    while let Some(r) = server.receive().unwrap() {
        let _ = r.send_copy(0);
    }
    assert_eq!(server.client_count(), 0);
    let files = std::fs::read_dir(
        d.root
            .read_dir()
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("svc_"))
            .unwrap()
            .path(),
    )
    .unwrap()
    .count();
    // static.toml, dynamic, the server's segment and FIFO.
    assert_eq!(files, 4);
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
fn a_response_never_reaches_another_client_that_took_the_entry() {
    let d = Domain::new("reuse");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let a = svc.client_builder().create().unwrap();
    let pending_a = a.send_copy(1).unwrap();
    let request_a = server.receive().unwrap().unwrap();
    drop(pending_a);
    drop(a);
    // B takes A's entry, and its first request has A's request's id.
    let b = svc.client_builder().create().unwrap();
    let pending_b = b.send_copy(2).unwrap();
    assert!(!request_a.is_connected());
    assert!(matches!(
        request_a.send_copy(111),
        Err(hako::ResponseSendError::ClientGone)
    ));
    drop(request_a); // its end goes nowhere either
    let request_b = server.receive().unwrap().unwrap();
    assert_eq!(*request_b, 2);
    request_b.send_copy(222).unwrap();
    drop(request_b);
    assert_eq!(*pending_b.blocking_receive().unwrap().unwrap(), 222);
    assert!(pending_b.blocking_receive().unwrap().is_none());
}

#[test]
fn a_response_outlives_its_client_and_stays_intact() {
    let d = Domain::new("outlive");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(1).unwrap();
    let request = server.receive().unwrap().unwrap();
    request.send_copy(4242).unwrap();
    drop(request);
    let kept = pending.blocking_receive().unwrap().unwrap();
    drop(pending);
    drop(client);
    // The server goes on answering others; the kept chunk is not reused.
    let other = svc.client_builder().create().unwrap();
    for i in 0..100 {
        let p = other.send_copy(i).unwrap();
        let r = server.receive().unwrap().unwrap();
        r.send_copy(i).unwrap();
        drop(r);
        assert_eq!(*p.blocking_receive().unwrap().unwrap(), i);
    }
    assert_eq!(*kept, 4242);
}

#[test]
fn a_response_sent_after_the_end_is_dropped_and_absurd_lengths_are_refused() {
    let d = Domain::new("late");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(1).unwrap();
    let request = server.receive().unwrap().unwrap();
    let late = request.loan_uninit().unwrap().write_payload(9);
    drop(request); // the end of the stream
    late.send().unwrap();
    assert!(pending.blocking_receive().unwrap().is_none());
    assert!(pending.receive().unwrap().is_none());
    assert!(pending.is_finished());
    let slices = d
        .node
        .service_builder(&"test/huge".try_into().unwrap())
        .request_response::<[u64], [u64]>()
        .open_or_create()
        .unwrap();
    let e = slices
        .client_builder()
        .max_slice_len(usize::MAX)
        .create()
        .unwrap_err();
    assert!(e.to_string().contains("max_slice_len"), "{e}");
}

/// The tag words of the next request the server would take from the
/// client: found through the client's data segment file, with the public
/// layout (`hako::unstable::layout`), as a hostile process would.
fn next_request_tag(d: &Domain, client_id: u64, server_id: u64) -> (std::fs::File, u64) {
    use hako::unstable::layout::{SegmentParams, LINE};
    use std::os::unix::fs::FileExt;
    let dir = std::fs::read_dir(&d.root)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("svc_"))
        .unwrap()
        .path();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(format!("pub_{client_id:016x}")))
        .unwrap();
    let read = |off: u64| {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, off).unwrap();
        u64::from_le_bytes(b)
    };
    // SegmentHeader: magic, version and chunk count, port id, then the
    // eight words of SegmentParams.
    let p = |i: u64| read(24 + 8 * i);
    let params = SegmentParams {
        elem_size: p(0),
        align: p(1),
        max_len: p(2),
        chunk_count: p(3),
        max_subscribers: p(4),
        buffer: p(5),
        borrowed: p(6),
        tagged: p(7),
    };
    assert_eq!(params.tagged, 1, "request rings are tagged");
    let geo = params.geometry().unwrap();
    let conn = (0..params.max_subscribers)
        .map(|j| geo.conns_offset + j * geo.conn_stride)
        .find(|&base| read(base) == server_id)
        .expect("the server is connected");
    let head = read(conn + LINE);
    let slot = head & ((1 << geo.sub_log2) - 1);
    let tag = conn + geo.sub_offset + 8 * geo.slot_words * slot + 16;
    (file, tag)
}

#[test]
fn a_garbage_tag_loses_only_its_own_request() {
    use std::os::unix::fs::FileExt;
    let d = Domain::new("tag");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    // Answers as asked: a request whose flags say fire and forget gets
    // nothing.
    let answer = |request: hako::ActiveRequest<'_, u64, u64>| {
        let n = *request;
        if request.expects_response() {
            request.send_last_copy(n + 1).unwrap();
        }
    };
    // A healthy exchange first.
    let pending = client.send_copy(1).unwrap();
    answer(server.receive().unwrap().unwrap());
    assert_eq!(*pending.receive().unwrap().unwrap(), 2);
    drop(pending);
    // A request whose tag (its header: slot, generation, flags) a hostile
    // process rewrites while it is queued: it names no request in flight,
    // so the server's answer to it is dropped as stale (or, with the
    // fire-and-forget flag among the garbage, there is none), and that
    // pending response never gets one: it ends when dropped.
    for garbage in [[u64::MAX - 5, 0], [u64::MAX - 5, 0xdead_beef]] {
        let (file, tag) = next_request_tag(&d, client.id(), server.id());
        let lost = client.send_copy(10).unwrap();
        for (i, word) in garbage.into_iter().enumerate() {
            file.write_all_at(&word.to_le_bytes(), tag + 8 * i as u64)
                .unwrap();
        }
        let request = server.receive().unwrap().unwrap();
        assert_eq!(*request, 10);
        assert_eq!(request.expects_response(), garbage[1] & 2 == 0);
        answer(request);
        assert!(lost.receive().unwrap().is_none());
        assert!(!lost.is_finished());
    }
    // The next request, in the same slot, gets its own answer.
    let pending = client.send_copy(20).unwrap();
    answer(server.receive().unwrap().unwrap());
    assert_eq!(*pending.blocking_receive().unwrap().unwrap(), 21);
    assert!(pending.blocking_receive().unwrap().is_none());
}

#[test]
fn a_server_that_must_not_wait_fails_its_sends_to_a_full_queue_and_still_ends_the_stream() {
    let d = Domain::new("discard");
    let svc = d.service(1, 1);
    let server = svc
        .server_builder()
        .backpressure(hako::BackpressureStrategy::Discard)
        .create()
        .unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(1).unwrap();
    let request = server.receive().unwrap().unwrap();
    // The client reads nothing: its queue fills, and the next response
    // fails at once instead of waiting.
    let mut sent = 0;
    let e = loop {
        match request.send_copy(sent) {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(e, hako::ResponseSendError::ClientGone), "{e}");
    assert!(sent >= 2, "{sent}");
    // What was sent arrives, and then the end of the stream.
    for i in 0..sent {
        assert_eq!(*pending.receive().unwrap().unwrap(), i);
    }
    drop(request);
    assert!(pending.receive().unwrap().is_none());
    assert!(pending.is_finished());
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
