//! `--plot FILE.svg`: round-trip latency against payload size, log–log.
//!
//! One panel per pattern (ping-pong, request/response one request at a
//! time, the same under tokio, and through the Zenoh bridge) and payload mode (touch, full) that ran, patterns in rows and
//! modes in columns, one line per transport: the median round trip at each
//! size. Drawn with plotters'
//! SVG backend only, so no font or image library of the system is needed:
//! text is written as SVG `<text>` elements, which any viewer renders with
//! its own fonts (plotters only estimates their extent for the layout).

use std::path::Path;

use plotters::prelude::*;

use crate::error::Result;
use crate::suite::{PingPongRow, SuiteResult};
use crate::transport::PayloadMode;
use crate::units::format_size;

/// The median round trip (µs) of each transport at each size, per mode.
type Lines = Vec<(&'static str, Vec<(f64, f64)>)>;

fn lines(rows: &[PingPongRow], payload: PayloadMode) -> Lines {
    let mut out: Lines = Vec::new();
    for r in rows.iter().filter(|r| r.payload == payload) {
        for m in &r.row.transports {
            let point = (
                r.row.size as f64,
                (m.stats.median as f64 / 1000.0).max(1e-3),
            );
            match out.iter_mut().find(|(n, _)| *n == m.name) {
                Some((_, pts)) => pts.push(point),
                None => out.push((m.name, vec![point])),
            }
        }
    }
    out
}

fn plot_err(e: impl std::fmt::Display) -> crate::error::BoxError {
    format!("cannot draw the plot: {e}").into()
}

/// Draws the plot into `path` (an SVG file).
pub fn latency_svg(result: &SuiteResult, path: &Path) -> Result<()> {
    let patterns: Vec<(&str, &[PingPongRow])> = [
        ("ping-pong", result.ping_pong.as_slice()),
        ("request/response", result.request_response.as_slice()),
        ("async (tokio)", result.async_round_trip.as_slice()),
        ("bridge (Zenoh)", result.bridge.as_slice()),
    ]
    .into_iter()
    .filter(|(_, rows)| !rows.is_empty())
    .collect();
    let modes: Vec<PayloadMode> = PayloadMode::ALL
        .into_iter()
        .filter(|&p| {
            patterns
                .iter()
                .any(|(_, rows)| rows.iter().any(|r| r.payload == p))
        })
        .collect();
    if modes.is_empty() {
        return Err("--plot needs the pingpong, reqres, async or bridge pattern".into());
    }
    let width = 720 * modes.len() as u32;
    let height = 540 * patterns.len() as u32;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let panels = root.split_evenly((patterns.len(), modes.len()));
    let cells = patterns
        .iter()
        .flat_map(|&(what, rows)| modes.iter().map(move |&mode| (what, rows, mode)));
    for (panel, (what, rows, mode)) in panels.iter().zip(cells) {
        let data = lines(rows, mode);
        if data.is_empty() {
            continue;
        }
        let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
        for (_, pts) in &data {
            for &(x, y) in pts {
                xmin = xmin.min(x);
                xmax = xmax.max(x);
                ymin = ymin.min(y);
                ymax = ymax.max(y);
            }
        }
        let (xmin, xmax) = (xmin / 1.5, (xmax * 1.5).max(xmin * 2.0));
        // Ticks at the sizes measured (64 B, 1 KiB, …), not at powers of 10.
        let mut sizes: Vec<f64> = data
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|&(x, _)| x))
            .collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        let (ymin, ymax) = (ymin / 1.5, (ymax * 1.5).max(ymin * 2.0));
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{what}: round trip vs payload size ({} mode)", mode.name()),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (xmin..xmax).log_scale().with_key_points(sizes),
                (ymin..ymax).log_scale(),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("payload size")
            .y_desc("median round trip (µs)")
            .x_label_formatter(&|x| format_size(x.round() as usize))
            .y_label_formatter(&|y| format!("{y}"))
            .draw()
            .map_err(plot_err)?;
        for (i, (name, pts)) in data.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 4), (x + 14, y + 4)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
    }
    root.present().map_err(plot_err)?;
    Ok(())
}
