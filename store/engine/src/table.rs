//! One database's keys inside one shard.

use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::hash_table::Entry as Slot;
use hashbrown::HashTable;

use crate::entry::{Entry, NO_EXPIRY};
use crate::events::{self, KeyEvents};
use crate::value::Value;
use crate::Key;

/// A hash table of keys plus an index of their expiry times, so active expiry
/// finds due keys without scanning.
///
/// The keys live in a [`HashTable`] rather than a `HashMap` for one reason:
/// its buckets can be read by index, so eviction samples keys from a random
/// bucket onwards ([`Table::sample`]) as Redis's `dictGetSomeKeys` does,
/// in time independent of the table's size.
///
/// A slot holds a pointer to the key and its entry ([`Stored`]), not the
/// pair itself: a power-of-two table is between 44% and 87% full, and
/// empty slots of 8 bytes cost far less than empty slots of 72 (under
/// `maxmemory`, where tables that grew stay grown, several times less).
#[derive(Debug, Default, Clone)]
pub struct Table {
    map: HashTable<Stored>,
    hasher: RandomState,
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
        emit_to(&self.events, self.db, class, event, key);
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
    /// if it has expired (lazy expiry), and records the access
    /// ([`Entry::touch`]) as Redis's `lookupKey` does. One hash lookup either way.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let entry = self.get_untouched(key, now_ms)?;
        entry.touch(now_ms);
        Some(entry)
    }

    /// [`Table::get`] without recording an access (Redis's `LOOKUP_NOTOUCH`:
    /// TYPE, TTL, EXISTS, OBJECT and the like must not make a key look used).
    pub fn get_untouched(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        if self.map.is_empty() {
            return None;
        }
        let hash = self.hash(key);
        if self.expires.is_empty() {
            return self.map.find_mut(hash, |s| s.0.as_bytes() == key).map(|s| &mut s.1);
        }
        match self.map.find_entry(hash, |s| s.0.as_bytes() == key) {
            Ok(slot) if slot.get().1.is_expired(now_ms) => {
                if self.events.as_ref().is_some_and(|ev| ev.expiry_paused(now_ms)) {
                    return None;
                }
                let (stored, _) = slot.remove();
                let (k, entry) = *stored;
                self.expires.remove(&(entry.expire_at_ms, k));
                expired_in(&self.events, self.db, key);
                None
            }
            Ok(slot) => Some(&mut slot.into_mut().1),
            Err(_) => None,
        }
    }

    /// Looks a key up without modifying anything; expired keys are absent.
    pub fn peek(&self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        if self.map.is_empty() {
            return None;
        }
        self.map.find(self.hash(key), |s| s.0.as_bytes() == key).map(|s| &s.1).filter(|e| !e.is_expired(now_ms))
    }

    /// Stores `value` under `key` with expiry `expire_at_ms` (0: none),
    /// replacing any previous value and expiry, in one hash lookup. Returns
    /// whether it replaced a live key; an expired one is deleted first, as a
    /// lookup would (its `expired` event, then `new`).
    pub fn insert(&mut self, key: &[u8], value: impl NewValue, expire_at_ms: u64, now_ms: u64) -> bool {
        let hash = self.hash(key);
        let hasher = &self.hasher;
        let replaced =
            match self.map.entry(hash, |s| s.0.as_bytes() == key, |s| hasher.hash_one(KeyBytes(s.0.as_bytes()))) {
                Slot::Occupied(mut slot) => {
                    let entry = &mut slot.get_mut().1;
                    let live = !entry.is_expired(now_ms);
                    value.store_into(&mut entry.value);
                    entry.access = crate::clock::access_clock(now_ms);
                    let old = std::mem::replace(&mut entry.expire_at_ms, expire_at_ms);
                    if old != expire_at_ms {
                        reindex_expiry(&mut self.expires, key, old, expire_at_ms);
                    }
                    if live {
                        return true;
                    }
                    expired_in(&self.events, self.db, key);
                    false
                }
                Slot::Vacant(slot) => {
                    let mut entry = Entry::new(value.into_value(), now_ms);
                    entry.expire_at_ms = expire_at_ms;
                    slot.insert(Box::new((Key::from(key), entry)));
                    reindex_expiry(&mut self.expires, key, NO_EXPIRY, expire_at_ms);
                    false
                }
            };
        self.emit(events::NEW, "new", key);
        replaced
    }

    /// Stores `value` under `key`, keeping the key's expiry if it exists.
    /// Returns whether it replaced a live key.
    pub fn insert_keep_ttl(&mut self, key: &[u8], value: impl NewValue, now_ms: u64) -> bool {
        match self.get(key, now_ms) {
            Some(entry) => {
                value.store_into(&mut entry.value);
                entry.access = crate::clock::access_clock(now_ms);
                true
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
        let hash = self.hash(key);
        let (stored, _) = self.map.find_entry(hash, |s| s.0.as_bytes() == key).ok()?.remove();
        let (k, entry) = *stored;
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
            reindex_expiry(&mut self.expires, key, old, expire_at_ms);
        }
        true
    }

    /// Removes every key, handing them over as a standalone table (no
    /// events), to be dropped elsewhere (FLUSHDB ASYNC).
    pub fn take(&mut self) -> Table {
        let map = std::mem::take(&mut self.map);
        let expires = std::mem::take(&mut self.expires);
        Table { map, hasher: self.hasher, expires, db: self.db, events: None }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.map = HashTable::new();
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
                let hash = self.hash(&key);
                if let Ok(slot) = self.map.find_entry(hash, |s| s.0 == key) {
                    slot.remove();
                }
                deleted(&key);
                expired_in(&self.events, self.db, &key);
                removed += 1;
            }
        }
        removed
    }

    /// Iterates over live keys and entries.
    pub fn iter(&self, now_ms: u64) -> impl Iterator<Item = (&Key, &Entry)> {
        self.map.iter().filter(move |s| !s.1.is_expired(now_ms)).map(|s| (&s.0, &s.1))
    }

    /// The `n`-th key in iteration order (for RANDOMKEY), live or not.
    pub fn nth_key(&self, n: usize) -> Option<&Key> {
        self.map.iter().nth(n).map(|s| &s.0)
    }

    /// The key with the nearest expiry and that expiry (expired or not).
    pub fn soonest_expiring(&self) -> Option<(u64, &Key)> {
        self.expires.first().map(|(at, key)| (*at, key))
    }

    /// Number of buckets of the hash table (a power of two, or 0).
    pub fn buckets(&self) -> usize {
        self.map.num_buckets()
    }

    /// Bytes this table spends on bookkeeping rather than on keys and
    /// values, as `MEMORY STATS` reports it: `(main, expires)`. Main: every
    /// bucket's pointer and control byte, plus each entry's own fields
    /// (expiry, access clock, LFU state), as Redis counts its buckets and
    /// `dictEntry`s; the key and the value, inline in the slot or on the
    /// heap, are the dataset. Expires: one `(time, key)` element of the
    /// expiry index per key with a TTL (the B-tree's node slack not counted).
    pub fn overhead_bytes(&self) -> (usize, usize) {
        let buckets = self.map.num_buckets() * (std::mem::size_of::<Stored>() + 1);
        let entry_fields =
            std::mem::size_of::<(Key, Entry)>() - std::mem::size_of::<Key>() - std::mem::size_of::<Value>();
        (buckets + self.map.len() * entry_fields, self.expires.len() * std::mem::size_of::<(u64, Key)>())
    }

    /// Visits up to `count` keys (expired ones included) in the buckets from
    /// `start` onwards, wrapping around, looking at no more than `10 * count`
    /// buckets: a sample whose cost does not grow with the table, as Redis's
    /// `dictGetSomeKeys`. A random `start` makes it a random sample (keys in
    /// long runs of full buckets are a little likelier, as in Redis).
    pub fn sample(&self, start: usize, count: usize, mut visit: impl FnMut(&Key, &Entry)) {
        let buckets = self.map.num_buckets();
        if buckets == 0 || self.map.is_empty() {
            return;
        }
        let mut found = 0;
        for step in 0..buckets.min(count.saturating_mul(10)) {
            if let Some(s) = self.map.get_bucket(start.wrapping_add(step) & (buckets - 1)) {
                visit(&s.0, &s.1);
                found += 1;
                if found == count {
                    return;
                }
            }
        }
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(KeyBytes(key))
    }
}

