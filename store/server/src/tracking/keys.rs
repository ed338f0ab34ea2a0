//! The tracking table of the default mode: key name → ids of the clients
//! that read it while tracking (Redis's `TrackingTable`). Key names are
//! global: a key read in one database is invalidated by a change in any
//! (as in Redis).
//!
//! Sharded by a hash of the key into [`SHARDS`] maps, each behind its own
//! short lock, so reads on different workers rarely meet; the totals INFO
//! shows (`tracking_total_keys`, `tracking_total_items`) are atomics kept
//! under those locks. An entry is removed as a whole when its key is
//! invalidated: each client learns once, and re-registers by reading again.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Number of independently locked maps.
const SHARDS: usize = 64;

/// The clients a key was served to (usually one or a few: a linear set).
pub type Ids = Vec<u64>;

type Shard = hashbrown::HashMap<Box<[u8]>, Ids, foldhash::fast::FixedState>;

/// Key name → tracking client ids.
#[derive(Debug)]
pub struct KeyTable {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::FixedState,
    keys: AtomicUsize,
    items: AtomicUsize,
    /// Where the next eviction starts looking (spreads evictions over shards).
    evict_from: AtomicUsize,
}

impl Default for KeyTable {
    fn default() -> Self {
        let hasher = foldhash::fast::FixedState::with_seed(0x0074_7261_636b);
        KeyTable {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::with_hasher(hasher))).collect(),
            hasher,
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            evict_from: AtomicUsize::new(0),
        }
    }
}

impl KeyTable {
    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    /// Records that client `id` may cache `key`; true if that is new.
    pub fn remember(&self, key: &[u8], id: u64) -> bool {
        let mut shard = self.shard(key).lock();
        match shard.get_mut(key) {
            Some(ids) if ids.contains(&id) => false,
            Some(ids) => {
                ids.push(id);
                self.items.fetch_add(1, Ordering::Relaxed);
                true
            }
            None => {
                shard.insert(key.into(), vec![id]);
                self.keys.fetch_add(1, Ordering::Relaxed);
                self.items.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
    }

    /// Removes `key` and returns the clients that had it.
    pub fn take(&self, key: &[u8]) -> Option<Ids> {
        if self.keys.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let ids = self.shard(key).lock().remove(key)?;
        self.note_removed(&ids);
        Some(ids)
    }

    fn note_removed(&self, ids: &Ids) {
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items.fetch_sub(ids.len(), Ordering::Relaxed);
    }

    /// Removes up to `count` keys (whichever come first, from a shard that
    /// moves on at each call) and returns them with their clients.
    pub fn evict(&self, count: usize) -> Vec<(Box<[u8]>, Ids)> {
        let mut evicted = Vec::with_capacity(count.min(1024));
        let start = self.evict_from.fetch_add(1, Ordering::Relaxed);
        for offset in 0..SHARDS {
            if evicted.len() >= count {
                break;
            }
            let mut shard = self.shards[(start + offset) % SHARDS].lock();
            let victims: Vec<Box<[u8]>> = shard.keys().take(count - evicted.len()).cloned().collect();
            for key in victims {
                if let Some(ids) = shard.remove(&key) {
                    self.note_removed(&ids);
                    evicted.push((key, ids));
                }
            }
        }
        evicted
    }

    /// Removes client `id` from every key (tracking turned off, or gone).
    pub fn forget(&self, id: u64) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            shard.retain(|_, ids| {
                if let Some(at) = ids.iter().position(|&i| i == id) {
                    ids.swap_remove(at);
                    self.items.fetch_sub(1, Ordering::Relaxed);
                }
                if ids.is_empty() {
                    self.keys.fetch_sub(1, Ordering::Relaxed);
                }
                !ids.is_empty()
            });
        }
    }

    /// Empties the table (FLUSHALL, FLUSHDB: every client was told "all keys").
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            for ids in shard.values() {
                self.keys.fetch_sub(1, Ordering::Relaxed);
                self.items.fetch_sub(ids.len(), Ordering::Relaxed);
            }
            shard.clear();
        }
    }

    /// Keys in the table (INFO `tracking_total_keys`).
    pub fn len(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Client ids over all keys (INFO `tracking_total_items`).
    pub fn items(&self) -> usize {
        self.items.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_take_and_count() {
        let table = KeyTable::default();
        assert!(table.remember(b"a", 1));
        assert!(!table.remember(b"a", 1));
        assert!(table.remember(b"a", 2));
        assert!(table.remember(b"b", 1));
        assert_eq!((table.len(), table.items()), (2, 3));
        assert_eq!(table.take(b"a"), Some(vec![1, 2]));
        assert_eq!(table.take(b"a"), None);
        assert_eq!((table.len(), table.items()), (1, 1));
    }

    #[test]
    fn evict_forget_and_clear_keep_the_totals() {
        let table = KeyTable::default();
        for i in 0..100u32 {
            table.remember(&i.to_be_bytes(), 1);
            table.remember(&i.to_be_bytes(), 2);
        }
        assert_eq!(table.evict(10).len(), 10);
        assert_eq!((table.len(), table.items()), (90, 180));
        table.forget(1);
        assert_eq!((table.len(), table.items()), (90, 90));
        table.forget(2);
        assert!(table.is_empty());
        table.remember(b"x", 3);
        table.clear();
        assert_eq!((table.len(), table.items()), (0, 0));
    }
}
