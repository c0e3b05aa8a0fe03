//! Roles around services and ports: `hold` (a service and maybe a port,
//! until released), `open`, `name` (validate names, use the valid ones),
//! `loans` and `churn` (ports and services come and go).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use hako::{NodeBuilder, Payload, ServiceName};
use hako_tests::{exit, TestMsg};

use crate::errors::{die, die_loan, die_service, die_verify};
use crate::plumbing::{
    node, poll_until, receive_one, service, touch, wait_for, wait_path, SvcArgs,
};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// TestMsg (64 bytes).
    Test,
    /// OtherMsg: another type name.
    Other,
    /// ImpostorMsg: named as TestMsg ("hako_tests::TestMsg"), but 72 bytes.
    Impostor,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PortKind {
    None,
    Publisher,
    Subscriber,
}

#[derive(Args, Debug)]
pub struct HoldArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = PayloadKind::Test)]
    pub payload: PayloadKind,
    /// Port to create after opening the service.
    #[arg(long, value_enum, default_value_t = PortKind::None)]
    port: PortKind,
    /// Create this file on arrival at the start barrier.
    #[arg(long)]
    arrived_file: Option<PathBuf>,
    /// Wait for this file before opening the service (a start barrier).
    #[arg(long)]
    start_file: Option<PathBuf>,
    /// Create this file once the service (and port) exist.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Wait for this file, then wait until the port sees --peers ports of
    /// the other kind, print RESULT and create --done-file.
    #[arg(long)]
    check_file: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    peers: usize,
    #[arg(long)]
    done_file: Option<PathBuf>,
    /// Exit once this file exists.
    #[arg(long)]
    release_file: PathBuf,
}

#[derive(Args, Debug)]
pub struct OpenArgs {
    #[command(flatten)]
    svc: SvcArgs,
    #[arg(long, value_enum, default_value_t = PayloadKind::Test)]
    pub payload: PayloadKind,
}

#[derive(Args, Debug)]
pub struct NameArgs {
    /// A node name to validate.
    #[arg(long)]
    node: Option<String>,
    /// A service name to validate.
    #[arg(long)]
    service: Option<String>,
}

#[derive(Args, Debug)]
pub struct LoansArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// max_loaned_samples of the publisher.
    #[arg(long)]
    max_loans: u32,
    /// Samples to loan (and hold).
    #[arg(long)]
    count: usize,
}

#[derive(Args, Debug)]
pub struct ChurnArgs {
    #[command(flatten)]
    svc: SvcArgs,
    /// Port to create in each iteration.
    #[arg(long, value_enum)]
    port: PortKind,
    /// Iterations.
    #[arg(long)]
    iterations: u64,
    /// Wait for this file before the first iteration (a start barrier).
    #[arg(long)]
    start_file: Option<PathBuf>,
    /// Publishers send one message per iteration (it may still be queued
    /// when the publisher leaves).
    #[arg(long)]
    send: bool,
}

// ---------------------------------------------------------------- hold

pub fn hold<T: Payload + ?Sized>(a: HoldArgs) {
    touch(&a.arrived_file);
    wait_for(&a.start_file);
    let node = node();
    let svc = service::<T>(&node, &a.svc);
    let publisher = (a.port == PortKind::Publisher).then(|| {
        svc.publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e))
    });
    let subscriber = (a.port == PortKind::Subscriber).then(|| {
        svc.subscriber_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e))
    });
    touch(&a.ready_file);
    if let Some(check) = &a.check_file {
        wait_path(check);
        let peers = if let Some(p) = &publisher {
            poll_until(|| p.subscriber_count() == a.peers);
            p.subscriber_count()
        } else if let Some(s) = &subscriber {
            poll_until(|| s.publisher_count() == a.peers);
            s.publisher_count()
        } else {
            0
        };
        let d = svc.description();
        let p = svc.payload();
        // One line that must be identical in every process of the domain.
        println!(
            "DESC name={} pattern={} type={} size={} align={} slice={} qos={:?}",
            d.name,
            d.pattern.name(),
            p.type_name,
            p.size,
            p.align,
            p.slice,
            svc.qos()
        );
        println!("RESULT role=hold port={:?} peers={peers}", a.port);
        touch(&a.done_file);
    } else {
        println!("RESULT role=hold port={:?}", a.port);
    }
    wait_path(&a.release_file);
}

