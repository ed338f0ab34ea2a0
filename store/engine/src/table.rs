//! One database's keys inside one shard.

use std::collections::BTreeSet;
use std::sync::Arc;

use hashbrown::HashMap;

use crate::entry::{Entry, NO_EXPIRY};
use crate::events::{self, KeyEvents};
use crate::value::Value;
use crate::Key;

/// A hash table of keys plus an index of their expiry times, so active expiry
/// finds due keys without scanning.
#[derive(Debug, Default, Clone)]
pub struct Table {
    map: HashMap<Key, Entry>,
    expires: BTreeSet<(u64, Key)>,
    /// The database this table belongs to (for keyspace events).
    db: usize,
    /// Where `new` and `expired` events go (none in standalone tables).
    events: Option<Arc<KeyEvents>>,
}

impl Table {
    /// An empty table of database `db` that raises keyspace events through `events`.
    pub fn with_events(db: usize, events: Arc<KeyEvents>) -> Table {
        Table { db, events: Some(events), ..Table::default() }
    }

    /// The database this table belongs to.
    pub fn db_index(&self) -> usize {
        self.db
    }

    /// Re-labels the table after SWAPDB moved it to database `db`.
    pub fn set_db_index(&mut self, db: usize) {
        self.db = db;
    }

    /// Raises a keyspace event about `key` (see [`KeyEvents::emit`]).
    #[inline]
    pub fn emit(&self, class: u32, event: &str, key: &[u8]) {
        if let Some(ev) = &self.events {
            ev.emit(class, event, self.db, key);
        }
    }

    /// Number of keys, including expired keys not yet reclaimed.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with an expiry.
    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// Looks a key up for reading or in-place modification, deleting it first
    /// if it has expired (lazy expiry).
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        if !self.expires.is_empty() && self.map.get(key).is_some_and(|e| e.is_expired(now_ms)) {
            self.remove(key);
            self.emit(events::EXPIRED, "expired", key);
            return None;
        }
        self.map.get_mut(key)
    }

    /// Looks a key up without modifying anything; expired keys are absent.
    pub fn peek(&self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.map.get(key).filter(|e| !e.is_expired(now_ms))
    }

    /// Stores `value` under `key` with expiry `expire_at_ms` (0: none),
    /// replacing any previous value and expiry.
    pub fn insert(&mut self, key: &[u8], value: Value, expire_at_ms: u64, now_ms: u64) {
        if let Some(entry) = self.map.get_mut(key) {
            entry.value = value;
            entry.access = crate::clock::access_clock(now_ms);
            let old = std::mem::replace(&mut entry.expire_at_ms, expire_at_ms);
            if old != expire_at_ms {
                self.reindex_expiry(key, old, expire_at_ms);
            }
            return;
        }
        let mut entry = Entry::new(value, now_ms);
        entry.expire_at_ms = expire_at_ms;
        if expire_at_ms != NO_EXPIRY {
            self.expires.insert((expire_at_ms, Key::from(key)));
        }
        self.map.insert(Key::from(key), entry);
        self.emit(events::NEW, "new", key);
    }

    /// Stores `value` under `key`, keeping the key's expiry if it exists.
    pub fn insert_keep_ttl(&mut self, key: &[u8], value: Value, now_ms: u64) {
        match self.get(key, now_ms) {
            Some(entry) => {
                entry.value = value;
                entry.access = crate::clock::access_clock(now_ms);
            }
            None => self.insert(key, value, NO_EXPIRY, now_ms),
        }
    }

    /// Inserts a whole entry (MOVE, COPY, RENAME), keeping its expiry.
    pub fn insert_entry(&mut self, key: &[u8], entry: Entry, now_ms: u64) {
        let expire = entry.expire_at_ms;
        self.insert(key, entry.value, expire, now_ms);
    }

    /// Removes a key, returning its entry (expired or not).
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (k, entry) = self.map.remove_entry(key)?;
        if entry.expire_at_ms != NO_EXPIRY {
            self.expires.remove(&(entry.expire_at_ms, k));
        }
        Some(entry)
    }

    /// Sets or clears (`NO_EXPIRY`) a live key's expiry; false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], expire_at_ms: u64, now_ms: u64) -> bool {
        let Some(entry) = self.get(key, now_ms) else { return false };
        let old = std::mem::replace(&mut entry.expire_at_ms, expire_at_ms);
        if old != expire_at_ms {
            self.reindex_expiry(key, old, expire_at_ms);
        }
        true
    }

    fn reindex_expiry(&mut self, key: &[u8], old: u64, new: u64) {
        if old != NO_EXPIRY {
            self.expires.remove(&(old, Key::from(key)));
        }
        if new != NO_EXPIRY {
            self.expires.insert((new, Key::from(key)));
        }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.map = HashMap::new();
        self.expires = BTreeSet::new();
    }

    /// Deletes up to `budget` keys whose expiry is due; returns how many.
    pub fn expire_due(&mut self, now_ms: u64, budget: usize) -> usize {
        self.expire_due_with(now_ms, budget, |_| {})
    }

    /// Like [`Table::expire_due`], calling `deleted` with each key removed.
    pub fn expire_due_with(&mut self, now_ms: u64, budget: usize, mut deleted: impl FnMut(&[u8])) -> usize {
        let mut removed = 0;
        while removed < budget {
            let Some((at, _)) = self.expires.first() else { break };
            if *at > now_ms {
                break;
            }
            if let Some((_, key)) = self.expires.pop_first() {
                self.map.remove(&key);
                deleted(&key);
                self.emit(events::EXPIRED, "expired", &key);
                removed += 1;
            }
        }
        removed
    }

    /// Iterates over live keys and entries.
    pub fn iter(&self, now_ms: u64) -> impl Iterator<Item = (&Key, &Entry)> {
        self.map.iter().filter(move |(_, e)| !e.is_expired(now_ms))
    }

    /// The `n`-th key in iteration order (for RANDOMKEY), live or not.
    pub fn nth_key(&self, n: usize) -> Option<&Key> {
        self.map.keys().nth(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_and_active_expiry() {
        let mut t = Table::default();
        t.insert(b"a", Value::from_bytes(b"1"), 100, 0);
        t.insert(b"b", Value::from_bytes(b"2"), 200, 0);
        t.insert(b"c", Value::from_bytes(b"3"), NO_EXPIRY, 0);
        assert!(t.get(b"a", 50).is_some());
        assert!(t.get(b"a", 100).is_none());
        assert_eq!(t.len(), 2);
        assert_eq!(t.expire_due(150, 10), 0);
        assert_eq!(t.expire_due(250, 10), 1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.expires_len(), 0);
    }

    #[test]
    fn overwrite_clears_or_moves_expiry() {
        let mut t = Table::default();
        t.insert(b"a", Value::from_bytes(b"1"), 100, 0);
        t.insert(b"a", Value::from_bytes(b"2"), NO_EXPIRY, 0);
        assert_eq!(t.expires_len(), 0);
        assert!(t.set_expire(b"a", 300, 0));
        t.insert_keep_ttl(b"a", Value::from_bytes(b"3"), 0);
        assert_eq!(t.peek(b"a", 0).and_then(|e| e.expire_at()), Some(300));
        assert_eq!(t.expire_due(400, 10), 1);
        assert!(t.is_empty());
    }
}
