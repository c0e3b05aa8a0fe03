//! The memory footprint: how many bytes of shared memory one publisher and
//! one subscriber map, against the number of subscribers their service
//! allows.
//!
//! A hako publisher preallocates its worst case: its segment holds a connection
//! block for every subscriber the service allows and a chunk pool sized for
//! all of them (see `DESIGN.md`, "Data path"). So its memory must grow
//! *linearly* with that number: the bytes per allowed subscriber may not
//! grow with it (they did, once: a `u64` service allowing 4,096 subscribers
//! took a 540 MB publisher segment). A subscriber maps its own connection
//! block and the publisher's pool, never the other subscribers' blocks.
//!
//! The measure, in this process, for a `u64` publish/subscribe service that
//! allows `n` subscribers and one publisher (every other setting the
//! library's default), each library in a fresh place of its own:
//!
//! 1. create a node; sum the sizes of the regions of `/proc/self/maps`
//!    backed by the library's files ([`mapped_bytes`]), create the
//!    service, sum again: the difference is what the service maps
//!    ([`Figures::service`]);
//! 2. create one publisher, sum again: the difference is what the
//!    publisher maps ([`Figures::publisher`]);
//! 3. create one subscriber (sum), send one sample (sum), receive it (sum):
//!    a subscriber maps a publisher's segment when it first receives from
//!    it. What changed while the subscriber was created and while it
//!    received is the subscriber's ([`Figures::subscriber`]); what changed
//!    while the publisher sent is the publisher's side of the new
//!    connection ([`Figures::at_first_send`]): only one port runs in each
//!    step, so each byte is put down to the port that mapped it.
//!
//! The bytes are address space mapped (virtual), not pages touched: what a
//! port reserves, which bounds what it can ever use. hako's files are those
//! under the domain root, a directory made for the measure and removed
//! after it; iceoryx2's (feature `peers`, see
//! `crate::peers::iceoryx2_footprint`) those under its file prefix in
//! `/dev/shm` and under its root path. A failure is kept as the row's error text, never ends a run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::Result;

/// The subscriber counts the suite measures by default.
pub const DEFAULT_ALLOWED: [u32; 3] = [1, 64, 4096];

/// Per allowed subscriber, the larger of two counts may cost at most this
/// many times the smaller one's for the figures to count as linear.
pub const LINEAR_SLACK: f64 = 1.25;

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

/// One library at one number of allowed subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    /// `hako` or `iceoryx2`.
    pub library: &'static str,
    /// Subscribers the service allows.
    pub allowed: u32,
    /// The figures, or why there are none.
    pub figures: std::result::Result<Figures, String>,
}

impl Footprint {
    /// Bytes per allowed subscriber of the publisher's and of the
    /// subscriber's mappings, if measured.
    pub fn per_allowed(&self) -> Option<(f64, f64)> {
        let f = self.figures.as_ref().ok()?;
        let n = f64::from(self.allowed.max(1));
        Some((f.publisher as f64 / n, f.subscriber as f64 / n))
    }
}

/// Every row of a measure, and how long it took.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FootprintReport {
    /// Per library (hako first), per count of allowed subscribers.
    pub rows: Vec<Footprint>,
    /// Wall time of the whole measure.
    pub wall: Duration,
}

impl FootprintReport {
    /// The row of `library` at `allowed`.
    pub fn get(&self, library: &str, allowed: u32) -> Option<&Footprint> {
        self.rows
            .iter()
            .find(|r| r.library == library && r.allowed == allowed)
    }

    /// How the bytes per allowed subscriber of `library` at `large` compare
    /// with those at `small`: (publisher, subscriber) ratios, if both rows
    /// were measured. At most [`LINEAR_SLACK`] is linear.
    pub fn growth(&self, library: &str, small: u32, large: u32) -> Option<(f64, f64)> {
        let (ps, ss) = self.get(library, small)?.per_allowed()?;
        let (pl, sl) = self.get(library, large)?.per_allowed()?;
        Some((pl / ps.max(1.0), sl / ss.max(1.0)))
    }
}

