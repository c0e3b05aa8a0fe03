//! Fault injection: processes killed with SIGKILL at random points, over many
//! rounds, while survivors go on exchanging messages.
//!
//! Each round starts a few victim processes (publishers sending without
//! pause, subscribers reading or holding samples for good, processes that
//! create a service of their own) and kills them after a random delay: while
//! they create their node, open or create a service, create a port, loan,
//! send, or hold samples. Meanwhile this process keeps a publisher and a
//! subscriber on the shared service and checks every message it gets
//! (checksum, and sequence numbers increasing per publisher).
//!
//! Afterwards: the survivors still exchange messages, the survivor
//! publisher's pool is whole (no chunk leaked to a dead subscriber), no
//! message was corrupted, and once the survivors are gone and dead nodes are
//! reclaimed (what `hako clean` does) the domain root is empty.
//!
//! `HAKO_CAMPAIGN_ROUNDS` (default 300) and `HAKO_CAMPAIGN_SEED` (default:
//! from the clock, printed) repeat or lengthen a run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hako::{Config, NodeBuilder};
use hako_tests::harness::{Domain, Proc, WATCHDOG};
use hako_tests::TestMsg;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
const SERVICE: &str = "it/campaign";

/// xorshift64*: enough randomness for kill points, reproducible by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// What the survivor subscriber saw.
#[derive(Default)]
struct Seen {
    messages: u64,
    corrupted: u64,
    out_of_order: u64,
    last: BTreeMap<u64, u64>,
}

impl Seen {
    fn check(&mut self, m: &TestMsg) {
        self.messages += 1;
        if !m.is_intact() {
            self.corrupted += 1;
            return;
        }
        if let Some(last) = self.last.insert(m.publisher, m.seq) {
            if m.seq <= last {
                self.out_of_order += 1;
            }
        }
    }
}

#[test]
fn random_kills_leave_nothing_behind() {
    let rounds = env_u64("HAKO_CAMPAIGN_ROUNDS").unwrap_or(300);
    let seed = env_u64("HAKO_CAMPAIGN_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1
    });
    println!("campaign: {rounds} rounds, HAKO_CAMPAIGN_SEED={seed}");
    let mut rng = Rng(seed);
    let d = Domain::new("campaign", HELPER);
    let cfg = Config::default().with_root(&d.root);
    let started = Instant::now();
    let (mut kills, mut victims) = (0u64, 0u64);
    let mut seen = Seen::default();
    {
        let node = NodeBuilder::new()
            .name("survivor")
            .unwrap()
            .config(&cfg)
            .create()
            .unwrap();
        let svc = node
            .service_builder(&SERVICE.try_into().unwrap())
            .publish_subscribe::<TestMsg>()
            .max_publishers(4)
            .max_subscribers(8)
            .subscriber_max_buffer_size(4)
            .open_or_create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let svc_args = [
            "--service",
            SERVICE,
            "--max-publishers",
            "4",
            "--max-subscribers",
            "8",
            "--buffer",
            "4",
        ];
        let never = d.arg("never");
        let mut seq = 0u64;
        for round in 0..rounds {
            let mut procs: Vec<Proc> = Vec::new();
            for k in 0..1 + rng.below(3) {
                let id = (100 + round * 4 + k).to_string();
                let own = format!("it/victim-{round}-{k}");
                let args: Vec<&str> = match rng.below(5) {
                    0 | 1 => [
                        &["publish", "--id", &id, "--count", "100000000"][..],
                        &svc_args[..],
                    ]
                    .concat(),
                    2 => [&["subscribe", "--expect", "100000000"][..], &svc_args[..]].concat(),
                    3 => [
                        &[
                            "subscribe",
                            "--expect",
                            "100000000",
                            "--hold",
                            "2",
                            "--wait-file",
                            &never,
                        ][..],
                        &svc_args[..],
                    ]
                    .concat(),
                    // A service of its own: killed while creating it, or
                    // while publishing on it.
                    _ => vec!["publish", "--service", &own, "--count", "100000000"],
                };
                procs.push(d.spawn(&format!("victim-{round}-{k}"), &args));
                victims += 1;
            }
            let until = Instant::now() + Duration::from_micros(rng.below(20_000));
            while Instant::now() < until {
                publisher.send_copy(TestMsg::new(1, seq)).unwrap();
                seq += 1;
                while let Some(s) = sub.receive().unwrap() {
                    seen.check(&s);
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            for p in procs {
                // A victim may have failed on its own (say, a table full of
                // ports of the dead not yet reclaimed); it is killed or
                // reaped either way.
                if p.kill().code.is_none() {
                    kills += 1;
                }
            }
            if round % 10 == 9 {
                hako::reclaim_dead_nodes(&cfg, false).unwrap();
            }
            assert!(started.elapsed() < WATCHDOG, "campaign ran too long");
        }
        // Survivors keep exchanging messages.
        hako::reclaim_dead_nodes(&cfg, false).unwrap();
        while let Some(s) = sub.receive().unwrap() {
            seen.check(&s);
        }
        for _ in 0..10 {
            assert_eq!(publisher.send_copy(TestMsg::new(1, seq)).unwrap(), 1);
            seq += 1;
            let s = sub
                .receive()
                .unwrap()
                .expect("the survivor still gets messages");
            seen.check(&s);
        }
        let leaked = publisher.pool_size() as usize - publisher.free_chunks();
        println!(
            "campaign: {rounds} rounds, {victims} victims, {kills} killed, {} messages checked \
             from {} publishers, {} corrupted, {} out of order, {leaked} chunks leaked, {:.1} s",
            seen.messages,
            seen.last.len(),
            seen.corrupted,
            seen.out_of_order,
            started.elapsed().as_secs_f64()
        );
        assert_eq!(leaked, 0, "chunks leaked");
        assert_eq!(seen.corrupted, 0, "corrupted messages");
        assert_eq!(seen.out_of_order, 0, "messages out of order");
        assert!(kills > 0);
        assert!(
            seen.last.len() > 1,
            "no victim publisher got as far as sending"
        );
    }
    // The survivors left cleanly; what the dead left goes now.
    hako::reclaim_dead_nodes(&cfg, false).unwrap();
    let left: Vec<_> = std::fs::read_dir(&d.root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    println!("campaign: {} files left after clean", left.len());
    d.finish();
}
