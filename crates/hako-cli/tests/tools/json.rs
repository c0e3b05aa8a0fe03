//! `--json` is global: accepted before or after the subcommand, and in JSON
//! mode errors (usage errors too) are one JSON object on stderr.

use super::*;

/// The one JSON object a failing command printed on stderr.
fn error_object(o: &Output) -> Value {
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line of JSON on stderr: {err}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {err}"))
}

#[test]
fn json_goes_before_or_after_the_subcommand() {
    let d = Domain::new("json-global");
    d.make_root();
    for args in [&["--json", "list"][..], &["list", "--json"][..]] {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v, Value::Array(Vec::new()), "{args:?}");
    }
}

#[test]
fn in_json_mode_errors_are_json() {
    let d = Domain::new("json-errors");
    d.make_root();
    // A usage error of clap's.
    let o = d.run(&["list", "--bogus", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = error_object(&o);
    assert_eq!(e["code"], 2);
    assert!(e["error"].as_str().unwrap().contains("--bogus"), "{e}");
    // An unknown subcommand.
    let o = d.run(&["--json", "no-such-command"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(error_object(&o)["code"], 2);
    // A command's own failure.
    let o = d.run(&["--json", "inspect", "no/such/service"]);
    assert_eq!(o.status.code(), Some(3));
    let e = error_object(&o);
    assert_eq!(e["code"], 3);
    assert!(
        e["error"].as_str().unwrap().contains("no/such/service"),
        "{e}"
    );
    // Without --json: text.
    let o = d.run(&["list", "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).starts_with("error:"), "{}", text(&o.stderr));
    // Help stays text.
    let o = d.run(&["--json", "list", "--help"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("Usage: hako list"));
}
