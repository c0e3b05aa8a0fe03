//! The Rust side of the Python package's cross-language tests
//! (`tests/test_cross.py`). Each mode works in the domain ROOT and prints
//! `RESULT ...` on success:
//!
//! - `typed-sub ROOT COUNT`: receives COUNT `Mixed` samples on `py/typed`
//!   and checks every field (`mixed_of(seq)`);
//! - `typed-pub ROOT COUNT`: waits for a subscriber, publishes COUNT of
//!   them under backpressure;
//! - `floats-sub ROOT COUNT`: receives COUNT `[f32]` samples on
//!   `py/floats`, each `seq * 1000 + i` at index `i`;
//! - `floats-pub ROOT COUNT`: publishes them;
//! - `serve ROOT COUNT`: on `py/rr` (`[u8]` requests, `[u64]` responses)
//!   answers COUNT requests with three responses each: the request's
//!   length, its byte sum, and `seq`;
//! - `ask ROOT COUNT`: sends COUNT requests `b"request <seq>"` to a server
//!   there and checks the same three responses.
//!
//! The Python side's layout of `Mixed` is `tests/conftest.py`'s.

use std::time::{Duration, Instant};

use hako::{Config, NodeBuilder, OverflowPolicy, ShmSafe};

/// `Mixed` of tests/conftest.py.
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

const FLOATS: usize = 1024;
const WAIT: Duration = Duration::from_secs(20);

type Res = Result<(), Box<dyn std::error::Error>>;

fn main() -> Res {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, root, count] = args.as_slice() else {
        return Err("usage: py_peer MODE ROOT COUNT (see the file's docs)".into());
    };
    let count: u64 = count.parse()?;
    let node = NodeBuilder::new()
        .name("py_peer")?
        .config(&Config::default().with_root(root))
        .create()?;
    match mode.as_str() {
        "typed-sub" | "typed-pub" => typed(&node, mode, count),
        "floats-sub" | "floats-pub" => floats(&node, mode, count),
        "serve" => serve(&node, count),
        "ask" => ask(&node, count),
        other => Err(format!("unknown mode {other:?}").into()),
    }
}

/// Waits until `ready` or fails after [`WAIT`].
fn until(what: &str, mut ready: impl FnMut() -> bool) -> Res {
    let deadline = Instant::now() + WAIT;
    while !ready() {
        if Instant::now() > deadline {
            return Err(format!("{what} did not happen").into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn typed(node: &hako::Node, mode: &str, count: u64) -> Res {
    let service = node
        .service_builder(&"py/typed".try_into()?)
        .publish_subscribe::<Mixed>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(8)
        .open_or_create()?;
    if mode == "typed-sub" {
        let sub = service.subscriber_builder().create()?;
        println!("READY");
        for seq in 0..count {
            let s = sub
                .receive_timeout(WAIT)?
                .ok_or_else(|| format!("sample {seq} did not come"))?;
            if *s != mixed_of(seq) {
                return Err(format!("sample {seq} is wrong: {:?}", *s).into());
            }
        }
        println!("RESULT received={count}");
    } else {
        let publisher = service.publisher_builder().create()?;
        until("a subscriber", || publisher.subscriber_count() > 0)?;
        for seq in 0..count {
            publisher.send_copy(mixed_of(seq))?;
        }
        until("the subscriber's leaving", || {
            publisher.subscriber_count() == 0
        })?;
        println!("RESULT sent={count}");
    }
    Ok(())
}

fn floats(node: &hako::Node, mode: &str, count: u64) -> Res {
    let service = node
        .service_builder(&"py/floats".try_into()?)
        .publish_subscribe::<[f32]>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(4)
        .open_or_create()?;
    let value = |seq: u64, i: usize| (seq * 1000) as f32 + i as f32;
    if mode == "floats-sub" {
        let sub = service.subscriber_builder().create()?;
        println!("READY");
        for seq in 0..count {
            let s = sub
                .receive_timeout(WAIT)?
                .ok_or_else(|| format!("sample {seq} did not come"))?;
            if s.len() != FLOATS || s.iter().enumerate().any(|(i, &x)| x != value(seq, i)) {
                return Err(format!("sample {seq} is wrong (length {})", s.len()).into());
            }
        }
        println!("RESULT received={count}");
    } else {
        let publisher = service.publisher_builder().max_slice_len(FLOATS).create()?;
        until("a subscriber", || publisher.subscriber_count() > 0)?;
        for seq in 0..count {
            let loan = publisher.loan_slice_uninit(FLOATS)?;
            loan.write_from_fn(|i| value(seq, i)).send();
        }
        until("the subscriber's leaving", || {
            publisher.subscriber_count() == 0
        })?;
        println!("RESULT sent={count}");
    }
    Ok(())
}

fn reqres(node: &hako::Node) -> Result<hako::ReqResService<[u8], [u64]>, hako::ServiceError> {
    node.service_builder(&"py/rr".try_into().expect("a valid name"))
        .request_response::<[u8], [u64]>()
        .max_response_buffer(4)
        .open_or_create()
}

fn answers(request: &[u8], seq: u64) -> [u64; 3] {
    [
        request.len() as u64,
        request.iter().map(|&b| u64::from(b)).sum(),
        seq,
    ]
}

fn serve(node: &hako::Node, count: u64) -> Res {
    let server = reqres(node)?.server_builder().max_slice_len(1).create()?;
    println!("READY");
    for seq in 0..count {
        let request = server
            .receive_timeout(WAIT)?
            .ok_or_else(|| format!("request {seq} did not come"))?;
        for a in answers(&request, seq) {
            request.send_slice_copy(&[a])?;
        }
    }
    println!("RESULT served={count}");
    Ok(())
}

fn ask(node: &hako::Node, count: u64) -> Res {
    let client = reqres(node)?.client_builder().max_slice_len(64).create()?;
    until("a server", || client.server_count() > 0)?;
    for seq in 0..count {
        let text = format!("request {seq}");
        let pending = client.send_slice_copy(text.as_bytes())?;
        let mut got = Vec::new();
        while let Some(r) = pending.blocking_receive()? {
            got.extend_from_slice(&r);
        }
        if got != answers(text.as_bytes(), seq) {
            return Err(format!("responses to {text:?} are wrong: {got:?}").into());
        }
    }
    println!("RESULT asked={count}");
    Ok(())
}
