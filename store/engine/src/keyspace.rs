//! The sharded keyspace.
//!
//! Keys are spread over a power-of-two number of shards by a fixed hash; a
//! shard holds one [`Table`] per database and sits behind its own lock, so
//! commands on different keys rarely contend and no lock covers the whole
//! keyspace on the hot path. Operations that span shards take their locks in
//! ascending shard order ([`Keyspace::lock_shards`]), which rules out deadlock.
//!
//! Shard locks are re-entrant per thread: a transaction (EXEC) first holds
//! every shard it needs ([`Keyspace::hold_shards`]), then runs its commands,
//! whose own `lock_key` calls re-enter the held locks instead of deadlocking.
//! A shard's data is lent to one [`ShardGuard`] at a time; a second borrow on
//! the same thread while the first is alive is a bug and panics.

use std::cell::{Cell, UnsafeCell};
use std::hash::{BuildHasher, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};

use crate::events::KeyEvents;
use crate::table::Table;

/// Default number of shards: far above the core count, so two workers rarely
/// meet on one lock.
pub const DEFAULT_SHARDS: usize = 256;

/// One shard: a table per database.
#[derive(Debug, Clone)]
pub struct Shard {
    dbs: Box<[Table]>,
}

impl Shard {
    /// The table of database `db`.
    pub fn db(&mut self, db: usize) -> &mut Table {
        &mut self.dbs[db]
    }

    /// The table of database `db`, read-only.
    pub fn db_ref(&self, db: usize) -> &Table {
        &self.dbs[db]
    }

    /// Exchanges two databases' tables (SWAPDB).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
        self.dbs[a].set_db_index(a);
        self.dbs[b].set_db_index(b);
    }
}

/// A shard's data with its borrow flag (see the module comment), and the
/// copy-on-write state of a snapshot in progress. Opaque.
#[derive(Debug)]
pub struct ShardCell {
    borrowed: Cell<bool>,
    shard: UnsafeCell<Shard>,
    /// A snapshot's cut was taken and this shard was not copied yet: the
    /// first lock copies it into `frozen` before anyone can change it.
    freeze_pending: Cell<bool>,
    frozen: UnsafeCell<Option<Shard>>,
    /// How long the last snapshot's copy of this shard held its lock (ns;
    /// 0: not copied since the cut).
    copy_nanos: AtomicU64,
}

// SAFETY: the cell is only reached through the ReentrantMutex, so one thread
// at a time; within that thread `borrowed` ensures a single `&mut Shard`.
unsafe impl Send for ShardCell {}
unsafe impl Sync for ShardCell {}

/// A held shard lock that lends the shard's data.
pub struct ShardGuard<'a> {
    lock: ReentrantMutexGuard<'a, ShardCell>,
}

impl<'a> ShardGuard<'a> {
    fn new(lock: ReentrantMutexGuard<'a, ShardCell>) -> Self {
        assert!(!lock.borrowed.get(), "shard borrowed twice on one thread");
        if lock.freeze_pending.get() {
            let started = Instant::now();
            // SAFETY: we hold the lock and no borrow is live (checked above),
            // so reading the shard and writing the frozen slot is exclusive.
            unsafe { *lock.frozen.get() = Some((*lock.shard.get()).clone()) };
            lock.freeze_pending.set(false);
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            lock.copy_nanos.store(nanos.max(1), Ordering::Relaxed);
        }
        lock.borrowed.set(true);
        ShardGuard { lock }
    }

    /// Takes the copy made for a snapshot, if any.
    fn take_frozen(&mut self) -> Option<Shard> {
        // SAFETY: this guard holds the lock; `frozen` is only touched under it.
        unsafe { (*self.lock.frozen.get()).take() }
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        self.lock.borrowed.set(false);
    }
}

/// A held shard lock that lends the shard's data read-only. Unlike a
/// [`ShardGuard`] it makes no copy for a freeze in progress: nothing it
/// lends can change the shard (background readers such as the expiry
/// cycle's check and DBSIZE leave a frozen shard uncopied).
pub struct ShardReadGuard<'a> {
    lock: ReentrantMutexGuard<'a, ShardCell>,
}

