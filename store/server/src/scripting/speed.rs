//! Whether a script (an EVAL body or a library function) is short enough to
//! run on the worker that received it (see [`super::on_worker`]).
//!
//! A script runs on the script thread until one of its runs finishes within
//! the budget (`--script-inline-us`); from then on it runs on the worker,
//! until a run there is abandoned at the deadline (it had not written) or
//! any run takes longer than [`LONG_RUN`]: then it is long, and runs on the
//! script thread for good (until SCRIPT FLUSH or FUNCTION LOAD replaces it).
//! Runs between the budget and [`LONG_RUN`] change nothing: on a busy CPU a
//! short script's run is stretched by preemption (and a first run pays for
//! one-time work, the interpreter's first command, that takes milliseconds),
//! and such a run on a worker delays that worker's clients no more than
//! any script delays every client in Redis.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

const UNKNOWN: u8 = 0;
const SHORT: u8 = 1;
const LONG: u8 = 2;

/// A run this long makes its script long, whatever the budget.
pub const LONG_RUN: Duration = Duration::from_millis(100);

/// Whether a script keeps to its declared keys (see [`super::key_scope`]).
const KEYED: u8 = 1;
const NOT_KEYED: u8 = 2;

/// What the runs of one script so far say about its length, and whether
/// they kept to the shards of their declared keys.
#[derive(Debug, Default)]
pub struct RunSpeed {
    length: AtomicU8,
    keys: AtomicU8,
}

impl RunSpeed {
    /// The script may run on a worker.
    pub fn is_short(&self) -> bool {
        self.length.load(Ordering::Relaxed) == SHORT
    }

    /// A run took `took`; `budget` is the inline budget.
    pub fn record(&self, took: Duration, budget: Duration) {
        if took > LONG_RUN.max(budget) {
            self.mark_long();
        } else if took <= budget {
            let _ = self.length.compare_exchange(UNKNOWN, SHORT, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// A run was abandoned at its deadline, or took too long: the script
    /// runs on the script thread from now on.
    pub fn mark_long(&self) {
        self.length.store(LONG, Ordering::Relaxed);
    }

    /// The script may run holding only its declared keys' shards: a run
    /// kept to them, and none ever left them.
    pub fn is_keyed(&self) -> bool {
        self.keys.load(Ordering::Relaxed) == KEYED
    }

    /// A run kept to its declared keys' shards (`stayed`) or not; one that
    /// did not makes the script not keyed for good.
    pub fn record_keys(&self, stayed: bool) {
        if stayed {
            let _ = self.keys.compare_exchange(UNKNOWN, KEYED, Ordering::Relaxed, Ordering::Relaxed);
        } else {
            self.keys.store(NOT_KEYED, Ordering::Relaxed);
        }
    }
}

/// Where clients' scripts ran (INFO stats `cairn_scripts_*`).
#[derive(Debug, Default)]
pub struct WhereScriptsRan {
    pub on_worker: AtomicU64,
    pub on_script_thread: AtomicU64,
    /// Runs on a worker abandoned at their deadline (then run on the thread).
    pub abandoned_on_worker: AtomicU64,
    /// Of the runs on a worker, those that held only their declared keys'
    /// shards (see `scripting::key_scope`).
    pub keyed_on_worker: AtomicU64,
    /// Keyed runs stopped when they reached outside their declared keys
    /// before writing (then run again holding every shard).
    pub left_keys_on_worker: AtomicU64,
}

impl WhereScriptsRan {
    pub fn count_on_worker(&self) {
        self.on_worker.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_on_script_thread(&self, scripts: u64) {
        self.on_script_thread.fetch_add(scripts, Ordering::Relaxed);
    }

    pub fn count_abandoned_on_worker(&self) {
        self.abandoned_on_worker.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_keyed_on_worker(&self) {
        self.keyed_on_worker.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_left_keys_on_worker(&self) {
        self.left_keys_on_worker.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: Duration = Duration::from_millis(1);

    #[test]
    fn short_after_a_run_within_the_budget() {
        let speed = RunSpeed::default();
        assert!(!speed.is_short());
        speed.record(Duration::from_millis(5), BUDGET);
        assert!(!speed.is_short(), "a run past the budget is no evidence of a short script");
        speed.record(Duration::from_micros(10), BUDGET);
        assert!(speed.is_short());
        speed.record(Duration::from_millis(5), BUDGET);
        assert!(speed.is_short(), "a preempted run does not make a short script long");
    }

    #[test]
    fn one_long_run_is_enough_forever() {
        let speed = RunSpeed::default();
        speed.record(Duration::from_micros(10), BUDGET);
        speed.record(LONG_RUN + Duration::from_millis(1), BUDGET);
        speed.record(Duration::from_micros(10), BUDGET);
        assert!(!speed.is_short());
        let abandoned = RunSpeed::default();
        abandoned.record(Duration::from_micros(10), BUDGET);
        abandoned.mark_long();
        abandoned.record(Duration::from_micros(10), BUDGET);
        assert!(!abandoned.is_short());
    }

    #[test]
    fn keyed_until_a_run_leaves_its_keys() {
        let speed = RunSpeed::default();
        assert!(!speed.is_keyed());
        speed.record_keys(true);
        assert!(speed.is_keyed());
        speed.record_keys(false);
        speed.record_keys(true);
        assert!(!speed.is_keyed());
    }
}
