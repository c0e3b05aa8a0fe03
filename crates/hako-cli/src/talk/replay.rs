//! `hako replay`: publishes the samples of an MCAP recording of `hako
//! record` again, with the recorded timing.
//!
//! Each recorded service is opened (or made, with the recorded payload
//! type) and gets one publisher; the messages go out in the order they were
//! recorded, each when as much time has passed since the first as had
//! passed when it was recorded (divided by `--rate`).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use hako::Publisher;

use super::open::{node, seconds, service_name};
use super::payload::{self, BytesService, PayloadType};
use super::recording::{self, MESSAGE_ENCODING};
use crate::common::{CliError, DomainArgs};

/// `hako replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The MCAP file `hako record` wrote.
    file: PathBuf,
    /// Play this many times faster (0.5: half as fast).
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// Play the recording again and again, until Ctrl-C.
    #[arg(long = "loop")]
    repeat: bool,
    /// Only these services (default: every recorded one).
    #[arg(long = "service")]
    services: Vec<String>,
    /// Before playing, wait until every service has this many subscribers.
    #[arg(long, default_value_t = 0)]
    wait_subscribers: usize,
    /// Give up waiting for subscribers after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Never create a service: play only into services that exist (by
    /// default a missing one is made with the recorded payload type and the
    /// default settings).
    #[arg(long)]
    no_create: bool,
    #[command(flatten)]
    domain: DomainArgs,
}

/// A recorded service: its type, the longest message, and its publisher.
struct Played {
    ty: PayloadType,
    longest: usize,
    publisher: Option<Publisher<[u8]>>,
}

fn bad_file(a: &ReplayArgs, e: impl std::fmt::Display) -> CliError {
    CliError::failure(format!("reading {}: {e}", a.file.display()))
}

/// Runs `hako replay`.
pub fn replay(a: ReplayArgs) -> Result<(), CliError> {
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(CliError::usage("--rate must be a positive number"));
    }
    let timeout = seconds(a.timeout, "--timeout")?;
    let file = File::open(&a.file).map_err(|e| bad_file(&a, e))?;
    // SAFETY: the recording is mapped read-only and private; a process that
    // truncated the file meanwhile would make reading it fault, as it would
    // for any reader of a file being cut under it.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| bad_file(&a, e))?;
    // First pass: the services, their types and longest messages.
    let mut services: BTreeMap<String, Played> = BTreeMap::new();
    for m in mcap::MessageStream::new(&map).map_err(|e| bad_file(&a, e))? {
        let m = m.map_err(|e| bad_file(&a, e))?;
        let topic = &m.channel.topic;
        if !a.services.is_empty() && !a.services.contains(topic) {
            continue;
        }
        if m.channel.message_encoding != MESSAGE_ENCODING {
            return Err(bad_file(
                &a,
                format!(
                    "channel {topic:?} is encoded as {:?}, not as hako record writes",
                    m.channel.message_encoding
                ),
            ));
        }
        match services.get_mut(topic) {
            Some(p) => p.longest = p.longest.max(m.data.len()),
            None => {
                let ty = recording::schema_type(topic, m.channel.schema.as_deref())?;
                services.insert(
                    topic.clone(),
                    Played {
                        ty,
                        longest: m.data.len(),
                        publisher: None,
                    },
                );
            }
        }
    }
    if let Some(missing) = a.services.iter().find(|s| !services.contains_key(*s)) {
        return Err(CliError::usage(format!(
            "{missing:?} is not among the services recorded in {}",
            a.file.display()
        )));
    }
    let node = node(&a.domain, "replay")?;
    for (topic, p) in &mut services {
        let name = service_name(topic)?;
        let BytesService { service, ty } = payload::open_typed(&node, &name, &p.ty, !a.no_create)?;
        let elements = p.longest.checked_div(ty.size).unwrap_or(1);
        let publisher = service
            .publisher_builder()
            .max_slice_len(elements.max(1))
            .create()
            .map_err(|e| CliError::failure(format!("a publisher on {topic:?}: {e}")))?;
        p.publisher = Some(publisher);
    }
    let term = crate::common::termination_flag();
    let stop = || term.load(std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    for (topic, p) in &services {
        let publisher = p.publisher.as_ref().expect("made above");
        while publisher.subscriber_count() < a.wait_subscribers {
            if stop() {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(CliError {
                    code: crate::common::exit::TIMED_OUT,
                    message: format!(
                        "{topic:?} has {} subscriber(s), not {}, after {timeout:?}",
                        publisher.subscriber_count(),
                        a.wait_subscribers
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
            publisher.update_connections();
        }
    }
    let by_name: HashMap<&str, &Played> = services.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut sent = 0u64;
    loop {
        let (mut first, begun) = (None::<u64>, Instant::now());
        for m in mcap::MessageStream::new(&map).map_err(|e| bad_file(&a, e))? {
            if stop() {
                return Ok(());
            }
            let m = m.map_err(|e| bad_file(&a, e))?;
            let Some(p) = by_name.get(m.channel.topic.as_str()) else {
                continue;
            };
            let t0 = *first.get_or_insert(m.log_time);
            let offset = Duration::from_nanos(m.log_time.saturating_sub(t0)).div_f64(a.rate);
            let due = begun + offset;
            while Instant::now() < due {
                if stop() {
                    return Ok(());
                }
                std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
            }
            let publisher = p.publisher.as_ref().expect("made above");
            payload::send(publisher, &p.ty, &m.channel.topic, &m.data)?;
            sent += 1;
        }
        if !a.repeat || stop() {
            break;
        }
    }
    eprintln!("replayed {sent} sample(s) from {}", a.file.display());
    Ok(())
}
