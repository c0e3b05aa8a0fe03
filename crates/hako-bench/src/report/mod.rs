//! The reports of `hako bench`: one model of a run ([`Report`]), read by
//! every renderer.
//!
//! - [`model`]: the report, the machine and the settings;
//! - [`table`]: a table as text or Markdown; [`tables`]: the run's tables;
//!   [`footprint`]: the memory footprint's table, JSON and summary line;
//! - [`goals`]: the targets as one table of data, and their verdicts;
//!   [`lines`]: the summary's ratios;
//! - [`text`] (terminal, Markdown), [`json`], [`plot`] (SVG): the renderers.
//!
//! Layers, bottom first: table, model; footprint, goals; tables, lines;
//! text, json, plot.

#[cfg(test)]
mod fixtures;
pub mod footprint;
pub mod goals;
pub mod json;
pub mod lines;
pub mod model;
pub mod plot;
pub mod table;
pub mod tables;
pub mod text;

pub use model::{machine, Meta, Report, Run};
