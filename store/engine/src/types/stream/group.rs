//! Consumer groups: the last delivered ID, the read counter, the group's
//! pending entries list (PEL) and its consumers, each with its own PEL.
//!
//! # Layout
//!
//! A pending entry ([`Nack`]) lives in the group's PEL, keyed by entry ID, and
//! names its owner; the owner's [`Consumer::pel`] holds the same ID. Both are
//! ordered maps, as Redis's radix trees are ordered, so every range query is
//! O(log n). Consumer names are shared (`Arc<[u8]>`) between the consumer map
//! and the pending entries that point at it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::id::StreamId;

/// The read counter value meaning "unknown".
pub const ENTRIES_READ_INVALID: i64 = -1;

/// A delivered, not yet acknowledged entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    /// Unix milliseconds of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    /// The consumer it was last delivered to.
    pub consumer: Arc<[u8]>,
}

/// A consumer of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// Unix milliseconds of the consumer's last activity.
    pub seen_time: i64,
    pel: BTreeSet<StreamId>,
}

impl Consumer {
    fn new(now_ms: i64) -> Self {
        Consumer { seen_time: now_ms, pel: BTreeSet::new() }
    }

    /// IDs pending for this consumer, in order.
    pub fn pending(&self) -> &BTreeSet<StreamId> {
        &self.pel
    }
}

/// A consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    /// Last ID delivered to the group.
    pub last_id: StreamId,
    /// Logical read counter, or [`ENTRIES_READ_INVALID`].
    pub entries_read: i64,
    pel: BTreeMap<StreamId, Nack>,
    consumers: BTreeMap<Arc<[u8]>, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: i64) -> Self {
        ConsumerGroup { last_id, entries_read, pel: BTreeMap::new(), consumers: BTreeMap::new() }
    }

    /// The group's pending entries, by ID.
    pub fn pel(&self) -> &BTreeMap<StreamId, Nack> {
        &self.pel
    }

    /// The consumers, by name.
    pub fn consumers(&self) -> impl ExactSizeIterator<Item = (&[u8], &Consumer)> {
        self.consumers.iter().map(|(k, v)| (&**k, v))
    }

    pub fn consumer_count(&self) -> usize {
        self.consumers.len()
    }

    /// Looks a consumer up without touching its seen time.
    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }

    /// Looks a consumer up and marks it seen now (Redis's `streamLookupConsumer`).
    pub fn touch_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        match self.consumers.get_mut(name) {
            Some(c) => {
                c.seen_time = now_ms;
                true
            }
            None => false,
        }
    }

    /// Creates a consumer; false if it exists.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(Arc::from(name), Consumer::new(now_ms));
        true
    }

    /// Looks a consumer up, marking it seen, or creates it; true if created.
    pub fn touch_or_create_consumer(&mut self, name: &[u8], now_ms: i64) -> bool {
        !self.touch_consumer(name, now_ms) && self.create_consumer(name, now_ms)
    }

    /// Deletes a consumer and its pending entries; returns how many it had.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pel {
            self.pel.remove(id);
        }
        Some(consumer.pel.len())
    }

    /// The shared name of an existing consumer.
    fn consumer_key(&self, name: &[u8]) -> Arc<[u8]> {
        self.consumers.get_key_value(name).map(|(k, _)| k.clone()).expect("consumer exists")
    }

    /// Records the delivery of `id` to `consumer` (which must exist) by
    /// XREADGROUP: a new pending entry, or one taken over from its owner with
    /// its delivery count reset to 1.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) {
        let name = self.consumer_key(consumer);
        let nack = Nack { delivery_time: now_ms, delivery_count: 1, consumer: name.clone() };
        if let Some(old) = self.pel.insert(id, nack) {
            self.detach(id, &old.consumer);
        }
        self.attach(id, &name);
    }

    /// Counts one more delivery of the pending entry `id`, now.
    pub fn redeliver(&mut self, id: StreamId, now_ms: i64) {
        if let Some(nack) = self.pel.get_mut(&id) {
            nack.delivery_time = now_ms;
            nack.delivery_count = nack.delivery_count.wrapping_add(1);
        }
    }

    /// Acknowledges `id`; false if it was not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(nack) => {
                self.detach(id, &nack.consumer);
                true
            }
            None => false,
        }
    }

    /// Gives the pending entry `id` to `consumer` (which must exist), sets its
    /// delivery time, and bumps or sets its delivery count. With `create` a
    /// missing entry is created first (XCLAIM FORCE). Returns false if `id`
    /// was not pending and not created.
    pub fn transfer(&mut self, id: StreamId, consumer: &[u8], delivery_time: i64, count: CountUpdate) -> bool {
        let name = self.consumer_key(consumer);
        let Some(nack) = self.pel.get_mut(&id) else { return false };
        nack.delivery_time = delivery_time;
        match count {
            CountUpdate::Set(n) => nack.delivery_count = n,
            CountUpdate::Increment => nack.delivery_count = nack.delivery_count.wrapping_add(1),
            CountUpdate::Keep => {}
        }
        if *nack.consumer != *consumer {
            let old = std::mem::replace(&mut nack.consumer, name.clone());
            self.detach(id, &old);
            self.attach(id, &name);
        }
        true
    }

    /// Creates a pending entry owned by `consumer` (which must exist) with
    /// delivery count 1, as Redis's `streamCreateNACK` (XCLAIM FORCE; the
    /// caller then transfers it, which may bump the count).
    pub fn insert_unowned(&mut self, id: StreamId, consumer: &[u8], now_ms: i64) {
        let name = self.consumer_key(consumer);
        self.pel.insert(id, Nack { delivery_time: now_ms, delivery_count: 1, consumer: name.clone() });
        self.attach(id, &name);
    }

    /// Restores a consumer as a snapshot recorded it: created if missing,
    /// its seen time set to `seen_time` either way.
    pub fn restore_consumer(&mut self, name: &[u8], seen_time: i64) {
        self.touch_or_create_consumer(name, seen_time);
    }

    /// Restores a pending entry as a snapshot recorded it, owned by
    /// `consumer` (which must exist), whether or not the stream still holds
    /// the entry (XDEL and XTRIM leave pending entries behind, as in Redis).
    /// An entry already pending, for any consumer, is taken over.
    pub fn restore_pending(&mut self, id: StreamId, consumer: &[u8], delivery_time: i64, delivery_count: u64) {
        if !self.pel.contains_key(&id) {
            self.insert_unowned(id, consumer, delivery_time);
        }
        self.transfer(id, consumer, delivery_time, CountUpdate::Set(delivery_count));
    }

    fn attach(&mut self, id: StreamId, consumer: &[u8]) {
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    fn detach(&mut self, id: StreamId, consumer: &[u8]) {
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.remove(&id);
        }
    }

    /// Consumers with pending entries and how many, by name (XPENDING summary).
    pub fn pending_per_consumer(&self) -> impl Iterator<Item = (&[u8], usize)> {
        self.consumers.iter().filter(|(_, c)| !c.pel.is_empty()).map(|(k, c)| (&**k, c.pel.len()))
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.pel.len() * 64 + self.consumers.iter().map(|(k, c)| k.len() + 64 + c.pel.len() * 24).sum::<usize>()
    }
}

