//! `hako record`: every sample of publish/subscribe services into an MCAP
//! file (laid out as [`super::recording`] says).
//!
//! One subscriber per service, all waited on in one waitset; each sample is
//! written from where it lies in shared memory into the file's buffer, then
//! let go. By default the subscribers are lossy, so a recording never holds
//! a publisher back: what it cannot keep up with is missed, and the count
//! goes into the file. `--no-loss` makes them ordinary subscribers: on a
//! backpressure service the publishers then wait for the recording, and
//! nothing is lost (on a drop-oldest service a publisher never waits, so
//! losses stay possible and are counted).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use hako::{ServiceName, WaitSet, WaitStrategy};

use super::open::{node, seconds, service_name, CreateArg};
use super::payload::{self, BytesService, PayloadType};
use super::recording::{self, MESSAGE_ENCODING, METADATA, SCHEMA_ENCODING};
use crate::common::{CliError, DomainArgs};

/// `hako record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Publish/subscribe services to record (any payload types).
    #[arg(required = true)]
    services: Vec<String>,
    /// The MCAP file to write (replaced if it exists).
    #[arg(short, long)]
    output: PathBuf,
    /// Never lose a sample of a backpressure service: its publishers wait
    /// for the recording when it falls behind (without it the recording
    /// never holds a publisher back, and counts what it missed).
    #[arg(long)]
    no_loss: bool,
    /// Stop after this many samples, over all services.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    #[command(flatten)]
    domain: DomainArgs,
}

/// One recorded service.
struct Recorded {
    name: ServiceName,
    ty: PayloadType,
    schema: u16,
    /// Its channel per publisher, and the next sequence number.
    channels: HashMap<u64, (u16, u32)>,
    received: u64,
}

fn failed(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::failure(format!("{what}: {e}"))
}

/// Runs `hako record`.
pub fn record(a: RecordArgs) -> Result<(), CliError> {
    let duration = a.duration.map(|d| seconds(d, "--duration")).transpose()?;
    let cfg = a.domain.config()?;
    let node = node(&a.domain, "record")?;
    // Every service first: a missing one writes no file.
    let mut opened = Vec::new();
    for s in &a.services {
        let name = service_name(s)?;
        let BytesService { service, ty } =
            payload::open(&a.domain, &node, &name, CreateArg { create: false })?;
        let sub = service
            .subscriber_builder()
            .wait_strategy(WaitStrategy::Park)
            .lossy(!a.no_loss)
            .create()
            .map_err(|e| failed(&format!("subscribing to {s:?}"), e))?;
        opened.push((name, ty, sub));
    }
    let file = File::create(&a.output)
        .map_err(|e| failed(&format!("cannot create {}", a.output.display()), e))?;
    // No chunks: each message goes to the file as it comes, a large payload
    // straight from shared memory (the buffer passes writes longer than
    // itself through), and readers find messages by reading the file
    // through, as `hako replay` does.
    let mut out = mcap::WriteOptions::new()
        .compression(None)
        .use_chunks(false)
        .profile("hako")
        .library(concat!("hako record ", env!("CARGO_PKG_VERSION")))
        .create(BufWriter::with_capacity(64 << 10, file))
        .map_err(|e| failed("writing the recording", e))?;
    let (mut recorded, mut subs) = (Vec::new(), Vec::new());
    for (name, ty, sub) in opened {
        let schema = out
            .add_schema(&ty.name, SCHEMA_ENCODING, &recording::schema_data(&ty))
            .map_err(|e| failed("writing the recording", e))?;
        subs.push(sub);
        recorded.push(Recorded {
            name,
            ty,
            schema,
            channels: HashMap::new(),
            received: 0,
        });
    }
    let mut waitset = WaitSet::without_signal_handling().map_err(|e| failed("waitset", e))?;
    for sub in &subs {
        waitset
            .attach_subscriber(sub)
            .map_err(|e| failed("waitset", e))?;
    }
    let term = crate::common::termination_flag();
    let start = Instant::now();
    let mut total = 0u64;
    'recording: while !term.load(std::sync::atomic::Ordering::Relaxed) {
        if duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        for (r, sub) in recorded.iter_mut().zip(&subs) {
            while let Some(sample) = sub
                .receive()
                .map_err(|e| failed(&format!("receiving from {:?}", r.name.as_str()), e))?
            {
                let log_time = recording::now_ns();
                let publisher = sample.publisher_id();
                let (channel, sequence) = match r.channels.get_mut(&publisher) {
                    Some(c) => c,
                    None => {
                        let id = out
                            .add_channel(
                                r.schema,
                                r.name.as_str(),
                                MESSAGE_ENCODING,
                                &recording::channel_metadata(publisher),
                            )
                            .map_err(|e| failed("writing the recording", e))?;
                        r.channels.entry(publisher).or_insert((id, 0))
                    }
                };
                *sequence += 1;
                let header = mcap::records::MessageHeader {
                    channel_id: *channel,
                    sequence: *sequence,
                    log_time,
                    publish_time: log_time,
                };
                out.write_to_known_channel(&header, payload::as_bytes(&sample, &r.ty))
                    .map_err(|e| failed("writing the recording", e))?;
                drop(sample);
                r.received += 1;
                total += 1;
                if a.count.is_some_and(|c| total >= c) {
                    break 'recording;
                }
            }
        }
        waitset
            .wait_and_process_timeout(|_| {}, Duration::from_millis(100))
            .map_err(|e| failed("waiting", e))?;
    }
    let mut counts = std::collections::BTreeMap::new();
    for (r, sub) in recorded.iter().zip(&subs) {
        counts.insert(
            format!("{}.received", r.name.as_str()),
            r.received.to_string(),
        );
        counts.insert(
            format!("{}.missed", r.name.as_str()),
            payload::dropped_for(&cfg, &r.name, sub.id())
                .unwrap_or(0)
                .to_string(),
        );
    }
    out.write_metadata(&mcap::records::Metadata {
        name: METADATA.to_owned(),
        metadata: counts,
    })
    .map_err(|e| failed("writing the recording", e))?;
    out.finish()
        .map_err(|e| failed("finishing the recording", e))?;
    out.into_inner()
        .into_inner()
        .map_err(|e| failed("writing the recording", e.error()))?
        .sync_all()
        .map_err(|e| failed("writing the recording", e))?;
    eprintln!(
        "recorded {total} sample(s) of {} service(s) into {}",
        recorded.len(),
        a.output.display()
    );
    Ok(())
}
