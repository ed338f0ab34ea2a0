//! WATCH bookkeeping: which clients watch which keys, and marking them dirty
//! when a write touches a watched key.
//!
//! The registry is only locked when some client watches something: writers
//! first read an atomic count, so the hot path pays one relaxed load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

type Watchers = Vec<(u64, Arc<AtomicBool>)>;

/// All watched keys, by database and key.
#[derive(Debug, Default)]
pub struct WatchRegistry {
    keys: Mutex<HashMap<(usize, Vec<u8>), Watchers>>,
    count: AtomicUsize,
}

impl WatchRegistry {
    /// Whether anybody watches anything (a cheap check before touching).
    #[inline]
    pub fn is_active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Registers `client` as watching `key` in `db`; `dirty` is set on a touch.
    pub fn watch(&self, db: usize, key: &[u8], client: u64, dirty: &Arc<AtomicBool>) {
        let mut keys = self.keys.lock();
        let watchers = keys.entry((db, key.to_vec())).or_default();
        if !watchers.iter().any(|(id, _)| *id == client) {
            watchers.push((client, dirty.clone()));
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Removes every watch of `client`.
    pub fn forget(&self, client: u64, watched: &[(usize, Vec<u8>)]) {
        if watched.is_empty() {
            return;
        }
        let mut keys = self.keys.lock();
        for (db, key) in watched {
            let slot = (*db, key.clone());
            if let Some(watchers) = keys.get_mut(&slot) {
                let before = watchers.len();
                watchers.retain(|(id, _)| *id != client);
                self.count.fetch_sub(before - watchers.len(), Ordering::Relaxed);
                if watchers.is_empty() {
                    keys.remove(&slot);
                }
            }
        }
    }

    /// Marks the watchers of `key` in `db` dirty.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if !self.is_active() {
            return;
        }
        if let Some(watchers) = self.keys.lock().get(&(db, key.to_vec())) {
            for (_, dirty) in watchers {
                dirty.store(true, Ordering::SeqCst);
            }
        }
    }

    /// The watched keys of database `db` (for FLUSHDB/SWAPDB, which touch
    /// only the watched keys that exist).
    pub fn keys_in_db(&self, db: usize) -> Vec<Vec<u8>> {
        if !self.is_active() {
            return Vec::new();
        }
        self.keys.lock().keys().filter(|(d, _)| *d == db).map(|(_, k)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_marks_only_watchers_of_that_key() {
        let registry = WatchRegistry::default();
        let a = Arc::new(AtomicBool::new(false));
        let b = Arc::new(AtomicBool::new(false));
        registry.watch(0, b"x", 1, &a);
        registry.watch(0, b"y", 2, &b);
        registry.touch(0, b"x");
        registry.touch(1, b"y");
        assert!(a.load(Ordering::SeqCst));
        assert!(!b.load(Ordering::SeqCst));
        registry.forget(1, &[(0, b"x".to_vec())]);
        registry.forget(2, &[(0, b"y".to_vec())]);
        assert!(!registry.is_active());
    }
}
