//! The bridge's ports make room for what other domains send: from what
//! their bridges say, and, for a response longer than that, at the cost of
//! one request, which ends with an error its client sees (never silence).

mod common;
use std::time::{Duration, Instant};

use common::*;
use zenoh::Wait;

/// A request/response service of bytes.
fn reqres(node: &hako::Node, name: &str) -> hako::ReqResService<[u8], [u8]> {
    node.service_builder(&name.try_into().unwrap())
        .request_response::<[u8], [u8]>()
        .open_or_create()
        .unwrap()
}

#[test]
fn a_response_longer_than_announced_aborts_its_request_and_the_next_one_fits() {
    // Domain B and its bridge; a plain Zenoh program plays a domain F whose
    // server announces 1-byte responses and sends 10 000 bytes.
    let p = prefix("misfit");
    let b = Domain::new("misfit", "b");
    let pb = free_port();
    let mut bb = bridge_with(&b, &p, pb, &[], &[], std::process::Stdio::piped());
    let log = log_lines(&mut bb);
    let fake = hako_zenoh::keys::DomainId(0x00f0_0d00_dead_beef);
    let keys = hako_zenoh::keys::Keys::new(&p);
    let service = "t/misfit";
    // F's description: the service's, with its servers' longest response.
    let scratch = Domain::new("misfit", "scratch");
    let mut desc = serde_json::to_value(reqres(&scratch.node, service).description()).unwrap();
    desc["max_slice_len"] = serde_json::json!({"writers": 0, "readers": 1});
    let desc = serde_json::to_vec(&desc).unwrap();
    let session = plain_session(pb);
    let _described = session
        .declare_queryable(keys.desc(fake, service))
        .callback(move |q| {
            let _ = q.reply(q.key_expr().clone(), desc.clone()).wait();
        })
        .wait()
        .unwrap();
    // Each request: 1 byte, then 10 000 bytes, then the stream's end.
    let _served = session
        .declare_queryable(keys.rpc(service))
        .callback(move |q| {
            let key = q.key_expr().clone();
            let att = fake.attachment().to_vec();
            let _ = q
                .reply(key.clone(), vec![1u8])
                .attachment(att.clone())
                .wait();
            let _ = q
                .reply(key.clone(), vec![2u8; 10_000])
                .attachment(att)
                .wait();
            let end = fake.end_attachment().to_vec();
            let _ = q.reply(key, Vec::<u8>::new()).attachment(end).wait();
        })
        .wait()
        .unwrap();
    let roles = hako_zenoh::keys::Roles {
        writers: false,
        readers: true,
    };
    let _token = session
        .liveliness()
        .declare_token(keys.live(fake, roles, service))
        .wait()
        .unwrap();
    b.wait_for_server(service);
    let client = reqres(&b.node, service)
        .client_builder()
        .max_slice_len(16)
        .create()
        .unwrap();
    let call = || {
        let pending = loop {
            match client.send_slice_copy(b"?") {
                Ok(p) => break p,
                // The bridge's server between two lives.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let mut got = Vec::new();
        loop {
            match pending.blocking_receive() {
                Ok(Some(r)) => got.push(r.len()),
                Ok(None) => return (got, None),
                Err(e) => return (got, Some(e)),
            }
        }
    };
    // The first response passes; the second does not fit: the request
    // ends with an error, never with a silent end.
    let (got, err) = call();
    assert_eq!(got, vec![1], "{err:?}");
    assert_eq!(err, Some(hako::ReqResReceiveError::Aborted));
    wait_for_line(&log, "a warning about the long response", |l| {
        l.contains("WARN") && l.contains("longer than the bridge's server holds")
    });
    // The bridge makes room: a later request gets its whole stream.
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < WATCHDOG,
            "watchdog: the bridge never made room"
        );
        match call() {
            (got, None) => {
                assert_eq!(got, vec![1, 10_000]);
                break;
            }
            (got, Some(_)) => assert!(got.len() <= 1, "{got:?}"),
        }
    }
    session.close().wait().unwrap();
}
