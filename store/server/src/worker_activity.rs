//! Which workers are in the middle of a batch of work.
//!
//! A worker counts itself in when its event loop wakes up and out before it
//! sleeps (tokio's unpark and park hooks). The WAL's syncer reads the count
//! in the `sync` tier: woken by the first record of a batch, it lets the busy
//! workers finish the requests they have already read, so one fdatasync
//! covers the batch (`WalOptions::busy_appenders`).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

thread_local! {
    /// Whether this thread is counted in.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// The number of busy workers, shared with the WAL.
#[derive(Debug, Clone, Default)]
pub struct WorkerActivity {
    busy: Arc<AtomicUsize>,
}

impl WorkerActivity {
    /// The counter the WAL reads.
    pub fn counter(&self) -> Arc<AtomicUsize> {
        self.busy.clone()
    }

    /// This thread's event loop is running (idempotent per thread).
    pub fn enter(&self) {
        if !COUNTED.with(|c| c.replace(true)) {
            self.busy.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// This thread's event loop is about to sleep (idempotent per thread).
    pub fn leave(&self) {
        if COUNTED.with(|c| c.replace(false)) {
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_thread_once() {
        let activity = WorkerActivity::default();
        activity.leave();
        assert_eq!(activity.busy(), 0, "leaving before entering does not go below zero");
        activity.enter();
        activity.enter();
        assert_eq!(activity.busy(), 1);
        let other = activity.clone();
        std::thread::spawn(move || other.enter()).join().expect("thread");
        assert_eq!(activity.busy(), 2, "another thread counts in separately");
        activity.leave();
        activity.leave();
        assert_eq!(activity.busy(), 1);
    }
}
