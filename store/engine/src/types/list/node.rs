//! One node of a list: its elements packed back to back in one buffer, like
//! a Redis listpack, so that a small list costs one allocation.
//!
//! # Layout
//!
//! Each entry is `[len][bytes][backlen]`:
//! - `len`: the element's length as a LEB128 varint (low 7 bits first, high
//!   bit set on every byte but the last);
//! - `bytes`: the element;
//! - `backlen`: the size of `[len][bytes]`, written so that it reads from its
//!   last byte backwards (the last byte holds the low 7 bits; a set high bit
//!   means more bytes precede). It lets the node walk from the tail.
//!
//! A node knows its entry count; offsets are byte positions in the buffer.

/// Nodes up to this many bytes grow to fit (saving memory in small lists);
/// larger ones double (keeping pushes amortized O(1)).
const EXACT_GROWTH_LIMIT: usize = 512;

/// A node of packed entries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Node {
    buf: Vec<u8>,
    count: u32,
}

/// Bytes a varint of `v` takes.
fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes `v` as a forward varint into `out`; returns its length.
fn write_varint(out: &mut [u8], mut v: usize) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Writes `v` as a backward-readable varint into `out`; returns its length.
fn write_backlen(out: &mut [u8], v: usize) -> usize {
    let k = varint_len(v);
    for i in 0..k {
        let group = (v >> (7 * i)) as u8 & 0x7f;
        out[k - 1 - i] = if i + 1 < k { group | 0x80 } else { group };
    }
    k
}

/// Size in the buffer of an entry holding `len` bytes.
pub fn entry_size(len: usize) -> usize {
    let front = varint_len(len) + len;
    front + varint_len(front)
}

