//! Redis's save points (`save "3600 1 300 100"`): snapshot when at least N
//! keys changed within M seconds of the last save, and the change counter
//! they read (INFO `rdb_changes_since_last_save`).
//!
//! The dispatcher counts the keys each successful write command names
//! (`commands::count_changes`); flushes count one. The counter is striped so
//! that workers on different CPUs do not share one cache line on the write
//! path.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes of the change counter (more than the CPUs a worker runs on, so
/// threads rarely share one).
const STRIPES: usize = 16;

/// One stripe on its own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe(AtomicU64);

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = Cell::new(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
}

/// Keys changed since start, and at the last successful snapshot.
#[derive(Debug, Default)]
pub struct Changes {
    stripes: [Stripe; STRIPES],
    at_last_save: AtomicU64,
}

impl Changes {
    /// Counts `n` changed keys.
    #[inline]
    pub fn add(&self, n: u64) {
        let stripe = STRIPE.with(Cell::get);
        self.stripes[stripe].0.fetch_add(n, Ordering::Relaxed);
    }

    /// Keys changed since start.
    pub fn total(&self) -> u64 {
        self.stripes.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }

    /// A snapshot that started when [`Changes::total`] was `total` is
    /// durable: the changes before it are saved.
    pub fn saved(&self, total: u64) {
        self.at_last_save.fetch_max(total, Ordering::Relaxed);
    }

    /// INFO `rdb_changes_since_last_save`.
    pub fn since_last_save(&self) -> u64 {
        self.total().saturating_sub(self.at_last_save.load(Ordering::Relaxed))
    }
}

/// Parses a `save` value as Redis 7.0 does: pairs of `seconds changes`, or
/// empty (no save points). Returns the normalized text.
pub fn parse(value: &str) -> Result<Vec<(u64, u64)>, &'static str> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() % 2 != 0 {
        return Err("Invalid save parameters");
    }
    words
        .chunks(2)
        .map(|pair| match (pair[0].parse::<u64>(), pair[1].parse::<u64>()) {
            (Ok(seconds), Ok(changes)) if seconds >= 1 => Ok((seconds, changes)),
            _ => Err("Invalid save parameters"),
        })
        .collect()
}

/// The normalized text of save points (as CONFIG GET prints them).
pub fn format(points: &[(u64, u64)]) -> String {
    points.iter().map(|(s, c)| format!("{s} {c}")).collect::<Vec<_>>().join(" ")
}

/// Whether any save point is reached: at least its number of changes, and
/// at least its number of seconds since the last save.
pub fn reached(points: &[(u64, u64)], changes: u64, secs_since_save: u64) -> bool {
    points.iter().any(|&(seconds, min_changes)| changes >= min_changes && secs_since_save >= seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_and_refuses_odd_or_non_numeric_values() {
        assert_eq!(parse("3600 1 300 100"), Ok(vec![(3600, 1), (300, 100)]));
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(parse("  60   10000 "), Ok(vec![(60, 10000)]));
        assert_eq!(parse("3600"), Err("Invalid save parameters"));
        assert_eq!(parse("3600 x"), Err("Invalid save parameters"));
        assert_eq!(parse("-1 5"), Err("Invalid save parameters"));
        assert_eq!(parse("0 5"), Err("Invalid save parameters"), "at least one second");
        assert_eq!(format(&[(3000, 5), (60, 1)]), "3000 5 60 1");
    }

    #[test]
    fn a_point_needs_both_its_changes_and_its_seconds() {
        let points = [(3600, 1), (300, 100)];
        assert!(!reached(&points, 0, 10_000), "no change, no save");
        assert!(!reached(&points, 99, 400));
        assert!(reached(&points, 100, 300));
        assert!(reached(&points, 1, 3600));
        assert!(!reached(&[], 1_000_000, 1_000_000), "no points: never");
    }

    #[test]
    fn counts_changes_since_the_last_save_across_threads() {
        let changes = std::sync::Arc::new(Changes::default());
        changes.add(3);
        let other = changes.clone();
        std::thread::spawn(move || other.add(4)).join().expect("thread");
        assert_eq!(changes.total(), 7);
        changes.saved(5);
        assert_eq!(changes.since_last_save(), 2, "changes made during the snapshot stay unsaved");
        changes.saved(3);
        assert_eq!(changes.since_last_save(), 2, "an older snapshot does not move it back");
    }
}
