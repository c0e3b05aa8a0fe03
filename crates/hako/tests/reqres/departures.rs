//! Clients and servers that leave: a server's pending responses end with an
//! error, ten thousand clients leak nothing, a client's entry taken by
//! another never gets its responses, a response outlives its client.

use std::time::Duration;

use hako::ReqResReceiveError;

use super::Domain;

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
