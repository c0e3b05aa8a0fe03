//! The private domain root of one benchmark run, and the cleanup of roots
//! left behind by runs that were killed.
//!
//! A run's root is `<shm dir>/<prefix>-<leader pid>`. A root whose pid no
//! longer names a live process belongs to a dead run and is removed when the
//! next run starts.

use std::io;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::process::{test_kill_process, Pid};

/// Prefix of run roots made by this crate's binaries.
pub const DEFAULT_PREFIX: &str = "hako-bench";

/// A run's domain root; removed with everything in it on drop.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Creates `<shm_dir>/<prefix>-<our pid>` (owner-only), replacing a
    /// leftover of a dead process that had our pid.
    pub fn create(shm_dir: &Path, prefix: &str) -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let path = shm_dir.join(format!("{prefix}-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Whether process `pid` exists (a process of another user counts).
pub fn pid_alive(pid: i32) -> bool {
    match Pid::from_raw(pid) {
        Some(p) => !matches!(test_kill_process(p), Err(Errno::SRCH)),
        None => false,
    }
}

/// Removes every `<shm_dir>/<prefix>-<pid>` whose process is gone; returns
/// the directories removed.
pub fn clean_stale(shm_dir: &Path, prefix: &str) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let me = std::process::id();
    for entry in std::fs::read_dir(shm_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == me || pid_alive(pid) || !entry.file_type()?.is_dir() {
            continue;
        }
        let path = entry.path();
        std::fs::remove_dir_all(&path)?;
        removed.push(path);
    }
    Ok(removed)
}
