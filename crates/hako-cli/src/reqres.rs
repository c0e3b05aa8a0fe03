//! `hako call` and `hako serve`: request/response from a terminal, for
//! debugging and scripts.
//!
//! Both use services whose requests and responses are byte slices
//! (`[u8] → [u8]`), which is what they open (or, with `--create`, create); a service of other
//! types is refused with the type error the library gives. `call` prints
//! every response of every request as UTF-8 (invalid bytes replaced), or as
//! hex with `--hex`; `serve --echo` answers each request with its own bytes.

use std::io::BufRead;
use std::time::{Duration, Instant};

use clap::Args;
use hako::{ReqResService, ServiceName, WaitStrategy};

use crate::talk::CreateArg;
use crate::{exit, CliError, DomainArgs};

/// `hako call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The service (requests and responses `[u8]`).
    service: String,
    /// Requests to send, one after the other; none: the lines of stdin.
    requests: Vec<String>,
    /// Give up waiting for a server, or for a response, after this many
    /// seconds (exit code 4).
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Print responses as hex instead of UTF-8.
    #[arg(long)]
    hex: bool,
    /// Largest request in bytes.
    #[arg(long, default_value_t = 65536)]
    max_len: usize,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// `hako serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The service (requests and responses `[u8]`).
    service: String,
    /// Answer each request with its own bytes (the only mode so far).
    #[arg(long, required = true)]
    echo: bool,
    /// Exit after this many requests (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Largest response in bytes.
    #[arg(long, default_value_t = 65536)]
    max_len: usize,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

fn failure(e: impl std::fmt::Display) -> CliError {
    CliError::failure(e.to_string())
}

fn open(
    d: &DomainArgs,
    role: &str,
    service: &str,
    create: CreateArg,
) -> Result<ReqResService<[u8], [u8]>, CliError> {
    let name = ServiceName::new(service).map_err(|e| CliError::usage(e.to_string()))?;
    let node = crate::talk::node(d, role)?;
    let b = node.service_builder(&name).request_response::<[u8], [u8]>();
    if create.create {
        b.open_or_create()
    } else {
        b.open()
    }
    .map_err(|e| crate::talk::open_error(&name, e))
}

fn timed_out(message: String) -> CliError {
    CliError {
        code: exit::TIMED_OUT,
        message,
    }
}

/// Runs `hako call`.
pub fn call(a: CallArgs) -> Result<(), CliError> {
    let timeout = crate::talk::seconds(a.timeout, "--timeout")?;
    let svc = open(&a.domain, "call", &a.service, a.create)?;
    let client = svc
        .client_builder()
        .max_slice_len(a.max_len)
        .wait_strategy(WaitStrategy::Park)
        .create()
        .map_err(failure)?;
    let start = Instant::now();
    while client.server_count() == 0 {
        if start.elapsed() > timeout {
            return Err(timed_out(format!(
                "no server of {:?} came within {timeout:?}",
                a.service
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let call_one = |request: &[u8]| -> Result<(), CliError> {
        if request.len() > a.max_len {
            return Err(CliError::usage(format!(
                "request of {} bytes is longer than --max-len {}",
                request.len(),
                a.max_len
            )));
        }
        let pending = client.send_slice_copy(request).map_err(failure)?;
        loop {
            match pending.receive_timeout(timeout).map_err(failure)? {
                Some(r) => print_response(&r, a.hex, a.domain.json()),
                None if pending.is_finished() => return Ok(()),
                None => {
                    return Err(timed_out(format!(
                        "the server sent nothing for {timeout:?}"
                    )))
                }
            }
        }
    };
    if a.requests.is_empty() {
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(|e| failure(format!("reading stdin: {e}")))?;
            call_one(line.as_bytes())?;
        }
    } else {
        for r in &a.requests {
            call_one(r.as_bytes())?;
        }
    }
    Ok(())
}

fn print_response(bytes: &[u8], hex: bool, json: bool) {
    let text = if hex {
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    };
    if json {
        println!(
            "{}",
            serde_json::json!({ "bytes": bytes.len(), "response": text })
        );
    } else {
        println!("{text}");
    }
}

/// Runs `hako serve`.
pub fn serve(a: ServeArgs) -> Result<(), CliError> {
    debug_assert!(a.echo);
    let svc = open(&a.domain, "serve", &a.service, a.create)?;
    let server = svc
        .server_builder()
        .max_slice_len(a.max_len)
        .wait_strategy(WaitStrategy::Park)
        .create()
        .map_err(failure)?;
    let term = crate::termination_flag();
    let mut served = 0u64;
    while a.count.is_none_or(|c| served < c) && !term.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(request) = server
            .receive_timeout(Duration::from_millis(100))
            .map_err(failure)?
        else {
            continue;
        };
        if request.len() > a.max_len {
            // Answered with nothing: the stream ends as the request drops.
            eprintln!(
                "hako: a request of {} bytes is longer than --max-len {}; not echoed",
                request.len(),
                a.max_len
            );
        }
        served += 1;
        let bytes = request.len();
        if bytes <= a.max_len && request.expects_response() {
            // The echo is the stream's one response, and its end.
            let echo = request
                .loan_slice_uninit(bytes)
                .map_err(failure)?
                .write_from_slice(&request);
            request.send_last(echo).map_err(failure)?;
        }
        if a.domain.json() {
            println!("{}", serde_json::json!({ "request_bytes": bytes }));
        }
    }
    Ok(())
}
