//! Per-command latency histograms as Redis 7 reports them: LATENCY HISTOGRAM
//! and INFO latencystats (`latency-tracking`, `latency-tracking-info-percentiles`).
//!
//! The workers already count every call in a power-of-two µs bucket
//! ([`crate::stats::CommandCounters::latency`], also exported as metrics),
//! without locks; this module only reads: it sums the workers' buckets and
//! subtracts a baseline. CONFIG RESETSTAT moves the baseline to now, and
//! while `latency-tracking` is `no` the readings stay frozen at the moment it
//! was turned off (the calls made meanwhile join the baseline when it is turned
//! back on), so the hot path never looks at the setting.
//!
//! Precision: a percentile is the upper bound of the power-of-two bucket
//! holding it (1, 2, 4, ... µs), where Redis's HdrHistogram keeps two
//! significant digits.

use std::fmt::Write;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::stats::{collect_latency, WorkerStats, LATENCY_BUCKETS};

/// One command's bucket counts (not cumulative).
pub type Buckets = [u64; LATENCY_BUCKETS];

/// The baseline and the frozen reading of the command histograms.
#[derive(Debug, Default)]
pub struct CommandLatency {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Counts before the last reset (and calls made while tracking was off).
    baseline: Vec<Buckets>,
    /// The raw counts when tracking was turned off, while it is off.
    frozen: Option<Vec<Buckets>>,
}

fn raw(workers: &[Arc<WorkerStats>]) -> Vec<Buckets> {
    collect_latency(workers, crate::commands::table::stat_count())
}

fn minus(mut a: Vec<Buckets>, b: &[Buckets]) -> Vec<Buckets> {
    for (cell, base) in a.iter_mut().zip(b) {
        cell.iter_mut().zip(base).for_each(|(x, y)| *x = x.saturating_sub(*y));
    }
    a
}

fn plus(a: &mut Vec<Buckets>, b: &[Buckets]) {
    if a.len() < b.len() {
        a.resize(b.len(), [0; LATENCY_BUCKETS]);
    }
    for (cell, more) in a.iter_mut().zip(b) {
        cell.iter_mut().zip(more).for_each(|(x, y)| *x += y);
    }
}

impl CommandLatency {
    /// Each statistics slot's buckets since the last reset, as tracked.
    pub fn read(&self, workers: &[Arc<WorkerStats>]) -> Vec<Buckets> {
        let state = self.state.lock();
        let counts = match &state.frozen {
            Some(frozen) => frozen.clone(),
            None => raw(workers),
        };
        minus(counts, &state.baseline)
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self, workers: &[Arc<WorkerStats>]) {
        let now = raw(workers);
        let mut state = self.state.lock();
        if state.frozen.is_some() {
            state.frozen = Some(now.clone());
        }
        state.baseline = now;
    }

    /// CONFIG SET `latency-tracking`: freezes the readings when turned off,
    /// resumes them (without what happened meanwhile) when turned on.
    pub fn set_tracking(&self, workers: &[Arc<WorkerStats>], enabled: bool) {
        let now = raw(workers);
        let mut state = self.state.lock();
        match (enabled, state.frozen.take()) {
            (false, None) => state.frozen = Some(now),
            (false, Some(frozen)) => state.frozen = Some(frozen),
            (true, Some(frozen)) => plus(&mut state.baseline, &minus(now, &frozen)),
            (true, None) => {}
        }
    }
}

/// The calls a histogram holds.
pub fn calls(buckets: &Buckets) -> u64 {
    buckets.iter().sum()
}

/// The upper bound, in µs, of bucket `i` (Redis's keys: 1, 2, 4, ...).
pub fn bucket_upper_us(i: usize) -> u64 {
    1u64 << i
}

/// The value at `percentile` (0..=100), in µs: the upper bound of the bucket
/// holding the call of that rank (HdrHistogram's rank rule).
pub fn value_at_percentile(buckets: &Buckets, percentile: f64) -> u64 {
    let total = calls(buckets);
    if total == 0 {
        return 0;
    }
    let rank = ((percentile.clamp(0.0, 100.0) / 100.0) * total as f64 + 0.5) as u64;
    let rank = rank.clamp(1, total);
    let mut seen = 0;
    for (i, n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return bucket_upper_us(i);
        }
    }
    bucket_upper_us(LATENCY_BUCKETS - 1)
}

