//! The Stream type: an append-only log of entries (ID → field/value pairs)
//! with consumer groups, as Redis 7.0 implements it.
//!
//! # Layout
//!
//! - [`id`]: [`StreamId`] and the parsing of ID arguments.
//! - [`node`]: a node, the equivalent of one listpack of Redis's radix tree:
//!   a run of consecutive entries, tombstones included, with the byte size
//!   Redis's listpack would have ([`lpsize`]), so nodes split where Redis's
//!   do and approximate trimming (`~`) removes what Redis removes.
//! - this file: [`Stream`], an ordered map from each node's first ID to the
//!   node, plus the counters Redis keeps (length, last ID, first live ID,
//!   largest deleted ID, entries ever added) and the consumer groups by name.
//! - [`iter`]: range walks over entries, forward or backward.
//! - [`trim`]: MAXLEN / MINID trimming, exact or approximate.
//! - [`group`]: consumer groups, consumers and pending entries (PELs).
//! - [`consume`]: group reads, claims and history reads, which touch both
//!   entries and groups.
//! - [`lag`]: read counters and lag.
//! - [`parts`]: a stream's nodes and counters as parts, for the RDB codec.
//! - [`rax`]: the node count of Redis's radix tree, for XINFO.
//!
//! Entry lookups and range starts are O(log n); appends are amortized O(1).

mod consume;
mod group;
mod id;
mod iter;
mod lag;
mod lpsize;
mod node;
mod parts;
mod rax;
mod trim;

use std::collections::BTreeMap;
use std::hash::Hasher;

pub use consume::{AutoClaim, ClaimOptions};
pub use group::{Consumer, ConsumerGroup, CountUpdate, Nack, ENTRIES_READ_INVALID};
pub use id::{parse_id, parse_u64_like_redis, ParseRules, SeqSpec, StreamId};
pub use iter::{Range, StreamEntry};
pub use trim::{TrimSpec, TrimStrategy};

use node::Node;
/// A node, for the RDB codec (`crate::rdb`), which reads and writes them.
pub(crate) use node::Node as StreamNode;

/// Largest listpack (and largest entry) Redis accepts: 1 GiB.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// The counters Redis keeps for a stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Live entries.
    pub length: u64,
    /// Largest ID ever added (or set by XSETID).
    pub last_id: StreamId,
    /// First live entry, 0-0 if empty.
    pub first_id: StreamId,
    /// Largest ID ever deleted by XDEL (or set by XSETID).
    pub max_deleted_entry_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
}

/// A stream value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    meta: Meta,
    groups: BTreeMap<Box<[u8]>, ConsumerGroup>,
}

/// How XADD chooses the new entry's ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewId {
    /// `*`: the current time, or the last ID's successor.
    Auto { now_ms: u64 },
    /// `<ms>-*`: the given time with the next free sequence.
    AutoSeq { ms: u64 },
    /// `<ms>-<seq>`.
    Explicit(StreamId),
}

/// Why an append failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The ID is not greater than the stream's last ID.
    IdTooSmall,
    /// `<ms>-*` with the last ID at `<ms>-18446744073709551615`.
    SeqExhausted,
    /// The fields and values exceed [`LISTPACK_MAX_SIZE`].
    TooLarge,
}

/// Node size limits (`stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    /// 0: [`LISTPACK_MAX_SIZE`].
    pub max_bytes: usize,
    /// 0: no limit.
    pub max_entries: u64,
}

impl NodeLimits {
    /// The limits currently configured.
    pub fn current() -> NodeLimits {
        let limits = &crate::types::encoding::LIMITS;
        NodeLimits {
            max_bytes: usize::try_from(limits.stream_node_max_bytes.get()).unwrap_or(0),
            max_entries: u64::try_from(limits.stream_node_max_entries.get()).unwrap_or(0),
        }
    }
}

/// Why XSETID refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetIdError {
    /// The ID is below the last live entry.
    BelowTopItem,
    /// ENTRIESADDED is below the stream's length.
    EntriesAddedBelowLength,
}

impl Stream {
    pub fn new() -> Self {
        Stream::default()
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.meta.length as usize
    }

    pub fn is_empty(&self) -> bool {
        self.meta.length == 0
    }