impl<'a> ShardReadGuard<'a> {
    fn new(lock: ReentrantMutexGuard<'a, ShardCell>) -> Self {
        assert!(!lock.borrowed.get(), "shard borrowed twice on one thread");
        lock.borrowed.set(true);
        ShardReadGuard { lock }
    }
}

impl Drop for ShardReadGuard<'_> {
    fn drop(&mut self) {
        self.lock.borrowed.set(false);
    }
}

impl Deref for ShardReadGuard<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        // SAFETY: this guard holds the lock and the single borrow (see `new`).
        unsafe { &*self.lock.shard.get() }
    }
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        // SAFETY: this guard holds the lock and the single borrow (see `new`).
        unsafe { &*self.lock.shard.get() }
    }
}

impl DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        // SAFETY: as above; `&mut self` makes this the only live reference.
        unsafe { &mut *self.lock.shard.get() }
    }
}

impl std::fmt::Debug for ShardGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShardGuard")
    }
}

/// Shard locks held without borrowing the data (for transactions).
pub type HeldShards<'a> = Vec<ReentrantMutexGuard<'a, ShardCell>>;

#[repr(align(128))]
#[derive(Debug)]
struct Padded(ReentrantMutex<ShardCell>);

/// All databases, split into shards.
#[derive(Debug)]
pub struct Keyspace {
    shards: Box<[Padded]>,
    mask: usize,
    num_dbs: usize,
    hasher: foldhash::fast::FixedState,
    active_expire: AtomicBool,
    events: Arc<KeyEvents>,
}

impl Keyspace {
    /// A keyspace with `num_dbs` databases over `num_shards` shards (rounded
    /// up to a power of two).
    pub fn new(num_dbs: usize, num_shards: usize) -> Self {
        Keyspace::with_events(num_dbs, num_shards, Arc::default())
    }

    /// Like [`Keyspace::new`], raising keyspace events through `events`.
    pub fn with_events(num_dbs: usize, num_shards: usize, events: Arc<KeyEvents>) -> Self {
        let num_shards = num_shards.max(1).next_power_of_two();
        let shards = (0..num_shards)
            .map(|_| {
                let shard = Shard { dbs: (0..num_dbs).map(|db| Table::with_events(db, events.clone())).collect() };
                Padded(ReentrantMutex::new(ShardCell {
                    borrowed: Cell::new(false),
                    shard: UnsafeCell::new(shard),
                    freeze_pending: Cell::new(false),
                    frozen: UnsafeCell::new(None),
                    copy_nanos: AtomicU64::new(0),
                }))
            })
            .collect();
        Keyspace {
            shards,
            mask: num_shards - 1,
            num_dbs,
            hasher: foldhash::fast::FixedState::with_seed(0x6361_6972_6e21),
            active_expire: AtomicBool::new(true),
            events,
        }
    }

    /// The keyspace events' enabled classes and sink.
    pub fn events(&self) -> &KeyEvents {
        &self.events
    }

    pub fn num_dbs(&self) -> usize {
        self.num_dbs
    }

    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The shard a key lives in.
    pub fn shard_of(&self, key: &[u8]) -> usize {
        let mut h = self.hasher.build_hasher();
        h.write(key);
        (h.finish() >> 40) as usize & self.mask
    }

