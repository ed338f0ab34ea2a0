//! Durable appends in process: Cairn embedded in the `sync` tier against
//! SQLite (WAL, `synchronous=FULL`, one row per transaction), the seed-002
//! method: W writer threads (1, 4, 16) each append N values of 256 bytes
//! under distinct keys; a fresh directory per run; rounds alternate the two
//! systems; the median of each cell over the rounds is reported: acks/s,
//! p50 and p99 of the per-call latency, and Cairn/SQLite ratios. With
//! `--write docs/benchmarks.md` the table replaces the section between the
//! `embedded-bench` markers there.
//!
//! ```sh
//! cargo run --release -p cairn-embedded --example sqlite_bench -- --rounds 3 --write docs/benchmarks.md
//! ```

mod cairn;
mod report;
mod run;
mod sqlite;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

/// Durable appends in process: Cairn embedded (`sync`) vs SQLite (WAL, synchronous=FULL).
#[derive(Debug, Parser)]
pub struct Args {
    /// Writer thread counts, one cell each.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    pub writers: Vec<usize>,
    /// Appends per writer.
    #[arg(long, default_value_t = 5000)]
    pub appends: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 256)]
    pub value_bytes: usize,
    /// Rounds; each runs every cell on both systems (alternating which goes first).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Where the fresh per-run directories are made (must be a real disk, not tmpfs).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Markdown file whose `embedded-bench` section is replaced with the results.
    #[arg(long)]
    pub write: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.rounds > 0 && args.appends > 0 && !args.writers.is_empty(), "nothing to run");
    let base =
        args.dir.clone().unwrap_or_else(std::env::temp_dir).join(format!("cairn-sqlite-bench-{}", std::process::id()));
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
    let filesystem = report::filesystem(&base);
    eprintln!("runs under {} ({filesystem})", base.display());
    if filesystem.starts_with("tmpfs") || filesystem.starts_with("ramfs") {
        let _ = std::fs::remove_dir_all(&base);
        anyhow::bail!(
            "{} is in memory ({filesystem}): fsync costs nothing there; pass --dir on a disk",
            base.display()
        );
    }
    let results = run::all(&args, &base);
    let _ = std::fs::remove_dir_all(&base);
    let results = results?;
    let table = report::table(&args, &results);
    println!("{table}");
    if let Some(path) = &args.write {
        let section = report::section(&args, &base, &table);
        report::write_section(path, &section).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote the embedded-bench section of {}", path.display());
    }
    Ok(())
}
