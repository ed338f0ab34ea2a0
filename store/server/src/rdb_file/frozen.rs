//! The copy-on-write image of every shard, handed out one shard at a time
//! (as a snapshot takes its image: `Keyspace::begin_freeze`, then
//! `take_frozen` per shard). Holds the snapshot lock while any shard is
//! still frozen (two freezes at once would share the shards' copy slots)
//! and lets it go as the last shard is taken. Dropped before the end (the
//! client went away, an error), it ends the freeze of the shards not taken,
//! freeing the copies writers made for them, so nothing stays frozen.

use cairn_engine::keyspace::{Keyspace, Shard};
use parking_lot::{Mutex, MutexGuard};

/// The shards of one freeze not handed out yet.
pub struct FrozenShards<'a> {
    keyspace: &'a Keyspace,
    next: usize,
    snapshot_lock: Option<MutexGuard<'a, ()>>,
}

impl<'a> FrozenShards<'a> {
    /// Takes the snapshot lock (waiting for a snapshot in progress), marks
    /// every shard copy-on-write and calls `cut` at that instant.
    pub fn freeze<T>(keyspace: &'a Keyspace, snapshot_lock: &'a Mutex<()>, cut: impl FnOnce() -> T) -> (Self, T) {
        let held = snapshot_lock.lock();
        let value = keyspace.begin_freeze(cut);
        (FrozenShards { keyspace, next: 0, snapshot_lock: Some(held) }, value)
    }
}

impl Iterator for FrozenShards<'_> {
    type Item = Shard;

    /// The next shard's image; the snapshot lock goes with the last one.
    fn next(&mut self) -> Option<Shard> {
        if self.next == self.keyspace.num_shards() {
            return None;
        }
        let shard = self.keyspace.take_frozen(self.next);
        self.next += 1;
        if self.next == self.keyspace.num_shards() {
            self.snapshot_lock = None;
        }
        Some(shard)
    }
}

impl Drop for FrozenShards<'_> {
    fn drop(&mut self) {
        for index in self.next..self.keyspace.num_shards() {
            self.keyspace.abandon_frozen(index);
        }
        // The snapshot lock goes after the shards are thawed.
        self.snapshot_lock = None;
    }
}
