//! The large sorted-set encoding: Redis's skiplist with spans (O(log n) rank
//! and rank lookup) and its member index, in one arena.
//!
//! # Layout
//!
//! - `nodes` is an arena addressed by `u32` slots; slot 0 is the header, whose
//!   `levels` has [`MAX_LEVEL`] entries. A node keeps its slot for its whole
//!   life, even when its score changes (it is unlinked and relinked in place),
//!   so a slot number is a stable cursor for ZSCAN. Freed slots (empty
//!   `levels`) go to `free` and are reused.
//! - Each level link stores `forward` (next slot at that level, or [`NIL`])
//!   and `span` (how many nodes it jumps over), so a descent from the header
//!   counts ranks as it goes, exactly like Redis's `zskiplist`.
//! - `backward` links level 0 in reverse, for reverse iteration.
//! - `index` is a hash table of slots keyed by the slot's member (Redis's
//!   `dict`), so a member's score and node are found in O(1); the member
//!   bytes are stored once, in the node.
//!
//! Order is by score, then by member bytes (`memcmp`), as in Redis.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// Highest node level (Redis's `ZSKIPLIST_MAXLEVEL`).
pub const MAX_LEVEL: usize = 32;
/// No node.
pub const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

#[derive(Debug, Clone, Copy)]
struct Level {
    forward: u32,
    span: u32,
}

const EMPTY_LEVEL: Level = Level { forward: NIL, span: 0 };

#[derive(Debug, Clone)]
struct Node {
    member: Box<[u8]>,
    score: f64,
    backward: u32,
    /// Empty for the vacant slots on the free list.
    levels: Box<[Level]>,
}

impl Node {
    fn vacant() -> Node {
        Node { member: Box::default(), score: 0.0, backward: NIL, levels: Box::default() }
    }
}

