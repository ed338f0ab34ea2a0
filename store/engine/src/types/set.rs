//! The Set type: distinct byte strings with Redis 7.0's two encodings.
//!
//! # Layout
//!
//! - `intset` (small all-integer sets): an [`Intset`], sorted integers.
//! - `hashtable`: an [`IndexSet`], a hash index over a dense vector of
//!   members: O(1) membership, O(1) fair random picks and pops (an index into
//!   the vector), and SSCAN with the cursor of
//!   [`hash::cursor`](super::hash::cursor).
//!
//! A set created by its first member is an intset when that member is an
//! integer (as Redis's `setTypeCreate`), and converts, once and for good,
//! when a non-integer is added or it grows beyond `set-max-intset-entries`
//! (read from [`LIMITS`](super::encoding::LIMITS) at the time of the write).
//! Redis 7.0 has no listpack sets (they came in 7.2).

pub mod intset;

use std::hash::Hasher;

use foldhash::fast::RandomState;
use indexmap::IndexSet;
use rand::Rng;

pub use self::intset::Intset;
use super::encoding::LIMITS;
use super::hash::cursor;
use crate::number::parse_i64;

type Dict = IndexSet<Box<[u8]>, RandomState>;

/// A set value.
#[derive(Debug, Clone, Default)]
pub struct Set {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Intset(Intset),
    /// Boxed, so that a small set stays a few words.
    Table(Box<Table>),
}

#[derive(Debug, Clone)]
struct Table {
    dict: Dict,
    /// Bytes of all members (for `heap_bytes` in O(1)).
    payload: usize,
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Intset(Intset::default())
    }
}

/// One member as stored: intsets hold integers, hash tables bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Member<'_> {
    /// Calls `f` with the member's bytes (integers formatted on the stack).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(n) => f(itoa::Buffer::new().format(*n).as_bytes()),
            Member::Bytes(b) => f(b),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }
}

/// The integer an intset would store for `member`, if any.
fn as_int(member: &[u8]) -> Option<i64> {
    if member.len() > 20 {
        return None;
    }
    parse_i64(member)
}

/// `set-max-intset-entries`, capped as Redis caps it.
fn max_intset_entries() -> i64 {
    LIMITS.set_max_intset_entries.get().min(1 << 30)
}

impl Set {
    /// An empty set (intset encoded), for results built member by member.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set encoded for its first member `first`.
    pub fn for_first(first: &[u8]) -> Self {
        match as_int(first) {
            Some(_) => Self::new(),
            None => Set { repr: Repr::Table(Box::new(Table { dict: Dict::default(), payload: 0 })) },
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Intset(ints) => ints.len(),
            Repr::Table(table) => table.dict.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Intset(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Intset(ints) => ints.heap_bytes(),
            Repr::Table(table) => {
                table.dict.capacity() * (std::mem::size_of::<(u64, Box<[u8]>)>() + 9)
                    + table.payload
                    + table.dict.len() * 8
            }
        }
    }

    /// Feeds the contents to a digest (DEBUG DIGEST), independently of the
    /// order and the encoding.
    pub fn digest(&self, h: &mut dyn Hasher) {
        let mut sum = 0u64;
        for member in self.iter() {
            let mut one = std::hash::DefaultHasher::new();
            member.with_bytes(|b| one.write(b));
            sum = sum.wrapping_add(one.finish());
        }
        h.write_usize(self.len());
        h.write_u64(sum);
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Intset(ints) => as_int(member).is_some_and(|v| ints.contains(v)),
            Repr::Table(table) => table.dict.contains(member),
        }
    }

    /// Whether a member taken from another set is in this one.
    pub fn contains_member(&self, member: Member<'_>) -> bool {
        match (member, &self.repr) {
            (Member::Int(v), Repr::Intset(ints)) => ints.contains(v),
            (Member::Bytes(b), _) => self.contains(b),
            (Member::Int(_), Repr::Table(table)) => member.with_bytes(|b| table.dict.contains(b)),
        }
    }

    /// Adds `member`; returns whether it was new.
    pub fn add(&mut self, member: &[u8]) -> bool {
        if let Repr::Intset(ints) = &mut self.repr {
            match as_int(member) {
                Some(v) => {
                    let added = ints.insert(v);
                    if added && ints.len() as i64 > max_intset_entries() {
                        self.convert_to_table();
                    }
                    return added;
                }
                None => self.convert_to_table(),
            }
        }
        let Repr::Table(table) = &mut self.repr else { unreachable!("converted above") };
        let added = table.dict.insert(member.into());
        if added {
            table.payload += member.len();
        }
        added
    }

    /// Adds a member taken from another set.
    pub fn add_member(&mut self, member: Member<'_>) -> bool {
        match (member, &mut self.repr) {
            (Member::Int(v), Repr::Intset(ints)) => {
                let added = ints.insert(v);
                if added && ints.len() as i64 > max_intset_entries() {
                    self.convert_to_table();
                }
                added
            }
            _ => member.with_bytes(|b| self.add(b)),
        }
    }

