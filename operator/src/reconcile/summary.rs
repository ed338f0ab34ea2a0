//! Parsing the benchmark driver's summary from a pod's termination message.

use cairn_crds::BenchSummary;
use serde_json::Value;

use crate::store_contract as sc;

/// A termination message that is not the driver's summary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("the summary is {0} bytes, over the {max} byte limit", max = sc::SUMMARY_MAX_BYTES)]
    TooLarge(usize),
    #[error("the summary is not JSON: {0}")]
    NotJson(String),
    #[error("the summary lacks {0}")]
    Missing(&'static str),
}

/// Reads `ops_per_sec`, `p50_us`, `p99_us`, `errors` and `verified` from the driver's JSON.
/// Unknown keys are ignored, so the driver may report more.
pub fn parse_summary(message: &str) -> Result<BenchSummary, SummaryError> {
    if message.len() > sc::SUMMARY_MAX_BYTES {
        return Err(SummaryError::TooLarge(message.len()));
    }
    let value: Value = serde_json::from_str(message.trim()).map_err(|e| SummaryError::NotJson(e.to_string()))?;
    let number = |key: &'static str| value.get(key).and_then(Value::as_f64).ok_or(SummaryError::Missing(key));
    Ok(BenchSummary {
        ops_per_sec: number(sc::SUMMARY_OPS_PER_SEC)?,
        p50_us: number(sc::SUMMARY_P50_US)?,
        p99_us: number(sc::SUMMARY_P99_US)?,
        errors: value
            .get(sc::SUMMARY_ERRORS)
            .and_then(Value::as_u64)
            .ok_or(SummaryError::Missing(sc::SUMMARY_ERRORS))?,
        verified: value
            .get(sc::SUMMARY_VERIFIED)
            .and_then(Value::as_bool)
            .ok_or(SummaryError::Missing(sc::SUMMARY_VERIFIED))?,
    })
}

/// Longest excerpt of the driver's log a status message quotes.
const LOG_EXCERPT_MAX: usize = 300;

/// The driver's last log line, when its termination message is its log rather than a summary:
/// the Job's container has `terminationMessagePolicy: FallbackToLogsOnError`, so a driver that
/// stopped before writing its summary (a usage error, an unreadable certificate, a refused
/// connection) leaves the end of its log, and the status can say why.
pub fn driver_said(message: &str) -> Option<String> {
    if message.trim_start().starts_with('{') {
        return None;
    }
    let line = message.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    let mut end = line.len().min(LOG_EXCERPT_MAX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(line[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_driver_summary() {
        let s = parse_summary(
            r#"{"ops_per_sec": 123456.5, "p50_us": 80, "p99_us": 410.5, "errors": 0, "verified": true, "extra": [1]}"#,
        )
        .expect("summary");
        assert_eq!(s.ops_per_sec, 123456.5);
        assert_eq!(s.p99_us, 410.5);
        assert_eq!(s.errors, 0);
        assert!(s.verified);
    }

    #[test]
    fn a_log_left_as_the_message_gives_its_last_line() {
        let log = "starting\ncairn-bench: TLS: cannot read the CA certificates from /etc/cairn/tls/ca.crt\n\n";
        assert_eq!(
            driver_said(log).as_deref(),
            Some("cairn-bench: TLS: cannot read the CA certificates from /etc/cairn/tls/ca.crt")
        );
        assert_eq!(driver_said(r#"{"ops_per_sec": 1}"#), None, "a summary is not a log");
        assert_eq!(driver_said("\n \n"), None);
        assert_eq!(driver_said(&"é".repeat(400)).map(|s| s.len()), Some(300));
    }

    #[test]
    fn rejects_what_is_not_a_summary() {
        assert!(matches!(parse_summary("panicked at main.rs"), Err(SummaryError::NotJson(_))));
        assert_eq!(
            parse_summary(r#"{"ops_per_sec": 1, "p50_us": 1, "p99_us": 1, "errors": 0}"#),
            Err(SummaryError::Missing("verified"))
        );
        let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(5000));
        assert!(matches!(parse_summary(&big), Err(SummaryError::TooLarge(_))));
    }
}
