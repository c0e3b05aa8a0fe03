//! `hako call` and `hako serve`: request/response from a terminal, for
//! debugging and scripts.
//!
//! `call` works on a service of any request and response types, as `pub`
//! and `sub` do on publish/subscribe ones: it opens the service with the
//! types it records (`payload.rs`). Requests to a `[u8]` service are
//! text (arguments, or the lines of standard input), or hex with
//! `--hex`; to any other type they are hex, and must fit the type.
//! Responses print as UTF-8 (invalid bytes replaced) from a `[u8]`
//! service, as hex with `--hex`, and as a hex dump headed by the type
//! from any other. `serve --echo` answers each request of a `[u8] →
//! [u8]` service with its own bytes. Both create a missing service (as
//! `[u8] → [u8]`) only with `--create`.

use std::io::BufRead;
use std::time::Duration;

use clap::Args;
use hako::{Node, Pattern, ReqResService, ServiceName, TypeDetails, WaitStrategy};

use super::open::{node, open_error, seconds, CreateArg};
use super::payload::{hex, parse_hex, PayloadType};
use crate::common::{exit, CliError, DomainArgs};

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
    /// Requests are hex (`"0a 00 00 00"`, spaces allowed), and responses
    /// print as hex: the way to talk to a service of other types than
    /// `[u8]`.
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
    let node = node(d, role)?;
    let b = node.service_builder(&name).request_response::<[u8], [u8]>();
    if create.create {
        b.open_or_create()
    } else {
        b.open()
    }
    .map_err(|e| open_error(&name, e))
}

/// A request/response service opened as bytes, with the types it records.
struct TypedService {
    service: ReqResService<[u8], [u8]>,
    request: PayloadType,
    response: PayloadType,
}

/// Opens the service `name` whatever its request and response types (a
/// missing one, with `create`, is made as `[u8] → [u8]`).
fn open_typed(
    d: &DomainArgs,
    node: &Node,
    name: &ServiceName,
    create: CreateArg,
) -> Result<TypedService, CliError> {
    let cfg = d.config()?;
    let recorded = match hako::inspect::service(&cfg, name) {
        Ok(info) => match info.description.pattern {
            Pattern::RequestResponse {
                request, response, ..
            } => Some((request, response)),
            _ => None,
        },
        Err(_) => None,
    };
    let b = node.service_builder(name).request_response::<[u8], [u8]>();
    let details = |p: &hako::PayloadDescription| TypeDetails {
        type_name: p.type_name.clone(),
        size: p.size,
        align: p.align,
        slice: p.slice,
    };
    let service = match recorded {
        Some((req, resp)) => b.payload_types(details(&req), details(&resp)).open(),
        None if create.create => b.open_or_create(),
        None => b.open(),
    }
    .map_err(|e| open_error(name, e))?;
    Ok(TypedService {
        request: PayloadType::of(service.request_payload())?,
        response: PayloadType::of(service.response_payload())?,
        service,
    })
}

fn timed_out(message: String) -> CliError {
    CliError {
        code: exit::TIMED_OUT,
        message,
    }
}

/// Runs `hako call`.
pub fn call(a: CallArgs) -> Result<(), CliError> {
    let timeout = seconds(a.timeout, "--timeout")?;
    let name = ServiceName::new(&a.service).map_err(|e| CliError::usage(e.to_string()))?;
    let node = node(&a.domain, "call")?;
    let TypedService {
        service,
        request: req_ty,
        response: resp_ty,
    } = open_typed(&a.domain, &node, &name, a.create)?;
    let client = service
        .client_builder()
        .max_slice_len(a.max_len / req_ty.size.max(1))
        .wait_strategy(WaitStrategy::Park)
        .create()
        .map_err(failure)?;
    client.wait_for_server(timeout).map_err(|e| match e {
        hako::ServerWaitError::NoServer { .. } => timed_out(e.to_string()),
        e => failure(e),
    })?;
    // A request as bytes: hex, or text for a `[u8]` service.
    let request = |s: &str| -> Result<Vec<u8>, CliError> {
        if a.hex {
            parse_hex(s)
        } else if req_ty.is_bytes() {
            Ok(s.as_bytes().to_vec())
        } else {
            Err(CliError::usage(format!(
                "service {:?} takes requests of {}: give them in hex (--hex)",
                a.service,
                req_ty.describe()
            )))
        }
    };
    let call_one = |bytes: &[u8]| -> Result<(), CliError> {
        if bytes.len() > a.max_len {
            return Err(CliError::usage(format!(
                "request of {} bytes is longer than --max-len {}",
                bytes.len(),
                a.max_len
            )));
        }
        let elements = req_ty.elements(&a.service, bytes.len())?;
        let mut loan = client.loan_slice_uninit(elements).map_err(failure)?;
        // SAFETY: the loan holds `elements` elements of the service's
        // request element size, which is `bytes.len()` bytes (checked by
        // `elements`); `bytes` is this process's own memory.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), loan.as_mut_ptr(), bytes.len()) };
        // SAFETY: every byte was written just above.
        let pending = unsafe { loan.assume_init() }.send().map_err(failure)?;
        loop {
            match pending.receive_timeout(timeout).map_err(failure)? {
                Some(r) => {
                    let n = r.len() * resp_ty.size;
                    // SAFETY: `len` elements of the service's response
                    // element size lie at `as_ptr` while the response lives
                    // (the library checked they fit the server's chunk).
                    let got = unsafe { std::slice::from_raw_parts(r.as_ptr(), n) };
                    print_response(got, &resp_ty, r.len(), a.hex, a.domain.json());
                }
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
            call_one(&request(&line)?)?;
        }
    } else {
        for r in &a.requests {
            call_one(&request(r)?)?;
        }
    }
    Ok(())
}

/// Prints a response of `len` elements of `ty`: text from a `[u8]`
/// service, hex with `hex`, a hex dump headed by the type otherwise.
fn print_response(bytes: &[u8], ty: &PayloadType, len: usize, hex_wanted: bool, json: bool) {
    let text = if ty.is_bytes() && !hex_wanted {
        String::from_utf8_lossy(bytes).into_owned()
    } else if ty.is_bytes() {
        hex(bytes, "")
    } else {
        format!("{}: {}", ty.heading(len), hex(bytes, " "))
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
    let term = crate::common::termination_flag();
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
