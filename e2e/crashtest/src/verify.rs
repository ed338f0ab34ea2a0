//! The `verify` mode: read every writer's ack log, read its keys back from the restarted server,
//! judge each writer with the model and print one summary line the scripts parse.

use crate::acklog::{read_dir, WriterLog};
use crate::model::{check_writer, plan, WriterCheck};
use crate::resp::Conn;
use crate::stats::percentile;
use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct VerifyConfig {
    pub addr: String,
    pub log_dirs: Vec<PathBuf>,
    /// Lost acknowledged writes are reported but do not fail (non-sync tiers).
    pub allow_loss: bool,
    pub show_problems: usize,
}

/// Totals over all writers checked.
#[derive(Debug, Default)]
pub struct Summary {
    pub writers: u64,
    pub acked: u64,
    pub lost: u64,
    pub changed: u64,
    pub uncertain: u64,
    pub uncertain_landed: u64,
    pub non_prefix_writers: u64,
    pub windows_us: Vec<u64>,
    pub problems: Vec<String>,
}

impl Summary {
    fn add(&mut self, log: &WriterLog, check: WriterCheck) {
        self.writers += 1;
        self.acked += check.acked;
        self.lost += check.lost;
        self.changed += check.changed;
        self.uncertain += check.uncertain;
        self.uncertain_landed += check.uncertain_landed;
        self.non_prefix_writers += u64::from(check.non_prefix);
        self.windows_us.extend(check.loss_window_us);
        self.problems.extend(check.problems.into_iter().map(|p| format!("{}: {p}", log.name)));
    }

    /// One `key=value` line; the crash scripts read it.
    pub fn line(&mut self) -> String {
        self.windows_us.sort_unstable();
        let ms = |q: f64| percentile(&self.windows_us, q) as f64 / 1000.0;
        format!(
            "verify: writers={} acked={} verified={} lost={} changed={} uncertain={} uncertain_landed={} \
             non_prefix_writers={} window_p50_ms={:.1} window_p99_ms={:.1} window_max_ms={:.1}",
            self.writers,
            self.acked,
            self.acked - self.lost,
            self.lost,
            self.changed,
            self.uncertain,
            self.uncertain_landed,
            self.non_prefix_writers,
            ms(0.50),
            ms(0.99),
            ms(1.0)
        )
    }
}

/// Verifies and returns the process exit code: 0 clean, 1 acknowledged writes lost, 2 changed.
pub fn verify(config: &VerifyConfig) -> anyhow::Result<i32> {
    let mut conn = Conn::connect(&config.addr, Duration::from_secs(60))
        .with_context(|| format!("cannot connect to {}", config.addr))?;
    let mut summary = Summary::default();
    for dir in &config.log_dirs {
        for log in read_dir(dir)? {
            let check = check_one(&mut conn, &log).with_context(|| format!("reading back {}", log.name))?;
            summary.add(&log, check);
        }
    }
    println!("{}", summary.line());
    for problem in summary.problems.iter().take(config.show_problems) {
        println!("  {problem}");
    }
    if summary.changed > 0 || summary.non_prefix_writers > 0 {
        return Ok(2);
    }
    Ok(if summary.lost > 0 && !config.allow_loss { 1 } else { 0 })
}

/// Reads back one writer's keys in one pipelined batch and judges them.
fn check_one(conn: &mut Conn, log: &WriterLog) -> anyhow::Result<WriterCheck> {
    let plans = plan(log);
    for key in &plans {
        conn.queue(&key.read_args())?;
    }
    conn.flush()?;
    let observed = plans.iter().map(|_| conn.read_reply()).collect::<Result<Vec<_>, _>>()?;
    Ok(check_writer(log, &plans, &observed))
}
