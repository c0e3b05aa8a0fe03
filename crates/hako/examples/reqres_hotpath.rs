//! The request/response hot path in one thread: a client loans, writes and
//! sends a request; the server receives it, loans, writes and sends a
//! response and drops the request (ending the stream: a second message);
//! the client receives the response and drops it and its pending response.
//! N times. With `last` the server sends its response with `send_last`,
//! which ends the stream in the same message; with `poll`, as `last`, and
//! the client also polls its pending response ten times while nothing is
//! there yet (the body of a busy-polling client's loop: its cost is the
//! difference to `last`, divided by ten). For instruction counts, run
//! under callgrind:
//!
//! ```text
//! cargo build --release -p hako --example reqres_hotpath
//! valgrind --tool=callgrind target/release/examples/reqres_hotpath 100000 [last|poll]
//! ```
//!
//! Compare with two messages of the publish/subscribe hot path
//! (`hotpath`): a request and its response are two messages.

use hako::{Client, Config, NodeBuilder, Server};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let (last, polls) = match std::env::args().nth(2).as_deref() {
        None => (false, 0),
        Some("last") => (true, 0),
        Some("poll") => (true, 10),
        Some(other) => return Err(format!("unknown mode {other:?} (try last or poll)").into()),
    };
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-reqres-hotpath-{}",
        std::process::id()
    ));
    let cfg = Config::default().with_root(&root);
    {
        let node = NodeBuilder::new().config(&cfg).create()?;
        let svc = node
            .service_builder(&"hotpath".try_into()?)
            .request_response::<[u8], [u8]>()
            .max_clients(1)
            .max_servers(1)
            .open_or_create()?;
        let client = svc.client_builder().max_slice_len(64).create()?;
        let server = svc.server_builder().max_slice_len(64).create()?;
        // One exchange first, from call sites of its own (a program has
        // several, and the compiler may then call the library out of line
        // instead of inlining it), then the measured ones.
        warm_up(&client, &server)?;
        let t0 = std::time::Instant::now();
        let sum = exchange(&client, &server, n, last, polls)?;
        let per = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("{per:.1} ns per request and response (checksum {sum})");
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// `n` requests, each answered (with `last`, by its last response) after
/// `polls` receives that find nothing.
#[inline(never)]
fn exchange(
    client: &Client<[u8], [u8]>,
    server: &Server<[u8], [u8]>,
    n: u64,
    last: bool,
    polls: u32,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut sum = 0u64;
    for i in 0..n {
        let mut q = client.loan_slice_uninit(64)?;
        q.payload_mut()[0].write(i as u8);
        // SAFETY: u8 has no padding; unwritten bytes hold earlier payloads.
        let pending = unsafe { q.assume_init() }.send()?;
        // One call site for each receive, so that the compiler inlines
        // them alike in every mode: the client polls `polls` times
        // before the server answers, then once more.
        let mut k = 0;
        let response = loop {
            if k == polls {
                let request = server.receive()?.ok_or("no request")?;
                let mut r = request.loan_slice_uninit(64)?;
                r.payload_mut()[0].write(request[0].wrapping_add(1));
                // SAFETY: as above.
                let r = unsafe { r.assume_init() };
                if last {
                    request.send_last(r)?;
                } else {
                    r.send()?;
                }
            }
            match pending.receive()? {
                Some(response) if k == polls => break response,
                None if k < polls => k += 1,
                _ => return Err("a response out of turn, or none".into()),
            }
        };
        sum += u64::from(response[0]);
    }
    Ok(sum)
}

/// One request and its response, through call sites of their own.
#[inline(never)]
fn warm_up(
    client: &Client<[u8], [u8]>,
    server: &Server<[u8], [u8]>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut q = client.loan_slice_uninit(64)?;
    q.payload_mut()[0].write(0);
    // SAFETY: u8 has no padding; unwritten bytes hold earlier payloads.
    let pending = unsafe { q.assume_init() }.send()?;
    let request = server.receive()?.ok_or("no request")?;
    let mut r = request.loan_slice_uninit(64)?;
    r.payload_mut()[0].write(1);
    // SAFETY: as above.
    request.send_last(unsafe { r.assume_init() })?;
    pending.receive()?.ok_or("no response")?;
    Ok(())
}
