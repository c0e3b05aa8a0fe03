//! The async request/response ports (`hako::aio`, the `tokio` feature)
//! across processes: a server task answering, a client task taking
//! streams, and a server killed while a client task waits.

use std::time::Duration;

use hako::{Config, Node};
use hako_tests::harness::Domain;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

const REQRES_HELPER: &str = env!("CARGO_BIN_EXE_hako-reqres-helper");

/// A process of the request/response helper, in `d`'s domain.
fn reqres_helper(d: &Domain, label: &str, args: &[&str]) -> hako_tests::harness::Proc {
    d.spawn_bin(REQRES_HELPER, label, args, hako_tests::harness::WATCHDOG)
}

/// A `u64 -> u64` service with the settings the helper's
/// `--in-flight 4 --buffer 2` ask for.
fn reqres_service(node: &Node, name: &str) -> hako::ReqResService<u64, u64> {
    node.service_builder(&name.try_into().unwrap())
        .request_response::<u64, u64>()
        .max_requests_in_flight(4)
        .max_response_buffer(2)
        .open_or_create()
        .unwrap()
}

#[test]
fn a_server_task_answers_a_client_in_another_process() {
    use hako::aio::AsyncServer;
    let d = Domain::new("aio-server", HELPER);
    let node = d.node();
    let service = reqres_service(&node, "it/aio-rr");
    let server = service.server_builder().create().unwrap();
    let client = reqres_helper(
        &d,
        "client",
        &[
            "request",
            "--service",
            "it/aio-rr",
            "--in-flight",
            "4",
            "--buffer",
            "2",
            "--stream",
            "2",
            "--count",
            "500",
        ],
    );
    let served = runtime(2).block_on(async move {
        let task = tokio::spawn(async move {
            let mut server = AsyncServer::new(server).unwrap();
            for _ in 0..500 {
                let request = server.receive().await.unwrap();
                let n = *request;
                for i in 0..2 {
                    // The request is held across an await: it is Send.
                    tokio::task::yield_now().await;
                    request.send_copy(n * 1000 + i).unwrap();
                }
                // Dropped: the end of its stream.
            }
            server.into_inner()
        });
        task.await.unwrap()
    });
    // The client checked every response of every request.
    let out = d.wait_all(vec![client]);
    assert_eq!(out[0].result().num("answered"), 500);
    drop(served);
    drop(service);
    drop(node);
    d.finish();
}

#[test]
fn a_client_task_takes_streams_from_a_server_in_another_process() {
    use hako::aio::AsyncClient;
    let d = Domain::new("aio-client", HELPER);
    let node = d.node();
    let service = reqres_service(&node, "it/aio-rr2");
    let client = service.client_builder().create().unwrap();
    let stop = d.arg("stop");
    let server = reqres_helper(
        &d,
        "server",
        &[
            "serve",
            "--service",
            "it/aio-rr2",
            "--in-flight",
            "4",
            "--buffer",
            "2",
            "--stream",
            "3",
            "--stop-file",
            &stop,
        ],
    );
    let cancelled = runtime(2).block_on(async move {
        tokio::spawn(async move {
            let mut client = AsyncClient::new(client).unwrap();
            while client.get_ref().server_count() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let mut cancelled = 0u64;
            for round in 0..100u64 {
                // Four in flight, their responses taken in turn; short
                // timeouts cancel some receives on the way.
                let tickets: Vec<_> = (0..4)
                    .map(|k| {
                        let n = round * 4 + k;
                        (n, client.get_ref().send_copy(n).unwrap().into_ticket())
                    })
                    .collect();
                for (n, ticket) in tickets {
                    let mut i = 0;
                    loop {
                        let r = tokio::time::timeout(
                            Duration::from_micros(100),
                            client.receive(&ticket),
                        )
                        .await;
                        match r {
                            Err(_) => cancelled += 1,
                            Ok(Ok(Some(r))) => {
                                assert_eq!(*r, n * 1000 + i, "request {n} response {i}");
                                i += 1;
                            }
                            Ok(Ok(None)) => break,
                            Ok(Err(e)) => panic!("request {n}: {e}"),
                        }
                    }
                    assert_eq!(i, 3, "request {n}'s whole stream");
                    client.finish(ticket); // over already: nothing happens
                }
                assert_eq!(client.get_ref().requests_in_flight(), 0);
            }
            // And as a stream.
            let ticket = client.get_ref().send_copy(7).unwrap().into_ticket();
            let got: Vec<u64> = futures::StreamExt::collect::<Vec<_>>(client.responses(ticket))
                .await
                .into_iter()
                .map(|r| *r.unwrap())
                .collect();
            assert_eq!(got, [7000, 7001, 7002]);
            cancelled
        })
        .await
        .unwrap()
    });
    println!("{cancelled} receives cancelled");
    d.touch("stop");
    d.wait_all(vec![server]);
    drop(service);
    drop(node);
    d.finish();
}

#[test]
fn a_server_killed_while_a_client_task_waits_ends_its_stream_with_an_error() {
    use hako::aio::{AsyncClient, AsyncError};
    let d = Domain::new("aio-server-gone", HELPER);
    let node = d.node();
    let service = reqres_service(&node, "it/aio-rr3");
    let client = service.client_builder().create().unwrap();
    let hung = d.arg("hung");
    let mut procs = vec![reqres_helper(
        &d,
        "server",
        &[
            "serve",
            "--service",
            "it/aio-rr3",
            "--in-flight",
            "4",
            "--buffer",
            "2",
            "--stream",
            "3",
            "--hang-after",
            "1",
            "--hung-file",
            &hung,
        ],
    )];
    let server = runtime(2).block_on(async {
        let mut client = AsyncClient::new(client).unwrap();
        while client.get_ref().server_count() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let ticket = client.get_ref().send_copy(4).unwrap().into_ticket();
        assert_eq!(*client.receive(&ticket).await.unwrap().unwrap(), 4000);
        d.wait_file("hung", &mut procs);
        let server = procs.pop().unwrap();
        let killer = tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(50));
            server.kill()
        });
        let e = client.receive(&ticket).await.unwrap_err();
        assert!(
            matches!(e, AsyncError::Port(hako::ReqResReceiveError::ServerGone)),
            "{e}"
        );
        // The request is over: its slot is free, the ticket done.
        assert_eq!(client.get_ref().requests_in_flight(), 0);
        assert!(client.receive(&ticket).await.unwrap().is_none());
        killer.await.unwrap()
    });
    assert_eq!(server.code, None);
    hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
    drop(service);
    drop(node);
    d.finish();
}
