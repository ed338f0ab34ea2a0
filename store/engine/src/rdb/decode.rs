//! Decoding a payload body (one RDB object, as `rdbLoadObject` reads it)
//! into a [`Value`], validating as Redis's deep sanitization does: every
//! compact encoding checked entry by entry, no empty collections, no
//! duplicate set members, hash fields or sorted-set members, no NaN scores.
//! Collections are built through the types' own insertion, so they take the
//! encodings the current limits give, as Redis converts on load.

use std::collections::HashSet;

use super::element::Element;
use super::error::{bad, RdbError};
use super::reader::{parse_strtod, Reader};
use super::types as t;
use super::{intset, listpack, stream, ziplist, zipmap};
use crate::types::{Hash, List, Set, ZSet};
use crate::value::Value;

/// The value a payload body holds.
pub fn decode_value(body: &[u8]) -> Result<Value, RdbError> {
    let mut r = Reader::new(body);
    let rdb_type = r.u8()?;
    match rdb_type {
        t::STRING => Ok(Value::from_bytes(&r.string()?)),
        t::LIST => list_of_strings(&mut r),
        t::LIST_ZIPLIST => list_from(ziplist::parse(&r.string()?)?),
        t::LIST_QUICKLIST | t::LIST_QUICKLIST_2 => quicklist(&mut r, rdb_type),
        t::SET => set_of_strings(&mut r),
        t::SET_INTSET => set_from_intset(&r.string()?),
        t::SET_LISTPACK => set_from(listpack::parse(&r.string()?)?),
        t::ZSET | t::ZSET_2 => zset_of_strings(&mut r, rdb_type == t::ZSET_2),
        t::ZSET_ZIPLIST => zset_from(ziplist::parse(&r.string()?)?),
        t::ZSET_LISTPACK => zset_from(listpack::parse(&r.string()?)?),
        t::HASH => hash_of_strings(&mut r),
        t::HASH_ZIPMAP => hash_from_zipmap(&r.string()?),
        t::HASH_ZIPLIST => hash_from(ziplist::parse(&r.string()?)?),
        t::HASH_LISTPACK => hash_from(listpack::parse(&r.string()?)?),
        t::STREAM_LISTPACKS | t::STREAM_LISTPACKS_2 | t::STREAM_LISTPACKS_3 => {
            Ok(Value::Stream(Box::new(stream::decode(&mut r, rdb_type)?)))
        }
        t::MODULE | t::MODULE_2 => bad("module types are not supported"),
        _ => bad("unknown object type"),
    }
}

fn non_empty(len: usize) -> Result<(), RdbError> {
    if len == 0 {
        return bad("empty collection");
    }
    Ok(())
}

fn list_of_strings(r: &mut Reader<'_>) -> Result<Value, RdbError> {
    let len = r.count(1)?;
    non_empty(len)?;
    let mut list = List::new();
    for _ in 0..len {
        list.push_back(&r.string()?);
    }
    Ok(Value::List(Box::new(list)))
}

fn list_from(elements: Vec<Element<'_>>) -> Result<Value, RdbError> {
    non_empty(elements.len())?;
    let mut list = List::new();
    elements.iter().for_each(|e| list.push_back(&e.bytes()));
    Ok(Value::List(Box::new(list)))
}

/// A quicklist: nodes of ziplists (type 14) or, in type 18, of listpacks or
/// plain single elements. Empty nodes are skipped, as Redis does; an empty
/// list is refused.
fn quicklist(r: &mut Reader<'_>, rdb_type: u8) -> Result<Value, RdbError> {
    let nodes = r.count(2)?;
    non_empty(nodes)?;
    let mut list = List::new();
    for _ in 0..nodes {
        let container = if rdb_type == t::LIST_QUICKLIST_2 { r.len()? } else { t::QUICKLIST_NODE_PACKED };
        let data = r.string()?;
        match container {
            t::QUICKLIST_NODE_PLAIN => list.push_back(&data),
            t::QUICKLIST_NODE_PACKED if rdb_type == t::LIST_QUICKLIST_2 => {
                listpack::parse(&data)?.iter().for_each(|e| list.push_back(&e.bytes()))
            }
            t::QUICKLIST_NODE_PACKED => ziplist::parse(&data)?.iter().for_each(|e| list.push_back(&e.bytes())),
            _ => return bad("unknown quicklist node container"),
        }
    }
    non_empty(list.len())?;
    Ok(Value::List(Box::new(list)))
}