    /// Removes `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Intset(ints) => as_int(member).is_some_and(|v| ints.remove(v)),
            Repr::Table(table) => {
                let removed = table.dict.swap_remove(member);
                if removed {
                    table.payload -= member.len();
                    shrink_if_sparse(&mut table.dict);
                }
                removed
            }
        }
    }

    /// Iterates over the members (intsets in ascending order).
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Intset(ints) => Iter::Intset(ints.iter()),
            Repr::Table(table) => Iter::Table(table.dict.iter()),
        }
    }

    /// The member at `index` in storage order.
    fn nth(&self, index: usize) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Intset(ints) => ints.get(index).map(Member::Int),
            Repr::Table(table) => table.dict.get_index(index).map(|m| Member::Bytes(m)),
        }
    }

    /// A random member, each with the same probability.
    pub fn random(&self, rng: &mut impl Rng) -> Option<Member<'_>> {
        if self.is_empty() {
            return None;
        }
        self.nth(rng.gen_range(0..self.len()))
    }

    /// Removes and returns a random member.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        let index = rng.gen_range(0..self.len());
        match &mut self.repr {
            Repr::Intset(ints) => Some(itoa::Buffer::new().format(ints.remove_at(index)).as_bytes().to_vec()),
            Repr::Table(table) => {
                let member = table.dict.swap_remove_index(index)?;
                table.payload -= member.len();
                shrink_if_sparse(&mut table.dict);
                Some(member.into_vec())
            }
        }
    }

    /// Calls `f` with `count` random members, repetitions allowed.
    pub fn random_members<'a>(&'a self, count: usize, rng: &mut impl Rng, mut f: impl FnMut(Member<'a>)) {
        let len = self.len();
        if len == 0 {
            return;
        }
        for _ in 0..count {
            if let Some(member) = self.nth(rng.gen_range(0..len)) {
                f(member);
            }
        }
    }

    /// Calls `f` with `count` distinct random members (all of them when
    /// `count` is at least the length).
    pub fn random_distinct_members<'a>(&'a self, count: usize, rng: &mut impl Rng, mut f: impl FnMut(Member<'a>)) {
        let len = self.len();
        for index in rand::seq::index::sample(rng, len, count.min(len)).iter() {
            if let Some(member) = self.nth(index) {
                f(member);
            }
        }
    }

    /// One SSCAN step: calls `f` on the members visited from `cursor`
    /// (about `count` of them; all of an intset at once) and returns the
    /// next cursor, 0 at the end.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(Member<'a>)) -> u64 {
        match &self.repr {
            Repr::Intset(ints) => {
                ints.iter().for_each(|v| f(Member::Int(v)));
                0
            }
            Repr::Table(table) => {
                let (range, next) = cursor::scan_range(table.dict.len(), cursor, count);
                for index in range.rev() {
                    if let Some(member) = table.dict.get_index(index) {
                        f(Member::Bytes(member));
                    }
                }
                next
            }
        }
    }

    fn convert_to_table(&mut self) {
        let Repr::Intset(ints) = &self.repr else { return };
        let dict = Dict::with_capacity_and_hasher(ints.len() + 1, RandomState::default());
        let mut table = Box::new(Table { dict, payload: 0 });
        let mut buf = itoa::Buffer::new();
        for v in ints.iter() {
            let text = buf.format(v).as_bytes();
            table.payload += text.len();
            table.dict.insert(text.into());
        }
        self.repr = Repr::Table(table);
    }
}

/// Gives memory back once a table is mostly empty.
fn shrink_if_sparse(dict: &mut Dict) {
    if dict.capacity() > 64 && dict.len() < dict.capacity() / 8 {
        dict.shrink_to(dict.len() * 2);
    }
}

impl PartialEq for Set {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains_member(m))
    }
}

/// Iterator over a set's members.
#[derive(Debug)]
pub enum Iter<'a> {
    Intset(std::iter::Copied<std::slice::Iter<'a, i64>>),
    Table(indexmap::set::Iter<'a, Box<[u8]>>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Intset(it) => it.next().map(Member::Int),
            Iter::Table(it) => it.next().map(|m| Member::Bytes(m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(s: &Set) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
        all.sort();
        all
    }

    #[test]
    fn intset_until_a_string_arrives() {
        let mut s = Set::for_first(b"1");
        assert!(s.add(b"1"));
        assert!(s.add(b"2"));
        assert!(!s.add(b"2"));
        assert_eq!(s.encoding(), "intset");
        assert!(s.contains(b"2"));
        assert!(!s.contains(b"02"));
        assert!(s.add(b"a"));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(members(&s), vec![b"1".to_vec(), b"2".to_vec(), b"a".to_vec()]);
        assert!(s.remove(b"a"));
        assert_eq!(s.encoding(), "hashtable", "conversion is one way");
    }

    #[test]
    fn first_member_decides_the_encoding() {
        assert_eq!(Set::for_first(b"x").encoding(), "hashtable");
        assert_eq!(Set::for_first(b"213244124402402314402033402").encoding(), "hashtable");
        assert_eq!(Set::for_first(b"-5").encoding(), "intset");
    }

    #[test]
    fn intset_converts_above_max_entries() {
        let mut s = Set::new();
        for i in 0..512 {
            s.add(i.to_string().as_bytes());
        }
        assert_eq!(s.encoding(), "intset");
        s.add(b"512");
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 513);
    }

    #[test]
    fn members_compare_across_encodings() {
        let mut ints = Set::new();
        ints.add(b"7");
        let mut table = Set::for_first(b"x");
        table.add(b"7");
        assert!(table.contains_member(Member::Int(7)));
        assert!(ints.contains_member(Member::Bytes(b"7")));
        table.remove(b"x");
        assert_eq!(ints, table);
        let digest = |s: &Set| {
            let mut d = std::hash::DefaultHasher::new();
            s.digest(&mut d);
            d.finish()
        };
        assert_eq!(digest(&ints), digest(&table));
    }

    #[test]
    fn pop_until_empty() {
        let mut s = Set::for_first(b"a");
        for m in [&b"a"[..], b"b", b"c"] {
            s.add(m);
        }
        let mut rng = rand::thread_rng();
        let mut popped: Vec<Vec<u8>> = std::iter::from_fn(|| s.pop_random(&mut rng)).collect();
        popped.sort();
        assert_eq!(popped, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert!(s.is_empty());
    }
}
