//! Request/response across processes: pipelined streams between a server
//! and several clients, a client killed with requests in flight, a server
//! killed in the middle of a stream (and another one serving on).

use hako_tests::harness::Domain;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-reqres-helper");

#[test]
fn pipelined_streams_between_processes() {
    let d = Domain::new("reqres-streams", HELPER);
    let stop = d.arg("stop");
    let ready = d.arg("ready");
    let mut server = vec![d.spawn(
        "server",
        &[
            "serve",
            "--stream",
            "3",
            "--ready-file",
            &ready,
            "--stop-file",
            &stop,
        ],
    )];
    d.wait_file("ready", &mut server);
    let clients: Vec<_> = (0..2)
        .map(|i| {
            d.spawn(
                &format!("client{i}"),
                &[
                    "request",
                    "--stream",
                    "3",
                    "--count",
                    "2000",
                    "--in-flight",
                    "16",
                ],
            )
        })
        .collect();
    for out in d.wait_all(clients) {
        assert_eq!(out.result().num("answered"), 2000);
    }
    d.touch("stop");
    let out = d.wait_all(server);
    assert_eq!(out[0].result().num("served"), 4000);
    assert_eq!(out[0].result().num("responses"), 12000);
    d.finish();
}

#[test]
fn a_killed_client_is_seen_gone_and_its_files_are_reclaimed() {
    let d = Domain::new("reqres-client-killed", HELPER);
    let (hold, held) = (d.arg("hold"), d.arg("held"));
    let mut procs = vec![d.spawn(
        "server",
        &[
            "serve",
            "--hold-file",
            &hold,
            "--held-file",
            &held,
            "--hold",
            "4",
            "--in-flight",
            "4",
        ],
    )];
    procs.push(d.spawn("client", &["request", "--hang", "--in-flight", "4"]));
    // Killed once the server holds its requests. (Requests of a client that
    // dies before a server maps its segment go with it: the server reclaims
    // the dead client's port, segment and all, as soon as it sees it.)
    d.wait_file("held", &mut procs);
    let client = procs.pop().expect("the client");
    client.kill();
    d.touch("hold");
    let out = d.wait_all(procs);
    let r = out[0].result();
    assert_eq!((r.num("held"), r.num("connected")), (4, 0), "{:?}", r);
    // The server exited cleanly; the dead client's node, port and files go
    // at the next reclaim.
    let cfg = hako::Config::default().with_root(&d.root);
    let reclaimed = hako::reclaim_dead_nodes(&cfg, false).expect("reclaim");
    assert_eq!(reclaimed.dead_nodes.len(), 1, "{reclaimed:?}");
    d.finish();
}

#[test]
fn a_killed_server_fails_its_streams_and_another_serves_on() {
    let d = Domain::new("reqres-server-killed", HELPER);
    let hung = d.arg("hung");
    let ready = d.arg("ready");
    let stop = d.arg("stop");
    let mut procs = vec![d.spawn(
        "server-a",
        &[
            "serve",
            "--stream",
            "5",
            "--hang-after",
            "2",
            "--hung-file",
            &hung,
        ],
    )];
    procs.push(d.spawn(
        "client",
        &["request", "--stream", "5", "--expect-server-gone"],
    ));
    d.wait_file("hung", &mut procs);
    let client = procs.pop().expect("the client");
    let server_a = procs.pop().expect("server a");
    server_a.kill();
    let mut procs = vec![client];
    procs.push(d.spawn(
        "server-b",
        &[
            "serve",
            "--stream",
            "5",
            "--ready-file",
            &ready,
            "--stop-file",
            &stop,
        ],
    ));
    let client = procs.remove(0);
    let out = d.wait_all(vec![client]);
    let r = out[0].result();
    assert_eq!(r.num("got"), 2, "{:?}", r);
    assert_eq!(r.get("again"), "ok");
    d.touch("stop");
    let out = d.wait_all(procs);
    assert_eq!(out[0].result().num("served"), 1);
    d.finish();
}

#[test]
fn clients_killed_at_random_leak_nothing_and_get_nothing_wrong() {
    let d = Domain::new("reqres-campaign", HELPER);
    let (ready, stop) = (d.arg("ready"), d.arg("stop"));
    let mut server = vec![d.spawn(
        "server",
        &[
            "serve",
            "--stream",
            "2",
            "--in-flight",
            "8",
            "--ready-file",
            &ready,
            "--stop-file",
            &stop,
            "--report-free",
        ],
    )];
    d.wait_file("ready", &mut server);
    let mut killed = 0;
    for round in 0..20u64 {
        let args = |count| {
            [
                "request",
                "--stream",
                "2",
                "--in-flight",
                "8",
                "--count",
                count,
            ]
        };
        // The victim would run far longer than it is let.
        let victim = d.spawn(&format!("victim{round}"), &args("100000000"));
        let survivor = d.spawn(&format!("survivor{round}"), &args("300"));
        // Killed at a different moment each round: before it connects,
        // with requests in flight, or after it finished.
        std::thread::sleep(std::time::Duration::from_micros((round * 7919 % 20) * 1000));
        let out = victim.kill();
        assert_eq!(out.code, None, "{}", out.describe("was not killed"));
        killed += 1;
        // Every response the survivor got was its own, in order, and its
        // streams ended (the helper checks each one).
        let out = d.wait_all(vec![survivor]);
        assert_eq!(out[0].result().num("answered"), 300);
    }
    // What the killed clients left goes; the server takes back every
    // chunk that was queued or held for them.
    let cfg = hako::Config::default().with_root(&d.root);
    hako::reclaim_dead_nodes(&cfg, false).expect("reclaim");
    d.touch("stop");
    let out = d.wait_all(server);
    let r = out[0].result();
    assert_eq!(
        r.num("free"),
        r.num("pool"),
        "{r:?} ({killed} clients killed)"
    );
    d.finish();
}

#[test]
fn servers_killed_at_random_fail_only_their_own_streams() {
    let d = Domain::new("reqres-server-campaign", HELPER);
    let stop = d.arg("stop");
    let server = |label: &str| {
        d.spawn(
            label,
            &[
                "serve",
                "--stream",
                "2",
                "--in-flight",
                "4",
                "--stop-file",
                &stop,
                "--report-free",
            ],
        )
    };
    let mut servers = std::collections::VecDeque::from([server("server-a"), server("server-b")]);
    let client = d.spawn(
        "client",
        &[
            "request",
            "--stream",
            "2",
            "--in-flight",
            "4",
            "--count",
            "20000",
            "--tolerant",
        ],
    );
    // Each round kills the older server, at a different moment, and
    // starts a new one.
    for round in 0..10u64 {
        std::thread::sleep(std::time::Duration::from_millis(10 + round * 7919 % 15));
        let victim = servers.pop_front().expect("a server");
        victim.kill();
        servers.push_back(server(&format!("server{round}")));
    }
    // Every request got exactly its own responses, from whichever server
    // took it last (the helper checks each one).
    let out = d.wait_all(vec![client]);
    assert_eq!(out[0].result().num("answered"), 20000);
    // The live servers take back every chunk once the dead ports go.
    let cfg = hako::Config::default().with_root(&d.root);
    hako::reclaim_dead_nodes(&cfg, false).expect("reclaim");
    d.touch("stop");
    for out in d.wait_all(servers.into_iter().collect()) {
        let r = out.result();
        assert_eq!(r.num("free"), r.num("pool"), "{r:?}");
    }
    d.finish();
}
