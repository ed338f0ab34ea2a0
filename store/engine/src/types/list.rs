//! The List type: a deque of packed nodes, as Redis's quicklist.
//!
//! # Layout
//!
//! - [`List`]: a `VecDeque` of [`Node`]s and the total length. A small list
//!   is one node, so one allocation for its elements; pushes and pops at
//!   either end are O(1); reaching index `i` walks nodes from the nearer end
//!   (O(n / node size)) and then inside one node, as Redis does.
//! - [`node`]: one node, entries packed back to back (a listpack).
//! - [`Iter`]: a double-ended iterator over a range of elements.
//!
//! Node sizes follow `list-max-listpack-size` ([`LIMITS`]): a positive value
//! caps entries per node (and bytes at 8 KiB), a negative one caps bytes
//! (-1: 4 KiB ... -5: 64 KiB). An element larger than the cap gets its own
//! node. Redis 7.0 always reports `quicklist` for lists, whatever their size.

pub mod node;

use std::collections::VecDeque;
use std::hash::Hasher;

pub use node::Node;

use crate::types::encoding::LIMITS;

/// Byte cap of a node when `list-max-listpack-size` counts entries.
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Byte caps for `list-max-listpack-size` -1 .. -5.
const SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// Whether a node with `count` entries and `bytes` bytes is within the limits.
fn node_within_limits(count: usize, bytes: usize) -> bool {
    let fill = LIMITS.list_max_listpack_size.get();
    if fill < 0 {
        let class = ((-fill - 1) as usize).min(SIZE_CLASSES.len() - 1);
        bytes <= SIZE_CLASSES[class]
    } else {
        count <= fill.max(1) as usize && bytes <= SIZE_SAFETY_LIMIT
    }
}

/// Whether `node` may take one more element of `len` bytes.
fn node_accepts(node: &Node, len: usize) -> bool {
    node.is_empty() || node_within_limits(node.len() + 1, node.bytes() + node::entry_size(len))
}

