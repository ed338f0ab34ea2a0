//! `cairn-bench matrix --config FILE`: starts every system of the config, runs every cell of
//! every table against each in turn (the order rotates from cell to cell and round to round,
//! so drift of a shared machine hits all systems alike), and reports the median per cell as
//! markdown tables and SVG plots. Each cell is one `cairn-bench run` child process, pinned with
//! `taskset` when the config says so, so it verifies every reply like any other run.

pub mod config;
pub mod plot;
pub mod servers;
pub mod table;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::Value;

use config::{MatrixConfig, TableConfig};
use servers::Server;
use table::{Cell, Results, Sample};

use crate::workload::parse_duration;

#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// The matrix (TOML); see e2e/bench/*.toml and docs/bench.md.
    #[arg(long)]
    pub config: PathBuf,
    /// Write the markdown report here (it is always printed).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write SVG plots here (linked from the report relative to --out's directory).
    #[arg(long)]
    pub img_dir: Option<PathBuf>,
    /// Smoke profile: one round of short cells (a few minutes at most).
    #[arg(long)]
    pub quick: bool,
    /// Override the config's Cairn binary.
    #[arg(long)]
    pub cairn_bin: Option<String>,
}

/// Runs the matrix; `Ok(false)` if any cell failed verification.
pub fn main(args: &MatrixArgs) -> anyhow::Result<bool> {
    let mut config = MatrixConfig::load(&args.config)?;
    if args.quick {
        config.quick();
    }
    if let Some(bin) = &args.cairn_bin {
        config.cairn_bin = bin.clone();
    }
    let me = std::env::current_exe().context("locating the cairn-bench binary")?;
    let servers = servers::start_all(&config)?;
    for s in &servers {
        eprintln!("matrix: {} ({}) on {} pid {}", s.name, s.version, s.addr(), s.pid());
    }
    let started = Instant::now();
    let mut results = Results::default();
    let cells: Vec<(usize, Cell)> = config
        .tables
        .iter()
        .enumerate()
        .flat_map(|(t, table)| table::cells(table).into_iter().map(move |c| (t, c)))
        .collect();
    for round in 0..config.rounds {
        for (i, (t, cell)) in cells.iter().enumerate() {
            let n = servers.len();
            for j in 0..n {
                let server = &servers[(j + i + round as usize) % n];
                let sample = run_cell(&me, &config, &config.tables[*t], cell, server)?;
                eprintln!(
                    "matrix: round {} {} {} c={} P={}: {} {:.0} ops/s p99 {:.0} us{}",
                    round + 1,
                    config.tables[*t].title,
                    cell.op,
                    cell.clients,
                    cell.pipeline,
                    server.name,
                    sample.ops_per_sec,
                    sample.p99_us,
                    if sample.verified { "" } else { " VERIFICATION FAILED" }
                );
                results.add(*t, cell.clone(), &server.name, sample);
            }
        }
    }
    let versions: Vec<(String, String)> = servers.iter().map(|s| (s.name.clone(), s.version.clone())).collect();
    drop(servers);
    let mut markdown = table::header(&config, args, &versions, started.elapsed());
    let img_link_dir = link_dir(args);
    for (t, table_config) in config.tables.iter().enumerate() {
        markdown.push_str(&table::render(&config, t, table_config, &results));
        if table_config.plot {
            if let Some(dir) = &args.img_dir {
                let written = plot::plots(dir, t, table_config, &config, &results)?;
                markdown.push_str(&table::image_links(&written, img_link_dir.as_deref()));
            }
        }
    }
    println!("{markdown}");
    if let Some(out) = &args.out {
        std::fs::write(out, &markdown).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(results.all_verified())
}

/// The image directory as seen from the report's directory.
fn link_dir(args: &MatrixArgs) -> Option<PathBuf> {
    let img = args.img_dir.as_ref()?;
    let base = args.out.as_ref().and_then(|o| o.parent().map(PathBuf::from)).unwrap_or_default();
    Some(img.strip_prefix(&base).map(PathBuf::from).unwrap_or_else(|_| img.clone()))
}

fn run_cell(
    me: &std::path::Path,
    config: &MatrixConfig,
    table: &TableConfig,
    cell: &Cell,
    server: &Server,
) -> anyhow::Result<Sample> {
    let mut argv: Vec<String> = Vec::new();
    if let Some(cpus) = &config.driver_cpus {
        argv.extend(["taskset".into(), "-c".into(), cpus.clone()]);
    }
    argv.push(me.display().to_string());
    argv.extend(
        [
            "run",
            "--target",
            &server.addr(),
            "--ops",
            &cell.op,
            "--clients",
            &cell.clients.to_string(),
            "--pipeline",
            &cell.pipeline.to_string(),
            "--threads",
            &config.driver_threads.to_string(),
            "--warmup",
            &table.warmup,
            "--value-size",
            &table.value_size.to_string(),
            "--keyspace",
            &table.keyspace.to_string(),
            "--shape",
            &table.shape,
            "--think-time",
            &table.think_time,
            "--json",
            "--no-progress",
        ]
        .map(String::from),
    );
    let budget = match table.requests_per_client {
        Some(n) => {
            argv.extend(["--requests".into(), (n * u64::from(cell.clients)).to_string()]);
            Duration::from_secs(600)
        }
        None => {
            argv.extend(["--duration".into(), table.duration.clone()]);
            parse_duration(&table.duration)? * 5 + Duration::from_secs(60)
        }
    };
    let report = run_child(&argv, budget)?;
    Ok(Sample::from_report(&report))
}

fn run_child(argv: &[String], budget: Duration) -> anyhow::Result<Value> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", argv.join(" ")))?;
    let deadline = Instant::now() + budget;
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} ran over {budget:?}", argv.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).with_context(|| {
        format!("{} printed no report: {}", argv.join(" "), String::from_utf8_lossy(&out.stderr).trim())
    })
}