/// Measures every library of the build at each count of `allowed`, in
/// places of their own under `base` (a directory that exists; each place
/// is removed after its measure).
pub fn measure(base: &Path, allowed: &[u32]) -> FootprintReport {
    let start = Instant::now();
    let mut rows = Vec::new();
    for &n in allowed {
        rows.push(Footprint {
            library: "hako",
            allowed: n,
            figures: hako(base, n).map_err(|e| e.to_string()),
        });
    }
    #[cfg(feature = "peers")]
    for &n in allowed {
        rows.push(Footprint {
            library: "iceoryx2",
            allowed: n,
            figures: crate::peers::iceoryx2_footprint::measure(base, n).map_err(|e| e.to_string()),
        });
    }
    FootprintReport {
        rows,
        wall: start.elapsed(),
    }
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

/// A directory made for one measure, removed (with all in it) on drop.
struct Place(PathBuf);

impl Place {
    /// Creates `<base>/footprint-<library>-<allowed>-<unique>`, owner-only,
    /// and gives its path as the kernel shows it in `/proc/self/maps`.
    fn create(base: &Path, library: &str, allowed: u32) -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let path = base.join(format!("footprint-{library}-{allowed}-{}", unique()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // Removed on drop from here on, an error of the next line included.
        let mut place = Self(path);
        place.0 = std::fs::canonicalize(&place.0)?;
        Ok(place)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// hako's figures for a `u64` service allowing `allowed` subscribers and
/// one publisher, in a domain root of its own under `base`.
pub fn hako(base: &Path, allowed: u32) -> Result<Figures> {
    let place = Place::create(base, "hako", allowed)?;
    let root = &place.0;
    let prefix = format!(
        "{}/",
        root.to_str()
            .ok_or_else(|| format!("{} is not UTF-8", root.display()))?
    );
    let mapped = || mapped_bytes(&prefix);
    // Ports before the service before the node: drop order.
    let node = hako::NodeBuilder::new()
        .signal_handling(false)
        .config(&hako::Config::default().with_root(root))
        .create()?;
    let before_service = mapped()?;
    let service = node
        .service_builder(&"hako-bench/footprint".try_into()?)
        .publish_subscribe::<u64>()
        .max_subscribers(allowed)
        .max_publishers(1)
        .create()?;

    let files_before = files(root)?;
    let m0 = mapped()?;
    let publisher = service.publisher_builder().create()?;
    let m1 = mapped()?;
    // The publisher's segment: hako names it `pub_<port id>` in the
    // service's directory (as `hako inspect` reads it).
    let segment = files(root)?
        .into_iter()
        .filter(|(p, _)| !files_before.iter().any(|(q, _)| q == p))
        .filter(|(p, _)| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pub_"))
        })
        .map(|(_, size)| size)
        .sum();

    let subscriber = service.subscriber_builder().create()?;
    let m2 = mapped()?;
    let reached = publisher.send_copy(7)?;
    let m3 = mapped()?;
    let sample = subscriber.receive()?;
    let m4 = mapped()?;
    check_echo("hako", reached, sample.as_deref().copied())?;
    drop(sample);
    let figures = Figures::from_steps([before_service, m0, m1, m2, m3, m4], segment);
    drop((subscriber, publisher, service, node));
    Ok(figures)
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

    #[test]
    fn growth_compares_bytes_per_allowed_subscriber() {
        let row = |allowed, publisher, subscriber| Footprint {
            library: "hako",
            allowed,
            figures: Ok(Figures {
                publisher,
                subscriber,
                ..Figures::default()
            }),
        };
        let report = FootprintReport {
            rows: vec![row(64, 64_000, 6_400), row(4096, 4_096_000 * 2, 409_600)],
            wall: Duration::ZERO,
        };
        assert_eq!(report.growth("hako", 64, 4096), Some((2.0, 1.0)));
        assert_eq!(report.growth("hako", 64, 1), None);
        assert_eq!(report.growth("iceoryx2", 64, 4096), None);
    }

    /// hako's memory is linear in the subscribers a service allows: per
    /// allowed subscriber, 4,096 cost at most 1.25x what 64 do, for the
    /// publisher and for the subscriber alike.
    #[test]
    fn hako_grows_linearly_with_allowed_subscribers() {
        let base = crate::sys::rundir::RunDir::create(Path::new("/dev/shm"), "hako-bench-fp-test")
            .unwrap();
        let report = measure(base.path(), &DEFAULT_ALLOWED);
        for r in &report.rows {
            println!("{} {:>5}: {:?}", r.library, r.allowed, r.figures);
        }
        println!("took {:?}", report.wall);
        for &n in &DEFAULT_ALLOWED {
            let f = report.get("hako", n).unwrap().figures.clone().unwrap();
            assert!(f.publisher >= f.segment && f.segment > 0, "{n}: {f:?}");
            assert!(f.subscriber > 0, "{n}: {f:?}");
        }
        let (publisher, subscriber) = report.growth("hako", 64, 4096).unwrap();
        assert!(
            publisher <= LINEAR_SLACK,
            "publisher: {publisher}x per allowed subscriber"
        );
        assert!(
            subscriber <= LINEAR_SLACK,
            "subscriber: {subscriber}x per allowed subscriber"
        );
        // Nothing of the measure is left.
        let left: Vec<_> = std::fs::read_dir(base.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
