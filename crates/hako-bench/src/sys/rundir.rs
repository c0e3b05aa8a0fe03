//! The private domain root of one benchmark run, and the cleanup of roots
//! left behind by runs that were killed.
//!
//! A run's root is `<shm dir>/<prefix>-<leader pid>`. A root whose pid no
//! longer names a live process belongs to a dead run and is removed when the
//! next run starts. Shared-memory files that a peer library must keep in
//! `/dev/shm` itself (iceoryx2's) carry the leader's pid in their name,
//! `<prefix><pid>_…`, and are removed the same way ([`clean_stale_shm`]).

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
    remove_dead(shm_dir, |name| {
        let digits = name.strip_prefix(prefix)?.strip_prefix('-')?;
        Some((digits, true))
    })
}

/// Removes every file `<shm_dir>/<prefix><pid>_…` whose process is gone
/// (shared memory a peer library named after a run's leader); returns the
/// files removed.
pub fn clean_stale_shm(shm_dir: &Path, prefix: &str) -> io::Result<Vec<PathBuf>> {
    remove_dead(shm_dir, |name| {
        let rest = name.strip_prefix(prefix)?;
        Some((rest.split_once('_')?.0, false))
    })
}

/// Removes the entries of `dir` for which `pid_of` gives the digits of a
/// pid that is neither ours nor alive, and whether the entry must be a
/// directory (else a file).
fn remove_dead(
    dir: &Path,
    pid_of: impl Fn(&str) -> Option<(&str, bool)>,
) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let me = std::process::id();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((pid, want_dir)) = pid_of(name)
            .filter(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(digits, d)| Some((digits.parse::<i32>().ok()?, d)))
        else {
            continue;
        };
        if pid as u32 == me || pid_alive(pid) || entry.file_type()?.is_dir() != want_dir {
            continue;
        }
        let path = entry.path();
        if want_dir {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
        removed.push(path);
    }
    Ok(removed)
}

/// Removes the files `<shm_dir>/<prefix><our pid>_…` at the end of a run.
pub fn remove_own_shm(shm_dir: &Path, prefix: &str) {
    let mine = format!("{prefix}{}_", std::process::id());
    let Ok(entries) = std::fs::read_dir(shm_dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&mine))
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The pid of the run's leader: this process on the leader's side, its
/// parent on a follower's.
pub fn leader_pid(follower: bool) -> u32 {
    if follower {
        rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32)
    } else {
        std::process::id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_runs_leftovers_go_live_ones_stay() {
        let dir = std::env::temp_dir().join(format!("hako-rundir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("run-999999999")).unwrap();
        std::fs::create_dir_all(dir.join(format!("run-{}", std::process::id()))).unwrap();
        std::fs::write(dir.join("hkb999999999_x.data"), b"").unwrap();
        std::fs::write(dir.join("hkb1_init"), b"").unwrap(); // pid 1 lives
        std::fs::write(dir.join("hkbnot-a-pid"), b"").unwrap();
        assert_eq!(
            clean_stale(&dir, "run").unwrap(),
            vec![dir.join("run-999999999")]
        );
        assert_eq!(
            clean_stale_shm(&dir, "hkb").unwrap(),
            vec![dir.join("hkb999999999_x.data")]
        );
        std::fs::write(dir.join(format!("hkb{}_mine", std::process::id())), b"").unwrap();
        remove_own_shm(&dir, "hkb");
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "hkb1_init",
                "hkbnot-a-pid",
                &format!("run-{}", std::process::id())
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
