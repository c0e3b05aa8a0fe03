//! Fault injection: processes killed with SIGKILL at random points, over many
//! rounds, while survivors go on exchanging messages.
//!
//! Each round starts a few victim processes (publishers sending without
//! pause, of 64-byte messages through their pools or of 48-byte ones in
//! the queue slots, subscribers reading or holding samples for good, processes that
//! create a service of their own, request/response clients with requests in
//! flight and servers in the middle of their streams) and kills them after
//! a random delay: while they create their node, open or create a service,
//! create a port, loan, send, or hold samples. Meanwhile this process keeps
//! a publisher and a subscriber on each shared service (both sizes) and
//! checks every message it gets (checksum, and sequence numbers increasing per
//! publisher), and a client and a server on a request/response service
//! that the victims use too: it answers every request it gets, and checks
//! every response to its own requests (its own value, in order, the whole
//! stream, whichever server answered; a request whose server was killed
//! fails with `ServerGone`). Victims also write and read a blackboard
//! (writers updating a 64 KiB entry in place without pause, one at a time;
//! readers copying it, or holding it pinned) whose every value this process
//! reads too: each must be whole, its versions never going back.
//!
//! Afterwards: the survivors still exchange messages, the survivor
//! publisher's and server's pools are whole (no chunk leaked to a dead
//! subscriber or client), no message was corrupted and no response reached
//! the wrong request, no board value was torn, a writer can take the board
//! over from its dead writers, and once the survivors are gone and dead
//! nodes are reclaimed (what `hako clean` does) the domain root is empty.
//!
//! `HAKO_CAMPAIGN_ROUNDS` (default 300) and `HAKO_CAMPAIGN_SEED` (default:
//! from the clock, printed) repeat or lengthen a run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hako::{Client, Config, NodeBuilder, PendingResponse, ReqResReceiveError, Server};
use hako_tests::board::{open_board, Big, Stamped};
use hako_tests::harness::{Domain, Proc, WATCHDOG};
use hako_tests::{Checked, SmallMsg, TestMsg};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
const REQRES_HELPER: &str = env!("CARGO_BIN_EXE_hako-reqres-helper");
const BOARD_HELPER: &str = env!("CARGO_BIN_EXE_hako-board-helper");
const SERVICE: &str = "it/campaign";
/// The service of messages that travel in the queue slot.
const SMALL: &str = "it/campaign-small";
const REQRES: &str = "it/campaign-rr";
/// Responses per request on the request/response service (the helper's
/// servers answer `n` with `n * 1000 + i`, i < STREAM, as ours do).
const STREAM: u64 = 2;

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

/// A shared publish/subscribe service of the campaign, as the victims
/// open it (see their arguments).
fn shared_service<M: Checked>(node: &hako::Node, name: &str) -> hako::PubSubService<M> {
    node.service_builder(&name.try_into().unwrap())
        .publish_subscribe::<M>()
        .max_publishers(4)
        .max_subscribers(8)
        .subscriber_max_buffer_size(4)
        .open_or_create()
        .unwrap()
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
    fn check<M: Checked>(&mut self, m: &M) {
        self.messages += 1;
        if !m.is_intact() {
            self.corrupted += 1;
            return;
        }
        if let Some(last) = self.last.insert(m.publisher(), m.seq()) {
            if m.seq() <= last {
                self.out_of_order += 1;
            }
        }
    }
}

/// What the survivor reader saw of the board's 64 KiB entry.
#[derive(Default)]
struct BoardSeen {
    reads: u64,
    versions: u64,
    torn: u64,
    back: u64,
    last: u64,
}

impl BoardSeen {
    fn check(&mut self, value: &Big, version: u64) {
        self.reads += 1;
        if value.whole() != Some(version) {
            self.torn += 1;
        }
        if version < self.last {
            self.back += 1;
        }
        if version != self.last {
            self.versions += 1;
        }
        self.last = self.last.max(version);
    }
}

/// What the survivor client saw of its own requests.
#[derive(Default)]
struct Answers {
    /// Requests whose whole stream came, each response its own.
    answered: u64,
    /// Requests whose server was killed before the stream ended.
    lost: u64,
    /// Responses that were not the expected one (another request's, out of
    /// order, or garbage), and streams that ended short.
    wrong: u64,
}

/// A request of the survivor client: its number, its responses so far.
type InFlight<'c> = (u64, PendingResponse<'c, u64, u64>, u64);

/// Takes whatever came for the survivor client's requests, without
/// waiting, and retires those that are over.
fn take_answers(in_flight: &mut Vec<InFlight<'_>>, a: &mut Answers) {
    in_flight.retain_mut(|(n, pending, got)| loop {
        match pending.receive() {
            Ok(Some(r)) => {
                if *r != *n * 1000 + *got {
                    a.wrong += 1;
                }
                *got += 1;
            }
            Ok(None) if pending.is_finished() => {
                if *got == STREAM {
                    a.answered += 1;
                } else {
                    a.wrong += 1;
                }
                return false;
            }
            Ok(None) => return true,
            Err(ReqResReceiveError::ServerGone) => {
                a.lost += 1;
                return false;
            }
            Err(e) => panic!("request {n}: {e}"),
        }
    });
}

