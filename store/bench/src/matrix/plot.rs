//! SVG plots of ops/s and p99 against clients, one pair per operation and pipeline depth, one
//! line per system (plotters' SVG backend only: no fonts or bitmaps to link).

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;

use super::config::{MatrixConfig, TableConfig};
use super::table::{medians, Cell, Results};

const COLORS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

/// Writes the plots of table `t` into `dir`; returns their paths.
pub fn plots(
    dir: &Path,
    t: usize,
    table: &TableConfig,
    config: &MatrixConfig,
    results: &Results,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for op in &table.ops {
        for &pipeline in &table.pipeline {
            for metric in [Metric::OpsPerSec, Metric::P99] {
                let name = format!("{}-{op}-p{pipeline}-{}.svg", slug(&table.title), metric.slug());
                let path = dir.join(name);
                let series = series(t, table, config, results, op, pipeline, metric);
                let title = format!("{} {} P={pipeline}: {}", table.title, op.to_uppercase(), metric.label());
                draw(&path, &title, &table.clients, &series, metric)
                    .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

#[derive(Debug, Clone, Copy)]
enum Metric {
    OpsPerSec,
    P99,
}

impl Metric {
    fn slug(self) -> &'static str {
        match self {
            Metric::OpsPerSec => "ops",
            Metric::P99 => "p99",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Metric::OpsPerSec => "ops/s (median)",
            Metric::P99 => "p99 latency µs (median)",
        }
    }
}

/// `(system, [(clients index, value)])`.
type Series = Vec<(String, Vec<(usize, f64)>)>;

fn series(
    t: usize,
    table: &TableConfig,
    config: &MatrixConfig,
    results: &Results,
    op: &str,
    pipeline: u32,
    metric: Metric,
) -> Series {
    config
        .systems
        .iter()
        .map(|system| {
            let points = table
                .clients
                .iter()
                .enumerate()
                .filter_map(|(i, &clients)| {
                    let cell = Cell { op: op.to_string(), clients, pipeline };
                    let m = medians(results.get(t, &cell, &system.name)?);
                    Some((i, if matches!(metric, Metric::OpsPerSec) { m.ops_per_sec } else { m.p99_us }))
                })
                .collect();
            (system.name.clone(), points)
        })
        .collect()
}

fn draw(
    path: &Path,
    title: &str,
    clients: &[u32],
    series: &Series,
    metric: Metric,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (640, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, v)| v)).fold(0.0, f64::max).max(1.0) * 1.1;
    let last = clients.len().saturating_sub(1).max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.2f64..last + 0.2, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("clients")
        .y_desc(metric.label())
        .x_labels(clients.len().max(2))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.05 && i >= 0.0 {
                clients.get(i as usize).map(|c| c.to_string()).unwrap_or_default()
            } else {
                String::new()
            }
        })
        .draw()?;
    for (n, (name, points)) in series.iter().enumerate() {
        let color = COLORS[n % COLORS.len()];
        let line: Vec<(f64, f64)> = points.iter().map(|&(i, v)| (i as f64, v)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

fn slug(title: &str) -> String {
    let s: String =
        title.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}