// ---------------------------------------------------------------- open

pub fn open<T: Payload + ?Sized>(a: OpenArgs) {
    let node = node();
    let svc = service::<T>(&node, &a.svc);
    println!(
        "RESULT role=open type={} history={}",
        svc.payload().type_name,
        svc.qos().history_size
    );
}

// ---------------------------------------------------------------- name

pub fn name(a: NameArgs) {
    let mut b = NodeBuilder::new();
    if let Some(n) = &a.node {
        b = b
            .name(n)
            .unwrap_or_else(|e| die(exit::NAME, "NameError", e));
    }
    let service = a
        .service
        .as_ref()
        .map(|s| ServiceName::new(s).unwrap_or_else(|e| die(exit::NAME, "NameError", e)));
    // Valid names must also work.
    let node = b
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "NodeCreateError", e));
    if let Some(s) = &service {
        let svc = node
            .service_builder(s)
            .publish_subscribe::<TestMsg>()
            .open_or_create()
            .unwrap_or_else(|e| die_service(e));
        let publisher = svc
            .publisher_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
        let sub = svc
            .subscriber_builder()
            .create()
            .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
        publisher
            .send_copy(TestMsg::new(0, 0))
            .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
        let got = receive_one(&sub).map(|s| s.seq);
        if got != Some(0) {
            die_verify(format!("sent seq 0 on {s}, received {got:?}"));
        }
    }
    println!("RESULT role=name ok=1");
}

// ---------------------------------------------------------------- loans

pub fn loans(a: LoansArgs) {
    let node = node();
    let svc = service::<TestMsg>(&node, &a.svc);
    let publisher = svc
        .publisher_builder()
        .max_loaned_samples(a.max_loans)
        .create()
        .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
    let mut held = Vec::new();
    for _ in 0..a.count {
        held.push(publisher.loan_uninit().unwrap_or_else(|e| die_loan(e)));
    }
    println!("RESULT role=loans loaned={}", held.len());
}

// ---------------------------------------------------------------- churn

pub fn churn(a: ChurnArgs) {
    wait_for(&a.start_file);
    let (mut received, mut delivered) = (0u64, 0u64);
    for i in 0..a.iterations {
        let node = node();
        let svc = service::<TestMsg>(&node, &a.svc);
        match a.port {
            PortKind::Publisher => {
                let p = svc
                    .publisher_builder()
                    .create()
                    .unwrap_or_else(|e| die(exit::FAILURE, "PublisherCreateError", e));
                if a.send {
                    let n = p
                        .send_copy(TestMsg::new(std::process::id().into(), i))
                        .unwrap_or_else(|e| die(exit::FAILURE, "SendError", e));
                    delivered += n as u64;
                }
            }
            PortKind::Subscriber => {
                let s = svc
                    .subscriber_builder()
                    .create()
                    .unwrap_or_else(|e| die(exit::FAILURE, "SubscriberCreateError", e));
                // Whatever arrives must be intact; order across publisher
                // incarnations is not defined, so only checksums are checked.
                for _ in 0..4 {
                    if let Some(m) = receive_one(&s) {
                        if !m.is_intact() {
                            die_verify(format!("corrupted payload: {:?}", *m));
                        }
                        received += 1;
                    }
                }
            }
            PortKind::None => {}
        }
    }
    println!(
        "RESULT role=churn iterations={} delivered={delivered} received={received}",
        a.iterations
    );
}
