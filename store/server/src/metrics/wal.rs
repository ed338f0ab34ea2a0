//! The durability snapshot of the server's own persistence layer (the
//! write-ahead log's counters, snapshot status, recovery progress), used
//! unless another [`DurabilitySource`](super::durability::DurabilitySource)
//! is installed.

use std::sync::atomic::{AtomicU64, Ordering};

use cairn_engine::durability::stats::{bucket_upper, WalStats, BUCKETS};

use super::durability::{DurabilitySnapshot, HistogramSnapshot};
use crate::persistence::Persistence;
use crate::server::Server;

/// The durability snapshot `/metrics` and `GET /v1/durability` report.
pub fn durability_snapshot(server: &Server) -> DurabilitySnapshot {
    match server.hooks.durability.installed() {
        Some(source) => source.snapshot(),
        None => from_persistence(&server.persistence),
    }
}

/// Reads the persistence layer's counters.
pub fn from_persistence(p: &Persistence) -> DurabilitySnapshot {
    let mut d = DurabilitySnapshot::without_wal(p.tier().as_str());
    if let Some(wal) = p.wal_opened() {
        let s = wal.stats();
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        d.appended_lsn = wal.last_lsn();
        d.written_lsn = wal.written_lsn();
        d.durable_lsn = wal.durable_lsn();
        d.last_fsync_micros = load(&s.last_fsync_micros);
        d.fsyncs_total = load(&s.fsyncs);
        d.fsync_failures_total = load(&s.fsync_failures);
        // Bucket i holds fsyncs under 2^i µs.
        d.fsync_seconds = log2_histogram(&s.fsync_micros_buckets, |i| bucket_upper(i) as f64 / 1e6);
        d.fsync_seconds.sum = load(&s.fsync_micros_total) as f64 / 1e6;
        // Bucket i holds groups of fewer than 2^i records: at most 2^i - 1.
        d.group_size = log2_histogram(&s.group_size_buckets, |i| (bucket_upper(i) - 1) as f64);
        d.group_size.sum = load(&s.group_records_total) as f64;
        d.unsynced_age_seconds = log2_histogram(&s.unsynced_age_micros_buckets, |i| bucket_upper(i) as f64 / 1e6);
        d.wal_bytes_total = load(&s.bytes_written);
        d.wal_segments = wal.segment_count() as u64;
    }
    d.snapshot_last_duration_seconds = p.snapshot.last_duration_ms.load(Ordering::Relaxed) as f64 / 1000.0;
    d.snapshot_last_success_unix = p.snapshot.last_success_ms.load(Ordering::Relaxed) / 1000;
    d.recovery_records_replayed = p.recovery_records.load(Ordering::Relaxed);
    d
}

/// The WAL's log2 buckets as a histogram; the last bucket is `+Inf`.
fn log2_histogram(buckets: &[AtomicU64; BUCKETS], upper: impl Fn(usize) -> f64) -> HistogramSnapshot {
    let counts = WalStats::read(buckets);
    let buckets =
        counts.iter().enumerate().map(|(i, n)| (if i + 1 == BUCKETS { f64::INFINITY } else { upper(i) }, *n)).collect();
    HistogramSnapshot { buckets, sum: 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_become_a_histogram() {
        let stats = WalStats::default();
        stats.record_sync(std::time::Duration::from_micros(300), 5);
        stats.record_sync(std::time::Duration::from_micros(300), 1);
        let fsync = log2_histogram(&stats.fsync_micros_buckets, |i| bucket_upper(i) as f64 / 1e6);
        assert_eq!(fsync.buckets.len(), BUCKETS);
        assert_eq!(fsync.count(), 2);
        // 300 µs needs 9 bits: bucket 9, under 512 µs.
        assert_eq!(fsync.buckets[9], (512e-6, 2));
        let group = log2_histogram(&stats.group_size_buckets, |i| (bucket_upper(i) - 1) as f64);
        assert_eq!(group.buckets[1], (1.0, 1));
        assert_eq!(group.buckets[3], (7.0, 1), "5 records: at most 7");
        assert_eq!(group.buckets.last().map(|b| b.0), Some(f64::INFINITY));
    }
}
