//! `hako hz`: how often a publish/subscribe service's samples arrive, over
//! a sliding window of the latest ones.
//!
//! A lossy subscriber receives every sample it can and lets it go at once,
//! so a publisher is never held back, even on a backpressure service: what
//! it cannot keep up with is lost here, counted by the publishers as their
//! overflow towards it, and reported as `missed`. It times each sample as
//! it arrives, so it takes each one: a publisher pays it a delivery per
//! sample, as for any subscriber. `--counters` takes the rate from the
//! publishers' counters instead, and costs them nothing.

use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

use clap::Args;
use hako::{ServiceName, WaitStrategy};

use super::open::{node, seconds, service_name, CreateArg};
use super::payload::{self, BytesService};
use crate::common::{exit, CliError, DomainArgs};

/// `hako hz`.
#[derive(Debug, Args)]
pub struct HzArgs {
    /// The publish/subscribe service (any payload type).
    service: String,
    /// Samples the statistics are taken over: the latest this many.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(2..))]
    window: u64,
    /// Seconds between two reports.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Stop after this many reports (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Exit with code 4 if no sample came for this many seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Take the rate from the publishers' counters instead of subscribing:
    /// it costs the publishers nothing, but gives no interval statistics
    /// (what a publisher sends, whether or not anyone receives it).
    #[arg(long)]
    counters: bool,
    #[command(flatten)]
    domain: DomainArgs,
}

/// The intervals between the samples of a window, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Intervals {
    /// Intervals in the window (samples - 1).
    pub count: usize,
    /// Their mean.
    pub mean: f64,
    /// The shortest.
    pub min: f64,
    /// The longest.
    pub max: f64,
    /// Their standard deviation (of the window, not an estimate of a
    /// population's).
    pub std_dev: f64,
}

impl Intervals {
    /// The intervals between consecutive `times` (in order); `None` with
    /// fewer than two.
    pub fn of(times: &VecDeque<Instant>) -> Option<Self> {
        let gaps: Vec<f64> = times
            .iter()
            .zip(times.iter().skip(1))
            .map(|(a, b)| b.duration_since(*a).as_secs_f64())
            .collect();
        if gaps.is_empty() {
            return None;
        }
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean) * (g - mean)).sum::<f64>() / n;
        Some(Self {
            count: gaps.len(),
            mean,
            min: gaps.iter().copied().fold(f64::INFINITY, f64::min),
            max: gaps.iter().copied().fold(0.0, f64::max),
            std_dev: var.sqrt(),
        })
    }

    /// Samples per second: one over the mean interval.
    pub fn rate(&self) -> f64 {
        if self.mean > 0.0 {
            1.0 / self.mean
        } else {
            f64::INFINITY
        }
    }
}

/// Seconds as milliseconds with three decimals.
fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// One report: the window's statistics, the samples received and missed.
fn report(a: &HzArgs, w: Option<Intervals>, received: u64, missed: Option<u64>) -> String {
    if a.domain.json() {
        let f = |x: fn(&Intervals) -> f64| w.as_ref().map(x);
        return serde_json::json!({
            "service": a.service,
            "rate_hz": f(Intervals::rate),
            "mean_s": f(|w| w.mean),
            "min_s": f(|w| w.min),
            "max_s": f(|w| w.max),
            "std_dev_s": f(|w| w.std_dev),
            "window": w.map_or(0, |w| w.count + 1),
            "received": received,
            "missed": missed,
        })
        .to_string();
    }
    let missed = missed.map_or_else(|| "?".to_owned(), |m| m.to_string());
    match w {
        None => format!(
            "{}: no rate yet ({received} received, {missed} missed)",
            a.service
        ),
        Some(w) => format!(
            "{}: rate {:.2} Hz | interval mean {}, min {}, max {}, std dev {} | window {} | \
             received {received}, missed {missed}",
            a.service,
            w.rate(),
            ms(w.mean),
            ms(w.min),
            ms(w.max),
            ms(w.std_dev),
            w.count + 1
        ),
    }
}

/// Samples sent so far by each publisher of the service `name`; a missing
/// service is an error.
fn sent(cfg: &hako::Config, name: &ServiceName) -> Result<Vec<(u64, u64)>, CliError> {
    let info = hako::inspect::service(cfg, name).map_err(|e| match e {
        hako::ServiceError::DoesNotExist(_) => CliError {
            code: exit::NOT_FOUND,
            message: format!("service {:?} does not exist", name.as_str()),
        },
        e => CliError::failure(e.to_string()),
    })?;
    Ok(info
        .publishers
        .iter()
        .filter_map(|p| match p.counters {
            hako::inspect::PortCounters::Publisher { sent, .. } => Some((p.id, sent)),
            _ => None,
        })
        .collect())
}

