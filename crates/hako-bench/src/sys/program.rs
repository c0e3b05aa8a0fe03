//! Programs the suite runs beside itself (the bridge, the Go side of the
//! Go transports): where one is, and starting it tied to its parent.

use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::process::Signal;
use rustix::thread::CpuSet;

/// The program `name` to run, or why there is none: `$env` if that is set,
/// else `name` beside the running program (where cargo builds it:
/// `target/release`), else the first on `PATH`. `build_it` says how to get
/// it, for the message.
pub fn find(env: &str, name: &str, build_it: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "${env} names {}, which is not a file; {build_it}",
                p.display()
            ))
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(name)));
    if let Some(p) = beside.as_ref().filter(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(p) = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
    {
        return Ok(p);
    }
    Err(format!(
        "the program {name} is not {}nor on PATH: {build_it}",
        beside.map_or_else(String::new, |p| format!("at {}, ", p.display()))
    ))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Makes the process `cmd` starts die with the thread that starts it
/// (`PR_SET_PDEATHSIG`), so a leader killed outright leaves none running,
/// and run on `cpus` if given (else it inherits the starting thread's).
pub fn tie_to_parent(cmd: &mut Command, cpus: Option<CpuSet>) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is allowed: it makes three system calls
    // (prctl, getppid, sched_setaffinity) on values prepared before the
    // fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The parent may have gone before the line above took effect.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(set) = &cpus {
                rustix::thread::sched_setaffinity(None, set)?;
            }
            Ok(())
        });
    }
}
