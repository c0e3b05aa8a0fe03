//! A waitset: one thread waits on a listener, a subscriber and a timer at
//! once. The program starts two feeders as child processes (copies of
//! itself): one rings a door bell (events), one publishes temperatures. It
//! ends once it has everything both feeders send, or on Ctrl-C.
//!
//! ```text
//! cargo run --example waitset
//! ```

use std::process::Command;
use std::time::Duration;

use hako::{NodeBuilder, ShmSafe, WaitEvent, WaitOutcome, WaitSet};

#[derive(Debug, Clone, Copy, ShmSafe)]
#[repr(C)]
struct Temperature {
    seq: u64,
    celsius: f64,
}

const BELL: &str = "Examples/WaitSet/Bell";
const TEMPERATURE: &str = "Examples/WaitSet/Temperature";
const PER_FEEDER: u64 = 5;

fn main() -> Result<(), hako_examples::Report> {
    let node = NodeBuilder::new().create()?;
    let bell = node
        .service_builder(&BELL.try_into()?)
        .event()
        .open_or_create()?;
    let temperature = node
        .service_builder(&TEMPERATURE.try_into()?)
        .publish_subscribe::<Temperature>()
        .open_or_create()?;

    // The feeders: each stops early on Ctrl-C (node.wait fails).
    match std::env::args().nth(1).as_deref() {
        Some("bell") => {
            let notifier = bell.notifier_builder().create()?;
            for _ in 0..PER_FEEDER {
                if node.wait(Duration::from_millis(300)).is_err() {
                    break;
                }
                notifier.notify()?;
            }
            return Ok(());
        }
        Some("thermometer") => {
            let publisher = temperature.publisher_builder().create()?;
            for seq in 0..PER_FEEDER {
                if node.wait(Duration::from_millis(200)).is_err() {
                    break;
                }
                let celsius = 21.0 - seq as f64 * 0.5;
                publisher.send_copy(Temperature { seq, celsius })?;
            }
            return Ok(());
        }
        _ => {}
    }

    // The ports exist before the feeders start, so nothing is missed.
    let listener = bell.listener_builder().create()?;
    let subscriber = temperature.subscriber_builder().create()?;
    let exe = std::env::current_exe()?;
    let children = [
        Command::new(&exe).arg("bell").spawn()?,
        Command::new(&exe).arg("thermometer").spawn()?,
    ];

    let mut waitset = WaitSet::new()?;
    let ring = waitset.attach_listener(&listener)?;
    let reading = waitset.attach_subscriber(&subscriber)?;
    let tick = waitset.attach_interval(Duration::from_millis(250));

    let (mut rings, mut readings) = (0, 0);
    while rings < PER_FEEDER || readings < PER_FEEDER {
        let outcome = waitset.wait_and_process(|event| match event {
            WaitEvent::Ready(id) if id == ring => {
                for (_, n) in listener.try_wait() {
                    println!("ding dong");
                    rings += n;
                }
            }
            WaitEvent::Ready(id) if id == reading => {
                while let Ok(Some(t)) = subscriber.receive() {
                    println!("temperature #{}: {:.1} °C", t.seq, t.celsius);
                    readings += 1;
                }
            }
            WaitEvent::Tick(id) if id == tick => {
                println!("tick: {rings} ring(s), {readings} reading(s) so far");
            }
            _ => {}
        })?;
        if outcome == WaitOutcome::TerminationRequest {
            break;
        }
    }
    for mut child in children {
        child.wait()?;
    }
    Ok(())
}
