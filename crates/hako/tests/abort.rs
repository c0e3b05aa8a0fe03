//! A server that gives up on a request (`ActiveRequest::abort`, what a
//! bridge does when the remote host it forwarded to vanished): the client
//! gets the responses sent before, then `ReqResReceiveError::Aborted`
//! once, and the stream is over; other requests are unaffected.

mod common;
use common::Root;
use hako::ReqResReceiveError;

#[test]
fn an_aborted_request_ends_with_an_error_after_its_responses() {
    let root = Root::new("abort");
    let node = root.node();
    let svc = node
        .service_builder(&"test/abort".try_into().unwrap())
        .request_response::<u64, u64>()
        .open_or_create()
        .unwrap();
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();

    // Given up on before any response.
    let first = client.send_copy(1).unwrap();
    // Answered normally, in flight at the same time.
    let second = client.send_copy(2).unwrap();
    let r1 = server.receive().unwrap().unwrap();
    let r2 = server.receive().unwrap().unwrap();
    r1.abort();
    r2.send_copy(20).unwrap();
    drop(r2);
    assert_eq!(
        first.blocking_receive().err(),
        Some(ReqResReceiveError::Aborted)
    );
    assert!(first.is_finished());
    // Reported once: the stream is over.
    assert!(first.receive().unwrap().is_none());
    assert_eq!(second.blocking_receive().unwrap().map(|r| *r), Some(20));
    assert!(second.blocking_receive().unwrap().is_none());

    // Responses first, then the error.
    let third = client.send_copy(3).unwrap();
    let r3 = server.receive().unwrap().unwrap();
    r3.send_copy(30).unwrap();
    r3.send_copy(31).unwrap();
    r3.abort();
    assert_eq!(third.blocking_receive().unwrap().map(|r| *r), Some(30));
    assert_eq!(third.blocking_receive().unwrap().map(|r| *r), Some(31));
    assert_eq!(
        third.blocking_receive().err(),
        Some(ReqResReceiveError::Aborted)
    );

    // The slot's next request knows nothing of the abort.
    drop((first, second, third));
    let fourth = client.send_copy(4).unwrap();
    server.receive().unwrap().unwrap().send_copy(40).unwrap();
    assert_eq!(fourth.blocking_receive().unwrap().map(|r| *r), Some(40));
    assert!(fourth.blocking_receive().unwrap().is_none());

    // A request that expects no response has nothing to abort.
    client
        .loan_uninit()
        .unwrap()
        .write_payload(5)
        .send_without_response()
        .unwrap();
    server.receive().unwrap().unwrap().abort();
}
