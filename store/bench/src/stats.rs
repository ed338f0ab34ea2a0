//! Latency histograms (HDR, nanoseconds, 3 significant digits) per operation and in total.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::workload::Op;

/// Highest latency tracked: one minute, in nanoseconds (slower replies count as one minute).
const MAX_NANOS: u64 = 60_000_000_000;

fn histogram() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts; a failure would be a programming error.
    #[allow(clippy::expect_used)]
    Histogram::new_with_bounds(1, MAX_NANOS, 3).expect("valid histogram bounds")
}

/// Latencies recorded by one connection (or merged from many): one histogram per operation,
/// created on its first sample. A reply is recorded once; the total is merged on demand.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    per_op: [Option<Histogram<u64>>; Op::ALL.len()],
}

impl Recorder {
    pub fn record(&mut self, op: Op, nanos: u64) {
        self.record_n(op, nanos, 1);
    }

    /// Records `count` replies of `op` that took `nanos` each (the replies of one pipelined
    /// batch that arrived in one read share their latency).
    pub fn record_n(&mut self, op: Op, nanos: u64, count: u64) {
        let nanos = nanos.clamp(1, MAX_NANOS);
        self.per_op[op as usize].get_or_insert_with(histogram).saturating_record_n(nanos, count);
    }

    pub fn merge(&mut self, other: &Recorder) {
        for (mine, theirs) in self.per_op.iter_mut().zip(&other.per_op) {
            if let Some(theirs) = theirs {
                // Same bounds everywhere, so adding cannot fail; saturate rather than panic if it did.
                let _ = mine.get_or_insert_with(histogram).add(theirs);
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.histograms().map(|(_, h)| h.len()).sum()
    }

    pub fn summary(&self) -> Latency {
        let mut all = histogram();
        for (_, h) in self.histograms() {
            let _ = all.add(h);
        }
        Latency::of(&all)
    }

    pub fn per_op(&self) -> BTreeMap<Op, Latency> {
        self.histograms().map(|(op, h)| (op, Latency::of(h))).collect()
    }

    fn histograms(&self) -> impl Iterator<Item = (Op, &Histogram<u64>)> {
        Op::ALL.into_iter().zip(&self.per_op).filter_map(|(op, h)| Some((op, h.as_ref()?)))
    }
}

/// Percentiles of one histogram, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        let us = |nanos: u64| (nanos as f64 / 1000.0 * 100.0).round() / 100.0;
        if h.is_empty() {
            return Latency { count: 0, mean_us: 0.0, p50_us: 0.0, p99_us: 0.0, p999_us: 0.0, max_us: 0.0 };
        }
        Latency {
            count: h.len(),
            mean_us: (h.mean() / 10.0).round() / 100.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_in_microseconds_and_merging() {
        let mut a = Recorder::default();
        for i in 1..=990u64 {
            a.record(Op::Set, i * 1000);
        }
        let mut b = Recorder::default();
        for _ in 0..10 {
            b.record(Op::Get, 5_000_000);
        }
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_us - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.max_us - 5000.0).abs() < 5.0, "{s:?}");
        assert!(s.p999_us > 4000.0, "{s:?}");
        let per_op = a.per_op();
        assert_eq!(per_op[&Op::Get].count, 10);
        assert_eq!(per_op[&Op::Set].count, 990);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(Recorder::default().summary().p99_us, 0.0);
    }
}