/// How a transfer changes an entry's delivery count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountUpdate {
    Set(u64),
    Increment,
    Keep,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliver_ack_and_transfer_keep_both_pels_in_step() {
        let mut g = ConsumerGroup::new(StreamId::MIN, 0);
        assert!(g.create_consumer(b"alice", 1));
        assert!(!g.create_consumer(b"alice", 1));
        g.create_consumer(b"bob", 1);
        let id = StreamId::new(5, 0);
        g.deliver(id, b"alice", 10);
        assert_eq!(g.consumer(b"alice").map(|c| c.pending().len()), Some(1));
        g.deliver(id, b"bob", 20);
        assert_eq!(g.consumer(b"alice").map(|c| c.pending().len()), Some(0));
        assert_eq!(g.pel()[&id].delivery_count, 1);
        assert!(g.transfer(id, b"alice", 30, CountUpdate::Increment));
        assert_eq!(g.pel()[&id].delivery_count, 2);
        assert_eq!(&*g.pel()[&id].consumer, b"alice");
        assert_eq!(g.pending_per_consumer().collect::<Vec<_>>(), vec![(&b"alice"[..], 1)]);
        assert!(g.ack(id));
        assert!(!g.ack(id));
        assert_eq!(g.consumer(b"alice").map(|c| c.pending().len()), Some(0));
        g.deliver(id, b"bob", 40);
        assert_eq!(g.delete_consumer(b"bob"), Some(1));
        assert!(g.pel().is_empty());
    }

    #[test]
    fn restore_sets_seen_time_and_moves_an_entry_between_consumers() {
        let mut g = ConsumerGroup::new(StreamId::MIN, 0);
        g.restore_consumer(b"alice", 100);
        g.restore_consumer(b"alice", 70);
        assert_eq!(g.consumer(b"alice").map(|c| c.seen_time), Some(70));
        let id = StreamId::new(9, 1);
        g.restore_pending(id, b"alice", 50, 4);
        assert_eq!(g.pel()[&id], Nack { delivery_time: 50, delivery_count: 4, consumer: Arc::from(&b"alice"[..]) });
        g.restore_consumer(b"bob", 80);
        g.restore_pending(id, b"bob", 60, 2);
        assert_eq!(g.consumer(b"alice").map(|c| c.pending().len()), Some(0));
        assert_eq!(g.consumer(b"bob").map(|c| c.pending().len()), Some(1));
        assert_eq!((g.pel()[&id].delivery_time, g.pel()[&id].delivery_count), (60, 2));
        assert_eq!(g.consumer(b"bob").map(|c| c.seen_time), Some(80), "restoring entries leaves the seen time");
    }
}
