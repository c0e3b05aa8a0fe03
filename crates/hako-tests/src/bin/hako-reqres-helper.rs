//! `hako-reqres-helper`: the processes of the request/response tests.
//!
//! Roles (each reports `RESULT key=value ...` on stdout when done, and
//! `ERROR ...` with exit code 1 on an unexpected error):
//!
//! * `serve` — a server of a `u64 → u64` service. A request `n` is
//!   answered with `--stream` responses `n * 1000 + i`. With `--hold-file`
//!   it holds every request until that file exists, then reports how many
//!   clients are still there. With `--hang-after` it stops answering (and
//!   touches `--hung-file`) after that many responses, to be killed.
//!   Serves until `--stop-file` exists.
//! * `request` — a client: `--count` requests, up to `--in-flight` at once,
//!   each checked to get exactly its `--stream` responses and the end of
//!   its stream. With `--hang` it sends `--in-flight` requests, touches
//!   `--sent-file` and waits to be killed. With `--expect-server-gone` it
//!   sends one request, takes responses until the stream fails, reports how
//!   many came, then waits for another server and checks one more request.
//!
//! The domain root comes from `HAKO_ROOT`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use hako::{Node, NodeBuilder, ReqResReceiveError, ReqResService};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Serve(ServeArgs),
    Request(RequestArgs),
}

#[derive(Args, Clone)]
struct Service {
    #[arg(long, default_value = "it/reqres")]
    service: String,
    #[arg(long, default_value_t = 16)]
    in_flight: u32,
    #[arg(long, default_value_t = 4)]
    buffer: u32,
    /// Responses per request.
    #[arg(long, default_value_t = 1)]
    stream: u64,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    svc: Service,
    #[arg(long)]
    ready_file: Option<PathBuf>,
    #[arg(long)]
    stop_file: Option<PathBuf>,
    #[arg(long)]
    hold_file: Option<PathBuf>,
    /// Requests to hold before waiting for the hold file.
    #[arg(long, default_value_t = 1)]
    hold: usize,
    /// Touched once the requests are held.
    #[arg(long)]
    held_file: Option<PathBuf>,
    #[arg(long)]
    hang_after: Option<u64>,
    #[arg(long)]
    hung_file: Option<PathBuf>,
    /// At the stop file, report the pool's free chunks (after a reclaim of
    /// dead nodes, which the test runs first).
    #[arg(long)]
    report_free: bool,
    /// Sleep this long before making the server (a client that starts
    /// first waits for it).
    #[arg(long, default_value_t = 0)]
    delay_start_ms: u64,
}

#[derive(Args)]
struct RequestArgs {
    #[command(flatten)]
    svc: Service,
    #[arg(long, default_value_t = 1)]
    count: u64,
    #[arg(long)]
    hang: bool,
    #[arg(long)]
    sent_file: Option<PathBuf>,
    #[arg(long)]
    expect_server_gone: bool,
    /// Servers may be killed: a request whose server goes is sent again
    /// (every response must still be its own); reports how often.
    #[arg(long)]
    tolerant: bool,
}

fn fail(what: impl std::fmt::Display) -> ! {
    println!("ERROR {what}");
    std::process::exit(1)
}

fn touch(p: &Option<PathBuf>) {
    if let Some(p) = p {
        std::fs::write(p, b"").unwrap_or_else(|e| fail(format!("touch {}: {e}", p.display())));
    }
}

fn exists(p: &Option<PathBuf>) -> bool {
    p.as_deref().is_some_and(Path::exists)
}

fn service(node: &Node, s: &Service) -> ReqResService<u64, u64> {
    node.service_builder(&s.service.as_str().try_into().unwrap_or_else(|e| fail(e)))
        .request_response::<u64, u64>()
        .max_requests_in_flight(s.in_flight)
        .max_response_buffer(s.buffer)
        .open_or_create()
        .unwrap_or_else(|e| fail(e))
}

fn node() -> Node {
    NodeBuilder::new().create().unwrap_or_else(|e| fail(e))
}

