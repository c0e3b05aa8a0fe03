//! The statistics of a row's round-trip times.

use hdrhistogram::Histogram;

use crate::error::Result;

/// Round-trip times of one row, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Timed round trips.
    pub count: u64,
    /// Fastest.
    pub min: u64,
    /// Median.
    pub median: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Slowest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Interquartile mean: the mean of the middle half of the round trips
    /// (from the 25th to the 75th percentile). Robust to outliers like the
    /// median, but not bound to the clock's resolution (10 ns on the VM this
    /// was written on, 6 % of a busy-polled round trip there): ratios between
    /// transports are taken of it.
    pub iqm: f64,
}

impl Stats {
    /// `count` round trips that all took `ns` (for tests of what reads
    /// the figures).
    pub fn uniform(count: u64, ns: u64) -> Self {
        Self {
            count,
            min: ns,
            median: ns,
            p99: ns,
            p999: ns,
            max: ns,
            mean: ns as f64,
            iqm: ns as f64,
        }
    }

    /// Summarises round-trip times (nanoseconds) through an HDR histogram
    /// with three significant digits (the interquartile mean from the
    /// samples themselves).
    pub fn from_samples(samples: &[u64]) -> Result<Self> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)?;
        for &s in samples {
            h.record(s.max(1))?;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let quarter = sorted.len() / 4;
        let middle = &sorted[quarter..sorted.len() - quarter];
        let iqm = if middle.is_empty() {
            0.0
        } else {
            middle.iter().map(|&s| s as f64).sum::<f64>() / middle.len() as f64
        };
        Ok(Self {
            count: h.len(),
            min: h.min(),
            median: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            iqm,
        })
    }
}

/// Whether a floor probe of `median_ns` shows the VM's low or high level.
/// This VM's cross-CPU floor flips between about 0.1 and 0.4 µs as the host
/// moves the vCPUs; 0.25 µs lies between.
pub fn floor_level(median_ns: u64) -> &'static str {
    if median_ns < 250 {
        "low"
    } else {
        "high"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_are_low_or_high() {
        assert_eq!(floor_level(130), "low");
        assert_eq!(floor_level(420), "high");
    }

    #[test]
    fn stats_of_known_samples() {
        let samples: Vec<u64> = (1..=1000).collect();
        let s = Stats::from_samples(&samples).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1);
        assert_eq!(s.median, 500);
        assert_eq!(s.p99, 990);
        assert_eq!(s.max, 1000);
        // The middle half, 251..=750, and its mean.
        assert_eq!(s.iqm, 500.5);
        // Outliers do not move it; the clock's steps do not bind it.
        let mut steps = vec![100u64; 6];
        steps.extend([110, 110, 110, 1_000_000]);
        let s = Stats::from_samples(&steps).unwrap();
        assert_eq!(s.median, 100);
        assert!((s.iqm - 620.0 / 6.0).abs() < 1e-9, "{}", s.iqm);
        assert_eq!(Stats::from_samples(&[]).unwrap().iqm, 0.0);
        assert_eq!(Stats::from_samples(&[7]).unwrap().iqm, 7.0);
    }
}
