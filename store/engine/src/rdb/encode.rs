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

/// A quicklist 2: one packed listpack per node.
fn encode_list(w: &mut Writer, list: &List) {
    w.u8(t::LIST_QUICKLIST_2);
    let nodes: Vec<usize> = list.nodes().map(|n| n.len()).filter(|&n| n > 0).collect();
    w.len(nodes.len() as u64);
    let mut elements = list.iter();
    for len in nodes {
        let mut lp = listpack::Writer::new();
        elements.by_ref().take(len).for_each(|e| lp.push_str(e));
        w.len(t::QUICKLIST_NODE_PACKED);
        w.string(&lp.finish());
    }
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
