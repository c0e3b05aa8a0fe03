//! `endure`: a publisher or a subscriber that keeps going while another
//! process truncates the service's files under it (issue 24: no SIGBUS),
//! and says at the end what it saw.
//!
//! * `--role publisher`: sends a `TestMsg` every `--interval-us` until the
//!   stop file exists; prints `RESULT role=publisher sent=N corrupted=0|1`
//!   (`Publisher::is_corrupted`).
//! * `--role subscriber`: receives (100 ms waits) until the stop file
//!   exists, creating `<got-file>` at the first sample; prints
//!   `RESULT role=subscriber received=N zeroed=N corrupted_publisher=N
//!   corrupted_service=N other_errors=N` (zeroed: samples read whole that
//!   were not intact, their payload lost to the truncation).
//!
//! Both exit 0 when they ran to the stop file: dying of SIGBUS is what the
//! test looks for.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use hako::{ReceiveError, ServiceName};
use hako_tests::{exit, TestMsg};

use crate::errors::die;
use crate::plumbing::{node, touch};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Publisher,
    Subscriber,
}

#[derive(Args, Debug)]
pub struct EndureArgs {
    #[arg(long, value_enum)]
    role: Role,
    /// The publish/subscribe service.
    #[arg(long)]
    service: String,
    /// Runs until this file exists.
    #[arg(long)]
    stop_file: PathBuf,
    /// Subscriber: created at the first sample.
    #[arg(long)]
    got_file: Option<PathBuf>,
    /// Publisher: microseconds between two sends.
    #[arg(long, default_value_t = 200)]
    interval_us: u64,
}

pub fn endure(a: EndureArgs) {
    let node = node();
    let name = ServiceName::new(&a.service).expect("a valid name");
    let svc = node
        .service_builder(&name)
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap_or_else(|e| die(exit::FAILURE, "ServiceError", e));
    match a.role {
        Role::Publisher => {
            let publisher = svc
                .publisher_builder()
                .create()
                .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
            let mut sent = 0u64;
            while !a.stop_file.exists() {
                // A loan can fail once the pool reads zeros: counted, not fatal.
                if publisher.send_copy(TestMsg::new(0, sent)).is_ok() {
                    sent += 1;
                }
                std::thread::sleep(Duration::from_micros(a.interval_us));
            }
            println!(
                "RESULT role=publisher sent={sent} corrupted={}",
                u8::from(publisher.is_corrupted())
            );
        }
        Role::Subscriber => {
            let sub = svc
                .subscriber_builder()
                .create()
                .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
            let (mut received, mut zeroed, mut publisher, mut service, mut other) =
                (0u64, 0, 0, 0, 0);
            while !a.stop_file.exists() {
                match sub.receive_timeout(Duration::from_millis(100)) {
                    Ok(Some(s)) => {
                        // Read it all: a payload in a truncated range
                        // faults here and reads zeros (not intact).
                        if !s.is_intact() {
                            zeroed += 1;
                        }
                        received += 1;
                        if received == 1 {
                            touch(&a.got_file);
                        }
                    }
                    Ok(None) => {}
                    Err(ReceiveError::CorruptedPublisher { .. }) => publisher += 1,
                    Err(ReceiveError::CorruptedService(_)) => service += 1,
                    Err(e) => {
                        eprintln!("receive: {e}");
                        other += 1;
                    }
                }
            }
            println!(
                "RESULT role=subscriber received={received} zeroed={zeroed} \
                 corrupted_publisher={publisher} corrupted_service={service} other_errors={other}"
            );
        }
    }
}
