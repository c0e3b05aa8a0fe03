//! The `hako-bench-go` program (`go/cmd/hako-bench-go`): where it is, and
//! one running side of a row, driven over its standard input and output.
//!
//! The program is `$HAKO_BENCH_GO` if that is set, else `hako-bench-go`
//! beside the running program (./scripts/bench builds it into
//! `target/release`), else the first on `PATH`. Each side of a row is a
//! process of it, started with the row's settings; it answers `ready`,
//! then one line per command (`ok …` or `error …`). The commands and
//! answers are described in the program's own documentation. A side dies
//! with the thread that started it, and ends when its input closes.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::error::Result;
use crate::sys::cpu::CpuTime;

/// The environment variable that names the program.
pub const GO_ENV: &str = "HAKO_BENCH_GO";

/// The program's file name.
pub const GO_PROGRAM: &str = "hako-bench-go";

/// How to build it, for the messages.
pub const BUILD_IT: &str =
    "build it with `cargo build --release -p hako-ffi && (cd go && go build \
                            -o ../target/release/hako-bench-go ./cmd/hako-bench-go)` \
                            (./scripts/bench does), or name it in $HAKO_BENCH_GO";

/// The program to run, or why there is none.
pub fn find() -> Result<PathBuf, String> {
    crate::sys::program::find(GO_ENV, GO_PROGRAM, BUILD_IT)
}

/// One running side.
pub struct GoProc {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    line: String,
}

impl GoProc {
    /// Starts a side with `args` and waits for its `ready`.
    pub fn start(args: &[String]) -> Result<Self> {
        let program = find()?;
        let mut cmd = Command::new(&program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        crate::sys::program::tie_to_parent(&mut cmd, None);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let (input, output) = (child.stdin.take(), child.stdout.take());
        let output = BufReader::new(output.ok_or("the Go side has no standard output")?);
        let mut side = Self {
            child,
            input,
            output,
            line: String::new(),
        };
        let ready = side.reply()?;
        if ready.trim() != "ready" {
            return Err(format!("the Go side said {ready:?} instead of ready").into());
        }
        Ok(side)
    }

    /// The next line it writes; its `error …` as an error.
    fn reply(&mut self) -> Result<&str> {
        self.line.clear();
        if self.output.read_line(&mut self.line)? == 0 {
            let status = self.child.wait()?;
            return Err(format!("the Go side exited ({status}) without an answer").into());
        }
        if let Some(e) = self.line.strip_prefix("error ") {
            return Err(format!("the Go side: {}", e.trim_end()).into());
        }
        Ok(&self.line)
    }

    /// Sends `command` and returns the words of its `ok` answer.
    pub fn ask(&mut self, command: &str) -> Result<Vec<u64>> {
        let input = self.input.as_mut().ok_or("the Go side's input is closed")?;
        writeln!(input, "{command}")?;
        input.flush()?;
        let line = self.reply()?;
        let words = line
            .strip_prefix("ok")
            .ok_or_else(|| format!("the Go side answered {command:?} with {line:?}"))?;
        words
            .split_ascii_whitespace()
            .map(|w| {
                w.parse()
                    .map_err(|_| format!("the Go side answered {command:?} with {w:?}").into())
            })
            .collect()
    }
}

/// The CPU time of an answer's four figures (CPU, user, system ns and
/// voluntary context switches), and the figures after them.
pub fn cpu_time(words: &[u64]) -> Result<(CpuTime, &[u64])> {
    match words {
        [cpu_ns, user_ns, system_ns, sleeps, rest @ ..] => Ok((
            CpuTime {
                cpu_ns: *cpu_ns,
                user_ns: *user_ns,
                system_ns: *system_ns,
                sleeps: *sleeps,
            },
            rest,
        )),
        _ => Err(format!("the Go side's CPU time has {} figures, not 4", words.len()).into()),
    }
}

impl Drop for GoProc {
    fn drop(&mut self) {
        // End of input ends it; it exits once its ports are closed.
        drop(self.input.take());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_a_cpu_time_then_figures() {
        let (cpu, rest) = cpu_time(&[10, 7, 3, 2, 99, 98]).unwrap();
        assert_eq!(
            cpu,
            CpuTime {
                cpu_ns: 10,
                user_ns: 7,
                system_ns: 3,
                sleeps: 2
            }
        );
        assert_eq!(rest, &[99, 98]);
        assert!(cpu_time(&[1, 2, 3]).is_err());
    }
}