fn set_of_strings(r: &mut Reader<'_>) -> Result<Value, RdbError> {
    let len = r.count(1)?;
    non_empty(len)?;
    let mut set = Set::new();
    for _ in 0..len {
        if !set.add(&r.string()?) {
            return bad("duplicate set member");
        }
    }
    Ok(Value::Set(set))
}

fn set_from_intset(data: &[u8]) -> Result<Value, RdbError> {
    let mut set = Set::new();
    let mut buf = itoa::Buffer::new();
    for member in intset::parse(data)? {
        set.add(buf.format(member).as_bytes());
    }
    Ok(Value::Set(set))
}

fn set_from(elements: Vec<Element<'_>>) -> Result<Value, RdbError> {
    non_empty(elements.len())?;
    let mut set = Set::new();
    for e in &elements {
        if !set.add(&e.bytes()) {
            return bad("duplicate set member");
        }
    }
    Ok(Value::Set(set))
}

/// A sorted set of string members and scores (type 3: text scores, type 5:
/// binary).
fn zset_of_strings(r: &mut Reader<'_>, binary_scores: bool) -> Result<Value, RdbError> {
    let len = r.count(2)?;
    non_empty(len)?;
    let mut entries = Vec::with_capacity(len);
    for _ in 0..len {
        let member = r.string()?;
        let score = if binary_scores { r.binary_double()? } else { r.text_double()? };
        entries.push((member.into_boxed_slice(), score));
    }
    zset_of(entries)
}

/// A sorted set from a ziplist or listpack of member, score pairs.
fn zset_from(elements: Vec<Element<'_>>) -> Result<Value, RdbError> {
    non_empty(elements.len())?;
    if elements.len() % 2 != 0 {
        return bad("odd number of sorted set elements");
    }
    let mut entries = Vec::with_capacity(elements.len() / 2);
    for pair in elements.chunks_exact(2) {
        let score = match pair[1] {
            Element::Int(v) => v as f64,
            Element::Str(s) => parse_strtod(s).ok_or(RdbError::BadData("unparsable sorted set score"))?,
        };
        entries.push((pair[0].bytes().into_owned().into_boxed_slice(), score));
    }
    zset_of(entries)
}

fn zset_of(entries: Vec<(Box<[u8]>, f64)>) -> Result<Value, RdbError> {
    if entries.iter().any(|(_, score)| score.is_nan()) {
        return bad("sorted set with a NaN score");
    }
    let mut seen: HashSet<&[u8]> = HashSet::with_capacity(entries.len());
    if !entries.iter().all(|(member, _)| seen.insert(member)) {
        return bad("duplicate sorted set member");
    }
    drop(seen);
    Ok(Value::ZSet(Box::new(ZSet::from_entries(entries))))
}

fn hash_of_strings(r: &mut Reader<'_>) -> Result<Value, RdbError> {
    let len = r.count(2)?;
    non_empty(len)?;
    let mut hash = Hash::new();
    for _ in 0..len {
        let field = r.string()?;
        let value = r.string()?;
        if !hash.set(&field, &value) {
            return bad("duplicate hash field");
        }
    }
    Ok(Value::Hash(hash))
}

fn hash_from(elements: Vec<Element<'_>>) -> Result<Value, RdbError> {
    non_empty(elements.len())?;
    if elements.len() % 2 != 0 {
        return bad("odd number of hash elements");
    }
    let mut hash = Hash::new();
    for pair in elements.chunks_exact(2) {
        if !hash.set(&pair[0].bytes(), &pair[1].bytes()) {
            return bad("duplicate hash field");
        }
    }
    Ok(Value::Hash(hash))
}

fn hash_from_zipmap(data: &[u8]) -> Result<Value, RdbError> {
    let mut hash = Hash::new();
    for (field, value) in zipmap::parse(data)? {
        if !hash.set(field, value) {
            return bad("duplicate hash field");
        }
    }
    Ok(Value::Hash(hash))
}
