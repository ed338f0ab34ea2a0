//! What the durability layer (WAL, group commit, snapshots) reports to
//! `/metrics` and `GET /v1/durability`.
//!
//! By default the server's own persistence layer is read ([`super::wal`]);
//! another implementation of [`DurabilitySource`] can be installed with
//! [`DurabilityCell::set`] (tests, an embedding program). [`NoWal`] reports a
//! tier and zeros, with the histograms' buckets present (so dashboards show
//! zero rather than "no data").

use serde::Serialize;

/// A histogram: `(upper bound, observations in this bucket)` — counts per
/// bucket, *not* cumulative (the encoder accumulates) — ascending bounds, the
/// last bound `f64::INFINITY`; plus the sum of all observations.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HistogramSnapshot {
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
}

impl HistogramSnapshot {
    /// An empty histogram over `bounds` (without the final `+Inf`).
    pub fn empty(bounds: &[f64]) -> HistogramSnapshot {
        let mut buckets: Vec<(f64, u64)> = bounds.iter().map(|b| (*b, 0)).collect();
        buckets.push((f64::INFINITY, 0));
        HistogramSnapshot { buckets, sum: 0.0 }
    }

    /// Observations in total.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|(_, n)| n).sum()
    }
}

/// fsync duration buckets (seconds): 25 µs to 2 s.
pub const FSYNC_SECONDS_BOUNDS: &[f64] =
    &[25e-6, 50e-6, 100e-6, 200e-6, 400e-6, 800e-6, 1.6e-3, 3.2e-3, 6.4e-3, 12.8e-3, 25.6e-3, 0.1, 0.5, 2.0];
/// Group-commit batch sizes (writes covered by one fsync): 1 to 4096.
pub const GROUP_SIZE_BOUNDS: &[f64] =
    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0];

/// One reading of the durability layer's state and counters (all counters
/// cumulative since the process started).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DurabilitySnapshot {
    /// `none`, `async`, `everysec` or `sync`.
    pub tier: String,
    /// Highest LSN appended to the WAL's buffer (its reply may already be
    /// sent in the `none`..`everysec` tiers).
    pub appended_lsn: u64,
    /// Highest LSN written to the WAL file (maybe not yet durable).
    pub written_lsn: u64,
    /// Highest LSN covered by a completed fdatasync.
    pub durable_lsn: u64,
    /// Duration of the most recent fsync, µs.
    pub last_fsync_micros: u64,
    pub fsyncs_total: u64,
    pub fsync_failures_total: u64,
    /// fsync durations, seconds.
    pub fsync_seconds: HistogramSnapshot,
    /// Writes covered by each group commit.
    pub group_size: HistogramSnapshot,
    /// Per fsync, how long the oldest write it covered had waited for it
    /// since its append, seconds: the power-loss exposure of acknowledged
    /// writes outside the `sync` tier.
    pub unsynced_age_seconds: HistogramSnapshot,
    /// Replies sent after the fsync that covers the write.
    pub durable_acks_total: u64,
    pub wal_bytes_total: u64,
    /// WAL segment files on disk.
    pub wal_segments: u64,
    pub snapshot_last_duration_seconds: f64,
    /// Unix seconds of the last successful snapshot (0: never).
    pub snapshot_last_success_unix: u64,
    /// Records replayed by recovery so far (grows during recovery).
    pub recovery_records_replayed: u64,
}

impl DurabilitySnapshot {
    /// The snapshot of a server without a WAL.
    pub fn without_wal(tier: &str) -> DurabilitySnapshot {
        DurabilitySnapshot {
            tier: tier.to_string(),
            appended_lsn: 0,
            written_lsn: 0,
            durable_lsn: 0,
            last_fsync_micros: 0,
            fsyncs_total: 0,
            fsync_failures_total: 0,
            fsync_seconds: HistogramSnapshot::empty(FSYNC_SECONDS_BOUNDS),
            group_size: HistogramSnapshot::empty(GROUP_SIZE_BOUNDS),
            unsynced_age_seconds: HistogramSnapshot::empty(FSYNC_SECONDS_BOUNDS),
            durable_acks_total: 0,
            wal_bytes_total: 0,
            wal_segments: 0,
            snapshot_last_duration_seconds: 0.0,
            snapshot_last_success_unix: 0,
            recovery_records_replayed: 0,
        }
    }
}

/// Implemented by the durability layer; called on every scrape and every
/// `GET /v1/durability`, from the admin thread (keep it to loads of counters).
pub trait DurabilitySource: Send + Sync {
    fn snapshot(&self) -> DurabilitySnapshot;
}

/// The source used before (or without) a WAL: the configured tier, zeros.
#[derive(Debug)]
pub struct NoWal {
    pub tier: String,
}

impl DurabilitySource for NoWal {
    fn snapshot(&self) -> DurabilitySnapshot {
        DurabilitySnapshot::without_wal(&self.tier)
    }
}

/// Where the server keeps an installed [`DurabilitySource`]; without one,
/// the metrics read the server's persistence layer ([`super::wal`]).
pub type DurabilityCell = crate::admin::hooks::HookCell<dyn DurabilitySource>;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn without_a_wal_the_histograms_have_their_buckets() {
        let s = NoWal { tier: "none".into() }.snapshot();
        assert_eq!(s.tier, "none");
        assert_eq!(s.fsync_seconds.buckets.len(), FSYNC_SECONDS_BOUNDS.len() + 1);
        assert_eq!(s.fsync_seconds.buckets.last().map(|b| b.0), Some(f64::INFINITY));
        assert_eq!(s.group_size.count(), 0);
    }

    #[test]
    fn an_installed_source_replaces_the_default() {
        struct Fixed;
        impl DurabilitySource for Fixed {
            fn snapshot(&self) -> DurabilitySnapshot {
                DurabilitySnapshot { durable_lsn: 7, ..DurabilitySnapshot::without_wal("sync") }
            }
        }
        let cell = DurabilityCell::default();
        assert!(cell.installed().is_none());
        cell.set(Arc::new(Fixed));
        assert_eq!(cell.installed().map(|s| s.snapshot().durable_lsn), Some(7));
    }
}
