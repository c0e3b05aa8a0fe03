//! The Rust side of the cross-language tests (scripts/c): `rust_peer
//! subscribe ROOT COUNT` receives COUNT `Mixed` messages from a C
//! publisher and checks every field; `rust_peer publish ROOT COUNT` waits
//! for a subscriber (a C++ one) and publishes COUNT of them under
//! backpressure; `rust_peer serve ROOT COUNT` answers COUNT requests of a
//! client (a C++ one) with one response each (`send_last`); `rust_peer
//! request ROOT COUNT` sends COUNT requests to a server (a Go one) and
//! expects one response each, then the end of its stream; `rust_peer
//! events ROOT ID` waits for event ID on "ffi/bell", then notifies ID - 1
//! (a Go notifier and listener are the other side); `rust_peer board-read
//! ROOT COUNT` and `board-write ROOT COUNT` read and write the entry
//! "mixed" of the blackboard "ffi/board" as tests/c/cpp_board.cpp does
//! (version v holds mixed_of(v)). The C side's
//! layout is `tests/c/mixed.h`.

use std::time::{Duration, Instant};

use hako::{Config, NodeBuilder, OverflowPolicy, ShmSafe};

/// `struct mixed` of tests/c/mixed.h.
#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[hako(type_name = "hako_tests::Mixed")]
#[repr(C)]
struct Mixed {
    a: u8,
    b: u16,
    c: u32,
    d: u64,
    e: f32,
    f: f64,
}

