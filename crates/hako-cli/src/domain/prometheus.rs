//! `hako monitor --prometheus ADDR`: every service's counters as
//! OpenMetrics text over HTTP, read from the domain at each scrape.
//!
//! Counters are per port (labels `service`, `pattern`, `port`, `node`), as
//! a port's counters only grow while it lives; a port that leaves takes
//! its series with it. Gauges say what a port holds now, how many ports and
//! nodes a domain has, and which are dead and not yet reclaimed.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use hako::inspect::{DomainView, PortCounters, PortInfo, ServiceInfo};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::view::ReadTrust;
use crate::common::CliError;

/// The OpenMetrics content type.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Reads the domain at each scrape.
#[derive(Debug)]
struct Domain {
    cfg: hako::Config,
    untrusted: bool,
}

/// The labels of one port.
type Labels = Vec<(&'static str, String)>;

/// One metric family being written: its name, help, type and samples.
struct Family {
    name: &'static str,
    help: &'static str,
    counter: bool,
    samples: Vec<(Labels, u64)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str, counter: bool) -> Self {
        Self {
            name,
            help,
            counter,
            samples: Vec::new(),
        }
    }

    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.samples.is_empty() {
            return Ok(());
        }
        let ty = if self.counter {
            ConstCounter::new(0u64).metric_type()
        } else {
            ConstGauge::new(0u64).metric_type()
        };
        let mut family = encoder.encode_descriptor(self.name, self.help, None, ty)?;
        for (labels, value) in &self.samples {
            let sample = family.encode_family(labels)?;
            if self.counter {
                ConstCounter::new(*value).encode(sample)?;
            } else {
                ConstGauge::new(*value).encode(sample)?;
            }
        }
        Ok(())
    }
}

/// The port's labels.
fn labels(s: &ServiceInfo, p: &PortInfo, role: &str) -> Labels {
    vec![
        ("service", s.name.clone()),
        ("pattern", s.description.pattern.name().to_owned()),
        ("role", role.to_owned()),
        ("port", format!("{:016x}", p.id)),
        ("node", format!("{:016x}", p.node)),
    ]
}

impl Domain {
    fn view(&self) -> std::io::Result<Option<DomainView>> {
        if self.untrusted {
            DomainView::open_untrusted(&self.cfg)
        } else {
            DomainView::open(&self.cfg)
        }
    }

