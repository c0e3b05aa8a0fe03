//! `hako inspect`: one service, its settings and every port's counters.

use clap::Args;
use hako::inspect::{PortCounters, PortInfo};
use hako::{Pattern, ServiceName};
use serde_json::json;

use super::view::{open_view, pattern_name, payload_name, port_names, ReadTrust};
use crate::common::{exit, CliError, DomainArgs};

/// `hako inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The service, e.g. `My/Funk/ServiceName`.
    service: String,
    #[command(flatten)]
    domain: DomainArgs,
    #[command(flatten)]
    trust: ReadTrust,
}

fn port_line(p: &PortInfo) -> String {
    let state = if p.retired {
        "left, samples queued"
    } else if p.node_alive {
        "alive"
    } else {
        "DEAD"
    };
    if let Some(what) = &p.corrupted {
        return format!(
            "{:016x}  node {:016x} ({state})  CORRUPTED data segment: {what}; \
             its peers ignore it",
            p.id, p.node
        );
    }
    let counters = match p.counters {
        PortCounters::Publisher {
            sent,
            deliveries,
            dropped,
            loans,
            chunks_in_use,
            pool_size,
        } => format!(
            "sent {sent}, delivered {deliveries}, dropped {dropped}, loans {loans}, \
             chunks in use {chunks_in_use}/{pool_size}"
        ),
        PortCounters::Subscriber { received, dropped } => {
            let lossy = if p.lossy {
                " (lossy: never waited for)"
            } else {
                ""
            };
            format!("received {received}, lost to overflow {dropped}{lossy}")
        }
        PortCounters::Client {
            requests_sent,
            requests_in_use,
            pool_size,
        } => format!(
            "requests sent {requests_sent}, in flight or held {requests_in_use}/{pool_size}"
        ),
        PortCounters::Server {
            requests_received,
            responses_sent,
            responses_in_use,
            pool_size,
        } => format!(
            "requests received {requests_received}, responses sent {responses_sent}, \
             responses in use {responses_in_use}/{pool_size}"
        ),
        _ => String::new(),
    };
    format!("{:016x}  node {:016x} ({state})  {counters}", p.id, p.node)
}

/// Runs `hako inspect`.
pub fn inspect(a: InspectArgs) -> Result<(), CliError> {
    let cfg = a.domain.config()?;
    let name = ServiceName::new(&a.service).map_err(|e| CliError::usage(e.to_string()))?;
    let view = open_view(&cfg, &a.trust)?;
    let info = match view.service(&name) {
        Ok(i) => i,
        Err(hako::ServiceError::DoesNotExist(_)) => {
            return Err(CliError {
                code: exit::NOT_FOUND,
                message: format!(
                    "no service {:?} in {} (`hako list` shows what is there)",
                    a.service,
                    cfg.root.display()
                ),
            })
        }
        Err(e) => return Err(CliError::failure(e.to_string())),
    };
    if a.domain.json() {
        println!("{}", serde_json::to_string_pretty(&info).expect("JSON"));
        return Ok(());
    }
    let (first, second) = port_names(&info);
    println!("service   {}", info.name);
    println!("pattern   {}", pattern_name(&info));
    // Settings as the config file and the JSON spell them (`key = value`),
    // sizes as `hako sub` prints them.
    match &info.description.pattern {
        Pattern::PublishSubscribe { payload, qos } => {
            println!(
                "payload   {} ({} B, align {})",
                payload_name(&info),
                payload.size,
                payload.align
            );
            println!(
                "qos       subscriber_max_buffer_size = {}, subscriber_max_borrowed_samples = {}, \
                 history_size = {}, overflow = {}, max_publishers = {}, max_subscribers = {}, \
                 max_nodes = {}",
                qos.subscriber_max_buffer_size,
                qos.subscriber_max_borrowed_samples,
                qos.history_size,
                json!(qos.overflow).as_str().unwrap_or("?"),
                qos.max_publishers,
                qos.max_subscribers,
                qos.max_nodes
            );
        }
        Pattern::Event { qos } => println!(
            "qos       max_notifiers = {}, max_listeners = {}, max_nodes = {}, event_id_max = {}",
            qos.max_notifiers, qos.max_listeners, qos.max_nodes, qos.event_id_max
        ),
        Pattern::RequestResponse {
            request,
            response,
            qos,
        } => {
            println!(
                "request   {} ({} B, align {})",
                request.type_name, request.size, request.align
            );
            println!(
                "response  {} ({} B, align {})",
                response.type_name, response.size, response.align
            );
            println!(
                "qos       max_requests_in_flight = {}, max_response_buffer = {}, \
                 max_clients = {}, max_servers = {}, max_nodes = {}",
                qos.max_requests_in_flight,
                qos.max_response_buffer,
                qos.max_clients,
                qos.max_servers,
                qos.max_nodes
            );
        }
        Pattern::Blackboard { qos, .. } => {
            println!(
                "qos       max_readers = {}, max_nodes = {}",
                qos.max_readers, qos.max_nodes
            );
            println!("entries   ({})", info.entries.len());
            for e in &info.entries {
                let version = e
                    .version
                    .map_or_else(|| "corrupted".to_owned(), |v| format!("version {v}"));
                println!(
                    "  {}  {} ({} B, align {})  {version}",
                    e.key, e.value.type_name, e.value.size, e.value.align
                );
            }
        }
        _ => {}
    }
    println!("directory {}", info.dir.display());
    println!("nodes     {}", info.nodes.len());
    for (title, ports) in [(first, &info.publishers), (second, &info.subscribers)] {
        println!("{title} ({})", ports.len());
        for p in ports {
            println!("  {}", port_line(p));
        }
    }
    Ok(())
}
