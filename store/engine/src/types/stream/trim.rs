//! Trimming (XTRIM, and XADD's MAXLEN/MINID): Redis's `streamTrim`.
//!
//! Whole nodes are dropped from the head while the strategy allows; with `~`
//! (approximate) trimming stops at the first node that cannot go entirely,
//! otherwise that node's leading entries are marked deleted one by one.
//! `limit` (only with `~`) caps the number of entries removed, counted in
//! whole nodes.

use std::collections::BTreeMap;

use super::id::StreamId;
use super::node::Node;

/// What to trim to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimStrategy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove entries with IDs below this one.
    MinId(StreamId),
}

/// A trimming request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrimSpec {
    pub strategy: TrimStrategy,
    /// `~`: only remove whole nodes.
    pub approx: bool,
    /// Most entries to remove; 0 means no limit.
    pub limit: u64,
}

/// Trims `nodes` (whose live entries number `*length`) and returns how many
/// entries were removed.
pub(super) fn trim(nodes: &mut BTreeMap<StreamId, Node>, length: &mut u64, spec: &TrimSpec) -> u64 {
    let mut deleted = 0u64;
    while let Some(mut first) = nodes.first_entry() {
        if let TrimStrategy::MaxLen(maxlen) = spec.strategy {
            if *length <= maxlen {
                break;
            }
        }
        let node = first.get_mut();
        let entries = node.live();
        if spec.limit != 0 && deleted + entries > spec.limit {
            break;
        }
        let remove_node = match spec.strategy {
            TrimStrategy::MaxLen(maxlen) => *length - entries >= maxlen,
            TrimStrategy::MinId(min) => node.last_id() < min,
        };
        if remove_node {
            first.remove();
            *length -= entries;
            deleted += entries;
            continue;
        }
        if spec.approx {
            break;
        }
        deleted += trim_inside(node, length, spec.strategy);
        break;
    }
    deleted
}

/// Marks the node's leading entries deleted until the strategy is satisfied.
fn trim_inside(node: &mut Node, length: &mut u64, strategy: TrimStrategy) -> u64 {
    let mut deleted = 0;
    for slot in 0..node.slot_count() {
        let stop = match strategy {
            TrimStrategy::MaxLen(maxlen) => *length <= maxlen,
            TrimStrategy::MinId(min) => node.id_at(slot) >= min,
        };
        if stop {
            break;
        }
        if !node.is_deleted(slot) {
            node.mark_deleted(slot);
            *length -= 1;
            deleted += 1;
        }
    }
    deleted
}
