//! Counters of the write-ahead log, read by INFO and the metrics endpoint.
//! Written by the syncer only (relaxed atomics; readers may see a mix of
//! neighbouring rounds, never a torn value).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Told how long each successful sync took, in µs (the server's latency
/// monitor); called on the syncer thread, so it must be quick.
pub type SyncObserver = Box<dyn Fn(u64) + Send + Sync>;

/// Log2 buckets: fsync latency in µs (bucket i holds values < 2^i µs) and
/// group sizes in records (bucket i holds sizes < 2^i).
pub const BUCKETS: usize = 28;

pub struct WalStats {
    pub bytes_written: AtomicU64,
    pub records_written: AtomicU64,
    pub fsyncs: AtomicU64,
    pub fsync_failures: AtomicU64,
    pub fsync_micros_total: AtomicU64,
    pub last_fsync_micros: AtomicU64,
    pub last_group_records: AtomicU64,
    pub fsync_micros_buckets: [AtomicU64; BUCKETS],
    pub group_size_buckets: [AtomicU64; BUCKETS],
    pub group_records_total: AtomicU64,
    /// How long the oldest record a sync covered had waited for it, from
    /// its append to the end of the fdatasync, in µs: what a power cut at
    /// that moment could have lost of acknowledged writes outside the
    /// `sync` tier. Last value, largest since start, log2 buckets.
    pub unsynced_age_last_micros: AtomicU64,
    pub unsynced_age_max_micros: AtomicU64,
    pub unsynced_age_micros_buckets: [AtomicU64; BUCKETS],
    sync_observer: OnceLock<SyncObserver>,
}

impl std::fmt::Debug for WalStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalStats")
            .field("bytes_written", &self.bytes_written)
            .field("fsyncs", &self.fsyncs)
            .field("fsync_failures", &self.fsync_failures)
            .field("last_fsync_micros", &self.last_fsync_micros)
            .finish_non_exhaustive()
    }
}

impl Default for WalStats {
    fn default() -> Self {
        WalStats {
            bytes_written: AtomicU64::new(0),
            records_written: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            fsync_failures: AtomicU64::new(0),
            fsync_micros_total: AtomicU64::new(0),
            last_fsync_micros: AtomicU64::new(0),
            last_group_records: AtomicU64::new(0),
            fsync_micros_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            group_size_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            group_records_total: AtomicU64::new(0),
            unsynced_age_last_micros: AtomicU64::new(0),
            unsynced_age_max_micros: AtomicU64::new(0),
            unsynced_age_micros_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sync_observer: OnceLock::new(),
        }
    }
}

/// The bucket of `v`: the number of bits it needs, capped.
pub fn bucket(v: u64) -> usize {
    ((64 - v.leading_zeros()) as usize).min(BUCKETS - 1)
}

/// Upper bound (exclusive) of bucket `i`.
pub fn bucket_upper(i: usize) -> u64 {
    1u64 << i
}

impl WalStats {
    pub fn record_write(&self, bytes: u64, records: u64) {
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.records_written.fetch_add(records, Ordering::Relaxed);
    }

    pub fn record_sync(&self, took: Duration, group: u64) {
        let micros = took.as_micros() as u64;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.fsync_micros_total.fetch_add(micros, Ordering::Relaxed);
        self.last_fsync_micros.store(micros, Ordering::Relaxed);
        self.last_group_records.store(group, Ordering::Relaxed);
        self.group_records_total.fetch_add(group, Ordering::Relaxed);
        self.fsync_micros_buckets[bucket(micros)].fetch_add(1, Ordering::Relaxed);
        self.group_size_buckets[bucket(group)].fetch_add(1, Ordering::Relaxed);
        if let Some(observer) = self.sync_observer.get() {
            observer(micros);
        }
    }

    /// A sync made records durable whose oldest was appended `age` before
    /// the sync ended.
    pub fn record_unsynced_age(&self, age: Duration) {
        let micros = age.as_micros() as u64;
        self.unsynced_age_last_micros.store(micros, Ordering::Relaxed);
        self.unsynced_age_max_micros.fetch_max(micros, Ordering::Relaxed);
        self.unsynced_age_micros_buckets[bucket(micros)].fetch_add(1, Ordering::Relaxed);
    }

    /// Installs the observer of sync durations (once; later calls are ignored).
    pub fn observe_syncs(&self, observer: SyncObserver) {
        let _ = self.sync_observer.set(observer);
    }

    pub fn record_failure(&self) {
        self.fsync_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Copies of a bucket array.
    pub fn read(buckets: &[AtomicU64; BUCKETS]) -> [u64; BUCKETS] {
        std::array::from_fn(|i| buckets[i].load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_sync_observer_hears_every_recorded_sync() {
        let stats = WalStats::default();
        let heard = Arc::new(AtomicU64::new(0));
        let sink = heard.clone();
        stats.observe_syncs(Box::new(move |micros| sink.store(micros, Ordering::Relaxed)));
        stats.record_sync(Duration::from_micros(1234), 3);
        assert_eq!(heard.load(Ordering::Relaxed), 1234);
        assert_eq!(stats.fsyncs.load(Ordering::Relaxed), 1);
    }
}
