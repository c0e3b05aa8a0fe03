//! The leader's end of the follower processes: their pipes, the lines they
//! answer with, and what a follower reports of a row (its `done` line).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout};

use crate::error::Result;
use crate::sys::cpu::CpuTime;

#[cfg(doc)]
use crate::sys::clock::monotonic_ns;

/// What a follower measured of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FollowerReport {
    /// CPU time of the timed messages.
    pub cpu: CpuTime,
    /// One-way patterns: [`monotonic_ns`] once the last message was checked.
    pub last_ns: u64,
}

/// One follower process and its pipes.
#[derive(Debug)]
pub(super) struct FollowerProc {
    pub(super) child: Child,
    pub(super) to_child: ChildStdin,
    pub(super) from_child: BufReader<ChildStdout>,
    pub(super) cpu: Option<usize>,
}

impl FollowerProc {
    pub(super) fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.to_child, "{line}")
            .and_then(|()| self.to_child.flush())
            .map_err(|e| format!("cannot talk to the follower: {e}"))?;
        Ok(())
    }

    pub(super) fn read_reply(&mut self) -> Result<String> {
        let mut line = String::new();
        let n = self.from_child.read_line(&mut line)?;
        if n == 0 {
            let status = self.child.wait()?;
            return Err(format!("the follower exited ({status})").into());
        }
        let line = line.trim_end().to_owned();
        if let Some(msg) = line.strip_prefix("error ") {
            return Err(format!("follower: {msg}").into());
        }
        Ok(line)
    }

    pub(super) fn expect(&mut self, what: &str) -> Result<()> {
        let line = self.read_reply()?;
        if line != what {
            return Err(format!("expected {what:?} from the follower, got {line:?}").into());
        }
        Ok(())
    }

    /// After the leader's side of a row failed: the follower's own error,
    /// if it sends one within a moment (it often saw the cause first).
    pub(super) fn error_soon(&mut self) -> Option<String> {
        use rustix::event::{poll, PollFd, PollFlags};
        if self.from_child.buffer().is_empty() {
            let mut fds = [PollFd::new(self.from_child.get_ref(), PollFlags::IN)];
            let wait = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 300_000_000,
            };
            if !matches!(poll(&mut fds, Some(&wait)), Ok(n) if n > 0) {
                return None;
            }
        }
        match self.read_reply() {
            Err(e) => Some(e.to_string()),
            Ok(_) => None,
        }
    }
}

/// The follower's `done <cpu ns> <user ns> <system ns> <sleeps> <last ns>`
/// line.
pub(super) fn parse_done(line: &str) -> Result<FollowerReport> {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["done", cpu, user, system, sleeps, last] => Ok(FollowerReport {
            cpu: CpuTime {
                cpu_ns: cpu.parse()?,
                user_ns: user.parse()?,
                system_ns: system.parse()?,
                sleeps: sleeps.parse()?,
            },
            last_ns: last.parse()?,
        }),
        _ => Err(format!(
            "expected \"done <cpu ns> <user ns> <system ns> <sleeps> <last ns>\" from the follower, got {line:?}"
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_lines_parse() {
        assert_eq!(
            parse_done("done 40 12 34 5 99").unwrap(),
            FollowerReport {
                cpu: CpuTime {
                    cpu_ns: 40,
                    user_ns: 12,
                    system_ns: 34,
                    sleeps: 5
                },
                last_ns: 99
            }
        );
        assert!(parse_done("done").is_err());
        assert!(parse_done("done 12 34 5 6").is_err());
        assert!(parse_done("done x 1 2 3").is_err());
        assert!(parse_done("ready 1 2 3 4").is_err());
    }
}
