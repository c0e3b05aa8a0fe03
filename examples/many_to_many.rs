//! Many to many: three publisher processes and two subscriber processes on
//! one service. Each subscriber receives every publisher's messages, in order
//! per publisher. The program starts all five as copies of itself.
//!
//! ```text
//! cargo run --example many_to_many
//! ```

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use hako::{NodeBuilder, OverflowPolicy, PubSubService, ShmSafe};

#[derive(Debug, Clone, Copy, ShmSafe)]
#[repr(C)]
struct Reading {
    sensor: u32,
    seq: u32,
}

const SERVICE: &str = "Examples/ManyToMany";
const PUBLISHERS: u32 = 3;
const SUBSCRIBERS: u32 = 2;
const PER_PUBLISHER: u32 = 5;

fn open(node: &hako::Node) -> Result<PubSubService<Reading>, hako_examples::Report> {
    Ok(node
        .service_builder(&SERVICE.try_into()?)
        .publish_subscribe::<Reading>()
        .max_publishers(PUBLISHERS)
        .max_subscribers(SUBSCRIBERS)
        .subscriber_max_buffer_size(PER_PUBLISHER)
        .overflow_policy(OverflowPolicy::Backpressure)
        .open_or_create()?)
}

fn main() -> Result<(), hako_examples::Report> {
    let args: Vec<String> = std::env::args().collect();
    let node = NodeBuilder::new().create()?;
    match args.get(1).map(String::as_str) {
        Some("publish") => {
            let sensor: u32 = args[2].parse()?;
            let service = open(&node)?;
            let publisher = service.publisher_builder().create()?;
            while publisher.subscriber_count() < SUBSCRIBERS as usize {
                std::thread::sleep(Duration::from_millis(1));
            }
            for seq in 0..PER_PUBLISHER {
                publisher.send_copy(Reading { sensor, seq })?;
            }
        }
        Some("subscribe") => {
            let id: u32 = args[2].parse()?;
            let service = open(&node)?;
            let subscriber = service.subscriber_builder().create()?;
            let mut seen: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            while seen.values().map(Vec::len).sum::<usize>() < (PUBLISHERS * PER_PUBLISHER) as usize
            {
                match subscriber.receive()? {
                    Some(r) => seen.entry(r.sensor).or_default().push(r.seq),
                    None => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            for (sensor, seqs) in seen {
                println!("subscriber {id}: sensor {sensor} -> {seqs:?}");
            }
        }
        _ => {
            // Keep the service open while the children come and go.
            let _service = open(&node)?;
            let exe = std::env::current_exe()?;
            let mut children = Vec::new();
            for i in 0..SUBSCRIBERS {
                children.push(
                    Command::new(&exe)
                        .args(["subscribe", &i.to_string()])
                        .spawn()?,
                );
            }
            for i in 0..PUBLISHERS {
                children.push(
                    Command::new(&exe)
                        .args(["publish", &i.to_string()])
                        .spawn()?,
                );
            }
            for mut c in children {
                c.wait()?;
            }
        }
    }
    Ok(())
}
