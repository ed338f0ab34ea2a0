//! Walking a stream's entries in ID order, forward or backward, between two
//! IDs (inclusive), optionally including tombstones.

use std::collections::btree_map;
use std::collections::BTreeMap;

use super::id::StreamId;
use super::node::{Fields, Node};

/// One entry of a stream, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct StreamEntry<'a> {
    pub id: StreamId,
    node: &'a Node,
    slot: usize,
}

impl<'a> StreamEntry<'a> {
    pub(super) fn new(node: &'a Node, slot: usize) -> Self {
        StreamEntry { id: node.id_at(slot), node, slot }
    }

    pub fn num_fields(&self) -> usize {
        self.node.num_fields(self.slot)
    }

    /// The field/value pairs, in insertion order.
    pub fn fields(&self) -> Fields<'a> {
        self.node.fields(self.slot)
    }

    pub fn is_deleted(&self) -> bool {
        self.node.is_deleted(self.slot)
    }
}

/// Entries with `start <= id <= end`, in order or reversed.
pub struct Range<'a> {
    nodes: NodeWalk<'a>,
    /// Current node and the next slot to look at (forward), or one past it (backward).
    current: Option<(&'a Node, usize)>,
    start: StreamId,
    end: StreamId,
    rev: bool,
    tombstones: bool,
    done: bool,
}

enum NodeWalk<'a> {
    Forward(btree_map::Range<'a, StreamId, Node>),
    Backward(std::iter::Rev<btree_map::Range<'a, StreamId, Node>>),
}

impl<'a> NodeWalk<'a> {
    fn next(&mut self) -> Option<&'a Node> {
        match self {
            NodeWalk::Forward(it) => it.next().map(|(_, n)| n),
            NodeWalk::Backward(it) => it.next().map(|(_, n)| n),
        }
    }
}

impl<'a> Range<'a> {
    pub(super) fn new(
        nodes: &'a BTreeMap<StreamId, Node>,
        start: StreamId,
        end: StreamId,
        rev: bool,
        tombstones: bool,
    ) -> Self {
        let walk = if rev {
            // The last node whose key is <= end holds the first candidate.
            NodeWalk::Backward(nodes.range(..=end).rev())
        } else {
            // The node holding `start` is the last one whose key is <= start.
            let from = nodes.range(..=start).next_back().map_or(StreamId::MIN, |(k, _)| *k);
            NodeWalk::Forward(nodes.range(from..))
        };
        Range { nodes: walk, current: None, start, end, rev, tombstones, done: start > end }
    }

    fn next_node(&mut self) -> Option<(&'a Node, usize)> {
        let node = self.nodes.next()?;
        let pos = if self.rev { node.upper_bound(self.end) } else { node.lower_bound(self.start) };
        Some((node, pos))
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = StreamEntry<'a>;

    fn next(&mut self) -> Option<StreamEntry<'a>> {
        while !self.done {
            let (node, pos) = match self.current {
                Some(c) => c,
                None => match self.next_node() {
                    Some(c) => c,
                    None => {
                        self.done = true;
                        break;
                    }
                },
            };
            let slot = if self.rev {
                if pos == 0 {
                    self.current = None;
                    continue;
                }
                pos - 1
            } else {
                if pos >= node.slot_count() {
                    self.current = None;
                    continue;
                }
                pos
            };
            self.current = Some((node, if self.rev { slot } else { slot + 1 }));
            let id = node.id_at(slot);
            if (!self.rev && id > self.end) || (self.rev && id < self.start) {
                self.done = true;
                break;
            }
            if self.tombstones || !node.is_deleted(slot) {
                return Some(StreamEntry::new(node, slot));
            }
        }
        None
    }
}