/// `mixed_of` of tests/c/mixed.h.
fn mixed_of(seq: u64) -> Mixed {
    Mixed {
        a: (seq * 7) as u8,
        b: (seq * 31) as u16,
        c: (seq * 1_000_003) as u32,
        d: seq.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        e: seq as f32 * 0.5,
        f: seq as f64 * 0.25,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, root, count] = args.as_slice() else {
        return Err("usage: rust_peer subscribe|publish|serve|request|events|board-read|board-write ROOT COUNT".into());
    };
    let count: u64 = count.parse()?;
    let node = NodeBuilder::new()
        .name("rust_peer")?
        .config(&Config::default().with_root(root))
        .create()?;
    if mode == "serve" {
        return serve(&node, count);
    }
    if mode == "request" {
        return request(&node, count);
    }
    if mode == "events" {
        return events(&node, count);
    }
    if mode == "board-read" || mode == "board-write" {
        return board(&node, mode == "board-write", count);
    }
    let service = node
        .service_builder(&"ffi/cross".try_into()?)
        .publish_subscribe::<Mixed>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(8)
        .open_or_create()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    match mode.as_str() {
        "subscribe" => {
            let sub = service.subscriber_builder().create()?;
            for seq in 0..count {
                let sample = sub
                    .receive_timeout(Duration::from_secs(10))?
                    .ok_or_else(|| format!("message {seq} did not come"))?;
                if *sample != mixed_of(seq) {
                    return Err(format!("message {seq} is wrong: {:?}", *sample).into());
                }
            }
            println!("RESULT received={count}");
        }
        "publish" => {
            let publisher = service.publisher_builder().create()?;
            while publisher.subscriber_count() == 0 {
                if Instant::now() > deadline {
                    return Err("no subscriber came".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            for seq in 0..count {
                let reached = publisher.send_copy(mixed_of(seq))?;
                if reached != 1 {
                    return Err(format!("message {seq} reached {reached} subscribers").into());
                }
            }
            // Until the subscriber has read everything and left.
            while publisher.subscriber_count() > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            println!("RESULT sent={count}");
        }
        other => return Err(format!("unknown mode {other:?}").into()),
    }
    Ok(())
}

/// Answers `count` requests of `Mixed` (each checked to be `mixed_of(seq)`)
/// with `mixed_of(seq + 1)` as the last response.
fn serve(node: &hako::Node, count: u64) -> Result<(), Box<dyn std::error::Error>> {
    let service = node
        .service_builder(&"ffi/cross-rr".try_into()?)
        .request_response::<Mixed, Mixed>()
        .max_requests_in_flight(4)
        .max_response_buffer(4)
        .open_or_create()?;
    let server = service.server_builder().create()?;
    for seq in 0..count {
        let request = server
            .receive_timeout(Duration::from_secs(10))?
            .ok_or_else(|| format!("request {seq} did not come"))?;
        if *request != mixed_of(seq) {
            return Err(format!("request {seq} is wrong: {:?}", *request).into());
        }
        request.send_last_copy(mixed_of(seq + 1))?;
    }
    println!("RESULT served={count}");
    Ok(())
}

/// Sends `count` requests of `Mixed` (`mixed_of(seq)`), each answered by
/// one response, `mixed_of(seq + 1)`, that ends its stream.
fn request(node: &hako::Node, count: u64) -> Result<(), Box<dyn std::error::Error>> {
    let service = node
        .service_builder(&"ffi/cross-rr".try_into()?)
        .request_response::<Mixed, Mixed>()
        .max_requests_in_flight(4)
        .max_response_buffer(4)
        .open_or_create()?;
    let client = service.client_builder().create()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.server_count() == 0 {
        if Instant::now() > deadline {
            return Err("no server came".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for seq in 0..count {
        let pending = client.send_copy(mixed_of(seq))?;
        let response = pending
            .receive_timeout(Duration::from_secs(10))?
            .ok_or_else(|| format!("the response to request {seq} did not come"))?;
        if *response != mixed_of(seq + 1) {
            return Err(format!("response {seq} is wrong: {:?}", *response).into());
        }
        drop(response);
        if pending.receive_timeout(Duration::from_secs(10))?.is_some() {
            return Err(format!("request {seq}: a second response").into());
        }
    }
    println!("RESULT answered={count}");
    Ok(())
}

/// Waits (up to 10 s) for event `id` on "ffi/bell", then answers with
/// event `id - 1`.
fn events(node: &hako::Node, id: u64) -> Result<(), Box<dyn std::error::Error>> {
    let service = node
        .service_builder(&"ffi/bell".try_into()?)
        .event()
        .open_or_create()?;
    let listener = service.listener_builder().create()?;
    let notifier = service.notifier_builder().create()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listener
        .timed_wait(Duration::from_millis(100))?
        .iter()
        .any(|&(heard, _)| heard.value() == id)
    {
        if Instant::now() > deadline {
            return Err(format!("event {id} did not come").into());
        }
    }
    notifier.notify_with_id(hako::EventId(id - 1))?;
    println!("RESULT heard={id}");
    Ok(())
}

/// The C++ blackboard test's other side (tests/c/cpp_board.cpp): writes
/// versions 1..=count of "mixed" once a reader is there, or reads every
/// change until version `count`, checking version v holds mixed_of(v).
fn board(node: &hako::Node, write: bool, count: u64) -> Result<(), Box<dyn std::error::Error>> {
    let board = node
        .service_builder(&"ffi/board".try_into()?)
        .blackboard()
        .entry::<Mixed>("mixed", mixed_of(0))
        .max_readers(2)
        .open_or_create()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    if write {
        let writer = board.writer_builder().create()?;
        let mut entry = writer.entry::<Mixed>("mixed")?;
        while board.reader_count() == 0 {
            if Instant::now() > deadline {
                return Err("no reader came".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for v in 1..=count {
            let got = entry.update(mixed_of(v))?;
            if got != v {
                return Err(format!("version {v} published as {got}").into());
            }
        }
        while board.reader_count() > 0 && Instant::now() < Instant::now() + Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        println!("RESULT board-wrote={count}");
    } else {
        let reader = board
            .reader_builder()
            .wait_strategy(hako::WaitStrategy::Park)
            .create()?;
        let entry = reader.entry::<Mixed>("mixed")?;
        let mut last = 0;
        while last < count {
            if entry
                .wait_for_change(Some(Duration::from_secs(10)))?
                .is_none()
            {
                return Err(format!("no change after version {last}").into());
            }
            let (m, v) = entry.get_with_version()?;
            if m != mixed_of(v) || v < last {
                return Err(format!("version {v} is wrong: {m:?}").into());
            }
            last = v;
        }
        println!("RESULT board-read={last}");
    }
    Ok(())
}