/// A list value.
#[derive(Debug, Clone, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl List {
    pub fn new() -> List {
        List { nodes: VecDeque::with_capacity(1), len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What OBJECT ENCODING reports: Redis 7.0 lists are always quicklists.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.nodes.iter().map(Node::capacity).sum::<usize>()
    }

    /// Feeds the contents to a digest (DEBUG DIGEST), in order.
    pub fn digest(&self, h: &mut dyn Hasher) {
        h.write_usize(self.len);
        for e in self.iter() {
            h.write_usize(e.len());
            h.write(e);
        }
    }

    /// The nodes, front to back (the RDB codec writes one listpack per node).
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    /// Number of nodes (for tests and DEBUG).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn push_back(&mut self, data: &[u8]) {
        match self.nodes.back_mut() {
            Some(node) if node_accepts(node, data.len()) => node.push_back(data),
            _ => self.nodes.push_back(Node::with(data)),
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, data: &[u8]) {
        match self.nodes.front_mut() {
            Some(node) if node_accepts(node, data.len()) => node.push_front(data),
            _ => self.nodes.push_front(Node::with(data)),
        }
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let node = self.nodes.front_mut()?;
        let value = node.pop_front()?;
        if node.is_empty() {
            self.nodes.pop_front();
        }
        self.len -= 1;
        Some(value)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let node = self.nodes.back_mut()?;
        let value = node.pop_back()?;
        if node.is_empty() {
            self.nodes.pop_back();
        }
        self.len -= 1;
        Some(value)
    }

    /// The node holding element `index` (< len) and the index inside it,
    /// found by walking from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut rest = index;
            for (i, node) in self.nodes.iter().enumerate() {
                if rest < node.len() {
                    return (i, rest);
                }
                rest -= node.len();
            }
        } else {
            let mut after = self.len - index; // elements from `index` to the end
            for (i, node) in self.nodes.iter().enumerate().rev() {
                if after <= node.len() {
                    return (i, node.len() - after);
                }
                after -= node.len();
            }
        }
        unreachable!("index {index} below length {}", self.len)
    }

    /// Element `index`, counted from the head.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (n, i) = self.locate(index);
        Some(self.nodes[n].get(i))
    }

    /// Replaces element `index`; false if out of range.
    pub fn set(&mut self, index: usize, data: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (n, i) = self.locate(index);
        self.nodes[n].replace(i, data);
        self.split_if_oversized(n);
        true
    }

    /// Inserts `data` so that it becomes element `index` (`index == len`
    /// appends).
    pub fn insert(&mut self, index: usize, data: &[u8]) {
        if index >= self.len {
            return self.push_back(data);
        }
        if index == 0 {
            return self.push_front(data);
        }
        let (n, i) = self.locate(index);
        if i == 0 && node_accepts(&self.nodes[n - 1], data.len()) {
            self.nodes[n - 1].push_back(data);
        } else {
            self.nodes[n].insert(i, data);
            self.split_if_oversized(n);
        }
        self.len += 1;
    }

    /// Splits node `n` in halves while it holds more than one entry and is
    /// over the limits.
    fn split_if_oversized(&mut self, n: usize) {
        let node = &self.nodes[n];
        if node.len() < 2 || node_within_limits(node.len(), node.bytes()) {
            return;
        }
        let half = node.len() / 2;
        let tail = self.nodes[n].split_off(half);
        self.nodes.insert(n + 1, tail);
        self.split_if_oversized(n + 1);
        self.split_if_oversized(n);
    }

    /// Merges neighbouring nodes that fit together, and drops empty ones.
    fn compact(&mut self) {
        self.nodes.retain(|n| !n.is_empty());
        let mut i = 0;
        while i + 1 < self.nodes.len() {
            let (a, b) = (&self.nodes[i], &self.nodes[i + 1]);
            if node_within_limits(a.len() + b.len(), a.bytes() + b.bytes()) {
                if let Some(next) = self.nodes.remove(i + 1) {
                    self.nodes[i].append(next);
                }
            } else {
                i += 1;
            }
        }
    }

    /// Removes the first `n` elements.
    pub fn remove_front(&mut self, mut n: usize) {
        n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let Some(front) = self.nodes.front_mut() else { break };
            if front.len() <= n {
                n -= front.len();
                self.nodes.pop_front();
            } else {
                front.remove_front(n);
                n = 0;
            }
        }
    }

    /// Removes the last `n` elements.
    pub fn remove_back(&mut self, mut n: usize) {
        n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let Some(back) = self.nodes.back_mut() else { break };
            if back.len() <= n {
                n -= back.len();
                self.nodes.pop_back();
            } else {
                back.remove_back(n);
                n = 0;
            }
        }
    }

    /// Removes elements equal to `value`: up to `count` from the head when
    /// positive, up to `-count` from the tail when negative, all when 0
    /// (LREM). Returns how many were removed.
    pub fn remove_matching(&mut self, value: &[u8], count: i64) -> usize {
        let from_back = count < 0;
        let mut limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
        let mut removed = 0;
        let order: Vec<usize> =
            if from_back { (0..self.nodes.len()).rev().collect() } else { (0..self.nodes.len()).collect() };
        for n in order {
            if limit == 0 {
                break;
            }
            let r = self.nodes[n].remove_matches(value, limit, from_back);
            removed += r;
            limit -= r;
        }
        if removed > 0 {
            self.len -= removed;
            self.compact();
        }
        removed
    }

    /// Index of the first element equal to `value`.
    pub fn position(&self, value: &[u8]) -> Option<usize> {
        self.iter().position(|e| e == value)
    }

    /// All elements, head to tail.
    pub fn iter(&self) -> Iter<'_> {
        match self.len {
            0 => Iter { nodes: &self.nodes, front: (0, 0), back: (0, 0), remaining: 0 },
            len => self.range(0, len - 1),
        }
    }

    /// Elements `start..=end` (both < len, start <= end).
    pub fn range(&self, start: usize, end: usize) -> Iter<'_> {
        debug_assert!(start <= end && end < self.len);
        let (fs, fi) = self.locate(start);
        let (bs, bi) = self.locate(end);
        Iter {
            nodes: &self.nodes,
            front: (fs, self.nodes[fs].offset_of(fi)),
            back: (bs, self.nodes[bs].offset_of(bi + 1)),
            remaining: end - start + 1,
        }
    }
}

impl<'a> FromIterator<&'a [u8]> for List {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> List {
        let mut list = List::new();
        for e in iter {
            list.push_back(e);
        }
        list
    }
}

