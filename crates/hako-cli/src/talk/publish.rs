//! `hako pub`: publishing from a terminal, on a service of any payload
//! type.

use std::io::{BufRead, Read};
use std::time::{Duration, Instant};

use clap::Args;

use super::open::{node, seconds, service_name, CreateArg};
use super::payload::{self, BytesService, PayloadType};
use crate::common::{exit, CliError, DomainArgs};

/// `hako pub`.
#[derive(Debug, Args)]
pub struct PubArgs {
    /// The publish/subscribe service (any payload type: messages for a
    /// type other than `[u8]` are given with --hex or --binary).
    service: String,
    /// Messages to send, one sample each: text on a `[u8]` service, hex
    /// with --hex; none: the lines of stdin.
    messages: Vec<String>,
    /// Messages are hex ("0a000000" or "0a 00 00 00"), given as arguments
    /// or as lines of stdin. A message must fit the service's type: exactly
    /// its size, or for a slice a multiple of the element's size.
    #[arg(long)]
    hex: bool,
    /// Read stdin whole as raw bytes, cut into messages of the type's size
    /// (for a slice type such as `[u8]`: all of stdin is one message).
    #[arg(long, conflicts_with_all = ["hex", "messages"])]
    binary: bool,
    /// Send each message this many times.
    #[arg(long, default_value_t = 1)]
    repeat: u64,
    /// Milliseconds to wait between two samples.
    #[arg(long, default_value_t = 0)]
    interval: u64,
    /// Before sending, wait until this many subscribers are connected.
    #[arg(long, default_value_t = 0)]
    wait_subscribers: usize,
    /// Give up waiting for subscribers after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Largest message in bytes (slice payloads such as `[u8]`).
    #[arg(long, default_value_t = 65536)]
    max_len: usize,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

impl PubArgs {
    /// The bytes of the message `m` (text, or hex with `--hex`), checked
    /// against the type and `--max-len`.
    fn message(&self, ty: &PayloadType, m: &str) -> Result<Vec<u8>, CliError> {
        let bytes = if self.hex {
            payload::parse_hex(m)?
        } else {
            m.as_bytes().to_vec()
        };
        self.check(ty, &bytes)?;
        Ok(bytes)
    }

    /// Whether `msg` fits the type and `--max-len`.
    fn check(&self, ty: &PayloadType, msg: &[u8]) -> Result<(), CliError> {
        ty.elements(&self.service, msg.len())?;
        if ty.slice && msg.len() > self.max_len {
            return Err(CliError::usage(format!(
                "message of {} bytes is longer than --max-len {}",
                msg.len(),
                self.max_len
            )));
        }
        Ok(())
    }
}

/// Runs `hako pub`.
pub fn publish(a: PubArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let node = node(&a.domain, "pub")?;
    let BytesService { service, ty } = payload::open(&a.domain, &node, &name, a.create)?;
    if !ty.is_bytes() && !a.hex && !a.binary {
        return Err(CliError::usage(format!(
            "service {:?} carries {}, not text: give messages as hex (--hex \"0a 00 ...\") \
             or raw bytes on stdin (--binary)",
            a.service,
            ty.describe()
        )));
    }
    // What can be checked before waiting for subscribers is: arguments,
    // and stdin read whole. Lines of stdin are checked as they come.
    let mut stdin = Vec::new();
    let given: Option<Vec<Vec<u8>>> = if a.binary {
        std::io::stdin()
            .lock()
            .read_to_end(&mut stdin)
            .map_err(|e| CliError::failure(format!("reading stdin: {e}")))?;
        let messages = ty.split(&a.service, &stdin)?;
        for m in &messages {
            a.check(&ty, m)?;
        }
        Some(messages.into_iter().map(<[u8]>::to_vec).collect())
    } else if a.messages.is_empty() {
        None
    } else {
        Some(
            a.messages
                .iter()
                .map(|m| a.message(&ty, m))
                .collect::<Result<_, _>>()?,
        )
    };
    let mut builder = service.publisher_builder();
    if ty.slice {
        builder = builder.max_slice_len((a.max_len / ty.size.max(1)).max(1));
    }
    let publisher = builder
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let timeout = seconds(a.timeout, "--timeout")?;
    let start = Instant::now();
    while publisher.subscriber_count() < a.wait_subscribers {
        if start.elapsed() > timeout {
            return Err(CliError {
                code: exit::TIMED_OUT,
                message: format!(
                    "{} subscribers connected after {:?}, {} wanted",
                    publisher.subscriber_count(),
                    timeout,
                    a.wait_subscribers
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let send = |msg: &[u8]| -> Result<(), CliError> {
        for _ in 0..a.repeat {
            let n = payload::send(&publisher, &ty, &a.service, msg)?;
            if a.domain.json() {
                println!(
                    "{}",
                    serde_json::json!({ "bytes": msg.len(), "subscribers": n })
                );
            } else {
                println!(
                    "sent {} to {}",
                    crate::common::count(msg.len(), "byte", "bytes"),
                    crate::common::count(n, "subscriber", "subscribers")
                );
            }
            if a.interval > 0 {
                std::thread::sleep(Duration::from_millis(a.interval));
            }
        }
        Ok(())
    };
    match given {
        Some(messages) => messages.iter().try_for_each(|m| send(m))?,
        None => {
            for line in std::io::stdin().lock().lines() {
                let line = line.map_err(|e| CliError::failure(format!("reading stdin: {e}")))?;
                send(&a.message(&ty, &line)?)?;
            }
        }
    }
    // Samples already queued stay readable after we leave.
    Ok(())
}
