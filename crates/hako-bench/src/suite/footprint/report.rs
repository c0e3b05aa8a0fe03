//! A footprint measure: every library of the build at each count of
//! allowed subscribers, and how their bytes per allowed subscriber grow.

use std::path::Path;
use std::time::{Duration, Instant};

use super::maps::Figures;

/// The subscriber counts the suite measures by default.
pub const DEFAULT_ALLOWED: [u32; 3] = [1, 64, 4096];

/// Per allowed subscriber, the larger of two counts may cost at most this
/// many times the smaller one's for the figures to count as linear.
pub const LINEAR_SLACK: f64 = 1.25;

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
            figures: super::hako::hako(base, n).map_err(|e| e.to_string()),
        });
    }
    #[cfg(feature = "peers")]
    for &n in allowed {
        rows.push(Footprint {
            library: "iceoryx2",
            allowed: n,
            figures: super::iceoryx2::measure(base, n).map_err(|e| e.to_string()),
        });
    }
    FootprintReport {
        rows,
        wall: start.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
