//! `hako sub`: printing what a service of any payload type carries.

use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;
use hako::WaitStrategy;

use super::open::{node, seconds, service_name, CreateArg};
use super::payload::{self, BytesService, PayloadType};
use crate::common::{exit, CliError, DomainArgs};

/// `hako sub`.
#[derive(Debug, Args)]
pub struct SubArgs {
    /// The publish/subscribe service (any payload type: a type other than
    /// `[u8]` is printed as a hex dump headed by its name, size and
    /// alignment).
    service: String,
    /// Exit after this many samples (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Exit with code 4 if no sample came for this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Print `[u8]` payloads as hex instead of UTF-8 (other types are
    /// always hex).
    #[arg(long)]
    hex: bool,
    /// Never hold a publisher back: on a backpressure service, samples
    /// this terminal cannot keep up with are lost here (its oldest, counted
    /// as the publishers' overflow) instead of making them wait. For
    /// watching a production service.
    #[arg(long)]
    lossy: bool,
    #[command(flatten)]
    create: CreateArg,
    #[command(flatten)]
    domain: DomainArgs,
}

/// The line printed for a sample of `len` elements, `bytes`, from
/// `publisher`.
fn line(a: &SubArgs, ty: &PayloadType, publisher: u64, len: usize, bytes: &[u8]) -> String {
    let publisher = format!("{publisher:016x}");
    if ty.is_bytes() {
        let text = if a.hex {
            payload::hex(bytes, "")
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        return if a.domain.json() {
            serde_json::json!({ "publisher": publisher, "bytes": bytes.len(), "payload": text })
                .to_string()
        } else {
            text
        };
    }
    if a.domain.json() {
        serde_json::json!({
            "publisher": publisher,
            "type": ty.name,
            "size": ty.size,
            "align": ty.align,
            "slice": ty.slice,
            "len": len,
            "bytes": bytes.len(),
            "hex": payload::hex(bytes, ""),
        })
        .to_string()
    } else if bytes.is_empty() {
        format!("{}:", ty.heading(len))
    } else {
        format!("{}: {}", ty.heading(len), payload::hex(bytes, " "))
    }
}

/// Runs `hako sub`.
pub fn subscribe(a: SubArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let timeout = a.timeout.map(|t| seconds(t, "--timeout")).transpose()?;
    let node = node(&a.domain, "sub")?;
    let BytesService { service, ty } = payload::open(&a.domain, &node, &name, a.create)?;
    let sub = service
        .subscriber_builder()
        .wait_strategy(WaitStrategy::Park)
        .lossy(a.lossy)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let term = crate::common::termination_flag();
    let mut got = 0u64;
    let mut last = Instant::now();
    let mut out = std::io::stdout().lock();
    while a.count.is_none_or(|c| got < c) {
        if term.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        match sub.receive_timeout(Duration::from_millis(100)) {
            Ok(Some(s)) => {
                got += 1;
                last = Instant::now();
                let bytes = payload::bytes_of(&s, &ty);
                let line = line(&a, &ty, s.publisher_id(), s.len(), &bytes);
                // The sample goes back to its publisher before we write.
                drop(s);
                writeln!(out, "{line}")
                    .and_then(|()| out.flush())
                    .map_err(|e| CliError::failure(format!("writing stdout: {e}")))?;
            }
            Ok(None) | Err(hako::ReceiveError::PublishersGone(_)) => {}
            Err(e) => return Err(CliError::failure(e.to_string())),
        }
        if let Some(t) = timeout {
            if last.elapsed() > t {
                return Err(CliError {
                    code: exit::TIMED_OUT,
                    message: format!("no sample on {:?} for {t:?} ({got} received)", a.service),
                });
            }
        }
    }
    Ok(())
}
