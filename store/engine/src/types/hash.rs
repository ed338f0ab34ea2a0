//! The Hash type: a map of fields to values with Redis 7.0's two encodings.
//!
//! # Layout
//!
//! - `listpack` (small hashes): a [`Listpack`] holding field, value, field,
//!   value... in one buffer. Lookups walk it, as Redis does.
//! - `hashtable` (large hashes): an [`IndexMap`], a hash index over a dense
//!   vector of entries. Lookups are O(1), random picks are O(1) and fair (an
//!   index into the vector), and HSCAN walks the vector with the cursor of
//!   [`cursor`].
//!
//! A hash starts as a listpack and converts, once and for good, when a
//! field or value is longer than `hash-max-listpack-value` or it holds more
//! than `hash-max-listpack-entries` fields (both read from
//! [`LIMITS`](super::encoding::LIMITS) at the time of the write).

pub mod cursor;
pub mod listpack;

use std::hash::Hasher;

use foldhash::fast::RandomState;
use indexmap::IndexMap;
use rand::Rng;

use self::listpack::{Listpack, Span, Spans};
use super::encoding::LIMITS;

type Dict = IndexMap<Box<[u8]>, Box<[u8]>, RandomState>;

/// A hash value.
#[derive(Debug, Clone, Default)]
pub struct Hash {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Listpack(Listpack),
    /// Boxed, so that a small hash stays a few words.
    Table(Box<Table>),
}

#[derive(Debug, Clone)]
struct Table {
    dict: Dict,
    /// Bytes of all fields and values (for `heap_bytes` in O(1)).
    payload: usize,
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Listpack(Listpack::default())
    }
}

/// Whether `len` bytes exceed `hash-max-listpack-value`.
fn too_long_for_listpack(len: usize) -> bool {
    len as i64 > LIMITS.hash_max_listpack_value.get()
}

/// The field and value spans of `field` in a listpack hash.
fn listpack_find(lp: &Listpack, field: &[u8]) -> Option<(Span, Span)> {
    let mut spans = lp.spans();
    while let Some(f) = spans.next() {
        let v = spans.next()?;
        if lp.bytes(f) == field {
            return Some((f, v));
        }
    }
    None
}

impl Hash {
    /// An empty hash (listpack encoded).
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Listpack(lp) => lp.count() / 2,
            Repr::Table(table) => table.dict.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Listpack(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Whether the hash is listpack encoded.
    pub fn is_listpack(&self) -> bool {
        matches!(self.repr, Repr::Listpack(_))
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Listpack(lp) => lp.heap_bytes(),
            Repr::Table(table) => {
                // Entry (hash + two boxed slices), index slot and control byte,
                // plus allocator overhead for each field and value.
                table.dict.capacity() * (std::mem::size_of::<(u64, Box<[u8]>, Box<[u8]>)>() + 9)
                    + table.payload
                    + table.dict.len() * 16
            }
        }
    }

