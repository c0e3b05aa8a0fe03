//! Messages of every length, 1 byte to 4 MiB, across the bridge in both
//! directions: samples, requests and responses.

mod common;
use std::time::{Duration, Instant};

use common::*;

/// Lengths tried: the edges of the bridge's first room (4 KiB) and sizes
/// well beyond it.
const SIZES: [usize; 9] = [1, 2, 3, 100, 4096, 4097, 65536, 1 << 20, 4 << 20];

/// Bytes of a message of `n` bytes, told apart by `seed`.
fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

fn pubsub(node: &hako::Node, name: &str) -> hako::PubSubService<[u8]> {
    node.service_builder(&name.try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .subscriber_max_buffer_size(16)
        .history_size(0)
        .open_or_create()
        .unwrap()
}

/// Sends a sample of every length from `from` to `to` (a subscriber in
/// the other domain) and checks each arrives whole and in order.
fn every_length(publisher: &hako::Publisher<[u8]>, to: &hako::Subscriber<[u8]>) {
    let start = Instant::now();
    // Samples cross once the publisher counts the bridge's subscriber.
    while publisher.subscriber_count() == 0 {
        assert!(start.elapsed() < WATCHDOG, "watchdog: no bridge subscribed");
        std::thread::sleep(Duration::from_millis(10));
    }
    for (k, &n) in SIZES.iter().enumerate() {
        let want = bytes(n, k as u8);
        publisher.send_slice_copy(&want).unwrap();
        let start = Instant::now();
        let got = loop {
            assert!(
                start.elapsed() < WATCHDOG,
                "watchdog: the sample of {n} bytes never came"
            );
            if let Some(s) = to.receive_timeout(Duration::from_millis(20)).unwrap() {
                break s.to_vec();
            }
        };
        assert_eq!(got.len(), n, "a sample of {n} bytes came as {}", got.len());
        assert!(got == want, "the sample of {n} bytes came altered");
    }
}

#[test]
fn samples_of_1_byte_to_4_mib_cross_both_ways() {
    let (a, b, _bridges) = joined("slices-ps", &[]);
    let (up_a, down_b) = (pubsub(&a.node, "t/up"), pubsub(&b.node, "t/down"));
    let up_pub = up_a
        .publisher_builder()
        .max_slice_len(4 << 20)
        .create()
        .unwrap();
    let down_pub = down_b
        .publisher_builder()
        .max_slice_len(4 << 20)
        .create()
        .unwrap();
    b.wait_for_service("t/up");
    a.wait_for_service("t/down");
    let up_sub = pubsub(&b.node, "t/up")
        .subscriber_builder()
        .create()
        .unwrap();
    let down_sub = pubsub(&a.node, "t/down")
        .subscriber_builder()
        .create()
        .unwrap();
    every_length(&up_pub, &up_sub);
    every_length(&down_pub, &down_sub);
}

/// A server answering each request with two responses: the request's
/// bytes reversed, then a response of the length the request's first
/// byte picks among `SIZES`; until `stop`.
fn serve(server: hako::Server<[u8], [u8]>, stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(r) = server.receive_timeout(Duration::from_millis(20)).unwrap() {
            let mut back = r.to_vec();
            back.reverse();
            r.send_slice_copy(&back).unwrap();
            let k = usize::from(r[0]) % SIZES.len();
            r.send_last_slice_copy(&bytes(SIZES[k], 7)).unwrap();
        }
    }
}

fn reqres(node: &hako::Node, name: &str) -> hako::ReqResService<[u8], [u8]> {
    node.service_builder(&name.try_into().unwrap())
        .request_response::<[u8], [u8]>()
        .open_or_create()
        .unwrap()
}

/// Sends a request of every length through `client`, each answered by a
/// response of the same length and one of the length after it; checks
/// every byte.
fn call_every_length(client: &hako::Client<[u8], [u8]>) {
    let start = Instant::now();
    // Until the link forwards (a request sent before finds no server).
    loop {
        assert!(start.elapsed() < WATCHDOG, "watchdog: no request crossed");
        if let Ok(p) = client.send_slice_copy(&[0]) {
            if matches!(p.receive_timeout(Duration::from_secs(5)), Ok(Some(_))) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (k, &n) in SIZES.iter().enumerate() {
        let mut request = bytes(n, 3);
        request[0] = (k + 1) as u8;
        let pending = client.send_slice_copy(&request).unwrap();
        let mut got = Vec::new();
        while let Some(r) = pending
            .blocking_receive()
            .unwrap_or_else(|e| panic!("the request of {n} bytes: {e}"))
        {
            got.push(r.to_vec());
        }
        request.reverse();
        let next = SIZES[(k + 1) % SIZES.len()];
        assert_eq!(
            got.len(),
            2,
            "the request of {n} bytes got {} responses",
            got.len()
        );
        assert!(got[0] == request, "the response of {n} bytes came altered");
        assert!(
            got[1] == bytes(next, 7),
            "the response of {next} bytes came altered"
        );
    }
}

#[test]
fn requests_and_responses_of_1_byte_to_4_mib_cross_both_ways() {
    let (a, b, _bridges) = joined("slices-rr", &[]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let big = |s: hako::ReqResService<[u8], [u8]>| {
        s.server_builder().max_slice_len(4 << 20).create().unwrap()
    };
    let server_a = big(reqres(&a.node, "t/at-a"));
    let server_b = big(reqres(&b.node, "t/at-b"));
    std::thread::scope(|s| {
        s.spawn(|| serve(server_a, &stop));
        s.spawn(|| serve(server_b, &stop));
        b.wait_for_server("t/at-a");
        a.wait_for_server("t/at-b");
        let client = |node: &hako::Node, name| {
            reqres(node, name)
                .client_builder()
                .max_slice_len(4 << 20)
                .create()
                .unwrap()
        };
        call_every_length(&client(&b.node, "t/at-a"));
        call_every_length(&client(&a.node, "t/at-b"));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