/// A double-ended iterator over a range of a list. The front cursor is the
/// offset of the next entry; the back cursor the end offset of the last one.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    nodes: &'a VecDeque<Node>,
    front: (usize, usize),
    back: (usize, usize),
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            let node = &self.nodes[self.front.0];
            if self.front.1 < node.bytes() {
                let (data, next) = node.entry_at(self.front.1);
                self.front.1 = next;
                self.remaining -= 1;
                return Some(data);
            }
            self.front = (self.front.0 + 1, 0);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            let node = &self.nodes[self.back.0];
            if self.back.1 > 0 {
                self.back.1 = node.entry_before(self.back.1);
                self.remaining -= 1;
                return Some(node.entry_at(self.back.1).0);
            }
            self.back.0 -= 1;
            self.back.1 = self.nodes[self.back.0].bytes();
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_eq(list: &List, model: &VecDeque<Vec<u8>>) {
        assert_eq!(list.len(), model.len());
        let got: Vec<&[u8]> = list.iter().collect();
        let want: Vec<&[u8]> = model.iter().map(Vec::as_slice).collect();
        assert_eq!(got, want);
        let got_rev: Vec<&[u8]> = list.iter().rev().collect();
        assert_eq!(got_rev, want.into_iter().rev().collect::<Vec<_>>());
    }

    /// A tiny deterministic generator, so the test needs no crate.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, bound: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % bound
        }
    }

    #[test]
    fn random_operations_match_a_model() {
        let mut rng = Lcg(7);
        let mut list = List::new();
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        for step in 0..20_000 {
            let len = if rng.next(50) == 0 { 3000 } else { rng.next(12) as usize };
            let value = vec![b'a' + rng.next(3) as u8; len];
            match rng.next(10) {
                0 | 1 => {
                    list.push_back(&value);
                    model.push_back(value);
                }
                2 | 3 => {
                    list.push_front(&value);
                    model.push_front(value);
                }
                4 => assert_eq!(list.pop_front(), model.pop_front()),
                5 => assert_eq!(list.pop_back(), model.pop_back()),
                6 if !model.is_empty() => {
                    let i = rng.next(model.len() as u64) as usize;
                    assert!(list.set(i, &value));
                    model[i] = value;
                }
                7 => {
                    let i = rng.next(model.len() as u64 + 1) as usize;
                    list.insert(i, &value);
                    model.insert(i, value);
                }
                8 => {
                    let count = rng.next(5) as i64 - 2;
                    let removed = list.remove_matching(&value, count);
                    let mut expect = 0;
                    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                    if count >= 0 {
                        let mut i = 0;
                        while i < model.len() && expect < limit {
                            if model[i] == value {
                                model.remove(i);
                                expect += 1;
                            } else {
                                i += 1;
                            }
                        }
                    } else {
                        let mut i = model.len();
                        while i > 0 && expect < limit {
                            i -= 1;
                            if model[i] == value {
                                model.remove(i);
                                expect += 1;
                            }
                        }
                    }
                    assert_eq!(removed, expect);
                }
                _ if !model.is_empty() => {
                    let n = rng.next(3) as usize;
                    list.remove_front(n);
                    list.remove_back(n);
                    for _ in 0..n {
                        model.pop_front();
                        model.pop_back();
                    }
                }
                _ => {}
            }
            if step % 500 == 0 {
                model_eq(&list, &model);
            }
        }
        model_eq(&list, &model);
        for (i, want) in model.iter().enumerate() {
            assert_eq!(list.get(i), Some(want.as_slice()));
        }
    }

    #[test]
    fn ranges() {
        let owned: Vec<Vec<u8>> = (0..3000).map(|i: i32| i.to_string().into_bytes()).collect();
        let list: List = owned.iter().map(Vec::as_slice).collect();
        assert!(list.node_count() > 1);
        let mid: Vec<&[u8]> = list.range(498, 501).collect();
        assert_eq!(mid, vec![&b"498"[..], b"499", b"500", b"501"]);
        let rev: Vec<&[u8]> = list.range(2997, 2999).rev().collect();
        assert_eq!(rev, vec![&b"2999"[..], b"2998", b"2997"]);
        assert_eq!(list.position(b"777"), Some(777));
        assert_eq!(list.get(3000), None);
    }

    #[test]
    fn equality_ignores_node_layout() {
        let mut a = List::new();
        let mut b = List::new();
        for i in 0..300u32 {
            a.push_back(&i.to_be_bytes());
            b.push_back(&i.to_be_bytes());
        }
        b.set(5, &[0; 5000]);
        b.set(5, &5u32.to_be_bytes());
        assert_eq!(a, b);
        assert_eq!(a.encoding(), "quicklist");
    }
}