    /// Feeds the contents to a digest (DEBUG DIGEST), independently of the
    /// order and the encoding.
    pub fn digest(&self, h: &mut dyn Hasher) {
        let mut sum = 0u64;
        for (field, value) in self.iter() {
            let mut one = std::hash::DefaultHasher::new();
            one.write_usize(field.len());
            one.write(field);
            one.write(value);
            sum = sum.wrapping_add(one.finish());
        }
        h.write_usize(self.len());
        h.write_u64(sum);
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Listpack(lp) => listpack_find(lp, field).map(|(_, v)| lp.bytes(v)),
            Repr::Table(table) => table.dict.get(field).map(|v| &v[..]),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to a hash table if any of `strings` (the fields and values
    /// about to be written) is too long for a listpack, before writing them
    /// (Redis's `hashTypeTryConversion`).
    pub fn prepare_for<'a>(&mut self, strings: impl IntoIterator<Item = &'a [u8]>) {
        if self.is_listpack() && strings.into_iter().any(|s| too_long_for_listpack(s.len())) {
            self.convert_to_table();
        }
    }

    /// Sets `field` to `value`; returns true if the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if self.is_listpack() && (too_long_for_listpack(field.len()) || too_long_for_listpack(value.len())) {
            self.convert_to_table();
        }
        match &mut self.repr {
            Repr::Listpack(lp) => {
                if let Some((_, v)) = listpack_find(lp, field) {
                    lp.replace(v, value);
                    return false;
                }
                lp.push(field);
                lp.push(value);
                if self.len() as i64 > LIMITS.hash_max_listpack_entries.get() {
                    self.convert_to_table();
                }
                true
            }
            Repr::Table(table) => {
                if let Some(old) = table.dict.get_mut(field) {
                    table.payload = table.payload + value.len() - old.len();
                    *old = value.into();
                    return false;
                }
                table.payload += field.len() + value.len();
                table.dict.insert(field.into(), value.into());
                true
            }
        }
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Listpack(lp) => match listpack_find(lp, field) {
                Some((f, v)) => {
                    lp.remove_range(f.start, v.end, 2);
                    true
                }
                None => false,
            },
            Repr::Table(table) => match table.dict.swap_remove_entry(field) {
                Some((f, v)) => {
                    table.payload -= f.len() + v.len();
                    shrink_if_sparse(&mut table.dict);
                    true
                }
                None => false,
            },
        }
    }

    /// Iterates over the fields and values, in storage order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Listpack(lp) => Iter::Listpack(lp, lp.spans()),
            Repr::Table(table) => Iter::Table(table.dict.iter()),
        }
    }

    /// A random field and value, each with the same probability.
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        if self.is_empty() {
            return None;
        }
        let index = rng.gen_range(0..self.len());
        self.nth(index)
    }

    /// The `index`-th field in storage order (O(1) for hash tables, O(n)
    /// for listpacks).
    fn nth(&self, index: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Listpack(_) => self.iter().nth(index),
            Repr::Table(table) => table.dict.get_index(index).map(|(f, v)| (&f[..], &v[..])),
        }
    }

    /// Calls `f` with `count` random fields, repetitions allowed.
    pub fn random_pairs<'a>(&'a self, count: usize, rng: &mut impl Rng, mut f: impl FnMut(&'a [u8], &'a [u8])) {
        let len = self.len();
        if len == 0 {
            return;
        }
        match &self.repr {
            Repr::Listpack(_) => {
                let pairs: Vec<(&[u8], &[u8])> = self.iter().collect();
                for _ in 0..count {
                    let (field, value) = pairs[rng.gen_range(0..len)];
                    f(field, value);
                }
            }
            Repr::Table(table) => {
                for _ in 0..count {
                    if let Some((field, value)) = table.dict.get_index(rng.gen_range(0..len)) {
                        f(field, value);
                    }
                }
            }
        }
    }

    /// Calls `f` with `count` distinct random fields (all of them when
    /// `count` is at least the length).
    pub fn random_distinct_pairs<'a>(
        &'a self,
        count: usize,
        rng: &mut impl Rng,
        mut f: impl FnMut(&'a [u8], &'a [u8]),
    ) {
        let len = self.len();
        let picks = rand::seq::index::sample(rng, len, count.min(len));
        match &self.repr {
            Repr::Listpack(_) => {
                let pairs: Vec<(&[u8], &[u8])> = self.iter().collect();
                for index in picks.iter() {
                    let (field, value) = pairs[index];
                    f(field, value);
                }
            }
            Repr::Table(table) => {
                for index in picks.iter() {
                    if let Some((field, value)) = table.dict.get_index(index) {
                        f(field, value);
                    }
                }
            }
        }
    }

    /// One HSCAN step: calls `f` on the fields visited from `cursor`
    /// (about `count` of them; all of a listpack at once) and returns the
    /// next cursor, 0 at the end.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], &'a [u8])) -> u64 {
        match &self.repr {
            Repr::Listpack(_) => {
                self.iter().for_each(|(field, value)| f(field, value));
                0
            }
            Repr::Table(table) => {
                let (range, next) = cursor::scan_range(table.dict.len(), cursor, count);
                for index in range.rev() {
                    if let Some((field, value)) = table.dict.get_index(index) {
                        f(field, value);
                    }
                }
                next
            }
        }
    }

    fn convert_to_table(&mut self) {
        let Repr::Listpack(lp) = &self.repr else { return };
        let dict = Dict::with_capacity_and_hasher(lp.count() / 2, RandomState::default());
        let mut table = Box::new(Table { dict, payload: 0 });
        for (field, value) in self.iter() {
            table.payload += field.len() + value.len();
            table.dict.insert(field.into(), value.into());
        }
        self.repr = Repr::Table(table);
    }
}