impl Node {
    /// A node holding one element.
    pub fn with(data: &[u8]) -> Node {
        let mut node = Node { buf: Vec::with_capacity(entry_size(data.len())), count: 0 };
        node.push_back(data);
        node
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes used by the entries.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Bytes allocated.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The element starting at `offset` and the offset of the next entry.
    pub fn entry_at(&self, offset: usize) -> (&[u8], usize) {
        let mut len = 0usize;
        let mut shift = 0;
        let mut pos = offset;
        loop {
            let b = self.buf[pos];
            pos += 1;
            len |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let data = &self.buf[pos..pos + len];
        let front = pos + len - offset;
        (data, pos + len + varint_len(front))
    }

    /// The offset of the entry that ends at `end`.
    pub fn entry_before(&self, end: usize) -> usize {
        let mut front = 0usize;
        let mut shift = 0;
        let mut pos = end;
        loop {
            pos -= 1;
            let b = self.buf[pos];
            front |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        pos - front
    }

    /// The byte offset of entry `index` (`len()` gives the end of the buffer),
    /// walking from the nearer end.
    pub fn offset_of(&self, index: usize) -> usize {
        debug_assert!(index <= self.len());
        if index <= self.len() / 2 {
            let mut offset = 0;
            for _ in 0..index {
                offset = self.entry_at(offset).1;
            }
            offset
        } else {
            let mut offset = self.buf.len();
            for _ in index..self.len() {
                offset = self.entry_before(offset);
            }
            offset
        }
    }

    /// The element at `index`.
    pub fn get(&self, index: usize) -> &[u8] {
        self.entry_at(self.offset_of(index)).0
    }

    /// Inserts an element before the entry at byte `offset`.
    fn insert_at_offset(&mut self, offset: usize, data: &[u8]) {
        let mut head = [0u8; 10];
        let mut tail = [0u8; 10];
        let h = write_varint(&mut head, data.len());
        let t = write_backlen(&mut tail, h + data.len());
        let size = h + data.len() + t;
        let old_len = self.buf.len();
        self.grow(size);
        if offset == old_len {
            self.buf.extend_from_slice(&head[..h]);
            self.buf.extend_from_slice(data);
            self.buf.extend_from_slice(&tail[..t]);
        } else {
            self.buf.resize(old_len + size, 0);
            self.buf.copy_within(offset..old_len, offset + size);
            self.buf[offset..offset + h].copy_from_slice(&head[..h]);
            self.buf[offset + h..offset + h + data.len()].copy_from_slice(data);
            self.buf[offset + h + data.len()..offset + size].copy_from_slice(&tail[..t]);
        }
        self.count += 1;
    }

    /// Makes room for `extra` more bytes: exactly (to 16 bytes) while the
    /// node is small, as a listpack's realloc; doubling once it is large.
    fn grow(&mut self, extra: usize) {
        let needed = self.buf.len() + extra;
        if needed <= self.buf.capacity() {
            return;
        }
        let target = if needed <= EXACT_GROWTH_LIMIT {
            needed.next_multiple_of(16)
        } else {
            needed.max(2 * self.buf.capacity())
        };
        self.buf.reserve_exact(target - self.buf.len());
    }

    pub fn push_back(&mut self, data: &[u8]) {
        self.insert_at_offset(self.buf.len(), data);
    }

    pub fn push_front(&mut self, data: &[u8]) {
        self.insert_at_offset(0, data);
    }

    /// Inserts an element so that it becomes entry `index`.
    pub fn insert(&mut self, index: usize, data: &[u8]) {
        let offset = self.offset_of(index);
        self.insert_at_offset(offset, data);
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let (data, next) = self.entry_at(0);
        let value = data.to_vec();
        self.buf.drain(..next);
        self.count -= 1;
        Some(value)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let start = self.entry_before(self.buf.len());
        let value = self.entry_at(start).0.to_vec();
        self.buf.truncate(start);
        self.count -= 1;
        Some(value)
    }

    /// Removes entry `index`.
    pub fn remove(&mut self, index: usize) {
        let offset = self.offset_of(index);
        let next = self.entry_at(offset).1;
        self.buf.drain(offset..next);
        self.count -= 1;
    }

    /// Replaces entry `index` with `data`.
    pub fn replace(&mut self, index: usize, data: &[u8]) {
        self.remove(index);
        self.insert(index, data);
    }

    /// Removes the first `n` entries.
    pub fn remove_front(&mut self, n: usize) {
        let end = self.offset_of(n);
        self.buf.drain(..end);
        self.count -= n as u32;
    }

    /// Removes the last `n` entries.
    pub fn remove_back(&mut self, n: usize) {
        let start = self.offset_of(self.len() - n);
        self.buf.truncate(start);
        self.count -= n as u32;
    }

    /// Moves entries `index..` into a new node.
    pub fn split_off(&mut self, index: usize) -> Node {
        let offset = self.offset_of(index);
        let tail = Node { buf: self.buf.split_off(offset), count: self.count - index as u32 };
        self.count = index as u32;
        self.buf.shrink_to_fit();
        tail
    }

    /// Appends all of `other`'s entries.
    pub fn append(&mut self, other: Node) {
        self.buf.extend_from_slice(&other.buf);
        self.count += other.count;
    }

    /// Removes up to `limit` entries equal to `value`: the first ones, or the
    /// last ones when `from_back`. Returns how many were removed.
    pub fn remove_matches(&mut self, value: &[u8], limit: usize, from_back: bool) -> usize {
        let matches = self.iter().filter(|e| *e == value).count();
        let remove = matches.min(limit);
        if remove == 0 {
            return 0;
        }
        // Matches with ordinal in `skip_from..skip_to` are dropped.
        let (skip_from, skip_to) = if from_back { (matches - remove, matches) } else { (0, remove) };
        let mut kept = Vec::with_capacity(self.buf.len());
        let mut ordinal = 0;
        let mut offset = 0;
        while offset < self.buf.len() {
            let (data, next) = self.entry_at(offset);
            let dropped = data == value && {
                let o = ordinal;
                ordinal += 1;
                o >= skip_from && o < skip_to
            };
            if !dropped {
                kept.extend_from_slice(&self.buf[offset..next]);
            }
            offset = next;
        }
        self.buf = kept;
        self.count -= remove as u32;
        remove
    }

    /// Entries front to back.
    pub fn iter(&self) -> NodeIter<'_> {
        NodeIter { node: self, front: 0, back: self.buf.len() }
    }

    /// Entries between byte offsets (used by the list iterator).
    pub fn iter_between(&self, front: usize, back: usize) -> NodeIter<'_> {
        NodeIter { node: self, front, back }
    }
}

/// A double-ended iterator over a node's entries between two offsets.
#[derive(Debug, Clone)]
pub struct NodeIter<'a> {
    node: &'a Node,
    front: usize,
    back: usize,
}

