//! Hostile truncation (issue 24, hole 1): while a publisher and a
//! subscriber exchange samples, another process truncates one of the
//! service's mapped files at a random moment: the dynamic segment (the
//! service's tables) or the publisher's data segment (to 0, or to 4 or 8
//! KiB, below its pool). Every process must survive (no SIGBUS) and report
//! it: the subscriber with `CorruptedService` / `CorruptedPublisher` and
//! never a sample whose payload was lost, the publisher through
//! `is_corrupted()`; afterwards the reclaim that `hako
//! clean` runs leaves the domain empty. The seed of the random moments is
//! printed (set HAKO_TRUNCATION_SEED to replay one).

use std::time::Duration;

use hako_tests::exit;
use hako_tests::harness::Domain;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

/// What gets truncated.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The service's dynamic segment, to 0 bytes.
    Service,
    /// The publisher's data segment, to this many bytes.
    Segment(u64),
}

/// xorshift64: the random moments, replayable from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// The one file of the domain's service whose name starts with `prefix`.
fn service_file(d: &Domain, prefix: &str) -> std::path::PathBuf {
    for dir in std::fs::read_dir(&d.root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.file_name().unwrap().to_string_lossy().starts_with(prefix) {
                return f;
            }
        }
    }
    panic!("no {prefix}* file in {}", d.root.display());
}

fn round(target: Target, n: usize, rng: &mut Rng) {
    let d = Domain::new(&format!("truncate-{n}"), HELPER);
    let svc = ["--service", "it/truncate"];
    let (stop, got) = (d.arg("stop"), d.arg("got"));
    let mut s = vec!["endure", "--role", "subscriber", "--stop-file", &stop];
    s.extend(["--got-file", &got]);
    s.extend(svc);
    let mut procs = vec![d.spawn("subscriber", &s)];
    let mut p = vec!["endure", "--role", "publisher", "--stop-file", &stop];
    p.extend(svc);
    procs.push(d.spawn("publisher", &p));
    d.wait_file("got", &mut procs);
    // A random moment of the traffic.
    std::thread::sleep(Duration::from_millis(rng.next(30)));
    let (file, len) = match target {
        Target::Service => (service_file(&d, "dynamic"), 0),
        Target::Segment(len) => (service_file(&d, "pub_"), len),
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len)
        .unwrap();
    // Both keep going a while on the truncated file, then stop.
    std::thread::sleep(Duration::from_millis(300));
    d.touch("stop");
    let publisher = procs.pop().unwrap().wait();
    let subscriber = procs.pop().unwrap().wait();
    // Alive to the end (a SIGBUS would show as a signal, not exit 0).
    publisher.assert_code(exit::OK);
    subscriber.assert_code(exit::OK);
    let (p, s) = (publisher.result(), subscriber.result());
    let what = format!(
        "{target:?}, round {n}: {}\n{}",
        publisher.stdout, subscriber.stdout
    );
    assert_eq!(p.num("corrupted"), 1, "the publisher reports it: {what}");
    assert_eq!(s.num("other_errors"), 0, "{what}");
    // A sample from a mapping that was lost never reaches the application
    // (the old code handed out one all-zero sample before the error).
    assert_eq!(s.num("zeroed"), 0, "a sample read zeros: {what}");
    match target {
        Target::Service => assert!(s.num("corrupted_service") >= 1, "{what}"),
        Target::Segment(_) => assert!(s.num("corrupted_publisher") >= 1, "{what}"),
    }
    // What the processes could not remove (their files were cut under
    // them) goes with the reclaim `hako clean` runs.
    let cfg = hako::Config::default().with_root(&d.root);
    hako::reclaim_dead_nodes(&cfg, false).unwrap();
    d.finish();
}

#[test]
fn truncated_files_are_survived_and_reported_by_every_process() {
    let seed = std::env::var("HAKO_TRUNCATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("HAKO_TRUNCATION_SEED={seed}");
    let mut rng = Rng(seed);
    let targets = [
        Target::Service,
        Target::Segment(0),
        Target::Segment(4096),
        Target::Segment(8192),
    ];
    for (n, target) in targets.iter().chain(&targets).enumerate() {
        round(*target, n, &mut rng);
    }
}