/// What a table slot holds: one pointer to a key and its entry.
type Stored = Box<(Key, Entry)>;

/// A key's bytes as the table hashes them: the bytes alone, without the
/// length prefix `[u8]`'s `Hash` adds (the table's only hash, so nothing
/// else has to agree with it).
struct KeyBytes<'a>(&'a [u8]);

impl std::hash::Hash for KeyBytes<'_> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.0);
    }
}

/// A value [`Table::insert`] stores: into the slot of a key that exists, or
/// as the value of a new entry.
pub trait NewValue {
    /// Replaces the value in an existing entry.
    fn store_into(self, slot: &mut Value);
    /// The value of a new entry.
    fn into_value(self) -> Value;
}

impl NewValue for Value {
    fn store_into(self, slot: &mut Value) {
        *slot = self;
    }

    fn into_value(self) -> Value {
        self
    }
}

/// A string value given as its bytes: overwriting a string reuses its
/// buffer ([`Value::assign_bytes`]).
#[derive(Debug, Clone, Copy)]
pub struct StrBytes<'a>(pub &'a [u8]);

impl NewValue for StrBytes<'_> {
    fn store_into(self, slot: &mut Value) {
        slot.assign_bytes(self.0);
    }

    fn into_value(self) -> Value {
        Value::from_bytes(self.0)
    }
}