/// A percentile as Redis prints it (`%f` without trailing zeros): `50`, `99.9`.
pub fn format_percentile(p: f64) -> String {
    let text = format!("{p:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses `latency-tracking-info-percentiles` ("50 99 99.9"; "" for none)
/// into its normalized text, or Redis's reason for refusing it.
pub fn parse_percentiles(value: &str) -> Result<Vec<f64>, &'static str> {
    value
        .split_ascii_whitespace()
        .map(|word| {
            let p = cairn_engine::number::parse_f64(word.as_bytes())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]");
            }
            Ok(p)
        })
        .collect()
}

/// The normalized text of a percentile list.
pub fn format_percentiles(percentiles: &[f64]) -> String {
    percentiles.iter().map(|p| format_percentile(*p)).collect::<Vec<_>>().join(" ")
}

/// One INFO latencystats line: `latency_percentiles_usec_<name>:p50=1.000,...`.
pub fn info_line(out: &mut String, name: &str, buckets: &Buckets, percentiles: &[f64]) {
    let _ = write!(out, "latency_percentiles_usec_{name}:");
    for (i, p) in percentiles.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "p{}={:.3}", format_percentile(*p), value_at_percentile(buckets, *p) as f64);
    }
    out.push_str("\r\n");
}

/// LATENCY HISTOGRAM's value for one command: `calls` and the cumulative
/// `histogram_usec` (a bucket is listed where the cumulative count grows).
pub fn write_histogram(out: &mut cairn_protocol::ReplyWriter<'_>, buckets: &Buckets) {
    out.map(2);
    out.bulk(b"calls");
    out.int(calls(buckets) as i64);
    out.bulk(b"histogram_usec");
    let listed = buckets.iter().filter(|n| **n > 0).count();
    out.map(listed);
    let mut cumulative = 0;
    for (i, n) in buckets.iter().enumerate() {
        if *n > 0 {
            cumulative += n;
            out.int(bucket_upper_us(i) as i64);
            out.int(cumulative as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_bucket_upper_bounds() {
        let mut b: Buckets = [0; LATENCY_BUCKETS];
        b[1] = 90; // 1 µs
        b[16] = 10; // 32768..65535 µs
        assert_eq!(value_at_percentile(&b, 50.0), 2);
        assert_eq!(value_at_percentile(&b, 90.0), 2);
        assert_eq!(value_at_percentile(&b, 99.0), 65536);
        assert_eq!(value_at_percentile(&b, 0.0), 2);
        assert_eq!(value_at_percentile(&[0; LATENCY_BUCKETS], 50.0), 0);
    }

    #[test]
    fn percentiles_print_and_parse_as_redis() {
        assert_eq!(format_percentile(50.0), "50");
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(format_percentile(0.0), "0");
        assert_eq!(parse_percentiles("0.0 50.0 100.0").map(|p| format_percentiles(&p)), Ok("0 50 100".into()));
        assert_eq!(parse_percentiles(""), Ok(vec![]));
        assert!(parse_percentiles("10 a").is_err());
        assert!(parse_percentiles("101").is_err());
        let mut line = String::new();
        let mut b: Buckets = [0; LATENCY_BUCKETS];
        b[0] = 1;
        info_line(&mut line, "set", &b, &[50.0, 99.9]);
        assert_eq!(line, "latency_percentiles_usec_set:p50=1.000,p99.9=1.000\r\n");
    }

    #[test]
    fn tracking_off_freezes_and_on_skips_the_gap() {
        let workers = vec![Arc::new(WorkerStats::new(crate::commands::table::stat_count()))];
        let tracker = CommandLatency::default();
        workers[0].per_command[0].record_usec(3);
        tracker.set_tracking(&workers, false);
        workers[0].per_command[0].record_usec(3);
        assert_eq!(calls(&tracker.read(&workers)[0]), 1);
        tracker.set_tracking(&workers, true);
        workers[0].per_command[0].record_usec(3);
        assert_eq!(calls(&tracker.read(&workers)[0]), 2);
        tracker.reset(&workers);
        assert_eq!(calls(&tracker.read(&workers)[0]), 0);
    }
}
