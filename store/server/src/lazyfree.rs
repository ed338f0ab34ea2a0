//! Freeing big values off the workers (Redis's lazyfree.c): UNLINK, and
//! FLUSHDB / FLUSHALL ASYNC (or with `lazyfree-lazy-user-flush`), and DEL
//! with `lazyfree-lazy-user-del`.
//!
//! Dropping a collection of a million elements takes milliseconds during
//! which a worker would answer nobody (and a flush would hold every shard).
//! Instead the key leaves the keyspace at once and its value goes to one
//! background thread, `cairn-lazyfree`, started on first use. A value whose
//! free effort (its element count, 1 for a string) is at most
//! [`LAZYFREE_THRESHOLD`] is cheaper to drop in place, as Redis decides.
//! INFO shows `lazyfree_pending_objects` (memory) and `lazyfreed_objects`
//! (stats, reset by CONFIG RESETSTAT).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};

use cairn_engine::{Table, Value};
use parking_lot::Mutex;

/// Free effort above which a value is dropped in the background (Redis's
/// `LAZYFREE_THRESHOLD`).
pub const LAZYFREE_THRESHOLD: usize = 64;

/// What the background thread drops: a value, or flushed tables.
type Garbage = Box<dyn Send>;

#[derive(Debug, Default)]
struct Counters {
    pending: AtomicUsize,
    freed: AtomicU64,
}

/// The server's background freer.
#[derive(Debug, Default)]
pub struct LazyFree {
    counters: Arc<Counters>,
    /// The thread's queue, once started; `None` inside if it could not start.
    queue: OnceLock<Option<Mutex<Sender<Garbage>>>>,
}

impl LazyFree {
    /// Frees a value removed from the keyspace: in the background if it is big.
    pub fn free_value(&self, value: Value) {
        if free_effort(&value) > LAZYFREE_THRESHOLD {
            self.send(Box::new(value));
        }
    }

    /// Frees the contents of flushed tables in the background.
    pub fn free_tables(&self, tables: Vec<Table>) {
        if tables.iter().any(|t| !t.is_empty()) {
            self.send(Box::new(tables));
        }
    }

    /// Objects queued and not yet freed (INFO `lazyfree_pending_objects`).
    pub fn pending(&self) -> usize {
        self.counters.pending.load(Ordering::Relaxed)
    }

    /// Objects freed in the background since start (INFO `lazyfreed_objects`).
    pub fn freed(&self) -> u64 {
        self.counters.freed.load(Ordering::Relaxed)
    }

    fn send(&self, garbage: Garbage) {
        let Some(queue) = self.queue.get_or_init(|| self.start()) else {
            return; // dropped here, in the caller's thread
        };
        self.counters.pending.fetch_add(1, Ordering::Relaxed);
        if let Err(returned) = queue.lock().send(garbage) {
            self.counters.pending.fetch_sub(1, Ordering::Relaxed);
            drop(returned);
        }
    }

    /// Starts the thread; `None` (values are then dropped in place) if the
    /// system refuses a thread.
    fn start(&self) -> Option<Mutex<Sender<Garbage>>> {
        let (tx, rx) = channel::<Garbage>();
        let counters = self.counters.clone();
        let spawned = std::thread::Builder::new().name("cairn-lazyfree".into()).spawn(move || {
            for garbage in rx {
                drop(garbage);
                counters.pending.fetch_sub(1, Ordering::Relaxed);
                counters.freed.fetch_add(1, Ordering::Relaxed);
            }
        });
        match spawned {
            Ok(_) => Some(Mutex::new(tx)),
            Err(e) => {
                tracing::warn!(error = %e, "no lazy-free thread: big values are freed in place");
                None
            }
        }
    }
}

/// How much work dropping `value` is: its element count (a string: 1).
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::Str(_) => 1,
        Value::List(l) => l.len(),
        Value::Hash(h) => h.len(),
        Value::Set(s) => s.len(),
        Value::ZSet(z) => z.len(),
        Value::Stream(s) => s.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_until(what: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !what() {
            assert!(std::time::Instant::now() < deadline, "timed out");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn big_values_are_freed_in_the_background_small_ones_in_place() {
        let lazy = LazyFree::default();
        lazy.free_value(Value::from_bytes(b"small"));
        assert!(lazy.queue.get().is_none(), "no thread for a string");
        let mut set = cairn_engine::types::Set::default();
        for i in 0..=LAZYFREE_THRESHOLD {
            set.add(i.to_string().as_bytes());
        }
        lazy.free_value(Value::Set(set));
        wait_until(|| lazy.freed() == 1);
        assert_eq!(lazy.pending(), 0);
    }
}