    /// What OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        let nodes: usize = self.nodes.values().map(|n| n.heap_bytes() + 48).sum();
        let groups: usize = self.groups.iter().map(|(k, g)| k.len() + 64 + g.heap_bytes()).sum();
        nodes + groups
    }

    /// Feeds the live entries to a digest, as Redis's DEBUG DIGEST does
    /// (consumer groups are not part of it).
    pub fn digest(&self, h: &mut dyn Hasher) {
        for entry in self.range(StreamId::MIN, StreamId::MAX, false) {
            h.write(format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes());
            for (field, value) in entry.fields() {
                h.write(field);
                h.write(value);
            }
        }
    }

    /// The counters.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    pub fn last_id(&self) -> StreamId {
        self.meta.last_id
    }

    /// Number of nodes (XINFO's `radix-tree-keys`).
    pub fn radix_tree_keys(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes of Redis's radix tree over the node keys (XINFO's `radix-tree-nodes`).
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<StreamId> = self.nodes.keys().copied().collect();
        rax::node_count(&keys)
    }

    /// Live entries with `start <= id <= end`, in order (`rev`: reversed).
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool) -> Range<'_> {
        Range::new(&self.nodes, start, end, rev, false)
    }

    /// Like [`Stream::range`], tombstones included.
    pub fn range_with_tombstones(&self, start: StreamId, end: StreamId, rev: bool) -> Range<'_> {
        Range::new(&self.nodes, start, end, rev, true)
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<StreamEntry<'_>> {
        let (_, node) = self.nodes.range(..=id).next_back()?;
        node.find_live(id).map(|slot| StreamEntry::new(node, slot))
    }

    pub fn contains(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The last live entry's ID (Redis's `streamLastValidID`).
    pub fn last_valid_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, true).next().map(|e| e.id)
    }

    fn first_valid_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, false).next().map(|e| e.id)
    }

    /// XADD: appends an entry of `pairs` (field, value, ...) with the
    /// configured node limits; returns its ID.
    pub fn append(&mut self, new_id: NewId, pairs: &[&[u8]]) -> Result<StreamId, AppendError> {
        self.append_with(new_id, pairs, NodeLimits::current())
    }

    /// XADD with explicit node limits.
    pub fn append_with(&mut self, new_id: NewId, pairs: &[&[u8]], limits: NodeLimits) -> Result<StreamId, AppendError> {
        let last = self.meta.last_id;
        let id = match new_id {
            NewId::Explicit(id) => id,
            NewId::AutoSeq { ms } if ms == last.ms => {
                StreamId::new(ms, last.seq.checked_add(1).ok_or(AppendError::SeqExhausted)?)
            }
            NewId::AutoSeq { ms } => StreamId::new(ms, 0),
            NewId::Auto { now_ms } if now_ms > last.ms => StreamId::new(now_ms, 0),
            NewId::Auto { .. } => last.next().unwrap_or(StreamId::MIN),
        };
        if id <= last {
            return Err(AppendError::IdTooSmall);
        }
        let total_len: usize = pairs.iter().map(|p| p.len()).sum();
        if total_len > LISTPACK_MAX_SIZE {
            return Err(AppendError::TooLarge);
        }
        let max_bytes = match limits.max_bytes {
            0 => LISTPACK_MAX_SIZE,
            n => n.min(LISTPACK_MAX_SIZE),
        };
        let appended = match self.nodes.last_entry() {
            Some(mut tail) => {
                let node = tail.get_mut();
                let full = node.lp_bytes() + total_len >= max_bytes
                    || (limits.max_entries != 0 && node.total() >= limits.max_entries);
                if !full {
                    node.append(id, pairs);
                }
                !full
            }
            None => false,
        };
        if !appended {
            self.nodes.insert(id, Node::new(id, pairs));
        }
        self.meta.length += 1;
        self.meta.entries_added += 1;
        self.meta.last_id = id;
        if self.meta.length == 1 {
            self.meta.first_id = id;
        }
        Ok(id)
    }

    /// Deletes the live entry `id`; false if there is none. A node whose
    /// last live entry goes is removed, tombstones and all.
    fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, node)) = self.nodes.range_mut(..=id).next_back() else { return false };
        let Some(slot) = node.find_live(id) else { return false };
        if node.live() == 1 {
            self.nodes.remove(&key);
        } else {
            node.mark_deleted(slot);
        }
        self.meta.length -= 1;
        true
    }

    /// XDEL: deletes the given entries; returns how many existed.
    pub fn delete_entries(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_deleted = false;
        for &id in ids {
            if self.delete(id) {
                first_deleted |= id == self.meta.first_id;
                self.meta.max_deleted_entry_id = self.meta.max_deleted_entry_id.max(id);
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.meta.length == 0 {
                self.meta.first_id = StreamId::MIN;
            } else if first_deleted {
                self.meta.first_id = self.first_valid_id().unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// XTRIM (and XADD's trimming): returns how many entries went.
    pub fn trim(&mut self, spec: &TrimSpec) -> u64 {
        let deleted = trim::trim(&mut self.nodes, &mut self.meta.length, spec);
        if self.meta.length == 0 {
            self.meta.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.meta.first_id = self.first_valid_id().unwrap_or(StreamId::MAX);
        }
        deleted
    }

    /// XSETID: sets the last ID and optionally the added-entries counter and
    /// the largest deleted ID (0-0 leaves it alone).
    pub fn set_id(
        &mut self,
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: StreamId,
    ) -> Result<(), SetIdError> {
        if self.meta.length > 0 {
            if self.last_valid_id().is_some_and(|top| id < top) {
                return Err(SetIdError::BelowTopItem);
            }
            if entries_added.is_some_and(|added| self.meta.length > added) {
                return Err(SetIdError::EntriesAddedBelowLength);
            }
        }
        self.meta.last_id = id;
        if let Some(added) = entries_added {
            self.meta.entries_added = added;
        }
        if !max_deleted.is_zero() {
            self.meta.max_deleted_entry_id = max_deleted;
        }
        Ok(())
    }

    /// The consumer groups, by name.
    pub fn groups(&self) -> impl ExactSizeIterator<Item = (&[u8], &ConsumerGroup)> {
        self.groups.iter().map(|(k, v)| (&**k, v))
    }

    pub fn group(&self, name: &[u8]) -> Option<&ConsumerGroup> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut ConsumerGroup> {
        self.groups.get_mut(name)
    }

    /// XGROUP CREATE; false if the group exists.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups.insert(Box::from(name), ConsumerGroup::new(last_id, entries_read));
        true
    }

    /// XGROUP DESTROY; false if there was no such group.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }
}

#[cfg(test)]
mod tests;
