//! `notify` and `listen`, `call` and `serve`: talking to event and
//! request/response services from a terminal.

use serde_json::Value;

use super::{text, wait, Domain};

#[test]
fn notify_and_listen() {
    let d = Domain::new("events");
    let listen = d.spawn(&[
        "listen",
        "demo/bell",
        "--create",
        "--count",
        "1",
        "--timeout",
        "30",
    ]);
    d.service("demo/bell");
    d.until("the listener is there", || {
        let l = d.json(&["list", "--json"]);
        l.as_array()
            .is_some_and(|a| !a.is_empty() && a[0]["listeners"] == 1)
    });
    let o = d.run(&["notify", "demo/bell", "--id", "7"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("event 7 to 1 listener\n"));
    let o = wait(listen);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("event 7"), "{}", text(&o.stdout));
}

#[test]
fn notify_waits_for_listeners() {
    let d = Domain::new("events-wait");
    // The notifier first: it waits for a listener, then notifies.
    let notify = d.spawn(&[
        "notify",
        "demo/late",
        "--create",
        "--id",
        "2",
        "--wait-listeners",
        "1",
        "--timeout",
        "30",
    ]);
    d.service("demo/late");
    let o = d.run(&["listen", "demo/late", "--count", "1", "--timeout", "30"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("event 2"), "{}", text(&o.stdout));
    let n = wait(notify);
    assert!(n.status.success(), "{}", text(&n.stderr));
    assert!(text(&n.stdout).contains("event 2 to 1 listener\n"));
    // Nobody comes: exit code 4, saying how many were there.
    let o = d.run(&[
        "notify",
        "demo/late",
        "--create",
        "--wait-listeners",
        "1",
        "--timeout",
        "0.2",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("0 listeners there"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn call_and_serve() {
    let d = Domain::new("reqres");
    let serve = d.spawn(&["serve", "demo/echo", "--create", "--echo", "--count", "3"]);
    d.service("demo/echo");
    // `call` waits for the server.
    let o = d.run(&["call", "demo/echo", "hello", "wörld"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\nwörld\n");
    // The server still runs (two requests of three served).
    let l = d.json(&["list", "--json"]);
    assert_eq!(l[0]["pattern"], "request_response");
    assert_eq!(l[0]["payload"], "[u8] -> [u8]");
    let i = d.json(&["inspect", "demo/echo", "--json"]);
    let server = &i["subscribers"][0]["counters"];
    assert_eq!(server["kind"], "server", "{i}");
    assert_eq!(server["requests_received"], 2, "{i}");
    // Two echoes, each the last of its stream: no separate ends.
    assert_eq!(server["responses_sent"], 2, "{i}");
    // The client left: an idle server takes its responses back (none is
    // counted in use for a client that is not there).
    d.until("the departed client's responses are taken back", || {
        d.json(&["inspect", "demo/echo", "--json"])["subscribers"][0]["counters"]
            ["responses_in_use"]
            == 0
    });
    let o = d.run(&["inspect", "demo/echo"]);
    assert!(
        text(&o.stdout).contains("requests received 2"),
        "{}",
        text(&o.stdout)
    );
    // --hex: the request in hex, the response printed in hex.
    let o = d.run(&["call", "demo/echo", "--hex", "--json", "41 42"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["response"], "4142");
    assert_eq!(v["bytes"], 2);
    let o = wait(serve);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // No server (the service made again, by the caller): `call` gives up
    // with exit code 4.
    let o = d.run(&["call", "demo/echo", "--create", "--timeout", "0.2", "x"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no server"), "{}", text(&o.stderr));
}
