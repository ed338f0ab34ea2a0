//! Statistics, kept per worker so the hot path never touches a shared cache
//! line: each counter has a single writer (its worker thread) and is summed
//! by readers (INFO) on demand. CONFIG RESETSTAT records a baseline instead of
//! writing to other threads' counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// A counter written by one thread only: an increment is a plain load and
/// store, not a locked read-modify-write.
#[derive(Debug, Default)]
pub struct LocalCounter(AtomicU64);

impl LocalCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Latency buckets per command: bucket 0 holds calls under 1 µs, bucket `i`
/// (1..=22) calls of `2^(i-1)` to `2^i - 1` µs, the last one everything from
/// 2^22 µs (≈ 4.2 s) up. Powers of two: the index is one `leading_zeros`.
pub const LATENCY_BUCKETS: usize = 24;

/// Per-command counters (INFO commandstats, and the latency histogram that
/// `/metrics` exports).
#[derive(Debug, Default)]
pub struct CommandCounters {
    pub calls: LocalCounter,
    pub usec: LocalCounter,
    pub rejected: LocalCounter,
    pub failed: LocalCounter,
    pub latency: [LocalCounter; LATENCY_BUCKETS],
}

impl CommandCounters {
    /// Records one call's duration: the µs total and its log2 bucket.
    #[inline]
    pub fn record_usec(&self, usec: u64) {
        self.usec.add(usec);
        self.latency[latency_bucket(usec)].add(1);
    }
}

/// The latency bucket of a duration in µs.
#[inline]
pub fn latency_bucket(usec: u64) -> usize {
    ((u64::BITS - usec.leading_zeros()) as usize).min(LATENCY_BUCKETS - 1)
}

/// Upper bound, in seconds, of latency bucket `i` (`None` for the last, +Inf).
pub fn latency_bucket_upper_seconds(i: usize) -> Option<f64> {
    (i + 1 < LATENCY_BUCKETS).then(|| (1u64 << i) as f64 / 1e6)
}

/// Per-command latency bucket counts summed over the workers (not cumulative),
/// indexed like the command table. Read on scrape only.
pub fn collect_latency(workers: &[std::sync::Arc<WorkerStats>], num_commands: usize) -> Vec<[u64; LATENCY_BUCKETS]> {
    let mut out = vec![[0u64; LATENCY_BUCKETS]; num_commands];
    for w in workers {
        for (cell, c) in out.iter_mut().zip(w.per_command.iter()) {
            for (n, bucket) in cell.iter_mut().zip(&c.latency) {
                *n += bucket.get();
            }
        }
    }
    out
}

/// One worker's statistics.
#[derive(Debug)]
pub struct WorkerStats {
    pub commands: LocalCounter,
    pub net_input_bytes: LocalCounter,
    pub net_output_bytes: LocalCounter,
    pub connections_received: LocalCounter,
    pub rejected_connections: LocalCounter,
    pub keyspace_hits: LocalCounter,
    pub keyspace_misses: LocalCounter,
    pub error_replies: LocalCounter,
    /// Reply buffers halved or doubled by their connection's tuner (INFO
    /// `reply_buffer_shrinks`, `reply_buffer_expands`).
    pub reply_buffer_shrinks: LocalCounter,
    pub reply_buffer_expands: LocalCounter,
    pub per_command: Box<[CommandCounters]>,
    /// Error replies by their first word (INFO errorstats). Only touched when
    /// an error is sent.
    pub errors: Mutex<HashMap<String, u64>>,
}

impl WorkerStats {
    pub fn new(num_commands: usize) -> Self {
        WorkerStats {
            commands: LocalCounter::default(),
            net_input_bytes: LocalCounter::default(),
            net_output_bytes: LocalCounter::default(),
            connections_received: LocalCounter::default(),
            rejected_connections: LocalCounter::default(),
            keyspace_hits: LocalCounter::default(),
            keyspace_misses: LocalCounter::default(),
            error_replies: LocalCounter::default(),
            reply_buffer_shrinks: LocalCounter::default(),
            reply_buffer_expands: LocalCounter::default(),
            per_command: (0..num_commands).map(|_| CommandCounters::default()).collect(),
            errors: Mutex::new(HashMap::new()),
        }
    }

    pub fn record_error(&self, code: &str) {
        self.error_replies.add(1);
        *self.errors.lock().entry(code.to_string()).or_insert(0) += 1;
    }
}