    /// Locks shard `index`.
    pub fn lock(&self, index: usize) -> ShardGuard<'_> {
        ShardGuard::new(self.shards[index].0.lock())
    }

    /// Holds the locks of the given shards (sorted, distinct) without
    /// borrowing their data, so that this thread's later `lock*` calls on
    /// them re-enter instead of waiting (EXEC's atomicity).
    pub fn hold_shards(&self, indexes: &[usize]) -> HeldShards<'_> {
        debug_assert!(indexes.windows(2).all(|w| w[0] < w[1]), "shard locks out of order");
        indexes.iter().map(|&i| self.shards[i].0.lock()).collect()
    }

    /// Holds every shard's lock, in order (see [`Keyspace::hold_shards`]):
    /// scripts, DEBUG RELOAD, tier switches.
    pub fn hold_all_shards(&self) -> HeldShards<'_> {
        self.shards.iter().map(|shard| shard.0.lock()).collect()
    }

    /// Holds one shard's lock without borrowing its data (see [`Keyspace::hold_shards`]).
    pub fn hold_shard(&self, index: usize) -> ReentrantMutexGuard<'_, ShardCell> {
        self.shards[index].0.lock()
    }

    /// Holds one shard's lock if nobody else holds it now (this thread's
    /// own holds re-enter).
    pub fn try_hold_shard(&self, index: usize) -> Option<ReentrantMutexGuard<'_, ShardCell>> {
        self.shards[index].0.try_lock()
    }

    /// Locks the shard of `key`.
    pub fn lock_key(&self, key: &[u8]) -> ShardGuard<'_> {
        self.lock(self.shard_of(key))
    }

    /// Locks the shards of all `keys` in ascending order (each once).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> MultiGuard<'_> {
        let mut indexes: Vec<usize> = keys.into_iter().map(|k| self.shard_of(k)).collect();
        indexes.sort_unstable();
        indexes.dedup();
        self.lock_shards(indexes)
    }

    /// Locks the given shards, which must be sorted and distinct.
    pub fn lock_shards(&self, indexes: Vec<usize>) -> MultiGuard<'_> {
        debug_assert!(indexes.windows(2).all(|w| w[0] < w[1]), "shard locks out of order");
        let guards = indexes.iter().map(|&i| self.lock(i)).collect();
        MultiGuard { keyspace: self, indexes, guards }
    }

    /// Locks every shard (FLUSHALL, SWAPDB, consistent snapshots).
    pub fn lock_all(&self) -> MultiGuard<'_> {
        self.lock_shards((0..self.shards.len()).collect())
    }

    /// Starts a consistent snapshot: with every shard locked, marks each for
    /// copy-on-write and calls `cut` (which reads the log position the image
    /// will include). From then on the first lock of each shard (by anyone)
    /// copies it before it can change; [`Keyspace::take_frozen`] hands the
    /// copies to the snapshot writer. Writers wait for at most one shard
    /// copy each.
    pub fn begin_freeze<T>(&self, cut: impl FnOnce() -> T) -> T {
        let all: Vec<usize> = (0..self.shards.len()).collect();
        let held = self.hold_shards(&all);
        for guard in &held {
            guard.freeze_pending.set(true);
            guard.copy_nanos.store(0, Ordering::Relaxed);
        }
        let value = cut();
        drop(held);
        value
    }

    /// The longest time one shard stayed locked while the last snapshot
    /// copied it: the worst stall a writer saw from that snapshot.
    pub fn longest_freeze_copy(&self) -> Duration {
        let nanos = self.shards.iter().map(|s| s.0.lock().copy_nanos.load(Ordering::Relaxed)).max().unwrap_or(0);
        Duration::from_nanos(nanos)
    }

    /// The frozen image of shard `index` (copied now if nobody did yet).
    pub fn take_frozen(&self, index: usize) -> Shard {
        let mut guard = self.lock(index);
        guard.take_frozen().unwrap_or_else(|| (*guard).clone())
    }

    /// Shard `index` read-only, without copying it for a freeze (see
    /// [`ShardReadGuard`]).
    pub fn read(&self, index: usize) -> ShardReadGuard<'_> {
        ShardReadGuard::new(self.shards[index].0.lock())
    }

    /// Ends the freeze of shard `index` without taking its image (an image
    /// abandoned midway): clears its copy-on-write mark and frees any copy
    /// a writer made, so later writers copy nothing.
    pub fn abandon_frozen(&self, index: usize) {
        let cell = self.hold_shard(index);
        cell.freeze_pending.set(false);
        // SAFETY: we hold the lock; `frozen` is only touched under it.
        let copy = unsafe { (*cell.frozen.get()).take() };
        drop(cell);
        drop(copy);
    }

    /// Shards still frozen: marked for copy-on-write or holding a copy
    /// nobody took yet (0 once every image in progress is done).
    pub fn frozen_shards(&self) -> usize {
        self.shards
            .iter()
            .filter(|s| {
                let cell = s.0.lock();
                // SAFETY: we hold the lock; `frozen` is only touched under it.
                cell.freeze_pending.get() || unsafe { (*cell.frozen.get()).is_some() }
            })
            .count()
    }

    /// Whether active expiry runs (DEBUG SET-ACTIVE-EXPIRE).
    pub fn active_expire_enabled(&self) -> bool {
        self.active_expire.load(Ordering::Relaxed)
    }

    pub fn set_active_expire(&self, enabled: bool) {
        self.active_expire.store(enabled, Ordering::Relaxed);
    }

    /// One active-expiry pass over the shards `first, first + stride, ...`:
    /// deletes at most `budget_per_shard` due keys per shard and database.
    pub fn expire_cycle(&self, first: usize, stride: usize, now_ms: u64, budget_per_shard: usize) -> usize {
        self.expire_cycle_with(first, stride, now_ms, budget_per_shard, &mut |_, _| {})
    }

    /// Like [`Keyspace::expire_cycle`], calling `deleted(db, key)` for each
    /// key removed while its shard is still locked (the log records these
    /// deletions in order with the writes to the same keys).
    pub fn expire_cycle_with(
        &self,
        first: usize,
        stride: usize,
        now_ms: u64,
        budget_per_shard: usize,
        deleted: &mut dyn FnMut(usize, &[u8]),
    ) -> usize {
        if !self.active_expire_enabled() {
            return 0;
        }
        let mut removed = 0;
        let mut index = first;
        while index < self.shards.len() {
            // A shard without TTLs is not locked for writing (which would
            // copy it while frozen).
            let has_expires = self.read(index).dbs.iter().any(|t| t.expires_len() > 0);
            if !has_expires {
                index += stride.max(1);
                continue;
            }
            let mut shard = self.lock(index);
            for (db, table) in shard.dbs.iter_mut().enumerate() {
                if table.expires_len() > 0 {
                    removed += table.expire_due_with(now_ms, budget_per_shard, |key| deleted(db, key));
                }
            }
            drop(shard);
            index += stride.max(1);
        }
        removed
    }

    /// Database `db`'s bookkeeping bytes over all shards, `(main, expires)`
    /// (see [`Table::overhead_bytes`]), reading one shard at a time (no copy
    /// of a frozen shard).
    pub fn db_overhead(&self, db: usize) -> (usize, usize) {
        (0..self.shards.len()).fold((0, 0), |(main, expires), i| {
            let (m, e) = self.read(i).dbs[db].overhead_bytes();
            (main + m, expires + e)
        })
    }

    /// Number of keys in database `db`, and how many of them have an expiry.
    pub fn db_size(&self, db: usize) -> (usize, usize) {
        let mut keys = 0;
        let mut expires = 0;
        for i in 0..self.shards.len() {
            let shard = self.read(i);
            keys += shard.dbs[db].len();
            expires += shard.dbs[db].expires_len();
        }
        (keys, expires)
    }
}