/// `hako hz --counters`: the rate the publishers' counters give, one
/// report per interval.
fn from_counters(
    a: &HzArgs,
    cfg: &hako::Config,
    name: &ServiceName,
    interval: Duration,
) -> Result<(), CliError> {
    let term = crate::common::termination_flag();
    let mut last = sent(cfg, name)?;
    let (mut at, mut reports) = (Instant::now(), 0u64);
    while !term.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(interval.min(Duration::from_millis(50)));
        if at.elapsed() < interval {
            continue;
        }
        let now = sent(cfg, name)?;
        let secs = at.elapsed().as_secs_f64();
        at = Instant::now();
        // Publishers present both times: one that came or went meanwhile
        // has no rate over the interval.
        let delta: u64 = now
            .iter()
            .filter_map(|(id, n)| {
                let before = last.iter().find(|(i, _)| i == id)?.1;
                Some(n.saturating_sub(before))
            })
            .sum();
        last = now;
        let rate = delta as f64 / secs;
        if a.domain.json() {
            println!(
                "{}",
                serde_json::json!({"service": a.service, "rate_hz": rate, "sent": delta,
                                   "publishers": last.len(), "from": "counters"})
            );
        } else {
            println!(
                "{}: rate {rate:.2} Hz from the counters of {} publisher(s) ({delta} sent)",
                a.service,
                last.len()
            );
        }
        reports += 1;
        if a.count.is_some_and(|c| reports >= c) {
            break;
        }
    }
    Ok(())
}

/// Runs `hako hz`.
pub fn hz(a: HzArgs) -> Result<(), CliError> {
    let name = service_name(&a.service)?;
    let interval = seconds(a.interval, "--interval")?.max(Duration::from_millis(10));
    let timeout = a.timeout.map(|t| seconds(t, "--timeout")).transpose()?;
    let cfg = a.domain.config()?;
    if a.counters {
        return from_counters(&a, &cfg, &name, interval);
    }
    let node = node(&a.domain, "hz")?;
    let BytesService { service, .. } =
        payload::open(&a.domain, &node, &name, CreateArg { create: false })?;
    let sub = service
        .subscriber_builder()
        .wait_strategy(WaitStrategy::Park)
        .lossy(true)
        .create()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let term = crate::common::termination_flag();
    let window = usize::try_from(a.window).unwrap_or(usize::MAX);
    let mut times: VecDeque<Instant> = VecDeque::with_capacity(window.min(1 << 20));
    let (mut received, mut reports) = (0u64, 0u64);
    let (mut last, mut next) = (Instant::now(), Instant::now() + interval);
    let mut out = std::io::stdout().lock();
    while !term.load(std::sync::atomic::Ordering::Relaxed) {
        let wait = next.saturating_duration_since(Instant::now());
        match sub.receive_timeout(wait.min(Duration::from_millis(100))) {
            Ok(Some(sample)) => {
                let now = Instant::now();
                // Let go at once: the publisher's chunk is free again.
                drop(sample);
                received += 1;
                last = now;
                if times.len() == window {
                    times.pop_front();
                }
                times.push_back(now);
            }
            Ok(None) | Err(hako::ReceiveError::PublishersGone(_)) => {}
            Err(e) => return Err(CliError::failure(e.to_string())),
        }
        if Instant::now() >= next {
            next += interval;
            let line = report(
                &a,
                Intervals::of(&times),
                received,
                payload::dropped_for(&cfg, &name, sub.id()),
            );
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(|e| CliError::failure(format!("writing stdout: {e}")))?;
            reports += 1;
            if a.count.is_some_and(|c| reports >= c) {
                break;
            }
        }
        if let Some(t) = timeout {
            if last.elapsed() > t {
                return Err(CliError {
                    code: exit::TIMED_OUT,
                    message: format!(
                        "no sample on {:?} for {t:?} ({received} received)",
                        a.service
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_of_a_window() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut times: VecDeque<Instant> = [0, 10, 20, 40].into_iter().map(at).collect();
        let w = Intervals::of(&times).unwrap();
        assert_eq!(w.count, 3);
        assert!((w.mean - 0.040 / 3.0).abs() < 1e-9, "{w:?}");
        assert!((w.min - 0.010).abs() < 1e-9 && (w.max - 0.020).abs() < 1e-9);
        // Gaps 10, 10, 20 ms: mean 13.33, deviations -3.33, -3.33, 6.67.
        let sd = ((2.0 * (0.010f64 / 3.0).powi(2) + (0.020f64 / 3.0).powi(2)) / 3.0).sqrt();
        assert!((w.std_dev - sd).abs() < 1e-9, "{w:?}");
        assert!((w.rate() - 75.0).abs() < 1e-6, "{}", w.rate());
        times.truncate(1);
        assert!(Intervals::of(&times).is_none());
    }
}
