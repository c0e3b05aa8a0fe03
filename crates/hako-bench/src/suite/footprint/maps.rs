//! What a footprint is measured with: the figures of one library at one
//! count, and the bytes this process maps of a library's files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::Result;

/// What one publisher and one subscriber mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Bytes mapped by creating the service (after its node): what every
    /// process that opens it maps too, whatever ports it makes.
    pub service: u64,
    /// Bytes mapped by creating the publisher.
    pub publisher: u64,
    /// Bytes of the files that creating the publisher made (hako: its
    /// segment; iceoryx2: every file it added under the prefix).
    pub segment: u64,
    /// Bytes mapped by the subscriber: creating it and its first receive.
    pub subscriber: u64,
    /// Bytes the publisher mapped while it sent its first sample to the new
    /// subscriber (its side of the connection, where it has one).
    pub at_first_send: u64,
}

/// A number no other measure of this process uses, for names of places.
pub(crate) fn unique() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Relaxed: only uniqueness matters, no memory is published with it.
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Bytes this process maps of files whose path starts with `prefix`: the
/// sum of the sizes of those regions of `/proc/self/maps`.
pub fn mapped_bytes(prefix: &str) -> Result<u64> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| format!("cannot read /proc/self/maps: {e}"))?;
    Ok(maps.lines().filter_map(|l| region_size(l, prefix)).sum())
}

/// The size of the region of a line of `/proc/<pid>/maps`, if it is backed
/// by a file whose path starts with `prefix`.
fn region_size(line: &str, prefix: &str) -> Option<u64> {
    // `start-end perms offset dev inode   path`: the fields before the path
    // hold no '/', and a path (even one with spaces) starts with one.
    let path = &line[line.find('/')?..];
    if !path.starts_with(prefix) {
        return None;
    }
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    u64::from_str_radix(end, 16).ok()?.checked_sub(start)
}

/// The bytes that `after` maps beyond `before` (none if it maps fewer).
pub(crate) fn grew(before: u64, after: u64) -> u64 {
    after.saturating_sub(before)
}

impl Figures {
    /// The figures of one measurement from the bytes mapped at each step:
    /// before the service, after it, after the publisher, after the
    /// subscriber, after the first send and after the first receive; and
    /// the size of the publisher's files.
    pub(crate) fn from_steps(
        [before, service, publisher, subscriber, sent, received]: [u64; 6],
        segment: u64,
    ) -> Self {
        Self {
            service: grew(before, service),
            publisher: grew(service, publisher),
            segment,
            subscriber: grew(publisher, subscriber) + grew(sent, received),
            at_first_send: grew(subscriber, sent),
        }
    }
}

/// Checks that the one sample sent (7, which `reached` subscribers) came
/// back as `got`.
pub(crate) fn check_echo(library: &str, reached: usize, got: Option<u64>) -> Result<()> {
    match got {
        Some(7) if reached == 1 => Ok(()),
        got => Err(format!(
            "{library}: the sample sent to {reached} subscriber(s) came back as {got:?}"
        )
        .into()),
    }
}

/// Every regular file under `dir` (in its subdirectories too), with its
/// size.
pub(crate) fn files(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() {
                out.push((entry.path(), entry.metadata()?.len()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_read_by_path_prefix() {
        let line = "7f00a000-7f00c000 rw-s 00000000 00:19 42    /dev/shm/root/svc/pub_01";
        assert_eq!(region_size(line, "/dev/shm/root/"), Some(0x2000));
        assert_eq!(region_size(line, "/dev/shm/other/"), None);
        let anon = "7f00a000-7f00c000 rw-p 00000000 00:00 0";
        assert_eq!(region_size(anon, "/"), None);
        let spaced = "1000-2000 r--s 00000000 00:19 7  /dev/shm/a b/c (deleted)";
        assert_eq!(region_size(spaced, "/dev/shm/a b/"), Some(0x1000));
        assert_eq!(grew(10, 4), 0);
        assert_eq!(grew(4, 10), 6);
    }
}
