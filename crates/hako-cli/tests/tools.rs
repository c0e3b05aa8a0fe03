//! The `hako` tools run as a user runs them: separate processes, checked by
//! their output and exit codes. Each test has a domain root of its own.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `pub` and `sub` on services of payload types other than `[u8]`.
#[path = "tools/typed.rs"]
mod typed;

#[path = "tools/bench.rs"]
mod bench;

#[path = "tools/bridge.rs"]
mod bridge;

#[path = "tools/json.rs"]
mod json;

/// Roots and entries the tools must not trust or follow.
#[path = "tools/trust.rs"]
mod trust;

/// `monitor`'s rates, and a corrupted segment as `inspect` and `monitor`
/// show it.
#[path = "tools/monitor.rs"]
mod monitor;

/// `hz`: rates and intervals, and a publisher it never holds back.
#[path = "tools/hz.rs"]
mod hz;

/// `monitor --prometheus`: a scrape, parsed.
#[path = "tools/prometheus.rs"]
mod prometheus;

/// `record` and `replay`: MCAP read back, replayed, compared.
#[path = "tools/record.rs"]
mod record;

/// Discovery: a watcher and `list --watch`.
#[path = "tools/watch.rs"]
mod watch;

/// `notify` and `listen`, `call` and `serve`.
#[path = "tools/talk.rs"]
mod talk;

#[path = "tools/board.rs"]
mod board;

const HAKO: &str = env!("CARGO_BIN_EXE_hako");
/// Only a hang takes this long.
const WATCHDOG: Duration = Duration::from_secs(60);

struct Domain(PathBuf);