/// Answers every request the survivor server has, as the helper's servers
/// do; a client killed meanwhile gets nothing.
fn answer_all(server: &Server<u64, u64>) {
    while let Some(request) = server.receive().unwrap() {
        for i in 0..STREAM {
            let _ = request.send_copy(*request * 1000 + i);
        }
    }
}

/// The survivor client sends request `n` if it has a slot free.
fn ask<'c>(client: &'c Client<u64, u64>, n: u64, in_flight: &mut Vec<InFlight<'c>>) {
    if client.requests_in_flight() < 8 {
        match client.send_copy(n) {
            Ok(p) => in_flight.push((n, p, 0)),
            // A server killed before anyone noticed, with its queue full.
            Err(hako::RequestSendError::NotDelivered) => {}
            Err(e) => panic!("request {n}: {e}"),
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
        let svc = shared_service::<TestMsg>(&node, SERVICE);
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let small_svc = shared_service::<SmallMsg>(&node, SMALL);
        let small_pub = small_svc.publisher_builder().create().unwrap();
        let small_sub = small_svc.subscriber_builder().create().unwrap();
        let mut small_seen = Seen::default();
        let rr = node
            .service_builder(&REQRES.try_into().unwrap())
            .request_response::<u64, u64>()
            .max_requests_in_flight(8)
            .max_response_buffer(2)
            .max_clients(48)
            .max_servers(24)
            .max_nodes(128)
            .open_or_create()
            .unwrap();
        let server = rr.server_builder().create().unwrap();
        let client = rr.client_builder().create().unwrap();
        let board = open_board(&node).unwrap();
        let board_reader = board.reader_builder().create().unwrap();
        let big = board_reader.entry::<Big>("big").unwrap();
        let mut board_seen = BoardSeen::default();
        let mut in_flight: Vec<InFlight<'_>> = Vec::new();
        let mut answers = Answers::default();
        let rr_args = [
            "--service",
            REQRES,
            "--in-flight",
            "8",
            "--buffer",
            "2",
            "--stream",
            "2",
        ];
        let reqres_helper =
            |label: &str, args: &[&str]| d.spawn_bin(REQRES_HELPER, label, args, WATCHDOG);
        // The victims' settings of the shared services, as ours.
        let settings = [
            "--max-publishers",
            "4",
            "--max-subscribers",
            "8",
            "--buffer",
            "4",
        ];
        let svc_args = [&["--service", SERVICE][..], &settings].concat();
        let small_args = [&["--small", "--service", SMALL][..], &settings].concat();
        let never = d.arg("never");
        let mut seq = 0u64;
        for round in 0..rounds {
            let mut procs: Vec<Proc> = Vec::new();
            for k in 0..1 + rng.below(3) {
                let id = (100 + round * 4 + k).to_string();
                let own = format!("it/victim-{round}-{k}");
                let label = format!("victim-{round}-{k}");
                let pick = rng.below(10);
                // The board: a writer updating the 64 KiB entry in place
                // without pause (a second one while the first lives fails
                // on its own), a reader copying it, or one holding it pinned.
                let board_role: Option<&[&str]> = match (pick, rng.below(3)) {
                    (8, _) => Some(&["write", "--entry", "big", "--forever"]),
                    (9, 0) => Some(&["pin", "--entry", "big", "--ready-file", &never]),
                    (9, _) => Some(&["read", "--entry", "big", "--until", "100000000000"]),
                    _ => None,
                };
                if let Some(args) = board_role {
                    procs.push(d.spawn_bin(BOARD_HELPER, &label, args, WATCHDOG));
                    victims += 1;
                    continue;
                }
                let reqres: Option<&[&str]> = match pick {
                    // A client with requests in flight, or a server in
                    // the middle of streams (ours among them).
                    5 | 6 => Some(&["request", "--count", "100000000", "--tolerant"]),
                    7 => Some(&["serve"]),
                    _ => None,
                };
                if let Some(role) = reqres {
                    procs.push(reqres_helper(&label, &[role, &rr_args[..]].concat()));
                    victims += 1;
                    continue;
                }
                // Half of them on the service of small messages.
                let svc_args: &[&str] = if rng.below(2) == 0 {
                    &svc_args
                } else {
                    &small_args
                };
                let args: Vec<&str> = match rng.below(5) {
                    0 | 1 => [
                        &["publish", "--id", &id, "--count", "100000000"][..],
                        svc_args,
                    ]
                    .concat(),
                    2 => [&["subscribe", "--expect", "100000000"][..], svc_args].concat(),
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
                        svc_args,
                    ]
                    .concat(),
                    // A service of its own: killed while creating it, or
                    // while publishing on it.
                    _ => vec!["publish", "--service", &own, "--count", "100000000"],
                };
                procs.push(d.spawn(&label, &args));
                victims += 1;
            }
            let until = Instant::now() + Duration::from_micros(rng.below(20_000));
            while Instant::now() < until {
                publisher.send_copy(TestMsg::new(1, seq)).unwrap();
                small_pub.send_copy(SmallMsg::new(1, seq)).unwrap();
                ask(&client, seq, &mut in_flight);
                seq += 1;
                while let Some(s) = sub.receive().unwrap() {
                    seen.check(&*s);
                }
                while let Some(s) = small_sub.receive().unwrap() {
                    small_seen.check(&*s);
                }
                answer_all(&server);
                take_answers(&mut in_flight, &mut answers);
                let (value, version) = big.get_with_version().unwrap();
                board_seen.check(&value, version);
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
            seen.check(&*s);
        }
        while let Some(s) = small_sub.receive().unwrap() {
            small_seen.check(&*s);
        }
        // Every request of ours in flight ends: answered, or failed with
        // its dead server; then ten more, which only our server can take.
        let end = Instant::now() + Duration::from_secs(20);
        let mut extra = 0;
        while !in_flight.is_empty() || extra < 10 {
            if in_flight.is_empty() {
                let before = answers.answered;
                ask(&client, seq, &mut in_flight);
                seq += 1;
                extra += 1;
                while !in_flight.is_empty() {
                    answer_all(&server);
                    take_answers(&mut in_flight, &mut answers);
                    assert!(Instant::now() < end, "our request got no answer");
                }
                assert_eq!(answers.answered, before + 1, "our server answers");
            }
            answer_all(&server);
            take_answers(&mut in_flight, &mut answers);
            assert!(
                Instant::now() < end,
                "requests still in flight: {}",
                in_flight.len()
            );
        }
        assert_eq!(client.requests_in_flight(), 0);
        // The responses queued for dead clients came back with their ports.
        answer_all(&server);
        let server_leaked = server.pool_size() as usize - server.free_chunks();
        for _ in 0..10 {
            assert_eq!(publisher.send_copy(TestMsg::new(1, seq)).unwrap(), 1);
            seq += 1;
            let s = sub
                .receive()
                .unwrap()
                .expect("the survivor still gets messages");
            seen.check(&*s);
            assert_eq!(small_pub.send_copy(SmallMsg::new(1, seq)).unwrap(), 1);
            let s = small_sub
                .receive()
                .unwrap()
                .expect("the survivor still gets small messages");
            small_seen.check(&*s);
        }
        // The dead writers are reclaimed: a writer of ours takes the board
        // over from the version they reached, and its value is read whole.
        let writer = board
            .writer_builder()
            .create()
            .expect("the board's dead writers were reclaimed");
        let mut entry = writer.entry::<Big>("big").unwrap();
        let next = entry.version().unwrap() + 1;
        let mut loan = entry.loan_uninit().unwrap();
        loan.payload_mut().write(Big::stamped(next));
        // SAFETY: written whole just above.
        assert_eq!(unsafe { loan.assume_init() }.publish(), next);
        let (value, version) = big.get_with_version().unwrap();
        board_seen.check(&value, version);
        assert_eq!(version, next);
        println!(
            "campaign: board: {} reads, {} versions, {} torn, {} back",
            board_seen.reads, board_seen.versions, board_seen.torn, board_seen.back
        );
        assert_eq!(board_seen.torn, 0, "torn board values");
        assert_eq!(board_seen.back, 0, "board versions going back");
        let leaked = publisher.pool_size() as usize - publisher.free_chunks();
        let small_leaked = small_pub.pool_size() as usize - small_pub.free_chunks();
        println!(
            "campaign: small messages: {} checked from {} publishers, {} corrupted, \
             {} out of order, {small_leaked} chunks leaked",
            small_seen.messages,
            small_seen.last.len(),
            small_seen.corrupted,
            small_seen.out_of_order,
        );
        assert_eq!(small_leaked, 0, "small chunks leaked");
        assert_eq!(small_seen.corrupted, 0, "corrupted small messages");
        assert_eq!(small_seen.out_of_order, 0, "small messages out of order");
        println!(
            "campaign: {rounds} rounds, {victims} victims, {kills} killed, {} messages checked \
             from {} publishers, {} corrupted, {} out of order, {leaked} chunks leaked; \
             {} requests answered, {} lost with their server, {} wrong responses, \
             {server_leaked} server chunks leaked; {:.1} s",
            seen.messages,
            seen.last.len(),
            seen.corrupted,
            seen.out_of_order,
            answers.answered,
            answers.lost,
            answers.wrong,
            started.elapsed().as_secs_f64()
        );
        assert_eq!(leaked, 0, "chunks leaked");
        assert_eq!(server_leaked, 0, "server chunks leaked");
        assert_eq!(answers.wrong, 0, "responses to the wrong request");
        assert!(answers.answered > 0);
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