/// Totals over all workers.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Totals {
    pub commands: u64,
    pub net_input_bytes: u64,
    pub net_output_bytes: u64,
    pub connections_received: u64,
    pub rejected_connections: u64,
    pub expired_keys: u64,
    /// Keys evicted by `maxmemory` (the server's, see `Server::raw_totals`).
    pub evicted_keys: u64,
    /// Objects freed in the background (the server's, see `Server::raw_totals`).
    pub lazyfreed_objects: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub error_replies: u64,
    pub reply_buffer_shrinks: u64,
    pub reply_buffer_expands: u64,
    /// calls, usec, rejected, failed per command index.
    pub per_command: Vec<[u64; 4]>,
    pub errors: HashMap<String, u64>,
}

impl Totals {
    /// Sums the workers' counters (`expired_keys` is the keyspace's, see
    /// [`Server::raw_totals`](crate::server::Server::raw_totals)).
    pub fn collect(workers: &[std::sync::Arc<WorkerStats>], num_commands: usize) -> Totals {
        let mut t = Totals { per_command: vec![[0; 4]; num_commands], ..Totals::default() };
        for w in workers {
            t.commands += w.commands.get();
            t.net_input_bytes += w.net_input_bytes.get();
            t.net_output_bytes += w.net_output_bytes.get();
            t.connections_received += w.connections_received.get();
            t.rejected_connections += w.rejected_connections.get();
            t.keyspace_hits += w.keyspace_hits.get();
            t.keyspace_misses += w.keyspace_misses.get();
            t.error_replies += w.error_replies.get();
            t.reply_buffer_shrinks += w.reply_buffer_shrinks.get();
            t.reply_buffer_expands += w.reply_buffer_expands.get();
            for (i, c) in w.per_command.iter().enumerate() {
                let cell = &mut t.per_command[i];
                cell[0] += c.calls.get();
                cell[1] += c.usec.get();
                cell[2] += c.rejected.get();
                cell[3] += c.failed.get();
            }
            for (code, n) in w.errors.lock().iter() {
                *t.errors.entry(code.clone()).or_insert(0) += n;
            }
        }
        t
    }

    /// `self - baseline`, saturating (for CONFIG RESETSTAT).
    pub fn since(mut self, baseline: &Totals) -> Totals {
        let sub = |a: &mut u64, b: u64| *a = a.saturating_sub(b);
        sub(&mut self.commands, baseline.commands);
        sub(&mut self.net_input_bytes, baseline.net_input_bytes);
        sub(&mut self.net_output_bytes, baseline.net_output_bytes);
        sub(&mut self.connections_received, baseline.connections_received);
        sub(&mut self.rejected_connections, baseline.rejected_connections);
        sub(&mut self.expired_keys, baseline.expired_keys);
        sub(&mut self.evicted_keys, baseline.evicted_keys);
        sub(&mut self.lazyfreed_objects, baseline.lazyfreed_objects);
        sub(&mut self.keyspace_hits, baseline.keyspace_hits);
        sub(&mut self.keyspace_misses, baseline.keyspace_misses);
        sub(&mut self.error_replies, baseline.error_replies);
        sub(&mut self.reply_buffer_shrinks, baseline.reply_buffer_shrinks);
        sub(&mut self.reply_buffer_expands, baseline.reply_buffer_expands);
        for (cell, base) in self.per_command.iter_mut().zip(&baseline.per_command) {
            for (a, b) in cell.iter_mut().zip(base) {
                sub(a, *b);
            }
        }
        for (code, n) in self.errors.iter_mut() {
            sub(n, baseline.errors.get(code).copied().unwrap_or(0));
        }
        self.errors.retain(|_, n| *n > 0);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_are_powers_of_two() {
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(1), 1);
        assert_eq!(latency_bucket(2), 2);
        assert_eq!(latency_bucket(3), 2);
        assert_eq!(latency_bucket(4), 3);
        assert_eq!(latency_bucket(1 << 21), 22);
        assert_eq!(latency_bucket((1 << 22) - 1), 22);
        assert_eq!(latency_bucket(1 << 22), LATENCY_BUCKETS - 1);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
        assert_eq!(latency_bucket_upper_seconds(0), Some(1e-6));
        assert_eq!(latency_bucket_upper_seconds(2), Some(4e-6));
        assert_eq!(latency_bucket_upper_seconds(LATENCY_BUCKETS - 1), None);
    }

    #[test]
    fn a_recorded_call_lands_under_its_upper_bound() {
        let c = CommandCounters::default();
        c.record_usec(5);
        c.record_usec(5);
        c.record_usec(0);
        assert_eq!(c.usec.get(), 10);
        assert_eq!(c.latency[3].get(), 2);
        assert_eq!(c.latency[0].get(), 1);
        // 5 µs is within the bucket whose upper bound is 8 µs.
        assert!(latency_bucket_upper_seconds(3).is_some_and(|le| le >= 5e-6));
    }
}
