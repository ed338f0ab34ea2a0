//! One stream node: what Redis keeps in one listpack of the stream's radix
//! tree. A node holds up to `stream-node-max-entries` entries (live or
//! deleted) and about `stream-node-max-bytes` bytes; its key is the ID of the
//! first entry ever appended to it (the "master ID").
//!
//! # Layout
//!
//! - `master`: the field names of the node's first entry. Later entries with
//!   exactly these names store only their values (Redis's SAMEFIELDS flag).
//! - `slots`: one per entry, in ID order: the ID, the entry's flags and the
//!   offset of its encoded fields in `data`. Deleting an entry only sets its
//!   flag (Redis keeps tombstones until the whole node is empty).
//! - `data`: every entry's fields, appended one after the other: for a
//!   SAMEFIELDS entry the values, otherwise a field count then field/value
//!   pairs; each string is a LEB128 length followed by its bytes.
//! - `lp_body`: the size in bytes of the listpack Redis would hold, minus the
//!   two counters of the master entry (whose size depends on their values).

use super::id::StreamId;
use super::lpsize::{int_size, str_size, LISTPACK_OVERHEAD};

/// Entry flag: deleted (a tombstone).
const FLAG_DELETED: u8 = 1;
/// Entry flag: the field names are the master entry's.
const FLAG_SAMEFIELDS: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    id: StreamId,
    offset: u32,
    flags: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    master_id: StreamId,
    master: Vec<Box<[u8]>>,
    slots: Vec<Slot>,
    data: Vec<u8>,
    live: u64,
    deleted: u64,
    lp_body: usize,
}

impl Node {
    /// A node whose first entry is `id` with `pairs` (field, value, ...).
    pub fn new(id: StreamId, pairs: &[&[u8]]) -> Node {
        let master: Vec<Box<[u8]>> = pairs.iter().step_by(2).map(|f| Box::from(*f)).collect();
        let lp_body = int_size(master.len() as i64) + master.iter().map(|f| str_size(f)).sum::<usize>() + int_size(0);
        let mut node =
            Node { master_id: id, master, slots: Vec::new(), data: Vec::new(), live: 0, deleted: 0, lp_body };
        node.append(id, pairs);
        node
    }