/// Raises a keyspace event through `events`, if the table has any (a free
/// function so it can run while the map is borrowed).
#[inline]
fn emit_to(events: &Option<Arc<KeyEvents>>, db: usize, class: u32, event: &str, key: &[u8]) {
    if let Some(ev) = events {
        ev.emit(class, event, db, key);
    }
}

/// Counts and announces the expiry of `key` (see [`KeyEvents::key_expired`]).
fn expired_in(events: &Option<Arc<KeyEvents>>, db: usize, key: &[u8]) {
    if let Some(ev) = events {
        ev.key_expired(db, key);
    }
}

/// Moves `key` in the expiry index from `old` to `new` (`NO_EXPIRY`: not indexed).
fn reindex_expiry(expires: &mut BTreeSet<(u64, Key)>, key: &[u8], old: u64, new: u64) {
    if old != NO_EXPIRY {
        expires.remove(&(old, Key::from(key)));
    }
    if new != NO_EXPIRY {
        expires.insert((new, Key::from(key)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_one_pointer_to_a_key_and_its_entry() {
        assert_eq!(std::mem::size_of::<Stored>(), 8);
        assert_eq!(std::mem::size_of::<(Key, Entry)>(), 72);
        let mut t = Table::default();
        t.insert(b"a", Value::from_bytes(b"1"), NO_EXPIRY, 0);
        assert_eq!(t.buckets() * std::mem::size_of::<Stored>(), 32, "4 buckets of 8 bytes");
    }

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

    /// A table whose `new` and `expired` events are recorded as "event:key".
    fn recording_table() -> (Table, Arc<std::sync::Mutex<Vec<String>>>) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let events = Arc::new(KeyEvents::default());
        events.set_flags(events::KEYEVENT | events::NEW | events::EXPIRED);
        let sink_seen = seen.clone();
        events.set_sink(Box::new(move |_, event, _, key| {
            let line = format!("{event}:{}", String::from_utf8_lossy(key));
            sink_seen.lock().expect("events").push(line);
        }));
        (Table::with_events(0, events), seen)
    }

    #[test]
    fn insert_reports_whether_it_replaced_a_live_key() {
        let (mut t, seen) = recording_table();
        assert!(!t.insert(b"a", Value::from_bytes(b"1"), 100, 0), "absent");
        assert!(t.insert(b"a", Value::from_bytes(b"2"), 100, 50), "live");
        assert!(!t.insert(b"a", Value::from_bytes(b"3"), 300, 100), "expired at 100");
        assert!(t.insert_keep_ttl(b"a", Value::from_bytes(b"4"), 200));
        assert!(!t.insert_keep_ttl(b"b", Value::from_bytes(b"5"), 200));
        assert_eq!(*seen.lock().expect("events"), ["new:a", "expired:a", "new:a", "new:b"]);
        assert_eq!(t.peek(b"a", 0).and_then(|e| e.expire_at()), Some(300));
        assert_eq!(t.expires_len(), 1, "the expiry index holds the new time only");
        assert_eq!(t.expire_due(300, 10), 1);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn get_deletes_an_expired_key_once() {
        let (mut t, seen) = recording_table();
        t.insert(b"a", Value::from_bytes(b"1"), 100, 0);
        t.insert(b"b", Value::from_bytes(b"2"), NO_EXPIRY, 0);
        assert!(t.get(b"a", 99).is_some());
        assert!(t.get(b"a", 100).is_none());
        assert!(t.get(b"a", 100).is_none());
        assert!(t.get(b"b", 100).is_some());
        assert!(t.get(b"c", 100).is_none());
        assert_eq!(*seen.lock().expect("events"), ["new:a", "new:b", "expired:a"]);
        assert_eq!((t.len(), t.expires_len()), (1, 0));
    }
}