/// A skiplist plus member index. Members are unique.
#[derive(Debug, Clone)]
pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    tail: u32,
    len: usize,
    level: usize,
    /// Bytes of members plus level links, for `heap_bytes`.
    payload_bytes: usize,
    rng: u64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    pub fn new() -> SkipList {
        let header =
            Node { member: Box::default(), score: 0.0, backward: NIL, levels: vec![EMPTY_LEVEL; MAX_LEVEL].into() };
        SkipList {
            nodes: vec![header],
            free: Vec::new(),
            index: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            tail: NIL,
            len: 0,
            level: 1,
            payload_bytes: 0,
            rng: rand::random::<u64>() | 1,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.free.capacity() * 4
            + self.index.capacity() * 5
            + self.payload_bytes
    }

    /// The slot holding `member`.
    pub fn find(&self, member: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one(member);
        self.index.find(hash, |&slot| *self.nodes[slot as usize].member == *member).copied()
    }

    pub fn member(&self, slot: u32) -> &[u8] {
        &self.nodes[slot as usize].member
    }

    pub fn score(&self, slot: u32) -> f64 {
        self.nodes[slot as usize].score
    }

    /// The first (lowest) node.
    pub fn first(&self) -> Option<u32> {
        self.next(HEAD)
    }

    /// The last (highest) node.
    pub fn last(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// The node after `slot`.
    pub fn next(&self, slot: u32) -> Option<u32> {
        let next = self.nodes[slot as usize].levels[0].forward;
        (next != NIL).then_some(next)
    }

    /// The node before `slot`.
    pub fn prev(&self, slot: u32) -> Option<u32> {
        let prev = self.nodes[slot as usize].backward;
        (prev != NIL).then_some(prev)
    }

    /// Adds a member that is not present yet; returns its slot.
    pub fn insert(&mut self, score: f64, member: &[u8]) -> u32 {
        debug_assert!(self.find(member).is_none(), "duplicate member");
        self.payload_bytes += member.len();
        let slot = self.alloc(Node { member: member.into(), score, backward: NIL, levels: Box::default() });
        self.link(slot);
        let hash = self.hasher.hash_one(member);
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.index.insert_unique(hash, slot, |&s| hasher.hash_one(&*nodes[s as usize].member));
        slot
    }

    /// Removes `member`; returns its score if it was present.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let slot = self.find(member)?;
        let update = self.predecessors(self.score(slot), member);
        self.unlink(slot, &update);
        Some(self.release(slot).score)
    }

    /// Changes the score of the node in `slot`, moving it if its position
    /// changes (`zslUpdateScore`). The slot stays the same.
    pub fn set_score(&mut self, slot: u32, score: f64) {
        let node = &self.nodes[slot as usize];
        let (prev, next) = (node.backward, node.levels[0].forward);
        let stays = (prev == NIL || self.score(prev) < score) && (next == NIL || self.score(next) > score);
        if stays {
            self.nodes[slot as usize].score = score;
            return;
        }
        let update = self.predecessors(node.score, &node.member);
        self.unlink(slot, &update);
        self.nodes[slot as usize].score = score;
        self.link(slot);
    }

    /// The 0-based rank of the node in `slot` (`zslGetRank`).
    pub fn rank(&self, slot: u32) -> usize {
        let node = &self.nodes[slot as usize];
        let (score, member) = (node.score, &*node.member);
        let mut x = HEAD;
        let mut rank = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let level = self.nodes[x as usize].levels[i];
                if level.forward == NIL || !self.is_at_or_before(level.forward, score, member) {
                    break;
                }
                rank += level.span as usize;
                x = level.forward;
            }
            if x == slot {
                return rank - 1;
            }
        }
        unreachable!("node {slot} is not linked")
    }

    /// The node at 0-based `rank` (`zslGetElementByRank`).
    pub fn at_rank(&self, rank: usize) -> Option<u32> {
        if rank >= self.len {
            return None;
        }
        let target = rank + 1;
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let level = self.nodes[x as usize].levels[i];
                if level.forward == NIL || traversed + level.span as usize > target {
                    break;
                }
                traversed += level.span as usize;
                x = level.forward;
            }
            if traversed == target {
                return Some(x);
            }
        }
        None
    }

    /// How many leading nodes satisfy `pred`, which must hold for a prefix
    /// of the order and fail for the rest (a partition point, O(log n)).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let level = self.nodes[x as usize].levels[i];
                if level.forward == NIL {
                    break;
                }
                let next = &self.nodes[level.forward as usize];
                if !pred(next.score, &next.member) {
                    break;
                }
                traversed += level.span as usize;
                x = level.forward;
            }
        }
        traversed
    }

    /// Removes the nodes with 0-based ranks `start..end`; returns how many
    /// (`zslDeleteRangeByRank`).
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.len);
        if start >= end {
            return 0;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let level = self.nodes[x as usize].levels[i];
                if level.forward == NIL || traversed + level.span as usize > start {
                    break;
                }
                traversed += level.span as usize;
                x = level.forward;
            }
            update[i] = x;
        }
        let mut current = self.nodes[x as usize].levels[0].forward;
        let mut removed = 0;
        while current != NIL && removed < end - start {
            let next = self.nodes[current as usize].levels[0].forward;
            self.unlink(current, &update);
            self.release(current);
            removed += 1;
            current = next;
        }
        removed
    }

    /// Calls `f` on live nodes in slot order from `cursor`, until `count`
    /// were visited; returns the next cursor, 0 at the end (ZSCAN).
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        let mut slot = cursor.max(1) as usize;
        let mut visited = 0;
        while slot < self.nodes.len() && visited < count {
            let node = &self.nodes[slot];
            if !node.levels.is_empty() {
                f(&node.member, node.score);
                visited += 1;
            }
            slot += 1;
        }
        if slot >= self.nodes.len() {
            0
        } else {
            slot as u64
        }
    }

    /// `(score, member)` of `slot` sorts before the given pair.
    fn is_before(&self, slot: u32, score: f64, member: &[u8]) -> bool {
        let node = &self.nodes[slot as usize];
        node.score < score || (node.score == score && *node.member < *member)
    }

    fn is_at_or_before(&self, slot: u32, score: f64, member: &[u8]) -> bool {
        let node = &self.nodes[slot as usize];
        node.score < score || (node.score == score && *node.member <= *member)
    }

    /// For each level, the last node before `(score, member)`.
    fn predecessors(&self, score: f64, member: &[u8]) -> [u32; MAX_LEVEL] {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let forward = self.nodes[x as usize].levels[i].forward;
                if forward == NIL || !self.is_before(forward, score, member) {
                    break;
                }
                x = forward;
            }
            update[i] = x;
        }
        update
    }

    /// Links the unlinked node in `slot` at its place, with a fresh random level.
    fn link(&mut self, slot: u32) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let node = &self.nodes[slot as usize];
        let (score, member) = (node.score, &*node.member);
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i + 1 == self.level { 0 } else { rank[i + 1] };
            loop {
                let level = self.nodes[x as usize].levels[i];
                if level.forward == NIL || !self.is_before(level.forward, score, member) {
                    break;
                }
                rank[i] += level.span;
                x = level.forward;
            }
            update[i] = x;
        }
        let height = self.random_level();
        if height > self.level {
            for i in self.level..height {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD as usize].levels[i].span = self.len as u32;
            }
            self.level = height;
        }
        let old_height = self.nodes[slot as usize].levels.len();
        self.payload_bytes = self.payload_bytes + height * 8 - old_height * 8;
        self.nodes[slot as usize].levels = vec![EMPTY_LEVEL; height].into();
        for i in 0..height {
            let u = update[i] as usize;
            let before = self.nodes[u].levels[i];
            self.nodes[slot as usize].levels[i] =
                Level { forward: before.forward, span: before.span - (rank[0] - rank[i]) };
            self.nodes[u].levels[i] = Level { forward: slot, span: rank[0] - rank[i] + 1 };
        }
        for (i, &u) in update.iter().enumerate().take(self.level).skip(height) {
            self.nodes[u as usize].levels[i].span += 1;
        }
        let backward = if update[0] == HEAD { NIL } else { update[0] };
        self.nodes[slot as usize].backward = backward;
        match self.nodes[slot as usize].levels[0].forward {
            NIL => self.tail = slot,
            next => self.nodes[next as usize].backward = slot,
        }
        self.len += 1;
    }

    /// Unlinks the node in `slot`, given its predecessors (`zslDeleteNode`).
    fn unlink(&mut self, slot: u32, update: &[u32; MAX_LEVEL]) {
        for (i, &u) in update.iter().enumerate().take(self.level) {
            let u = u as usize;
            if self.nodes[u].levels[i].forward == slot {
                let removed = self.nodes[slot as usize].levels[i];
                let link = &mut self.nodes[u].levels[i];
                link.span = link.span + removed.span - 1;
                link.forward = removed.forward;
            } else {
                self.nodes[u].levels[i].span -= 1;
            }
        }
        let node = &self.nodes[slot as usize];
        let (next, prev) = (node.levels[0].forward, node.backward);
        match next {
            NIL => self.tail = prev,
            next => self.nodes[next as usize].backward = prev,
        }
        while self.level > 1 && self.nodes[HEAD as usize].levels[self.level - 1].forward == NIL {
            self.level -= 1;
        }
        self.len -= 1;
    }

    fn alloc(&mut self, node: Node) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.nodes[slot as usize] = node;
                slot
            }
            None => {
                let slot = u32::try_from(self.nodes.len()).ok().filter(|&s| s != NIL).expect("skiplist arena full");
                self.nodes.push(node);
                slot
            }
        }
    }

    /// Frees an unlinked slot and drops it from the index; returns the node.
    fn release(&mut self, slot: u32) -> Node {
        let hash = self.hasher.hash_one(&*self.nodes[slot as usize].member);
        if let Ok(entry) = self.index.find_entry(hash, |&s| s == slot) {
            entry.remove();
        }
        let node = std::mem::replace(&mut self.nodes[slot as usize], Node::vacant());
        self.payload_bytes -= node.member.len() + node.levels.len() * 8;
        if self.len == 0 {
            // Nothing left: drop the arena rather than keep a free list.
            self.nodes.truncate(1);
            self.free.clear();
        } else {
            self.free.push(slot);
        }
        node
    }

    /// Redis's level distribution: each extra level with probability 1/4.
    fn random_level(&mut self) -> usize {
        let mut level = 1;
        while level < MAX_LEVEL && (self.next_random() & 0xFFFF) < 0x4000 {
            level += 1;
        }
        level
    }

    /// xorshift64*.
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks every invariant against a plain sorted model.
    fn check(list: &SkipList, model: &[(f64, Vec<u8>)]) {
        assert_eq!(list.len(), model.len());
        let mut slot = list.first();
        for (rank, (score, member)) in model.iter().enumerate() {
            let s = slot.expect("node");
            assert_eq!((list.score(s), list.member(s)), (*score, member.as_slice()));
            assert_eq!(list.rank(s), rank);
            assert_eq!(list.at_rank(rank), Some(s));
            assert_eq!(list.find(member), Some(s));
            slot = list.next(s);
        }
        assert!(slot.is_none());
        let mut back = list.last();
        for (score, _) in model.iter().rev() {
            let s = back.expect("node");
            assert_eq!(list.score(s), *score);
            back = list.prev(s);
        }
        assert!(back.is_none());
        assert_eq!(list.at_rank(model.len()), None);
    }

    fn sorted(model: &mut [(f64, Vec<u8>)]) {
        model.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    }

    #[test]
    fn random_operations_match_a_sorted_model() {
        let mut list = SkipList::new();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        let mut seed = 12345u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for step in 0..4000 {
            let member = format!("m{}", next() % 300).into_bytes();
            let score = (next() % 50) as f64;
            match (list.find(&member), next() % 4) {
                (Some(slot), 0) => {
                    assert_eq!(list.remove(&member), Some(list_score(&model, &member)));
                    let _ = slot;
                    model.retain(|(_, m)| *m != member);
                }
                (Some(slot), _) => {
                    list.set_score(slot, score);
                    assert_eq!(list.find(&member), Some(slot));
                    for entry in model.iter_mut().filter(|(_, m)| *m == member) {
                        entry.0 = score;
                    }
                }
                (None, _) => {
                    list.insert(score, &member);
                    model.push((score, member));
                }
            }
            sorted(&mut model);
            if step % 97 == 0 {
                check(&list, &model);
            }
        }
        check(&list, &model);
        let below_20 = model.iter().filter(|(s, _)| *s < 20.0).count();
        assert_eq!(list.count_while(|s, _| s < 20.0), below_20);
        let removed = list.remove_ranks(5, 25);
        model.drain(5..25);
        assert_eq!(removed, 20);
        check(&list, &model);
    }

    fn list_score(model: &[(f64, Vec<u8>)], member: &[u8]) -> f64 {
        model.iter().find(|(_, m)| m == member).map(|(s, _)| *s).expect("present")
    }

    #[test]
    fn scan_visits_each_member_once_and_survives_reuse() {
        let mut list = SkipList::new();
        for i in 0..100 {
            list.insert(i as f64, format!("{i}").as_bytes());
        }
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = list.scan(cursor, 7, |m, _| seen.push(m.to_vec()));
            if cursor == 0 {
                break;
            }
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 100);
        assert_eq!(list.remove_ranks(0, 100), 100);
        assert!(list.is_empty() && list.first().is_none() && list.last().is_none());
        list.insert(1.0, b"again");
        check(&list, &[(1.0, b"again".to_vec())]);
    }
}
