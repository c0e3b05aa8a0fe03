//! Responses that must reach no one: to a dropped request whose slot was
//! reused, after the end of a stream, to a request whose tag a hostile
//! process rewrote; streams a client leaves unread; and a server that must
//! not wait, facing a full queue.

use std::time::Duration;

use hako::RequestSendError;

use super::Domain;

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
        // Without the routing the queue fills with stale responses; the
        // server must not wait for room for them (the client withdrew
        // them), or it stops taking requests and they no longer get
        // through.
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
fn a_server_waiting_for_room_stops_when_the_client_drops_the_pending_response() {
    // A client that never reads: the server's sends fill its queue, and
    // then the server waits (Block, the default). Dropping the pending
    // response withdraws the request: the waiting send and the rest return
    // Ok at once, the end of the stream does not wait either, and the
    // client's next request is answered as usual.
    let d = Domain::new("withdrawn");
    let svc = d.service(1, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let pending = client.send_copy(1).unwrap();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = sent.clone();
    // Not a scoped thread: if it never ends, the test fails instead of
    // waiting for it.
    let answering = std::thread::spawn(move || {
        let request = server.blocking_receive().unwrap();
        assert!(request.is_connected());
        for i in 0..100 {
            request.send_copy(i).unwrap();
            count.store(i + 1, std::sync::atomic::Ordering::Relaxed);
        }
        assert!(!request.is_connected(), "the client dropped it");
        drop(request); // its end goes nowhere, without waiting
        server
    });
    // The queue holds six messages (two streams' worth: two responses and
    // an end each); the seventh send waits.
    while sent.load(std::sync::atomic::Ordering::Relaxed) < 6 {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        sent.load(std::sync::atomic::Ordering::Relaxed),
        6,
        "the server waits for room"
    );
    drop(pending);
    for _ in 0..30_000 {
        if answering.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        answering.is_finished(),
        "the server still waits for a request nobody wants"
    );
    let server = answering.join().unwrap();
    assert_eq!(sent.load(std::sync::atomic::Ordering::Relaxed), 100);
    let pending = client.send_copy(2).unwrap();
    let request = server.blocking_receive().unwrap();
    assert_eq!(*request, 2);
    request.send_last_copy(20).unwrap();
    assert_eq!(*pending.blocking_receive().unwrap().unwrap(), 20);
    assert!(pending.blocking_receive().unwrap().is_none());
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
    // ten words of SegmentParams.
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
        withdrawals: p(8),
        inline: p(9),
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
fn a_waitset_does_not_wake_for_stale_responses() {
    // Responses to a request whose pending response was dropped are
    // nobody's to take: a waitset over the client must sleep through them
    // (they go back as it arms), not wake for ever.
    let d = Domain::new("stalewake");
    let svc = d.service(2, 2);
    let server = svc.server_builder().create().unwrap();
    let client = svc.client_builder().create().unwrap();
    let mut waitset = hako::WaitSet::without_signal_handling().unwrap();
    waitset.attach_client(&client).unwrap();
    drop(client.send_copy(1).unwrap());
    let request = server.receive().unwrap().unwrap();
    request.send_copy(10).unwrap();
    request.send_copy(11).unwrap();
    drop(request);
    let outcome = waitset
        .wait_and_process_timeout(|_| {}, Duration::from_millis(50))
        .unwrap();
    assert_eq!(outcome, hako::WaitOutcome::TimedOut);
    // A live request's response still wakes it.
    let pending = client.send_copy(2).unwrap();
    server
        .receive()
        .unwrap()
        .unwrap()
        .send_last_copy(20)
        .unwrap();
    let outcome = waitset
        .wait_and_process_timeout(|_| {}, Duration::from_secs(10))
        .unwrap();
    assert_eq!(outcome, hako::WaitOutcome::Processed(1));
    assert_eq!(*pending.receive().unwrap().unwrap(), 20);
}
