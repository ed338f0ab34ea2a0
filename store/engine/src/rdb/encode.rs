//! Encoding a [`Value`] into a payload body as Redis 7.0.15 writes it
//! (`rdbSaveObjectType` + `rdbSaveObject`, RDB version 10), with the RDB
//! type Redis chooses for the value's encoding: int-encoded strings,
//! listpack hashes and sorted sets, intset sets, quicklist-2 lists of
//! listpack nodes, `STREAM_LISTPACKS_2` streams. Strings are never
//! LZF-compressed (Redis reads them either way).

use super::score::push_score;
use super::types as t;
use super::writer::Writer;
use super::{intset, listpack, stream};
use crate::types::encoding::LIMITS;
use crate::types::set::Member;
use crate::types::{Hash, List, Set, ZSet};
use crate::value::{StrValue, Value};

/// The payload body (type byte and object) for `value`.
pub fn encode_value(value: &Value) -> Vec<u8> {
    let mut w = Writer::new();
    match value {
        Value::Str(StrValue::Int(v)) => {
            w.u8(t::STRING);
            w.int_string(*v);
        }
        Value::Str(s) => {
            w.u8(t::STRING);
            s.with_bytes(|b| w.string(b));
        }
        Value::List(list) => encode_list(&mut w, list),
        Value::Set(set) => encode_set(&mut w, set),
        Value::ZSet(zset) => encode_zset(&mut w, zset),
        Value::Hash(hash) => encode_hash(&mut w, hash),
        Value::Stream(s) => stream::encode(&mut w, s),
    }
    w.out
}

/// A quicklist 2 of packed listpack nodes, split where Redis's RPUSH
/// would have split them (`_quicklistNodeAllowInsert`), so a list built by
/// pushes DUMPs as Redis's does.
fn encode_list(w: &mut Writer, list: &List) {
    w.u8(t::LIST_QUICKLIST_2);
    let fill = LIMITS.list_max_listpack_size.get();
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut node = listpack::Writer::new();
    for element in list.iter() {
        if !node.is_empty() && !node_allows_insert(node.bytes(), node.len(), element.len(), fill) {
            nodes.push(std::mem::take(&mut node).finish());
        }
        node.push_str(element);
    }
    if !node.is_empty() {
        nodes.push(node.finish());
    }
    w.len(nodes.len() as u64);
    for lp in nodes {
        w.len(t::QUICKLIST_NODE_PACKED);
        w.string(&lp);
    }
}

/// Byte caps of `list-max-listpack-size` -1 .. -5.
const NODE_SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// The cap of a node whose fill counts entries.
const NODE_SAFETY_LIMIT: usize = 8192;
/// Redis's per-entry overestimate when deciding whether a node takes one more.
const ENTRY_OVERHEAD_ESTIMATE: usize = 8;

/// Whether a node of `bytes` bytes and `count` entries takes an element of
/// `len` bytes (Redis 7.0's `_quicklistNodeAllowInsert`).
fn node_allows_insert(bytes: usize, count: usize, len: usize, fill: i64) -> bool {
    let new_size = bytes + len + ENTRY_OVERHEAD_ESTIMATE;
    if fill < 0 {
        let class = usize::try_from(-fill - 1).unwrap_or(usize::MAX);
        if NODE_SIZE_CLASSES.get(class).is_some_and(|&cap| new_size <= cap) {
            return true;
        }
    }
    new_size <= NODE_SAFETY_LIMIT && fill >= 0 && (count as i64) < fill
}

fn encode_set(w: &mut Writer, set: &Set) {
    if set.encoding() == "intset" {
        let members: Vec<i64> =
            set.iter().filter_map(|m| if let Member::Int(v) = m { Some(v) } else { None }).collect();
        if members.len() == set.len() {
            let mut sorted = members;
            sorted.sort_unstable();
            w.u8(t::SET_INTSET);
            w.string(&intset::encode(&sorted));
            return;
        }
    }
    w.u8(t::SET);
    w.len(set.len() as u64);
    set.iter().for_each(|m| m.with_bytes(|b| w.string(b)));
}

/// A listpack of member, score pairs in score order, or (skiplist) the
/// members from the greatest to the smallest with binary scores, as Redis
/// walks its skiplist backwards.
fn encode_zset(w: &mut Writer, zset: &ZSet) {
    if zset.encoding() == "listpack" {
        let mut lp = listpack::Writer::new();
        for (member, score) in zset.iter() {
            lp.push_str(member);
            push_score(&mut lp, score);
        }
        w.u8(t::ZSET_LISTPACK);
        w.string(&lp.finish());
        return;
    }
    w.u8(t::ZSET_2);
    w.len(zset.len() as u64);
    for (member, score) in zset.iter_from(zset.len().saturating_sub(1), true) {
        w.string(member);
        w.binary_double(score);
    }
}

fn encode_hash(w: &mut Writer, hash: &Hash) {
    if hash.is_listpack() {
        let mut lp = listpack::Writer::new();
        for (field, value) in hash.iter() {
            lp.push_str(field);
            lp.push_str(value);
        }
        w.u8(t::HASH_LISTPACK);
        w.string(&lp.finish());
        return;
    }
    w.u8(t::HASH);
    w.len(hash.len() as u64);
    for (field, value) in hash.iter() {
        w.string(field);
        w.string(value);
    }
}
