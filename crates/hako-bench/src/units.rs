//! How the reports write sizes, ratios, times, rates and counts, and how
//! the command line reads sizes.

/// `64 B`, `4 KiB`, `1 MiB`, `1.5 KiB` (binary units, as the sizes are
/// powers of two).
pub fn format_size(size: usize) -> String {
    humansize::format_size(size, humansize::BINARY)
}

/// Parses `64`, `64B`, `4K`, `4KiB`, `1M`, `1MiB`, `1.5K` (case-insensitive;
/// `K` and `M` are binary units, 1024 and 1024²), at least one byte.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let n = parse_size::Config::new()
        .with_binary()
        .parse_size(text.trim())
        .map_err(|e| format!("bad size {text:?} ({e}): use e.g. 64, 4K, 1MiB"))?;
    let n = usize::try_from(n).map_err(|_| format!("size {text:?} is too large"))?;
    if n == 0 {
        return Err("sizes must be at least 1 byte".into());
    }
    Ok(n)
}

/// `1.05x`, `12.3x`, `340x`, and two significant digits below 0.1
/// (`0.0042x`, not `0.00x`); `-` for a missing ratio.
pub fn format_ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() && r >= 99.5 => format!("{r:.0}x"),
        Some(r) if r.is_finite() && r >= 9.95 => format!("{r:.1}x"),
        Some(r) if r.is_finite() && r > 0.0 && r < 0.0995 => {
            // Clamped: a ratio below 1e-12 is shown as 0.0…0x.
            let digits = (1.0 - r.log10().floor()).clamp(2.0, 13.0) as usize;
            format!("{r:.digits$}x")
        }
        Some(r) if r.is_finite() => format!("{r:.2}x"),
        _ => "-".to_owned(),
    }
}

/// Nanoseconds as microseconds: three decimals below 10 µs, one below
/// 1000 µs, none above.
pub fn us(ns: f64) -> String {
    let us = ns / 1000.0;
    if us < 10.0 {
        format!("{us:.3}")
    } else if us < 1000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// A rate: `12.3M`, `456k`, `789`.
pub fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A count per round trip in at most 4 characters up to 9999: `0.98`,
/// `30.8`, `126`.
pub fn per_round_trip(x: f64) -> String {
    if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// `1`, `64`, `4,096`: a count with thousands separated.
pub fn count(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units; a fraction of a byte is rounded.
pub fn bytes(b: f64) -> String {
    format_size(b.round() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        for (text, n) in [
            ("64", 64),
            ("64B", 64),
            ("1K", 1024),
            ("4KiB", 4096),
            ("64k", 65536),
            ("1M", 1 << 20),
            ("4MiB", 4 << 20),
        ] {
            assert_eq!(parse_size(text), Ok(n), "{text}");
        }
        assert!(parse_size("0").is_err());
        assert!(parse_size("x").is_err());
        assert_eq!(format_size(64), "64 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(4 << 20), "4 MiB");
        assert_eq!(format_size(1000), "1000 B");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(parse_size("1.5K"), Ok(1536));
    }

    #[test]
    fn ratios_times_and_counts_format() {
        assert_eq!(format_ratio(Some(1.054)), "1.05x");
        assert_eq!(format_ratio(Some(12.34)), "12.3x");
        assert_eq!(format_ratio(Some(345.6)), "346x");
        assert_eq!(format_ratio(Some(0.25)), "0.25x");
        assert_eq!(format_ratio(Some(0.0995)), "0.10x");
        assert_eq!(format_ratio(Some(0.05)), "0.050x");
        assert_eq!(format_ratio(Some(0.00421)), "0.0042x");
        assert_eq!(format_ratio(Some(0.0)), "0.00x");
        assert_eq!(format_ratio(Some(f64::NAN)), "-");
        assert_eq!(format_ratio(None), "-");
        assert_eq!(per_round_trip(0.984), "0.98");
        assert_eq!(per_round_trip(30.76), "30.8");
        assert_eq!(per_round_trip(125.85), "126");
        assert_eq!(us(250.0), "0.250");
        assert_eq!(us(125_000.0), "125.0");
        assert_eq!(us(4_500_000.0), "4500");
        assert_eq!(rate(12_345_678.0), "12.35M");
        assert_eq!(rate(4_560.0), "4.6k");
        assert_eq!(count(1), "1");
        assert_eq!(count(64), "64");
        assert_eq!(count(4096), "4,096");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(bytes(799.6), "800 B");
    }
}
