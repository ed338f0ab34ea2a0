//! Latency recording shared by all connections of a run.
//!
//! One HDR histogram ([`Recorder`]) is about 210 KB per operation (nanosecond
//! resolution up to one minute, 3 significant digits). A recorder per
//! connection cost 1.2 GB of memory at 1,024 connections running the
//! five-operation mix, too much for a benchmark Job with a memory limit, and
//! spread the counts over far more memory than the caches hold. Instead a run
//! keeps a few recorders behind locks ([`SharedLatencies`], one shard per
//! driver thread), and each connection collects its samples in a small
//! [`SampleBuffer`] that it moves into its shard every [`SAMPLES_PER_FLUSH`]
//! samples and at its end: one lock per few hundred replies.

use std::sync::Mutex;

use crate::stats::Recorder;
use crate::workload::Op;

/// Samples a connection collects before it takes its shard's lock.
pub const SAMPLES_PER_FLUSH: usize = 256;

/// `count` replies of `op` that took `nanos` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub op: Op,
    pub nanos: u64,
    pub count: u64,
}

/// The run's latencies: recorders that connections fill through [`SampleBuffer`]s.
#[derive(Debug)]
pub struct SharedLatencies {
    shards: Vec<Mutex<Recorder>>,
}

impl SharedLatencies {
    /// `shards` recorders (at least one).
    pub fn new(shards: usize) -> SharedLatencies {
        SharedLatencies { shards: (0..shards.max(1)).map(|_| Mutex::default()).collect() }
    }

    /// A buffer for connection `index` (its shard is `index` modulo the shard count).
    pub fn buffer(&self, index: u32) -> SampleBuffer {
        SampleBuffer { shard: index as usize % self.shards.len(), samples: Vec::with_capacity(SAMPLES_PER_FLUSH) }
    }

    /// All samples recorded so far, in one recorder.
    pub fn merged(&self) -> Recorder {
        let mut all = Recorder::default();
        for shard in &self.shards {
            all.merge(&lock(shard));
        }
        all
    }

    fn record(&self, shard: usize, samples: &[Sample]) {
        let mut recorder = lock(&self.shards[shard]);
        for s in samples {
            recorder.record_n(s.op, s.nanos, s.count);
        }
    }
}

/// A shard's recorder; a connection that panicked while holding the lock
/// left whole samples behind (recording cannot stop halfway), so its data
/// is kept.
fn lock(shard: &Mutex<Recorder>) -> std::sync::MutexGuard<'_, Recorder> {
    shard.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One connection's samples not yet moved into the shared recorders.
#[derive(Debug)]
pub struct SampleBuffer {
    shard: usize,
    samples: Vec<Sample>,
}

impl SampleBuffer {
    /// Adds a sample; moves the buffer into `shared` when it is full.
    pub fn record_n(&mut self, shared: &SharedLatencies, op: Op, nanos: u64, count: u64) {
        self.samples.push(Sample { op, nanos, count });
        if self.samples.len() >= SAMPLES_PER_FLUSH {
            self.flush(shared);
        }
    }

    /// Moves every buffered sample into `shared`.
    pub fn flush(&mut self, shared: &SharedLatencies) {
        if !self.samples.is_empty() {
            shared.record(self.shard, &self.samples);
            self.samples.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffered_samples_reach_the_shared_recorders_on_flush() {
        let shared = SharedLatencies::new(3);
        let mut buffers: Vec<SampleBuffer> = (0..5).map(|i| shared.buffer(i)).collect();
        for (i, buffer) in buffers.iter_mut().enumerate() {
            for n in 0..100u64 {
                buffer.record_n(&shared, Op::Set, (n + 1) * 1000, 1 + i as u64);
            }
        }
        assert_eq!(shared.merged().count(), 0, "nothing flushed below {SAMPLES_PER_FLUSH} samples");
        for buffer in &mut buffers {
            buffer.flush(&shared);
        }
        // Connection i recorded 100 samples of weight i + 1.
        assert_eq!(shared.merged().count(), 100 * (1 + 2 + 3 + 4 + 5));
        buffers[0].flush(&shared);
        assert_eq!(shared.merged().count(), 1500, "a second flush adds nothing");
    }

    #[test]
    fn a_full_buffer_flushes_by_itself() {
        let shared = SharedLatencies::new(1);
        let mut buffer = shared.buffer(7);
        for _ in 0..SAMPLES_PER_FLUSH {
            buffer.record_n(&shared, Op::Get, 50_000, 2);
        }
        let merged = shared.merged();
        assert_eq!(merged.count(), 2 * SAMPLES_PER_FLUSH as u64);
        assert!((merged.per_op()[&Op::Get].p50_us - 50.0).abs() < 0.1);
    }

    #[test]
    fn zero_shards_means_one() {
        let shared = SharedLatencies::new(0);
        let mut buffer = shared.buffer(3);
        buffer.record_n(&shared, Op::Incr, 1000, 1);
        buffer.flush(&shared);
        assert_eq!(shared.merged().count(), 1);
    }
}
