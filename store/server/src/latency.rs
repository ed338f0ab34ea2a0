//! The latency monitor (Redis's latency.c): events that took at least
//! `latency-monitor-threshold` milliseconds, kept as a history of
//! [`HISTORY_LEN`] one-per-second samples per event.
//!
//! Events: `command` and `fast-command` (the dispatcher, by the command's
//! `FAST` flag), `expire-cycle` (a worker's active expiry pass),
//! `eviction-cycle` (maxmemory eviction) and the log's syncs: `aof-fsync-always`
//! for a sync in the `sync` tier (replies wait for it) and `aof-fdatasync` in
//! the other tiers (replies do not).
//!
//! Cost when unused: the threshold is an atomic in µs that is `u64::MAX` when
//! the monitor is off, so the hot path's check is one relaxed load and one
//! comparison. Events are rare; their store is a mutex taken only to record.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Samples kept per event (Redis's LATENCY_TS_LEN).
pub const HISTORY_LEN: usize = 160;

/// One sample: when (Unix seconds) and how long (ms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub time: u64,
    pub latency_ms: u64,
}

/// One event's history: a ring of samples, at most one per second.
#[derive(Clone, Debug)]
pub struct Series {
    samples: [Sample; HISTORY_LEN],
    /// Where the next sample goes.
    next: usize,
    /// The highest latency ever recorded for the event (since its reset).
    pub max_ms: u64,
}

impl Series {
    fn new() -> Series {
        Series { samples: [Sample::default(); HISTORY_LEN], next: 0, max_ms: 0 }
    }

    /// Adds a sample; within the same second only the highest one is kept.
    fn add(&mut self, now_secs: u64, latency_ms: u64) {
        self.max_ms = self.max_ms.max(latency_ms);
        let prev = (self.next + HISTORY_LEN - 1) % HISTORY_LEN;
        if self.samples[prev].time == now_secs {
            self.samples[prev].latency_ms = self.samples[prev].latency_ms.max(latency_ms);
            return;
        }
        self.samples[self.next] = Sample { time: now_secs, latency_ms };
        self.next = (self.next + 1) % HISTORY_LEN;
    }

    /// The recorded samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        (0..HISTORY_LEN).map(|j| self.samples[(self.next + j) % HISTORY_LEN]).filter(|s| s.time != 0).collect()
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.next + HISTORY_LEN - 1) % HISTORY_LEN]
    }
}

/// The server's latency monitor.
#[derive(Debug)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in µs; `u64::MAX` when it is 0 (off).
    threshold_us: AtomicU64,
    /// Events in the order they first happened.
    events: Mutex<Vec<(String, Series)>>,
}

impl Default for LatencyMonitor {
    fn default() -> Self {
        LatencyMonitor { threshold_us: AtomicU64::new(u64::MAX), events: Mutex::new(Vec::new()) }
    }
}

impl LatencyMonitor {
    /// Applies CONFIG SET `latency-monitor-threshold` (ms; 0: off).
    pub fn set_threshold_ms(&self, ms: u64) {
        let us = if ms == 0 { u64::MAX } else { ms.saturating_mul(1000) };
        self.threshold_us.store(us, Ordering::Relaxed);
    }

    /// Whether something that took `duration_us` is an event (one load, one comparison).
    #[inline]
    pub fn wants(&self, duration_us: u64) -> bool {
        duration_us >= self.threshold_us.load(Ordering::Relaxed)
    }

    /// Records `event` if it took at least the threshold.
    #[inline]
    pub fn observe(&self, event: &str, duration_us: u64) {
        if self.wants(duration_us) {
            self.record(event, duration_us / 1000);
        }
    }

    /// Adds a sample to `event`'s history now.
    #[cold]
    pub fn record(&self, event: &str, latency_ms: u64) {
        self.record_at(event, latency_ms, cairn_engine::clock::now_ms() / 1000);
    }

    fn record_at(&self, event: &str, latency_ms: u64, now_secs: u64) {
        let mut events = self.events.lock();
        match events.iter_mut().find(|(name, _)| name == event) {
            Some((_, series)) => series.add(now_secs, latency_ms),
            None => {
                let mut series = Series::new();
                series.add(now_secs, latency_ms);
                events.push((event.to_string(), series));
            }
        }
    }

    /// Every event with its history (LATENCY LATEST, DOCTOR).
    pub fn all(&self) -> Vec<(String, Series)> {
        self.events.lock().clone()
    }

    /// One event's history (LATENCY HISTORY, GRAPH); names are exact.
    pub fn series(&self, event: &[u8]) -> Option<(String, Series)> {
        self.events.lock().iter().find(|(name, _)| name.as_bytes() == event).cloned()
    }

    /// LATENCY RESET: forgets `event` (any case), or every event with `None`;
    /// returns how many were forgotten.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        events.retain(|(name, _)| event.is_some_and(|e| !name.as_bytes().eq_ignore_ascii_case(e)));
        before - events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_off_at_zero_and_compares_in_microseconds() {
        let m = LatencyMonitor::default();
        assert!(!m.wants(u64::MAX - 1));
        m.set_threshold_ms(5);
        assert!(!m.wants(4_999));
        assert!(m.wants(5_000));
        m.observe("command", 7_300);
        let (_, series) = m.series(b"command").expect("recorded");
        assert_eq!(series.latest().latency_ms, 7);
        m.set_threshold_ms(0);
        assert!(!m.wants(10_000_000));
    }

    #[test]
    fn one_sample_per_second_keeps_the_highest_and_the_ring_holds_160() {
        let m = LatencyMonitor::default();
        m.record_at("e", 10, 100);
        m.record_at("e", 30, 100);
        m.record_at("e", 20, 100);
        let (_, s) = m.series(b"e").expect("e");
        assert_eq!(s.samples(), vec![Sample { time: 100, latency_ms: 30 }]);
        for t in 0..200 {
            m.record_at("e", 5, 1000 + t);
        }
        let (_, s) = m.series(b"e").expect("e");
        let samples = s.samples();
        assert_eq!(samples.len(), HISTORY_LEN);
        assert_eq!(samples.first().map(|s| s.time), Some(1040));
        assert_eq!(s.latest().time, 1199);
        assert_eq!(s.max_ms, 30);
    }

    #[test]
    fn reset_counts_what_it_forgets() {
        let m = LatencyMonitor::default();
        m.record_at("command", 1, 1);
        m.record_at("expire-cycle", 1, 1);
        assert_eq!(m.reset(Some(b"nosuch")), 0);
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert_eq!(m.reset(None), 1);
        assert!(m.all().is_empty());
    }
}
