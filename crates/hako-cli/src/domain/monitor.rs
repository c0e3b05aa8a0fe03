//! `hako monitor`: per-service message rates, live; with `--prometheus`,
//! the counters served to Prometheus ([`super::prometheus`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Args;
use hako::inspect::PortCounters;
use hako::Pattern;
use serde_json::json;

use super::view::{dead, live, open_view, ReadTrust};
use crate::common::{CliError, DomainArgs};

/// `hako monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Milliseconds between two reports.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    interval: u64,
    /// Stop after this many reports (default: until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
    /// Serve every service's counters as OpenMetrics text at
    /// http://ADDR/metrics for Prometheus, read at each scrape, instead of
    /// printing rates (ADDR defaults to 127.0.0.1:9464; to serve beyond
    /// this machine, name an address of another interface).
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = "127.0.0.1:9464")]
    prometheus: Option<String>,
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

/// One service's line of `hako monitor`.
struct Rates {
    service: String,
    /// Ports of live processes (publishers, notifiers, clients).
    publishers: usize,
    /// Ports of live processes (subscribers, listeners, servers).
    subscribers: usize,
    /// Ports of dead processes not yet reclaimed.
    dead: usize,
    sent: f64,
    delivered: f64,
    /// Deliveries lost to overflow per second.
    dropped: f64,
    corrupted: usize,
}

/// Runs `hako monitor`.
pub fn monitor(a: MonitorArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    if let Some(addr) = &a.prometheus {
        return super::prometheus::serve(cfg, &a.trust, addr);
    }
    let interval = Duration::from_millis(a.interval);
    let term = crate::common::termination_flag();
    // Per port: sent (or requests, responses), deliveries, dropped.
    let mut last: BTreeMap<(String, u64), (u64, u64, u64)> = BTreeMap::new();
    let mut last_at = Instant::now();
    let mut reports = 0u64;
    let mut primed = false;
    loop {
        let now = Instant::now();
        let secs = now.duration_since(last_at).as_secs_f64().max(1e-9);
        last_at = now;
        let all = open_view(&cfg, &a.trust)?
            .services()
            .map_err(|e| CliError::io(&cfg.root, e))?;
        let mut rows = Vec::new();
        let mut seen = BTreeMap::new();
        for s in all.iter().flatten() {
            let (mut sent_rate, mut deliv_rate, mut dropped) = (0.0, 0.0, 0.0);
            for p in &s.publishers {
                if let PortCounters::Publisher {
                    sent,
                    deliveries,
                    dropped: d,
                    ..
                } = p.counters
                {
                    let key = (s.name.clone(), p.id);
                    if let Some((ls, ld, ldr)) = last.get(&key) {
                        sent_rate += sent.saturating_sub(*ls) as f64 / secs;
                        deliv_rate += deliveries.saturating_sub(*ld) as f64 / secs;
                        dropped += d.saturating_sub(*ldr) as f64 / secs;
                    }
                    seen.insert(key, (sent, deliveries, d));
                }
            }
            // Request/response: requests per second as sent, responses per
            // second (ends of streams included) as delivered.
            for p in s.publishers.iter().chain(&s.subscribers) {
                let (count, requests) = match p.counters {
                    PortCounters::Client { requests_sent, .. } => (requests_sent, true),
                    PortCounters::Server { responses_sent, .. } => (responses_sent, false),
                    _ => continue,
                };
                let key = (s.name.clone(), p.id);
                if let Some((ls, _, _)) = last.get(&key) {
                    let rate = count.saturating_sub(*ls) as f64 / secs;
                    if requests {
                        sent_rate += rate;
                    } else {
                        deliv_rate += rate;
                    }
                }
                seen.insert(key, (count, 0, 0));
            }
            let corrupted = s
                .publishers
                .iter()
                .chain(&s.subscribers)
                .filter(|p| p.corrupted.is_some())
                .count();
            rows.push(Rates {
                service: s.name.to_string(),
                publishers: live(&s.publishers),
                subscribers: live(&s.subscribers),
                dead: dead(s),
                sent: sent_rate,
                delivered: deliv_rate,
                dropped,
                corrupted,
            });
        }
        last = seen;
        // Rates need two samples: the first one only primes them, and the
        // first report comes one interval later (so `--count 1` gives real
        // rates too).
        if primed {
            if a.domain.json() {
                let v: Vec<_> = rows
                    .iter()
                    .map(|r| {
                        json!({"service": r.service, "publishers": r.publishers,
                               "subscribers": r.subscribers, "dead_ports": r.dead,
                               "sent_per_s": r.sent, "delivered_per_s": r.delivered,
                               "dropped_per_s": r.dropped, "corrupted_ports": r.corrupted})
                    })
                    .collect();
                println!("{}", serde_json::to_string(&v).expect("JSON"));
            } else {
                let cells: Vec<Vec<String>> = rows
                    .iter()
                    .map(|r| {
                        vec![
                            r.service.clone(),
                            r.publishers.to_string(),
                            r.subscribers.to_string(),
                            r.dead.to_string(),
                            format!("{:.1}", r.sent),
                            format!("{:.1}", r.delivered),
                            format!("{:.1}", r.dropped),
                        ]
                    })
                    .collect();
                crate::table::print(
                    &[
                        "SERVICE",
                        "PUBS",
                        "SUBS",
                        "DEAD",
                        "SENT/S",
                        "DELIVERED/S",
                        "DROPPED/S",
                    ],
                    &cells,
                );
                for r in rows.iter().filter(|r| r.corrupted > 0) {
                    println!(
                        "  {}: {} port(s) with a CORRUPTED data segment: see `hako inspect {}`",
                        r.service, r.corrupted, r.service
                    );
                }
                if rows.is_empty() {
                    println!("(no services in {})", cfg.root.display());
                }
                if all
                    .iter()
                    .flatten()
                    .any(|s| matches!(s.description.pattern, Pattern::RequestResponse { .. }))
                {
                    println!("(request/response: SENT = requests, DELIVERED = responses)");
                }
                println!();
            }
            reports += 1;
            if a.count.is_some_and(|c| reports >= c) {
                return Ok(());
            }
        }
        primed = true;
        let until = Instant::now() + interval;
        while Instant::now() < until {
            if term.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10).min(interval));
        }
    }
}