    /// Every family, filled from the domain as it is now.
    fn families(&self) -> Vec<Family> {
        let mut sent = Family::new("hako_sent", "Samples a publisher sent.", true);
        let mut deliveries = Family::new(
            "hako_deliveries",
            "Deliveries of a publisher's samples (one per subscriber reached).",
            true,
        );
        let mut overflow = Family::new(
            "hako_overflow",
            "Deliveries a publisher dropped because a queue was full (overflow).",
            true,
        );
        let mut received = Family::new(
            "hako_received",
            "Samples a subscriber received (requests, for a server).",
            true,
        );
        let mut dropped = Family::new(
            "hako_dropped",
            "Samples the present publishers dropped for a subscriber (overflow).",
            true,
        );
        let mut requests = Family::new("hako_requests_sent", "Requests a client sent.", true);
        let mut responses = Family::new(
            "hako_responses_sent",
            "Responses a server sent (ends of streams included).",
            true,
        );
        let mut in_use = Family::new(
            "hako_chunks_in_use",
            "Chunks of a port's pool in use now (loaned, queued, held or in the history).",
            false,
        );
        let mut pool = Family::new("hako_pool_chunks", "Chunks in a port's pool.", false);
        let mut ports = Family::new(
            "hako_ports",
            "Ports of a service, by role and whether their process is alive.",
            false,
        );
        let mut corrupted = Family::new(
            "hako_corrupted_ports",
            "Ports of a service whose data segment failed validation.",
            false,
        );
        let mut nodes = Family::new(
            "hako_nodes",
            "Nodes of the domain, alive or dead (a dead node is reclaimed when a node \
             starts or `hako clean` runs).",
            false,
        );
        let mut unreadable = Family::new(
            "hako_unreadable_services",
            "Services of the domain whose files could not be read.",
            false,
        );
        let view = match self.view() {
            Ok(Some(v)) => v,
            _ => return vec![nodes],
        };
        if let Ok(all) = view.nodes() {
            let alive = all.iter().filter(|n| n.alive).count() as u64;
            nodes.samples.push((vec![("state", "alive".into())], alive));
            nodes
                .samples
                .push((vec![("state", "dead".into())], all.len() as u64 - alive));
        }
        let services = view.services().unwrap_or_default();
        let bad = services.iter().filter(|s| s.is_err()).count() as u64;
        unreadable.samples.push((Vec::new(), bad));
        for s in services.iter().flatten() {
            let (senders, receivers) = match s.description.pattern {
                hako::Pattern::PublishSubscribe { .. } => ("publisher", "subscriber"),
                hako::Pattern::RequestResponse { .. } => ("client", "server"),
                _ => ("notifier", "listener"),
            };
            for (list, role) in [(&s.publishers, senders), (&s.subscribers, receivers)] {
                for alive in [true, false] {
                    let n = list.iter().filter(|p| p.node_alive == alive).count() as u64;
                    let mut l = vec![
                        ("service", s.name.clone()),
                        ("pattern", s.description.pattern.name().to_owned()),
                        ("role", role.to_owned()),
                    ];
                    l.push(("state", if alive { "alive" } else { "dead" }.to_owned()));
                    ports.samples.push((l, n));
                }
                for p in list {
                    let l = labels(s, p, role);
                    match p.counters {
                        PortCounters::Publisher {
                            sent: s_,
                            deliveries: d,
                            dropped: o,
                            chunks_in_use,
                            pool_size,
                            ..
                        } => {
                            sent.samples.push((l.clone(), s_));
                            deliveries.samples.push((l.clone(), d));
                            overflow.samples.push((l.clone(), o));
                            in_use.samples.push((l.clone(), chunks_in_use));
                            pool.samples.push((l, pool_size));
                        }
                        PortCounters::Subscriber {
                            received: r,
                            dropped: d,
                        } => {
                            received.samples.push((l.clone(), r));
                            dropped.samples.push((l, d));
                        }
                        PortCounters::Client {
                            requests_sent,
                            requests_in_use,
                            pool_size,
                        } => {
                            requests.samples.push((l.clone(), requests_sent));
                            in_use.samples.push((l.clone(), requests_in_use));
                            pool.samples.push((l, pool_size));
                        }
                        PortCounters::Server {
                            requests_received,
                            responses_sent,
                            responses_in_use,
                            pool_size,
                        } => {
                            received.samples.push((l.clone(), requests_received));
                            responses.samples.push((l.clone(), responses_sent));
                            in_use.samples.push((l.clone(), responses_in_use));
                            pool.samples.push((l, pool_size));
                        }
                        _ => {}
                    }
                }
            }
            let bad = s
                .publishers
                .iter()
                .chain(&s.subscribers)
                .filter(|p| p.corrupted.is_some())
                .count() as u64;
            corrupted
                .samples
                .push((vec![("service", s.name.clone())], bad));
        }
        vec![
            sent, deliveries, overflow, received, dropped, requests, responses, in_use, pool,
            ports, corrupted, nodes, unreadable,
        ]
    }
}

impl Collector for Domain {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.families() {
            f.encode(&mut encoder)?;
        }
        Ok(())
    }
}

/// The OpenMetrics text of the domain of `cfg` now.
fn scrape(registry: &Registry) -> Result<String, CliError> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .map_err(|e| CliError::failure(format!("encoding the metrics: {e}")))?;
    Ok(text)
}

/// Serves the domain's metrics at `addr` (`/metrics`) until Ctrl-C or
/// SIGTERM.
pub(super) fn serve(cfg: hako::Config, trust: &ReadTrust, addr: &str) -> Result<(), CliError> {
    let addr: SocketAddr = addr.parse().map_err(|e| {
        CliError::usage(format!(
            "--prometheus {addr:?}: not an address and port ({e}); e.g. 127.0.0.1:9464"
        ))
    })?;
    let server = tiny_http::Server::http(addr)
        .map_err(|e| CliError::failure(format!("cannot listen on {addr}: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .map_or_else(|| addr.to_string(), |a| a.to_string());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Domain {
        cfg,
        untrusted: trust.untrusted(),
    }));
    println!("serving the metrics of the domain at http://{bound}/metrics");
    let _ = std::io::stdout().flush();
    let term = crate::common::termination_flag();
    while !term.load(std::sync::atomic::Ordering::Relaxed) {
        let request = match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => return Err(CliError::failure(format!("serving {bound}: {e}"))),
        };
        let path = request.url().split('?').next().unwrap_or_default();
        let response = if path == "/metrics" || path == "/" {
            let body = scrape(&registry)?;
            let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE)
                .expect("a valid header");
            tiny_http::Response::from_string(body).with_header(header)
        } else {
            tiny_http::Response::from_string("not found: the metrics are at /metrics\n")
                .with_status_code(404)
        };
        // A scraper that went away is no reason to stop.
        let _ = request.respond(response);
    }
    Ok(())
}
