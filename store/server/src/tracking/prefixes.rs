//! The broadcast (BCAST) side of tracking: prefix → the clients that asked
//! for it and the keys under it changed since the last broadcast (Redis's
//! `PrefixTable` of `bcastState`).
//!
//! A change only records the key (with who changed it, for NOLOOP); the
//! keys are sent later, all of a prefix in one message, by
//! [`PrefixTable::take_changes`] after the batch of commands that changed
//! them (Redis sends them before the event loop sleeps).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct PrefixState {
    clients: Vec<u64>,
    /// Changed keys, in key order, with the id of the client whose command
    /// changed each last (0: no client, e.g. an expiry).
    changed: BTreeMap<Vec<u8>, u64>,
}

/// One prefix's pending broadcast.
#[derive(Debug, PartialEq, Eq)]
pub struct Broadcast {
    pub clients: Vec<u64>,
    pub keys: Vec<(Vec<u8>, u64)>,
}

/// Prefix → subscribed clients and changed keys.
#[derive(Debug, Default)]
pub struct PrefixTable {
    prefixes: Mutex<BTreeMap<Vec<u8>, PrefixState>>,
    /// Number of prefixes (read without the lock before recording a change).
    count: AtomicUsize,
    /// Whether some prefix has changed keys.
    changed: AtomicBool,
}

impl PrefixTable {
    /// Subscribes client `id` to `prefix`.
    pub fn add(&self, prefix: &[u8], id: u64) {
        let mut prefixes = self.prefixes.lock();
        let state = prefixes.entry(prefix.to_vec()).or_default();
        if !state.clients.contains(&id) {
            state.clients.push(id);
        }
        self.count.store(prefixes.len(), Ordering::Relaxed);
    }

    /// Unsubscribes client `id` from `prefix`; the prefix goes with its last client.
    pub fn remove(&self, prefix: &[u8], id: u64) {
        let mut prefixes = self.prefixes.lock();
        if let Some(state) = prefixes.get_mut(prefix) {
            state.clients.retain(|&c| c != id);
            if state.clients.is_empty() {
                prefixes.remove(prefix);
            }
        }
        self.count.store(prefixes.len(), Ordering::Relaxed);
    }

    /// Number of prefixes (INFO `tracking_total_prefixes`).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records that `key` changed (by client `modifier`, 0 for none) under
    /// every prefix it starts with.
    pub fn record(&self, key: &[u8], modifier: u64) {
        if self.is_empty() {
            return;
        }
        let mut prefixes = self.prefixes.lock();
        for (prefix, state) in prefixes.iter_mut() {
            if key.starts_with(prefix) {
                state.changed.insert(key.to_vec(), modifier);
                self.changed.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Takes the changes recorded since the last call, per prefix.
    pub fn take_changes(&self) -> Vec<Broadcast> {
        if !self.changed.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let mut prefixes = self.prefixes.lock();
        self.changed.store(false, Ordering::Relaxed);
        prefixes
            .values_mut()
            .filter(|state| !state.changed.is_empty())
            .map(|state| Broadcast {
                clients: state.clients.clone(),
                keys: std::mem::take(&mut state.changed).into_iter().collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_go_to_the_matching_prefixes_once() {
        let table = PrefixTable::default();
        table.add(b"a:", 1);
        table.add(b"", 2);
        table.record(b"a:1", 7);
        table.record(b"b:1", 0);
        let mut changes = table.take_changes();
        changes.sort_by_key(|b| b.keys.len());
        assert_eq!(
            changes,
            vec![
                Broadcast { clients: vec![1], keys: vec![(b"a:1".to_vec(), 7)] },
                Broadcast { clients: vec![2], keys: vec![(b"a:1".to_vec(), 7), (b"b:1".to_vec(), 0)] },
            ]
        );
        assert!(table.take_changes().is_empty());
        table.remove(b"a:", 1);
        table.remove(b"", 2);
        assert!(table.is_empty());
    }
}