    /// Appends an entry whose ID is greater than every ID in the node.
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]]) {
        debug_assert!(self.slots.last().is_none_or(|s| s.id < id));
        let same = self.master.len() * 2 == pairs.len()
            && self.master.iter().zip(pairs.iter().step_by(2)).all(|(m, f)| **m == **f);
        let offset = u32::try_from(self.data.len()).expect("stream node data exceeds 4 GiB");
        let numfields = pairs.len() / 2;
        let mut elements = 3; // flags, ms delta, seq delta
        self.lp_body += int_size(0) // flags (every flag value takes one byte)
            + int_size(id.ms.wrapping_sub(self.master_id.ms) as i64)
            + int_size(id.seq.wrapping_sub(self.master_id.seq) as i64);
        if same {
            for value in pairs.iter().skip(1).step_by(2) {
                self.push_bytes(value);
                self.lp_body += str_size(value);
            }
            elements += numfields;
        } else {
            push_varint(&mut self.data, numfields as u64);
            self.lp_body += int_size(numfields as i64);
            for item in pairs {
                self.push_bytes(item);
                self.lp_body += str_size(item);
            }
            elements += 1 + 2 * numfields;
        }
        self.lp_body += int_size(elements as i64); // lp-count
        let flags = if same { FLAG_SAMEFIELDS } else { 0 };
        self.slots.push(Slot { id, offset, flags });
        self.live += 1;
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        push_varint(&mut self.data, bytes.len() as u64);
        self.data.extend_from_slice(bytes);
    }

    /// Bytes of the listpack Redis would hold for this node.
    pub fn lp_bytes(&self) -> usize {
        LISTPACK_OVERHEAD + int_size(self.live as i64) + int_size(self.deleted as i64) + self.lp_body
    }

    /// Live entries.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Live and deleted entries.
    pub fn total(&self) -> u64 {
        self.live + self.deleted
    }

    /// Number of slots (live or deleted entries).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn id_at(&self, slot: usize) -> StreamId {
        self.slots[slot].id
    }

    pub fn is_deleted(&self, slot: usize) -> bool {
        self.slots[slot].flags & FLAG_DELETED != 0
    }

    /// The ID of the last entry, deleted or not.
    pub fn last_id(&self) -> StreamId {
        self.slots.last().map_or(self.master_id, |s| s.id)
    }

    /// Index of the first slot whose ID is `>= id`.
    pub fn lower_bound(&self, id: StreamId) -> usize {
        self.slots.partition_point(|s| s.id < id)
    }

    /// Index of the first slot whose ID is `> id`.
    pub fn upper_bound(&self, id: StreamId) -> usize {
        self.slots.partition_point(|s| s.id <= id)
    }

    /// The slot of the live entry `id`, if any.
    pub fn find_live(&self, id: StreamId) -> Option<usize> {
        let slot = self.slots.binary_search_by(|s| s.id.cmp(&id)).ok()?;
        (!self.is_deleted(slot)).then_some(slot)
    }

    /// Marks a live entry as deleted.
    pub fn mark_deleted(&mut self, slot: usize) {
        debug_assert!(!self.is_deleted(slot));
        self.slots[slot].flags |= FLAG_DELETED;
        self.live -= 1;
        self.deleted += 1;
    }

    /// The ID the node is keyed by (its first entry's, deleted or not).
    pub fn master_id(&self) -> StreamId {
        self.master_id
    }

    /// The field names of the node's master entry.
    pub fn master_fields(&self) -> &[Box<[u8]>] {
        &self.master
    }

    /// Whether an entry stores only values, its field names being the
    /// master entry's (Redis's SAMEFIELDS flag).
    pub fn has_master_fields(&self, slot: usize) -> bool {
        self.slots[slot].flags & FLAG_SAMEFIELDS != 0
    }

    /// Number of field/value pairs of an entry.
    pub fn num_fields(&self, slot: usize) -> usize {
        let s = self.slots[slot];
        if s.flags & FLAG_SAMEFIELDS != 0 {
            self.master.len()
        } else {
            read_varint(&self.data, &mut (s.offset as usize)) as usize
        }
    }

    /// The field/value pairs of an entry.
    pub fn fields(&self, slot: usize) -> Fields<'_> {
        let s = self.slots[slot];
        let mut pos = s.offset as usize;
        let same = s.flags & FLAG_SAMEFIELDS != 0;
        let remaining = if same { self.master.len() } else { read_varint(&self.data, &mut pos) as usize };
        Fields { node: self, pos, remaining, master_index: same.then_some(0) }
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.master.iter().map(|f| f.len() + 16).sum::<usize>()
    }
}

/// The field/value pairs of one entry.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    node: &'a Node,
    pos: usize,
    remaining: usize,
    /// Next master field for a SAMEFIELDS entry.
    master_index: Option<usize>,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let data = &self.node.data;
        let field: &'a [u8] = match self.master_index.as_mut() {
            Some(i) => {
                *i += 1;
                &self.node.master[*i - 1]
            }
            None => read_bytes(data, &mut self.pos),
        };
        Some((field, read_bytes(data, &mut self.pos)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Fields<'_> {}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(data: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = data[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

fn read_bytes<'a>(data: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let len = read_varint(data, pos) as usize;
    let bytes = &data[*pos..*pos + len];
    *pos += len;
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(node: &Node, slot: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        node.fields(slot).map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn same_and_different_fields() {
        let mut node = Node::new(StreamId::new(10, 0), &[b"a", b"1", b"b", b"2"]);
        node.append(StreamId::new(11, 0), &[b"a", b"3", b"b", b"4"]);
        node.append(StreamId::new(12, 5), &[b"c", &[b'x'; 300]]);
        assert_eq!(collect(&node, 1), vec![(b"a".to_vec(), b"3".to_vec()), (b"b".to_vec(), b"4".to_vec())]);
        assert_eq!(node.num_fields(2), 1);
        assert_eq!(collect(&node, 2)[0].1.len(), 300);
        assert_eq!(node.find_live(StreamId::new(12, 5)), Some(2));
        node.mark_deleted(1);
        assert_eq!(node.find_live(StreamId::new(11, 0)), None);
        assert_eq!((node.live(), node.total()), (2, 3));
        assert_eq!(node.last_id(), StreamId::new(12, 5));
    }

    #[test]
    fn listpack_size_matches_redis() {
        // XADD s 1-1 item 1 → a listpack of 30 bytes in Redis 7.0
        // (master: 1,0,1,"item",0; entry: flags,0,0,"1",lp-count).
        let node = Node::new(StreamId::new(1, 1), &[b"item", b"1"]);
        assert_eq!(node.lp_bytes(), 7 + 2 + 2 + 2 + 6 + 2 + 2 + 2 + 2 + 2 + 2);
    }
}
