//! `GET /v1/durability`: the tier, written and durable LSNs, the last fsync,
//! group-commit sizes and the other durability counters, as JSON.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::router::AdminState;
use crate::metrics::durability::HistogramSnapshot;

pub async fn get(State(state): State<AdminState>) -> Json<Value> {
    let d = crate::metrics::wal::durability_snapshot(&state.server);
    Json(json!({
        "tier": d.tier,
        "appended_lsn": d.appended_lsn,
        "written_lsn": d.written_lsn,
        "durable_lsn": d.durable_lsn,
        "unsynced_lsns": d.appended_lsn.max(d.written_lsn).saturating_sub(d.durable_lsn),
        "last_fsync_micros": d.last_fsync_micros,
        "fsyncs_total": d.fsyncs_total,
        "fsync_failures_total": d.fsync_failures_total,
        "fsync_seconds": histogram(&d.fsync_seconds),
        "group_size": histogram(&d.group_size),
        "unsynced_age_seconds": histogram(&d.unsynced_age_seconds),
        "durable_acks_total": d.durable_acks_total,
        "wal_bytes_total": d.wal_bytes_total,
        "wal_segments": d.wal_segments,
        "snapshot_last_duration_seconds": d.snapshot_last_duration_seconds,
        "snapshot_last_success_unix": d.snapshot_last_success_unix,
        "recovery_records_replayed": d.recovery_records_replayed,
        // Why writes are refused, if they are: the log's own failure or full disk.
        "write_error": state.server.health.write_error().or_else(|| state.server.persistence.wal().and_then(|w| w.health_message())),
    }))
}

/// `{"count", "sum", "buckets": [{"le": "0.001", "count": n}, ...]}` with
/// per-bucket counts and the last bound `"+Inf"`.
fn histogram(h: &HistogramSnapshot) -> Value {
    let buckets: Vec<Value> = h
        .buckets
        .iter()
        .map(|(le, n)| json!({ "le": if le.is_infinite() { "+Inf".to_string() } else { le.to_string() }, "count": n }))
        .collect();
    json!({ "count": h.count(), "sum": h.sum, "buckets": buckets })
}