/// Several shard locks held at once, in ascending order.
#[derive(Debug)]
pub struct MultiGuard<'a> {
    keyspace: &'a Keyspace,
    indexes: Vec<usize>,
    guards: Vec<ShardGuard<'a>>,
}

impl MultiGuard<'_> {
    /// The table of database `db` that holds `key`. The key's shard must be locked.
    pub fn table(&mut self, db: usize, key: &[u8]) -> &mut Table {
        let shard = self.keyspace.shard_of(key);
        let pos = self.indexes.binary_search(&shard).unwrap_or_else(|_| panic!("shard {shard} is not locked"));
        self.guards[pos].db(db)
    }

    /// The table of database `db` that holds `key`, read-only, so that several
    /// keys' values can be read at once (SINTER, SUNION, ...). The key's shard
    /// must be locked.
    pub fn table_ref(&self, db: usize, key: &[u8]) -> &Table {
        let shard = self.keyspace.shard_of(key);
        let pos = self.indexes.binary_search(&shard).unwrap_or_else(|_| panic!("shard {shard} is not locked"));
        self.guards[pos].db_ref(db)
    }

    /// Calls `f` on every locked shard, in order.
    pub fn for_each_shard(&mut self, mut f: impl FnMut(&mut Shard)) {
        for guard in self.guards.iter_mut() {
            f(guard);
        }
    }

    pub fn len(&self) -> usize {
        self.guards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn multi_key_locks_reach_every_key() {
        let ks = Keyspace::new(16, 64);
        let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("k{i}").into_bytes()).collect();
        let mut guard = ks.lock_keys(keys.iter().map(|k| k.as_slice()));
        for k in &keys {
            guard.table(3, k).insert(k, Value::from_bytes(b"v"), 0, 0);
        }
        drop(guard);
        assert_eq!(ks.db_size(3), (100, 0));
        assert_eq!(ks.db_size(0), (0, 0));
    }

    #[test]
    fn a_frozen_shard_keeps_the_image_of_the_cut_and_times_its_copy() {
        let ks = Keyspace::new(1, 4);
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"before"), 0, 0);
        let cut = ks.begin_freeze(|| 7);
        assert_eq!(cut, 7);
        assert_eq!(ks.longest_freeze_copy(), Duration::ZERO, "no shard copied yet");
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"after"), 0, 0);
        assert!(ks.longest_freeze_copy() > Duration::ZERO, "the writer's lock copied the shard");
        let index = ks.shard_of(b"k");
        let frozen = ks.take_frozen(index);
        assert_eq!(frozen.db_ref(0).len(), 1);
        let value = frozen.db_ref(0).iter(0).find_map(|(_, e)| match &e.value {
            Value::Str(s) => Some(s.to_vec()),
            _ => None,
        });
        assert_eq!(value.as_deref(), Some(&b"before"[..]));
    }

    #[test]
    fn an_abandoned_freeze_frees_its_copies_and_copies_no_more() {
        let ks = Keyspace::new(1, 4);
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"before"), 0, 0);
        ks.begin_freeze(|| ());
        assert_eq!(ks.frozen_shards(), 4, "every shard marked");
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"after"), 0, 0);
        let index = ks.shard_of(b"k");
        drop(ks.take_frozen((index + 1) % 4));
        assert_eq!(ks.frozen_shards(), 3);
        for i in 0..4 {
            ks.abandon_frozen(i);
        }
        assert_eq!(ks.frozen_shards(), 0, "the writer's copy freed, the marks cleared");
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"later"), 0, 0);
        assert_eq!(ks.frozen_shards(), 0, "a later write copies nothing");
    }

    #[test]
    fn reading_a_frozen_shard_copies_nothing() {
        let ks = Keyspace::new(1, 4);
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"v"), 0, 0);
        ks.begin_freeze(|| ());
        assert_eq!(ks.db_size(0), (1, 0));
        assert_eq!(ks.expire_cycle(0, 1, 0, 10), 0);
        assert_eq!(ks.longest_freeze_copy(), Duration::ZERO, "DBSIZE and the expiry cycle copied no shard");
        ks.lock_key(b"k").db(0).insert(b"k", Value::from_bytes(b"w"), 0, 0);
        assert!(ks.longest_freeze_copy() > Duration::ZERO, "a write does");
    }

    #[test]
    fn concurrent_writers_on_many_shards() {
        let ks = std::sync::Arc::new(Keyspace::new(1, 256));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let ks = ks.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        let key = format!("t{t}:{i}");
                        ks.lock_key(key.as_bytes()).db(0).insert(key.as_bytes(), Value::from_bytes(b"x"), 0, 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("writer thread");
        }
        assert_eq!(ks.db_size(0).0, 4000);
    }
}

#[cfg(test)]
mod reentrancy_tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn held_shards_let_the_same_thread_relock() {
        let ks = Keyspace::new(1, 16);
        let all: Vec<usize> = (0..ks.num_shards()).collect();
        let held = ks.hold_shards(&all);
        ks.lock_key(b"a").db(0).insert(b"a", Value::from_bytes(b"1"), 0, 0);
        ks.lock_key(b"a").db(0).insert(b"a", Value::from_bytes(b"2"), 0, 0);
        drop(held);
        assert_eq!(ks.db_size(0).0, 1);
    }

    #[test]
    #[should_panic(expected = "shard borrowed twice")]
    fn double_borrow_panics() {
        let ks = Keyspace::new(1, 1);
        let _first = ks.lock(0);
        let _second = ks.lock(0);
    }
}
