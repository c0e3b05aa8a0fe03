//! What a newcomer meets first: a client that starts before its server,
//! an async client's tickets, a history longer than a subscriber's queue,
//! and the errors of two programs that define a service differently.

use std::time::{Duration, Instant};

use hako::{ServerWaitError, ServiceError, ShmSafe};
use hako_tests::harness::{Domain, WATCHDOG};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
const REQRES_HELPER: &str = env!("CARGO_BIN_EXE_hako-reqres-helper");

fn adder(node: &hako::Node, name: &str, in_flight: u32) -> hako::ReqResService<u64, u64> {
    node.service_builder(&name.try_into().unwrap())
        .request_response::<u64, u64>()
        .max_requests_in_flight(in_flight)
        .open_or_create()
        .unwrap()
}

/// A client waits for a server that another process starts later, asleep
/// (no timeout passes), and gives up with a clear error when none comes.
#[test]
fn a_client_waits_for_a_server_of_another_process() {
    let d = Domain::new("fc-wait", HELPER);
    let node = d.node();
    let service = adder(&node, "it/later", 4);
    let client = service.client_builder().create().unwrap();
    let e = client
        .wait_for_server(Duration::from_millis(50))
        .unwrap_err();
    assert!(matches!(e, ServerWaitError::NoServer { .. }), "{e}");
    assert!(
        e.to_string().contains("no server of service \"it/later\""),
        "{e}"
    );
    let (ready, release) = (d.arg("ready"), d.arg("release"));
    let mut procs = vec![d.spawn_bin(
        REQRES_HELPER,
        "server",
        &[
            "serve",
            "--service",
            "it/later",
            "--in-flight",
            "4",
            "--delay-start-ms",
            "300",
            "--ready-file",
            &ready,
            "--stop-file",
            &release,
        ],
        WATCHDOG,
    )];
    let start = Instant::now();
    client.wait_for_server(WATCHDOG).unwrap();
    assert!(client.server_count() > 0);
    d.wait_file("ready", &mut procs);
    let pending = client.send_copy(20).unwrap();
    assert!(pending.blocking_receive().unwrap().is_some());
    println!("the server came after {:?}", start.elapsed());
    drop(pending);
    d.touch("release");
    d.wait_all(procs);
    drop((client, service, node));
    d.finish();
}

/// The async client: a ticket whose only response came with the end of
/// its stream (`send_last`) frees its slot as that response is taken; a
/// dropped ticket frees its slot (and its responses go back unread); the
/// send that returns a ticket needs no pending response across an await.
#[test]
fn tickets_free_their_slots_when_done_or_dropped() {
    let d = Domain::new("fc-tickets", HELPER);
    let node = d.node();
    let service = adder(&node, "it/tickets", 1);
    let server = service.server_builder().create().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client =
            hako::aio::AsyncClient::new(service.client_builder().create().unwrap()).unwrap();
        client
            .wait_for_server(Duration::from_secs(1))
            .await
            .unwrap();
        for n in 0..3u64 {
            let ticket = match client.send_copy(n) {
                Ok(t) => t,
                Err(e) => panic!("request {n}: {e}"),
            };
            let request = server.receive().unwrap().unwrap();
            let asked = *request;
            request.send_last_copy(asked + 100).unwrap();
            let response = client.receive(&ticket).await.unwrap().unwrap();
            assert_eq!(*response, n + 100);
            // The only response came with the end: the slot is free now,
            // though the ticket is still held.
            assert_eq!(client.get_ref().requests_in_flight(), 0, "request {n}");
            assert!(client.receive(&ticket).await.unwrap().is_none());
        }
        // A ticket dropped while its request is in flight: its slot is
        // free for the next send, and its response goes back unread.
        let ticket = client.send_copy(7).unwrap();
        drop(ticket);
        server
            .receive()
            .unwrap()
            .unwrap()
            .send_last_copy(8)
            .unwrap();
        let again = client.send_copy(9).unwrap();
        let request = server.receive().unwrap().unwrap();
        assert_eq!(*request, 9);
        request.send_last_copy(10).unwrap();
        assert_eq!(*client.receive(&again).await.unwrap().unwrap(), 10);
        // With the one slot taken, the error names what the user holds.
        let held = client.send_copy(11).unwrap();
        let e = client.send_copy(12).unwrap_err().to_string();
        assert!(e.contains("PendingResponse") && e.contains("Ticket"), "{e}");
        client.finish(held);
        assert!(client.send_copy(13).is_ok());
    });
    drop((server, service, node));
    d.finish();
}

/// A history longer than a subscriber's queue is refused when the
/// service is made, with the fix; as long as the queue, a late subscriber
/// gets all of it at the publisher's next send.
#[test]
fn a_history_is_at_most_a_subscribers_queue_and_arrives_whole() {
    let d = Domain::new("fc-history", HELPER);
    let node = d.node();
    let b = |name: &str| {
        node.service_builder(&name.try_into().unwrap())
            .publish_subscribe::<u64>()
    };
    let e = b("it/long-history")
        .history_size(3)
        .open_or_create()
        .unwrap_err();
    assert!(
        matches!(e, ServiceError::HistoryExceedsBuffer { .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("raise subscriber_max_buffer_size to at least 3"),
        "{e}"
    );
    let svc = b("it/history")
        .history_size(3)
        .subscriber_max_buffer_size(3)
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    for n in 0..5 {
        publisher.send_copy(n).unwrap();
    }
    let late = svc.subscriber_builder().create().unwrap();
    publisher.update_connections();
    let got: Vec<u64> = std::iter::from_fn(|| late.receive().unwrap().map(|s| *s)).collect();
    assert_eq!(got, [2, 3, 4], "the whole history, oldest first");
    drop((late, publisher, svc, node));
    d.finish();
}

mod program_a {
    /// The "same" struct, copied into another program.
    #[derive(Debug, Clone, Copy, hako::ShmSafe)]
    #[repr(C)]
    pub struct Frame {
        pub seq: u64,
    }
}

/// A struct copied into a second program is another type: the error says
/// so and names the two ways out; a type named with the derive's
/// attribute is the same type everywhere. Two programs asking for
/// different settings get an error that says how to define a service once.
#[test]
fn two_programs_disagreeing_are_told_what_to_do() {
    #[derive(Debug, Clone, Copy, ShmSafe)]
    #[repr(C)]
    struct Frame {
        seq: u64,
    }
    let d = Domain::new("fc-types", HELPER);
    let node = d.node();
    let name: hako::ServiceName = "it/frames".try_into().unwrap();
    let _made = node
        .service_builder(&name)
        .publish_subscribe::<program_a::Frame>()
        .open_or_create()
        .unwrap();
    let e = node
        .service_builder(&name)
        .publish_subscribe::<Frame>()
        .open_or_create()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("type_name")
            && e.contains("full path")
            && e.contains("a library both programs use")
            && e.contains("#[hako(type_name"),
        "{e}"
    );
    let e = node
        .service_builder(&name)
        .publish_subscribe::<program_a::Frame>()
        .subscriber_max_buffer_size(16)
        .open_or_create()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("subscriber_max_buffer_size is 2 there, at least 16 requested")
            && e.contains("define the service once"),
        "{e}"
    );
}
