//! `hako-board-helper`: the processes of the blackboard tests.
//!
//! The board is "it/board" with two entries, "small" (a [`Small`], 64
//! bytes) and "big" (a [`Big`], 64 KiB), each defaulting to the value of
//! update 0, and four readers at most. Roles (each reports `RESULT
//! key=value ...` on stdout when done, and `ERROR ...` with exit code 1 on
//! an error or a torn value):
//!
//! * `write` — the writer: `--count` updates of `--entry`, update k
//!   writing the value stamped k (after the version it finds, so a second
//!   writer goes on from where a dead one stopped). With `--forever` it
//!   updates until killed, touching `--ready-file` once it has written 100.
//! * `read` — a reader of `--entry` until its version reaches `--until`:
//!   every value read (by copy, or in place with `--in-place`) must be
//!   whole, and versions and values must never go back. Reports how many
//!   reads it made and how many versions it saw.
//! * `check` — reads `--entry` once: its version and whether it is whole.
//! * `pin` — reads `--entry` in place, touches `--ready-file` and holds the
//!   pin until killed.
//! * `wait` — a reader that sleeps (`WaitStrategy::Park`) until `--entry`
//!   changes, reads it, and sleeps again, until its version reaches
//!   `--until`; touches `--ready-file` before its first wait. Reports how
//!   many times it woke.
//!
//! `write --interval-ms` pauses between updates.
//!
//! The domain root comes from `HAKO_ROOT`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hako::{BlackboardService, NodeBuilder, Reader};
use hako_tests::board::{open_board, Big, Small, Stamped};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Write(WriteArgs),
    Read(ReadArgs),
    Check(EntryArg),
    Pin(PinArgs),
    Wait(WaitArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Which {
    Small,
    Big,
}

#[derive(Args)]
struct EntryArg {
    #[arg(long, value_enum)]
    entry: Which,
}

#[derive(Args)]
struct WriteArgs {
    #[command(flatten)]
    e: EntryArg,
    #[arg(long, default_value_t = 0)]
    count: u64,
    #[arg(long)]
    forever: bool,
    #[arg(long)]
    ready_file: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
}

#[derive(Args)]
struct ReadArgs {
    #[command(flatten)]
    e: EntryArg,
    #[arg(long)]
    until: u64,
    #[arg(long)]
    in_place: bool,
}

#[derive(Args)]
struct WaitArgs {
    #[command(flatten)]
    e: EntryArg,
    #[arg(long)]
    until: u64,
    #[arg(long)]
    ready_file: PathBuf,
}

#[derive(Args)]
struct PinArgs {
    #[command(flatten)]
    e: EntryArg,
    #[arg(long)]
    ready_file: PathBuf,
}

fn fail(what: impl std::fmt::Display) -> ! {
    println!("ERROR {what}");
    std::process::exit(1)
}

fn main() {
    let node = NodeBuilder::new().create().unwrap_or_else(|e| fail(e));
    let b = open_board(&node).unwrap_or_else(|e| fail(e));
    match Cli::parse().cmd {
        Cmd::Write(a) => match a.e.entry {
            Which::Small => write::<Small>(&b, "small", &a),
            Which::Big => write::<Big>(&b, "big", &a),
        },
        Cmd::Read(a) => {
            let reader = b.reader_builder().create().unwrap_or_else(|e| fail(e));
            match a.e.entry {
                Which::Small => read::<Small>(&reader, "small", &a),
                Which::Big => read::<Big>(&reader, "big", &a),
            }
        }
        Cmd::Check(a) => {
            let reader = b.reader_builder().create().unwrap_or_else(|e| fail(e));
            match a.entry {
                Which::Small => check::<Small>(&reader, "small"),
                Which::Big => check::<Big>(&reader, "big"),
            }
        }
        Cmd::Wait(a) => {
            let reader = b
                .reader_builder()
                .wait_strategy(hako::WaitStrategy::Park)
                .create()
                .unwrap_or_else(|e| fail(e));
            match a.e.entry {
                Which::Small => wait::<Small>(&reader, "small", &a),
                Which::Big => wait::<Big>(&reader, "big", &a),
            }
        }
        Cmd::Pin(a) => {
            let reader = b.reader_builder().create().unwrap_or_else(|e| fail(e));
            match a.e.entry {
                Which::Small => pin::<Small>(&reader, "small", &a),
                Which::Big => pin::<Big>(&reader, "big", &a),
            }
        }
    }
}

fn write<T: Stamped>(b: &BlackboardService, key: &str, a: &WriteArgs) {
    let writer = b.writer_builder().create().unwrap_or_else(|e| fail(e));
    let mut entry = writer.entry::<T>(key).unwrap_or_else(|e| fail(e));
    let first = entry.version().unwrap_or_else(|e| fail(e));
    let mut n = 0u64;
    while a.forever || n < a.count {
        let seq = first + n + 1;
        // In place: the value is written straight into the buffer.
        let mut loan = entry.loan_uninit().unwrap_or_else(|e| fail(e));
        loan.payload_mut().write(T::stamped(seq));
        // SAFETY: written whole just above.
        let version = unsafe { loan.assume_init() }.publish();
        if version != seq {
            fail(format!("update {seq} published as version {version}"));
        }
        n += 1;
        if a.interval_ms > 0 {
            std::thread::sleep(Duration::from_millis(a.interval_ms));
        }
        if n == 100 {
            if let Some(f) = &a.ready_file {
                std::fs::write(f, b"").unwrap_or_else(|e| fail(e));
            }
        }
    }
    println!("RESULT version={}", first + n);
}

fn read<T: Stamped>(reader: &Reader, key: &str, a: &ReadArgs) {
    let mut entry = reader.entry::<T>(key).unwrap_or_else(|e| fail(e));
    let (mut reads, mut versions, mut last) = (0u64, 0u64, (0u64, 0u64));
    loop {
        let (value_seq, version) = if a.in_place {
            let r = entry.read().unwrap_or_else(|e| fail(e));
            (r.whole(), r.version())
        } else {
            let (v, version) = entry.get_with_version().unwrap_or_else(|e| fail(e));
            (v.whole(), version)
        };
        let Some(seq) = value_seq else {
            fail(format!("a torn value at version {version} (read {reads})"));
        };
        if seq != version {
            fail(format!("version {version} holds update {seq}"));
        }
        if (version, seq) < last {
            fail(format!("went back from version {} to {version}", last.0));
        }
        if version != last.0 {
            versions += 1;
        }
        last = (version, seq);
        reads += 1;
        if version >= a.until {
            break;
        }
    }
    println!("RESULT reads={reads} versions={versions} last={}", last.0);
}

fn check<T: Stamped>(reader: &Reader, key: &str) {
    let entry = reader.entry::<T>(key).unwrap_or_else(|e| fail(e));
    let (v, version) = entry.get_with_version().unwrap_or_else(|e| fail(e));
    match v.whole() {
        Some(seq) if seq == version => println!("RESULT version={version} whole=1"),
        Some(seq) => fail(format!("version {version} holds update {seq}")),
        None => fail(format!("a torn value at version {version}")),
    }
}

fn pin<T: Stamped>(reader: &Reader, key: &str, a: &PinArgs) {
    let mut entry = reader.entry::<T>(key).unwrap_or_else(|e| fail(e));
    let held = entry.read().unwrap_or_else(|e| fail(e));
    std::fs::write(&a.ready_file, b"").unwrap_or_else(|e| fail(e));
    loop {
        if held.whole().is_none() {
            fail("the pinned value changed under the pin");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn wait<T: Stamped>(reader: &Reader, key: &str, a: &WaitArgs) {
    let entry = reader.entry::<T>(key).unwrap_or_else(|e| fail(e));
    std::fs::write(&a.ready_file, b"").unwrap_or_else(|e| fail(e));
    let mut wakes = 0u64;
    loop {
        let Some(_) = entry
            .wait_for_change(Some(Duration::from_secs(60)))
            .unwrap_or_else(|e| fail(e))
        else {
            fail("no change within 60 s");
        };
        wakes += 1;
        let (v, version) = entry.get_with_version().unwrap_or_else(|e| fail(e));
        if v.whole() != Some(version) {
            fail(format!("version {version} read torn or mismatched"));
        }
        if version >= a.until {
            println!("RESULT wakes={wakes} last={version}");
            return;
        }
    }
}