fn serve(a: ServeArgs) {
    std::thread::sleep(Duration::from_millis(a.delay_start_ms));
    let node = node();
    let svc = service(&node, &a.svc);
    let server = svc.server_builder().create().unwrap_or_else(|e| fail(e));
    touch(&a.ready_file);
    if a.hold_file.is_some() {
        let mut held = Vec::new();
        while held.len() < a.hold {
            match server.receive_timeout(Duration::from_millis(10)) {
                Ok(Some(r)) => held.push(r),
                Ok(None) => {}
                Err(e) => fail(e),
            }
        }
        touch(&a.held_file);
        while !exists(&a.hold_file) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let connected = held.iter().filter(|r| r.is_connected()).count();
        println!(
            "RESULT role=serve held={} connected={connected}",
            held.len()
        );
        return;
    }
    let (mut served, mut responses) = (0u64, 0u64);
    while !exists(&a.stop_file) {
        let request = match server.receive_timeout(Duration::from_millis(10)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => fail(e),
        };
        for i in 0..a.svc.stream {
            if a.hang_after.is_some_and(|h| responses >= h) {
                touch(&a.hung_file);
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            // A client that went is not an error here: its responses go
            // nowhere.
            let _ = request.send_copy(*request * 1000 + i);
            responses += 1;
        }
        served += 1;
    }
    if a.report_free {
        // A receive follows the table (the test reclaimed dead clients).
        let _ = server.receive();
        println!(
            "RESULT role=serve served={served} responses={responses} free={} pool={}",
            server.free_chunks(),
            server.pool_size()
        );
        return;
    }
    println!("RESULT role=serve served={served} responses={responses}");
}

fn wait_for_server(client: &hako::Client<u64, u64>) {
    if let Err(e) = client.wait_for_server(Duration::from_secs(20)) {
        fail(e);
    }
}

/// Takes a request's whole stream and checks it.
fn check_stream(n: u64, stream: u64, p: &hako::PendingResponse<'_, u64, u64>) {
    for i in 0..stream {
        match p.blocking_receive() {
            Ok(Some(r)) if *r == n * 1000 + i => {}
            Ok(Some(r)) => fail(format!("VERIFY request {n} got {} as response {i}", *r)),
            Ok(None) => fail(format!("VERIFY request {n}'s stream ended after {i}")),
            Err(e) => fail(e),
        }
    }
    match p.blocking_receive() {
        Ok(None) => {}
        Ok(Some(r)) => fail(format!("VERIFY request {n} got an extra response {}", *r)),
        Err(e) => fail(e),
    }
}

/// Takes a request's whole stream; false if its server went first. Every
/// response that came must be the right one.
fn tolerant_stream(n: u64, stream: u64, p: &hako::PendingResponse<'_, u64, u64>) -> bool {
    for i in 0..=stream {
        match p.blocking_receive() {
            Ok(Some(r)) if i < stream && *r == n * 1000 + i => {}
            Ok(Some(r)) => fail(format!("VERIFY request {n} got {} as response {i}", *r)),
            Ok(None) if i == stream => return true,
            Ok(None) => fail(format!("VERIFY request {n}'s stream ended after {i}")),
            Err(ReqResReceiveError::ServerGone) => return false,
            Err(e) => fail(e),
        }
    }
    true
}

fn request(a: RequestArgs) {
    let node = node();
    let svc = service(&node, &a.svc);
    let client = svc.client_builder().create().unwrap_or_else(|e| fail(e));
    wait_for_server(&client);
    if a.hang {
        let pending: Vec<_> = (0..a.svc.in_flight as u64)
            .map(|i| client.send_copy(i).unwrap_or_else(|e| fail(e)))
            .collect();
        touch(&a.sent_file);
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let _ = &pending;
        }
    }
    if a.expect_server_gone {
        let p = client.send_copy(1).unwrap_or_else(|e| fail(e));
        let mut got = 0;
        let error = loop {
            match p.blocking_receive() {
                Ok(Some(_)) => got += 1,
                Ok(None) => fail("the stream ended although the server was killed"),
                Err(e) => break e,
            }
        };
        if error != ReqResReceiveError::ServerGone {
            fail(format!("wrong error: {error}"));
        }
        drop(p);
        // Another server of the service goes on serving.
        let end = Instant::now() + Duration::from_secs(20);
        let again = loop {
            match client.send_copy(2) {
                Ok(p) => break p,
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => fail(e),
            }
        };
        check_stream(2, a.svc.stream, &again);
        println!("RESULT role=request got={got} error=ServerGone again=ok");
        return;
    }
    if a.tolerant {
        let (mut gone, end) = (0u64, Instant::now() + Duration::from_secs(60));
        for n in 0..a.count {
            loop {
                if Instant::now() > end {
                    fail(format!(
                        "request {n} never got through ({gone} servers gone)"
                    ));
                }
                let p = match client.send_copy(n) {
                    Ok(p) => p,
                    Err(_) => {
                        // No server right now (one was killed): try again.
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                };
                if tolerant_stream(n, a.svc.stream, &p) {
                    break;
                }
                gone += 1;
            }
        }
        println!("RESULT role=request answered={} gone={gone}", a.count);
        return;
    }
    let mut in_flight = std::collections::VecDeque::new();
    let (mut sent, mut answered) = (0u64, 0u64);
    while answered < a.count {
        while sent < a.count && in_flight.len() < a.svc.in_flight as usize {
            in_flight.push_back((sent, client.send_copy(sent).unwrap_or_else(|e| fail(e))));
            sent += 1;
        }
        let (n, p) = in_flight
            .pop_front()
            .unwrap_or_else(|| fail("nothing in flight"));
        check_stream(n, a.svc.stream, &p);
        answered += 1;
    }
    println!("RESULT role=request answered={answered}");
}

fn main() {
    match Cli::parse().cmd {
        Cmd::Serve(a) => serve(a),
        Cmd::Request(a) => request(a),
    }
}
