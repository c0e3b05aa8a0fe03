//! The follower process: what a binary of this crate does when the leader
//! starts it with [`FOLLOWER_ARG`] (see [`crate::harness`] for the
//! protocol): it pins itself, greets the leader, then builds and serves
//! each row it is told of until `quit`.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use super::followers::FollowerReport;
use super::session::{RunRow, FOLLOWER_ARG};
use crate::error::Result;
use crate::sys::cpu;
use crate::transport::{set_yield_when_idle, Pattern, PayloadMode, RowSpec};

/// Follower arguments, as the leader passes them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FollowerArgs {
    root: PathBuf,
    parent: i32,
    cpu: Option<usize>,
}

fn parse_follower_args(args: &[String]) -> Result<FollowerArgs> {
    let (mut root, mut parent, mut cpu) = (None, None, None);
    let mut it = args.iter();
    while let Some(key) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("follower argument {key} needs a value"))?;
        match key.as_str() {
            "--root" => root = Some(PathBuf::from(value)),
            "--parent" => parent = Some(value.parse()?),
            "--cpu" => cpu = Some(value.parse()?),
            other => return Err(format!("unknown follower argument {other}").into()),
        }
    }
    Ok(FollowerArgs {
        root: root.ok_or("follower needs --root")?,
        parent: parent.ok_or("follower needs --parent")?,
        cpu,
    })
}

/// The arguments after [`FOLLOWER_ARG`] if this process was started as a
/// follower (that is its first argument), read without assuming that the
/// command line is UTF-8: `None` for any other command line, whatever
/// bytes it holds.
pub fn follower_args() -> Option<Result<Vec<String>>> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != FOLLOWER_ARG {
        return None;
    }
    Some(
        args.map(|a| {
            a.into_string()
                .map_err(|a| format!("follower argument {a:?} is not UTF-8").into())
        })
        .collect(),
    )
}

/// The follower process: call it when the first argument is
/// [`FOLLOWER_ARG`], passing the remaining arguments and every transport the
/// leader may ask for. Returns when the leader says `quit` or goes away.
pub fn follower_main(args: &[String], transports: &[&dyn RunRow]) -> Result<()> {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};

    let args = parse_follower_args(args)?;
    set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("prctl(PR_SET_PDEATHSIG): {e}"))?;
    // The leader may have died before the line above took effect.
    if getppid().map(|p| p.as_raw_nonzero().get()) != Some(args.parent) {
        return Err("the leader is gone".into());
    }
    if let Some(c) = args.cpu {
        cpu::pin_to(c)?;
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut reply = |line: &str| -> Result<()> {
        writeln!(out, "{line}")?;
        out.flush()?;
        Ok(())
    };
    reply(&format!("hello {}", rustix::thread::sched_getcpu()))?;
    // The side of the last row, kept until the leader's next command.
    let mut last_side: Option<Box<dyn std::any::Any>> = None;
    for line in stdin.lock().lines() {
        let line = line?;
        last_side = None;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["quit"] => return Ok(()),
            ["row", name, pattern, payload, size, warmup, iterations, row_id, followers, index, depth] =>
            {
                let result = (|| -> Result<(FollowerReport, Box<dyn std::any::Any>)> {
                    let t = transports
                        .iter()
                        .find(|t| t.row_name() == *name)
                        .ok_or_else(|| format!("no transport named {name:?}"))?;
                    let row = RowSpec {
                        root: args.root.clone(),
                        row_id: row_id.parse()?,
                        size: size.parse()?,
                        pattern: Pattern::parse(pattern)?,
                        payload: PayloadMode::parse(payload)?,
                        followers: followers.parse()?,
                        index: index.parse()?,
                        depth: depth.parse()?,
                    };
                    // Several receivers on this machine's few CPUs: a
                    // busy-polling one must let the others run.
                    set_yield_when_idle(row.followers > 1);
                    let report = t.follow(&row, warmup.parse()?, iterations.parse()?, &mut || {
                        reply("ready")
                    });
                    set_yield_when_idle(false);
                    report
                })();
                match result {
                    Ok((r, side)) => {
                        last_side = Some(side);
                        reply(&format!(
                            "done {} {} {} {} {}",
                            r.cpu.cpu_ns, r.cpu.user_ns, r.cpu.system_ns, r.cpu.sleeps, r.last_ns
                        ))?
                    }
                    Err(e) => reply(&format!("error {}", e.to_string().replace('\n', " ")))?,
                }
            }
            _ => reply(&format!("error unknown command {line:?}"))?,
        }
    }
    drop(last_side);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follower_args_round_trip() {
        let args: Vec<String> = ["--root", "/dev/shm/x", "--parent", "42", "--cpu", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            parse_follower_args(&args).unwrap(),
            FollowerArgs {
                root: "/dev/shm/x".into(),
                parent: 42,
                cpu: Some(1)
            }
        );
        assert!(parse_follower_args(&args[..2]).is_err());
        assert!(parse_follower_args(&["--root".to_string()]).is_err());
    }
}