impl<'a> Iterator for NodeIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (data, next) = self.node.entry_at(self.front);
        self.front = next;
        Some(data)
    }
}

impl DoubleEndedIterator for NodeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back = self.node.entry_before(self.back);
        Some(self.node.entry_at(self.back).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: &Node) -> Vec<Vec<u8>> {
        n.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn push_pop_both_ends_with_long_entries() {
        let long = vec![b'x'; 20_000];
        let mut n = Node::with(b"b");
        n.push_front(b"a");
        n.push_back(&long);
        n.push_back(b"");
        assert_eq!(n.len(), 4);
        assert_eq!(items(&n), vec![b"a".to_vec(), b"b".to_vec(), long.clone(), vec![]]);
        let rev: Vec<_> = n.iter().rev().map(<[u8]>::to_vec).collect();
        assert_eq!(rev, vec![vec![], long.clone(), b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(n.pop_back(), Some(vec![]));
        assert_eq!(n.pop_back(), Some(long));
        assert_eq!(n.pop_front(), Some(b"a".to_vec()));
        assert_eq!(n.get(0), b"b");
        assert_eq!(n.pop_front(), Some(b"b".to_vec()));
        assert!(n.is_empty() && n.bytes() == 0);
        assert_eq!(n.pop_front(), None);
    }

    #[test]
    fn entry_sizes_match_the_buffer() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            let data = vec![7u8; len];
            let n = Node::with(&data);
            assert_eq!(n.bytes(), entry_size(len), "len {len}");
            assert_eq!(n.get(0), &data[..]);
            assert_eq!(n.entry_before(n.bytes()), 0);
        }
    }

    #[test]
    fn middle_edits() {
        let mut n = Node::default();
        for i in 0..10u8 {
            n.push_back(&[b'0' + i]);
        }
        n.insert(3, b"x");
        n.replace(0, b"first");
        n.remove(9);
        assert_eq!(n.get(3), b"x");
        assert_eq!(n.get(0), b"first");
        let tail = n.split_off(5);
        assert_eq!(n.len(), 5);
        assert_eq!(tail.get(0), b"4");
        n.append(tail);
        assert_eq!(n.len(), 10);
        n.remove_front(2);
        n.remove_back(2);
        assert_eq!(
            items(&n),
            vec![b"2".to_vec(), b"x".to_vec(), b"3".to_vec(), b"4".to_vec(), b"5".to_vec(), b"6".to_vec()]
        );
    }

    #[test]
    fn remove_matches_from_either_end() {
        let mut n = Node::default();
        for e in ["a", "b", "a", "c", "a"] {
            n.push_back(e.as_bytes());
        }
        let mut m = n.clone();
        assert_eq!(n.remove_matches(b"a", 2, false), 2);
        assert_eq!(items(&n), vec![b"b".to_vec(), b"c".to_vec(), b"a".to_vec()]);
        assert_eq!(m.remove_matches(b"a", 1, true), 1);
        assert_eq!(items(&m), vec![b"a".to_vec(), b"b".to_vec(), b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(m.remove_matches(b"zz", usize::MAX, false), 0);
    }
}
