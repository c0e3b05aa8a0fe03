//! The memory-footprint table of `hako bench`, as a user sees it: in the
//! text, the Markdown and the JSON, with its summary line and goal, and
//! left out on request. Asserts the figures are there (and hako's linear),
//! never speed.

use serde_json::Value;

mod common;
use common::{all_transports, hako, left_in, scratch, text};

/// The memory-footprint table (on by default, whatever the patterns):
/// hako's rows (and iceoryx2's, in a build with it) at 1, 64 and 4,096
/// allowed subscribers, in the text, the Markdown and the JSON, with the
/// summary line and the linearity goal; `--no-footprint` leaves it out.
#[test]
fn the_memory_footprint_table_holds_the_figures() {
    let dir = scratch("footprint");
    let shm = dir.join("shm");
    std::fs::create_dir(&shm).unwrap();
    let peers = all_transports().contains(&"iceoryx2".to_owned());
    let (json, md) = (dir.join("out.json"), dir.join("out.md"));
    let run = |extra: &[&str]| {
        let out = hako()
            .args([
                "--transports",
                "pipe",
                "--sizes",
                "64",
                "--patterns",
                "pingpong",
            ])
            .args(["--payload", "touch", "--iterations", "20", "--blocks", "1"])
            .args(["--block-ms", "1"])
            .args(extra)
            .arg("--shm-dir")
            .arg(&shm)
            .arg("--json")
            .arg(&json)
            .arg("--markdown")
            .arg(&md)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
        stdout
    };
    let stdout = run(&[]);
    let libraries: &[&str] = if peers {
        &["hako", "iceoryx2"]
    } else {
        &["hako"]
    };

    // The text table: a row per count and library, the figures in bytes.
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Memory footprint"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() >= 3, "{stdout}");
    for (i, library) in libraries.iter().enumerate() {
        for count in ["1", "64", "4,096"] {
            let at = table
                .iter()
                .position(|l| l.split_whitespace().next() == Some(count))
                .unwrap_or_else(|| panic!("no row for {count}: {stdout}"));
            let line = table[at + i];
            assert!(line.contains(library), "{library} at {count}: {stdout}");
            if *library == "hako" {
                assert!(line.contains(" B") && !line.contains("failed"), "{line}");
            }
        }
    }
    assert!(
        stdout.contains("memory, a u64 service allowing 4,096 subscribers: hako's publisher maps"),
        "{stdout}"
    );
    assert!(
        stdout.contains("goal: hako's memory linear in the subscribers a service allows")
            && stdout.contains("at 64): met"),
        "{stdout}"
    );
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.contains("### Memory footprint"), "{md_text}");
    assert!(md_text.contains("|   4,096 | hako"), "{md_text}");

    // The JSON: every row, its figures or its error.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let footprint = &v["footprint"];
    assert_eq!(footprint["payload"], "u64", "{footprint}");
    assert!(footprint["wall_time_s"].as_f64().unwrap() > 0.0);
    let rows = footprint["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * libraries.len(), "{footprint}");
    for library in libraries {
        for allowed in [1, 64, 4096] {
            let row = rows
                .iter()
                .find(|r| r["library"] == *library && r["allowed_subscribers"] == allowed)
                .unwrap_or_else(|| panic!("{library} {allowed}: {footprint}"));
            if *library == "hako" || row["error"].is_null() {
                assert!(row["error"].is_null(), "{row}");
                for key in [
                    "publisher_bytes",
                    "publisher_file_bytes",
                    "subscriber_bytes",
                ] {
                    assert!(row[key].as_u64().unwrap() > 0, "{key}: {row}");
                }
                let per = row["publisher_bytes_per_allowed_subscriber"]
                    .as_f64()
                    .unwrap();
                let all = row["publisher_bytes"].as_f64().unwrap();
                assert_eq!(per, all / f64::from(allowed), "{row}");
            } else {
                assert!(!row["error"].as_str().unwrap().is_empty(), "{row}");
            }
        }
    }
    assert!(v["summary"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().starts_with("memory, a u64 service")));

    // Left out on request.
    let stdout = run(&["--no-footprint"]);
    assert!(!stdout.contains("Memory footprint"), "{stdout}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["footprint"]["rows"].as_array().unwrap().len(), 0);

    assert_eq!(left_in(&shm), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