/// Gives memory back once a table is mostly empty.
fn shrink_if_sparse<K: std::hash::Hash + Eq, V>(dict: &mut IndexMap<K, V, RandomState>) {
    if dict.capacity() > 64 && dict.len() < dict.capacity() / 8 {
        dict.shrink_to(dict.len() * 2);
    }
}

impl PartialEq for Hash {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

/// Iterator over a hash's fields and values.
#[derive(Debug)]
pub enum Iter<'a> {
    Listpack(&'a Listpack, Spans<'a>),
    Table(indexmap::map::Iter<'a, Box<[u8]>, Box<[u8]>>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Listpack(lp, spans) => {
                let field = spans.next()?;
                let value = spans.next()?;
                Some((lp.bytes(field), lp.bytes(value)))
            }
            Iter::Table(it) => it.next().map(|(f, v)| (&f[..], &v[..])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(h: &Hash) -> u64 {
        let mut d = std::hash::DefaultHasher::new();
        h.digest(&mut d);
        d.finish()
    }

    #[test]
    fn small_hashes_stay_small() {
        // Every hash key boxes one of these: keep it at three words.
        assert!(std::mem::size_of::<Hash>() <= 24);
        assert!(std::mem::size_of::<crate::types::Set>() <= 24);
    }

    #[test]
    fn listpack_set_get_remove() {
        let mut h = Hash::new();
        assert!(h.set(b"a", b"1"));
        assert!(h.set(b"b", b"2"));
        assert!(!h.set(b"a", b"10"));
        assert_eq!(h.get(b"a"), Some(&b"10"[..]));
        assert_eq!(h.len(), 2);
        assert_eq!(h.encoding(), "listpack");
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        assert_eq!(h.iter().collect::<Vec<_>>(), vec![(&b"b"[..], &b"2"[..])]);
    }

    #[test]
    fn converts_on_long_value_and_keeps_contents() {
        let mut h = Hash::new();
        h.set(b"a", b"1");
        let long = vec![b'v'; 65];
        h.set(b"b", &long);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"a"), Some(&b"1"[..]));
        assert_eq!(h.get(b"b"), Some(&long[..]));
        assert!(h.remove(b"b"));
        assert_eq!(h.encoding(), "hashtable", "conversion is one way");
    }

    #[test]
    fn prepare_for_converts_before_writing() {
        let mut h = Hash::new();
        h.prepare_for([&b"x"[..], &[b'y'; 100][..]]);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn converts_above_max_entries() {
        let mut h = Hash::new();
        for i in 0..=512 {
            h.set(format!("f{i}").as_bytes(), b"v");
        }
        assert_eq!(h.len(), 513);
        assert_eq!(h.encoding(), "hashtable");
    }

    #[test]
    fn digest_ignores_order_and_encoding() {
        let mut a = Hash::new();
        a.set(b"x", b"1");
        a.set(b"y", b"2");
        let mut b = Hash::new();
        b.set(b"y", b"2");
        b.set(b"x", b"1");
        assert_eq!(digest(&a), digest(&b));
        assert_eq!(a, b);
        b.convert_to_table();
        assert_eq!(digest(&a), digest(&b));
        b.set(b"x", b"3");
        assert_ne!(digest(&a), digest(&b));
    }

    #[test]
    fn scan_table_returns_everything() {
        let mut h = Hash::new();
        h.convert_to_table();
        for i in 0..100 {
            h.set(format!("f{i}").as_bytes(), b"v");
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = h.scan(cursor, 7, |f, _| {
                seen.insert(f.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 100);
    }

    #[test]
    fn random_distinct_pairs_are_distinct() {
        let mut h = Hash::new();
        for i in 0..10 {
            h.set(format!("f{i}").as_bytes(), b"v");
        }
        let mut rng = rand::thread_rng();
        let mut got = Vec::new();
        h.random_distinct_pairs(8, &mut rng, |f, _| got.push(f.to_vec()));
        got.sort();
        got.dedup();
        assert_eq!(got.len(), 8);
        let mut all = 0;
        h.random_distinct_pairs(20, &mut rng, |_, _| all += 1);
        assert_eq!(all, 10);
    }
}