impl Domain {
    fn new(name: &str) -> Self {
        let root = PathBuf::from(format!("/dev/shm/hako-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        Self(root)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(HAKO);
        c.args(args)
            .env("HAKO_ROOT", &self.0)
            .env_remove("HAKO_CONFIG")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > WATCHDOG {
                let _ = child.kill();
                panic!("hako {args:?} hung");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait_with_output().unwrap()
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {}", text(&o.stdout)))
    }

    /// Waits until service `name` exists (a command spawned with
    /// `--create` made it).
    fn service(&self, name: &str) {
        self.until(&format!("service {name}"), || {
            // The root may not exist yet (the command that makes it has
            // just started): `list` fails then.
            let o = self.run(&["list", "--json"]);
            o.status.success()
                && serde_json::from_slice::<Value>(&o.stdout)
                    .ok()
                    .and_then(|v| v.as_array().cloned())
                    .is_some_and(|a| a.iter().any(|s| s["name"] == name))
        });
    }

    /// Makes the root, empty and this user's alone, as the first program
    /// of a domain makes it.
    fn make_root(&self) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.0).unwrap();
        std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    /// Polls `f` until it holds (under the watchdog).
    fn until(&self, what: &str, mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < WATCHDOG, "never: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn wait(child: Child) -> Output {
    let mut child = child;
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            panic!("a hako process hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn every_subcommand_has_help() {
    let d = Domain::new("help");
    for sub in [
        "list", "nodes", "inspect", "clean", "monitor", "pub", "sub", "notify", "listen", "call",
        "serve", "config", "board",
    ] {
        let o = d.run(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(
            text(&o.stdout).contains("Usage: hako"),
            "{sub}: {}",
            text(&o.stdout)
        );
    }
    let o = d.run(&["no-such-command"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_empty_domain() {
    let d = Domain::new("empty");
    // No root at all: nothing ran there, or the path is mistyped.
    for args in [
        &["list"][..],
        &["nodes"],
        &["inspect", "a/b"],
        &["clean"],
        &["monitor", "--count", "1"],
    ] {
        let o = d.run(args);
        assert_eq!(o.status.code(), Some(3), "{args:?}");
        assert!(
            text(&o.stderr).contains("no hako domain at"),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    d.make_root();
    assert!(text(&d.run(&["list"]).stdout).contains("no services"));
    assert_eq!(d.json(&["list", "--json"]), Value::Array(vec![]));
    assert_eq!(d.json(&["nodes", "--json"]), Value::Array(vec![]));
    let o = d.run(&["inspect", "no/such/service"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no service \"no/such/service\""));
    let o = d.run(&["inspect", "bad name!"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = d.run(&["sub", "quiet", "--create", "--timeout", "0.2"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(text(&d.run(&["clean"]).stdout).contains("nothing to clean"));
}

#[test]
fn publish_subscribe_list_and_inspect() {
    let d = Domain::new("pubsub");
    let sub = d.spawn(&[
        "sub",
        "demo/chat",
        "--create",
        "--count",
        "3",
        "--timeout",
        "30",
    ]);
    d.service("demo/chat");
    let pub_ = d.run(&[
        "pub",
        "demo/chat",
        "hello",
        "wörld",
        "--wait-subscribers",
        "1",
    ]);
    assert!(pub_.status.success(), "{}", text(&pub_.stderr));
    // Each message says where it went.
    assert_eq!(
        text(&pub_.stdout),
        "sent 5 bytes to 1 subscriber\nsent 6 bytes to 1 subscriber\n"
    );
    // While the subscriber waits for its third message, the domain shows it.
    let list = d.json(&["list", "--json"]);
    assert_eq!(list[0]["name"], "demo/chat");
    assert_eq!(list[0]["pattern"], "publish_subscribe");
    assert_eq!(list[0]["payload"], "[u8]");
    assert_eq!(list[0]["subscribers"], 1);
    let human = text(&d.run(&["list"]).stdout);
    assert!(
        human.contains("demo/chat") && human.contains("[u8]"),
        "{human}"
    );
    let nodes = d.json(&["nodes", "--json"]);
    assert_eq!(nodes.as_array().unwrap().len(), 1);
    assert_eq!(nodes[0]["name"], "hako-sub");
    assert_eq!(nodes[0]["alive"], true);
    let info = d.json(&["inspect", "demo/chat", "--json"]);
    assert_eq!(info["subscribers"][0]["counters"]["kind"], "subscriber");
    assert_eq!(info["subscribers"][0]["counters"]["received"], 2);
    let human = text(&d.run(&["inspect", "demo/chat"]).stdout);
    assert!(human.contains("received 2"), "{human}");
    // Settings in one spelling: the config file's and the JSON's.
    assert!(human.contains("overflow = drop_oldest"), "{human}");
    assert!(human.contains("subscriber_max_buffer_size = 2"), "{human}");
    // The third message, from stdin.
    let mut p = d.cmd(&["pub", "demo/chat", "--wait-subscribers", "1"]);
    let mut child = p.stdin(Stdio::piped()).spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    assert!(wait(child).status.success());
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\nwörld\nfrom stdin\n");
    // Everyone left: nothing remains.
    assert_eq!(d.json(&["list", "--json"]), Value::Array(vec![]));
    assert!(std::fs::read_dir(&d.0).unwrap().next().is_none());
}

#[test]
fn clean_removes_what_a_killed_process_left() {
    let d = Domain::new("clean");
    let mut sub = d.spawn(&["sub", "demo/left", "--create", "--timeout", "60"]);
    d.service("demo/left");
    // Its port, not only its node: the port registers a moment later.
    d.until("the subscriber is there", || {
        d.json(&["list", "--json"])
            .as_array()
            .is_some_and(|a| !a.is_empty() && a[0]["subscribers"] == 1)
    });
    sub.kill().unwrap();
    sub.wait().unwrap();
    let nodes = d.json(&["nodes", "--json"]);
    assert_eq!(nodes[0]["alive"], false);
    // The dead subscriber's port is marked, not counted as there.
    let l = d.json(&["list", "--json"]);
    assert_eq!(
        (l[0]["subscribers"].clone(), l[0]["dead_ports"].clone()),
        (0.into(), 1.into()),
        "{l}"
    );
    let human = text(&d.run(&["list"]).stdout);
    assert!(human.contains("DEAD"), "{human}");
    let m = d.json(&["monitor", "--interval", "50", "--count", "1", "--json"]);
    assert_eq!(
        (m[0]["subscribers"].clone(), m[0]["dead_ports"].clone()),
        (0.into(), 1.into()),
        "{m}"
    );
    let dry = d.json(&["clean", "--dry-run", "--json"]);
    assert_eq!(dry["dead_nodes"].as_array().unwrap().len(), 1);
    assert_eq!(dry["ports"], 1);
    assert!(!d.json(&["nodes", "--json"]).as_array().unwrap().is_empty());
    // The dry run says exactly what the real one removes: the node, its
    // port's files, and the service nobody uses any more, with its files.
    let done = d.json(&["clean", "--json"]);
    assert_eq!(done["dry_run"], false);
    for key in ["dead_nodes", "ports", "services", "files"] {
        assert_eq!(dry[key], done[key], "{key}: {dry} against {done}");
    }
    assert_eq!(done["services"], serde_json::json!(["demo/left"]));
    let files = done["files"].as_array().unwrap();
    assert!(files.len() >= 4, "node file, static, dynamic, FIFO: {done}");
    assert_eq!(d.json(&["nodes", "--json"]), Value::Array(vec![]));
    assert_eq!(d.json(&["list", "--json"]), Value::Array(vec![]));
    assert!(std::fs::read_dir(&d.0).unwrap().next().is_none());
}

#[test]
fn arguments_that_are_not_utf8_are_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let d = Domain::new("utf8");
    let bad = std::ffi::OsStr::from_bytes(b"x\xff");
    let o = d
        .cmd(&[])
        .args([std::ffi::OsStr::new("list"), bad])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
}

#[test]
fn commands_open_existing_services_and_create_one_only_when_asked() {
    let d = Domain::new("create");
    for args in [
        &["sub", "demo/none", "--timeout", "0.1"][..],
        &["pub", "demo/none", "x"],
        &["listen", "demo/none", "--timeout", "0.1"],
        &["notify", "demo/none"],
        &["call", "demo/none", "x"],
        &["serve", "demo/none", "--echo", "--count", "1"],
    ] {
        let o = d.run(args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", text(&o.stderr));
        let e = text(&o.stderr);
        assert!(
            e.contains("does not exist") && e.contains("--create"),
            "{e}"
        );
    }
    // Nothing was made.
    assert_eq!(d.json(&["list", "--json"]), Value::Array(vec![]));
    // With --create the service is made, and others open it (while it is
    // in use: the last port to go removes it).
    let listen = d.spawn(&["listen", "demo/made", "--create", "--count", "1"]);
    d.service("demo/made");
    let o = d.run(&["notify", "demo/made"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(wait(listen).status.success());
}

#[test]
fn json_mode_prints_ids_as_hex_strings_and_errors_as_json() {
    let d = Domain::new("json");
    let listen = d.spawn(&[
        "listen",
        "demo/ids",
        "--create",
        "--count",
        "1",
        "--timeout",
        "30",
    ]);
    d.service("demo/ids");
    let info = d.json(&["inspect", "demo/ids", "--json"]);
    let id = info["subscribers"][0]["id"]
        .as_str()
        .expect("an id as a string");
    assert_eq!(id.len(), 16, "{info}");
    assert!(u64::from_str_radix(id, 16).is_ok(), "{info}");
    assert!(info["subscribers"][0]["node"].is_string(), "{info}");
    assert!(info["nodes"][0].is_string(), "{info}");
    let nodes = d.json(&["nodes", "--json"]);
    assert!(nodes[0]["id"].is_string(), "{nodes}");
    // The text shows the same spelling.
    let human = text(&d.run(&["inspect", "demo/ids"]).stdout);
    assert!(human.contains(id), "{human}");
    let o = d.run(&["notify", "demo/ids"]);
    assert!(o.status.success());
    assert!(wait(listen).status.success());
    // An error in JSON mode is JSON.
    let o = d.run(&["inspect", "demo/none", "--json"]);
    assert_eq!(o.status.code(), Some(3));
    let e: Value = serde_json::from_slice(&o.stderr).expect("a JSON error");
    assert_eq!(e["code"], 3);
    assert!(e["error"].as_str().unwrap().contains("demo/none"), "{e}");
}

#[test]
fn config_show_says_where_each_value_came_from() {
    let d = Domain::new("config");
    let file = std::env::temp_dir().join(format!("hako-config-test-{}.toml", std::process::id()));
    std::fs::write(
        &file,
        "root = \"/dev/shm/elsewhere\"\n[defaults]\nmax_publishers = 5\n",
    )
    .unwrap();
    let o = d
        .cmd(&["config", "show", "--json"])
        .env("HAKO_CONFIG", &file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // HAKO_ROOT (the test's domain) overrides the file's root.
    assert_eq!(v["root"]["source"], "HAKO_ROOT");
    assert_eq!(v["root"]["value"], d.0.to_str().unwrap());
    assert_eq!(v["defaults.max_publishers"]["value"], 5);
    assert!(v["defaults.max_publishers"]["source"]
        .as_str()
        .unwrap()
        .starts_with("file "));
    assert_eq!(v["defaults.max_subscribers"]["source"], "default");
    assert_eq!(v["group"]["value"], Value::Null);
    // And in text, every key on a line with its source.
    let o = d.run(&["config", "show", "--root", "/dev/shm/somewhere"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("root = \"/dev/shm/somewhere\"") && out.contains("# --root"),
        "{out}"
    );
    assert!(out.contains("defaults.max_requests_in_flight = 4"), "{out}");
}

#[test]
fn a_lossy_sub_is_marked_and_never_waited_for() {
    // `hako sub --lossy` watches a backpressure service without holding its
    // publishers back; `inspect` says so.
    let d = Domain::new("lossy");
    let node = hako::NodeBuilder::new()
        .config(&hako::Config::default().with_root(&d.0))
        .signal_handling(false)
        .create()
        .unwrap();
    let svc = node
        .service_builder(&"demo/tap".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(2)
        .create()
        .unwrap();
    let publisher = svc.publisher_builder().max_slice_len(16).create().unwrap();
    let sub = d.spawn(&[
        "sub",
        "demo/tap",
        "--lossy",
        "--count",
        "1",
        "--timeout",
        "30",
    ]);
    d.until("the subscriber", || {
        d.json(&["inspect", "demo/tap", "--json"])["subscribers"]
            .as_array()
            .is_some_and(|s| s.len() == 1)
    });
    let info = d.json(&["inspect", "demo/tap", "--json"]);
    assert_eq!(info["subscribers"][0]["lossy"], true);
    let human = text(&d.run(&["inspect", "demo/tap"]).stdout);
    assert!(human.contains("lossy"), "{human}");
    // Many more than its queue holds, none waiting for it (it may have
    // taken its one sample and left before the last ones).
    for _ in 0..100 {
        publisher.send_slice_copy(b"hi").unwrap();
    }
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().next(), Some("hi"));
}
