//! What a run reports: the full report (`--json`), the summary (`--summary-json`, at most
//! 4 KiB, read by the operator from the Job's termination message) and the human text.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::stats::Latency;
use crate::workload::Op;

/// Kubernetes caps a termination message at 4096 bytes.
pub const SUMMARY_MAX_BYTES: usize = 4096;

/// Everything a run found.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub target: String,
    pub ops: String,
    pub clients: u32,
    pub pipeline: u32,
    pub threads: usize,
    /// `blocking` or `evented` sockets (`--io`).
    pub io: String,
    pub shape: String,
    pub think_time_ms: f64,
    pub value_size: usize,
    pub keyspace: u64,
    pub key_pattern: String,
    pub key_prefix: String,
    /// Seconds from the end of the warm-up to the last measured reply.
    pub measured_seconds: f64,
    pub requests: u64,
    pub ops_per_sec: f64,
    pub latency: Latency,
    pub per_op: BTreeMap<Op, Latency>,
    /// Mismatched replies plus failed connections.
    pub errors: u64,
    pub mismatches: u64,
    pub connection_errors: u64,
    pub final_state_keys_checked: u64,
    pub acked_writes: u64,
    pub verified: bool,
    /// The first few mismatches and connection errors.
    pub first_errors: Vec<String>,
}

/// The short summary: the keys the operator reads plus a little context.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub errors: u64,
    pub verified: bool,
    pub requests: u64,
    pub measured_seconds: f64,
    pub clients: u32,
    pub pipeline: u32,
    pub ops: String,
    pub shape: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl RunReport {
    pub fn summary(&self) -> Summary {
        Summary {
            ops_per_sec: self.ops_per_sec,
            p50_us: self.latency.p50_us,
            p99_us: self.latency.p99_us,
            p999_us: self.latency.p999_us,
            max_us: self.latency.max_us,
            errors: self.errors,
            verified: self.verified,
            requests: self.requests,
            measured_seconds: self.measured_seconds,
            clients: self.clients,
            pipeline: self.pipeline,
            ops: truncate(&self.ops, 200),
            shape: self.shape.clone(),
            first_error: self.first_errors.first().map(|e| truncate(e, 1024)),
        }
    }

    /// The summary as JSON, never over [`SUMMARY_MAX_BYTES`].
    pub fn summary_json(&self) -> String {
        let mut summary = self.summary();
        let json = serde_json::to_string(&summary).unwrap_or_default();
        if json.len() <= SUMMARY_MAX_BYTES {
            return json;
        }
        summary.first_error = None;
        summary.ops = truncate(&summary.ops, 32);
        serde_json::to_string(&summary).unwrap_or_default()
    }

    /// A few lines for a person.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} ops={} clients={} pipeline={} shape={} value={}B keys={}",
            self.target, self.ops, self.clients, self.pipeline, self.shape, self.value_size, self.keyspace
        );
        let _ = writeln!(
            out,
            "{:.0} ops/s over {:.2}s ({} requests); latency us: p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
            self.ops_per_sec,
            self.measured_seconds,
            self.requests,
            self.latency.p50_us,
            self.latency.p99_us,
            self.latency.p999_us,
            self.latency.max_us
        );
        for (op, l) in &self.per_op {
            let _ = writeln!(
                out,
                "  {op:<6} {:>10} req  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
                l.count, l.p50_us, l.p99_us, l.p999_us, l.max_us
            );
        }
        let verdict = if self.verified { "verified" } else { "VERIFICATION FAILED" };
        let _ = writeln!(
            out,
            "{verdict}: {} mismatches, {} connection errors, {} keys read back, {} writes acknowledged",
            self.mismatches, self.connection_errors, self.final_state_keys_checked, self.acked_writes
        );
        for e in &self.first_errors {
            let _ = writeln!(out, "  {e}");
        }
        out
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(errors: Vec<String>, ops: String) -> RunReport {
        let latency = Latency { count: 1, mean_us: 1.0, p50_us: 1.0, p99_us: 2.0, p999_us: 3.0, max_us: 4.0 };
        RunReport {
            target: "127.0.0.1:6379".into(),
            ops,
            clients: 1024,
            pipeline: 1024,
            threads: 64,
            io: "evented".into(),
            shape: "agent-shaped".into(),
            think_time_ms: 50.0,
            value_size: 16 << 20,
            keyspace: u64::MAX,
            key_pattern: "sequential".into(),
            key_prefix: "cb0123456789ab".into(),
            measured_seconds: 86400.0,
            requests: u64::MAX,
            ops_per_sec: f64::MAX,
            latency,
            per_op: Op::ALL.iter().map(|&op| (op, latency)).collect(),
            errors: u64::MAX,
            mismatches: u64::MAX,
            connection_errors: 0,
            final_state_keys_checked: 0,
            acked_writes: 0,
            verified: false,
            first_errors: errors,
        }
    }

    #[test]
    fn the_summary_stays_under_4_kib_with_the_operator_keys() {
        let worst = report(vec!["\u{1F4A5}\"".repeat(5000); 10], "set:1000,".repeat(500));
        let json = worst.summary_json();
        assert!(json.len() <= SUMMARY_MAX_BYTES, "{} bytes", json.len());
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        for key in ["ops_per_sec", "p50_us", "p99_us", "errors", "verified"] {
            assert!(value.get(key).is_some(), "missing {key} in {json}");
        }
        assert_eq!(value["verified"], false);
        let short = report(vec!["GET k: expected x, got y".into()], "set,get".into());
        let value: serde_json::Value = serde_json::from_str(&short.summary_json()).unwrap();
        assert_eq!(value["first_error"], "GET k: expected x, got y");
    }
}
