//! The sorted set type: unique members ordered by score, then by member bytes.
//!
//! # Layout
//!
//! - [`listpack`]: the small encoding, a sorted vector (OBJECT ENCODING
//!   `listpack`), used while the set has at most `zset-max-listpack-entries`
//!   members of at most `zset-max-listpack-value` bytes.
//! - [`skiplist`]: the large encoding, Redis's skiplist with spans plus a
//!   member index (`skiplist`): O(log n) insert, delete, rank and rank lookup.
//!   As in Redis 7.0, a set converts one way only, from listpack to skiplist,
//!   when an insert would break a limit; results of ZUNIONSTORE & co. and
//!   ZRANGESTORE start in whichever encoding fits them.
//! - [`score`]: parsing of scores and of score and lexicographic ranges.
//!
//! Every range operation reduces to ranks: [`ZSet::count_while`] finds a
//! partition point in O(log n), so a score or lex range is the rank interval
//! between two partition points ([`ZSet::score_span`], [`ZSet::lex_span`]),
//! which is then read ([`ZSet::iter_from`]) or removed ([`ZSet::remove_ranks`]).

pub mod listpack;
pub mod score;
pub mod skiplist;

use std::hash::Hasher;
use std::ops::Range;

pub use listpack::ListPack;
pub use score::{parse_score, LexBound, LexRange, ScoreRange};
pub use skiplist::SkipList;

use crate::types::encoding::LIMITS;

/// A sorted set value.
#[derive(Debug, Clone)]
pub struct ZSet {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    ListPack(ListPack),
    SkipList(SkipList),
}

/// ZADD's options that change what one add does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddFlags {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater.
    pub gt: bool,
    /// Only update when the new score is lower.
    pub lt: bool,
    /// The score is an increment.
    pub incr: bool,
}

/// What one add did; the scores are the member's score afterwards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AddOutcome {
    Added(f64),
    Updated(f64),
    /// Processed, but the score was already that value.
    Unchanged(f64),
    /// Not processed (NX, XX, GT or LT said no).
    Skipped,
    /// The resulting score would be NaN; nothing changed.
    NotANumber,
}

impl Default for ZSet {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.encoding() == other.encoding() && self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// Redis's order: by score (-0 equals 0; scores are never NaN), then member bytes.
pub fn compare(score_a: f64, member_a: &[u8], score_b: f64, member_b: &[u8]) -> std::cmp::Ordering {
    score_a.partial_cmp(&score_b).unwrap_or(std::cmp::Ordering::Equal).then_with(|| member_a.cmp(member_b))
}

fn max_entries() -> usize {
    LIMITS.zset_max_listpack_entries.get().max(0) as usize
}

fn max_value() -> usize {
    LIMITS.zset_max_listpack_value.get().max(0) as usize
}

impl ZSet {
    /// An empty set in the small encoding (the first add converts it if needed).
    pub fn new() -> ZSet {
        ZSet { repr: Repr::ListPack(ListPack::default()) }
    }

    /// An empty set for a result of `len_hint` members added one by one
    /// (ZRANGESTORE's `zrangeResultBeginStore`): a skiplist when the hint
    /// exceeds `zset-max-listpack-entries`, else a listpack that converts as
    /// adds require.
    pub fn with_len_hint(len_hint: Option<usize>) -> ZSet {
        match len_hint {
            Some(len) if len > max_entries() => ZSet { repr: Repr::SkipList(SkipList::new()) },
            _ => ZSet::new(),
        }
    }

    /// A set of distinct members in the encoding Redis gives a computed result
    /// (`zsetConvertToListpackIfNeeded`): listpack when it fits the limits.
    pub fn from_entries(mut entries: Vec<(Box<[u8]>, f64)>) -> ZSet {
        let fits = entries.len() <= max_entries() && entries.iter().all(|(m, _)| m.len() <= max_value());
        if fits {
            entries.sort_by(|a, b| compare(a.1, &a.0, b.1, &b.0));
            let sorted = entries.into_iter().map(|(member, score)| listpack::Entry { member, score }).collect();
            return ZSet { repr: Repr::ListPack(ListPack::from_sorted(sorted)) };
        }
        let mut list = SkipList::new();
        for (member, score) in &entries {
            list.insert(*score, member);
        }
        ZSet { repr: Repr::SkipList(list) }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::ListPack(lp) => lp.len(),
            Repr::SkipList(sl) => sl.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::ListPack(_) => "listpack",
            Repr::SkipList(_) => "skiplist",
        }
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::ListPack(lp) => lp.heap_bytes(),
            Repr::SkipList(sl) => sl.heap_bytes(),
        }
    }

    /// Feeds the members and scores, in order, to a digest (DEBUG DIGEST).
    pub fn digest(&self, h: &mut dyn Hasher) {
        h.write_usize(self.len());
        for (member, score) in self.iter() {
            h.write(member);
            h.write_u64(score.to_bits());
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::ListPack(lp) => lp.find(member).map(|i| lp.entries()[i].score),
            Repr::SkipList(sl) => sl.find(member).map(|slot| sl.score(slot)),
        }
    }

    /// Adds or updates one member as ZADD does (`zsetAdd`), converting to the
    /// skiplist encoding when a new member would break the listpack limits.
    pub fn add(&mut self, score: f64, member: &[u8], flags: AddFlags) -> AddOutcome {
        if score.is_nan() {
            return AddOutcome::NotANumber;
        }
        let Some(current) = self.score(member) else {
            if flags.xx {
                return AddOutcome::Skipped;
            }
            self.insert_new(score, member);
            return AddOutcome::Added(score);
        };
        if flags.nx {
            return AddOutcome::Skipped;
        }
        let new = if flags.incr { score + current } else { score };
        if new.is_nan() {
            return AddOutcome::NotANumber;
        }
        if (flags.lt && new >= current) || (flags.gt && new <= current) {
            return AddOutcome::Skipped;
        }
        if new == current {
            return AddOutcome::Unchanged(new);
        }
        match &mut self.repr {
            Repr::ListPack(lp) => {
                if let Some(i) = lp.find(member) {
                    lp.set_score(i, new);
                }
            }
            Repr::SkipList(sl) => {
                if let Some(slot) = sl.find(member) {
                    sl.set_score(slot, new);
                }
            }
        }
        AddOutcome::Updated(new)
    }

    fn insert_new(&mut self, score: f64, member: &[u8]) {
        if let Repr::ListPack(lp) = &self.repr {
            if lp.len() + 1 > max_entries() || member.len() > max_value() {
                self.convert_to_skiplist();
            }
        }
        match &mut self.repr {
            Repr::ListPack(lp) => lp.insert(score, member),
            Repr::SkipList(sl) => {
                sl.insert(score, member);
            }
        }
    }

    fn convert_to_skiplist(&mut self) {
        let Repr::ListPack(lp) = std::mem::replace(&mut self.repr, Repr::SkipList(SkipList::new())) else {
            return;
        };
        if let Repr::SkipList(sl) = &mut self.repr {
            for entry in lp.into_entries() {
                sl.insert(entry.score, &entry.member);
            }
        }
    }

    /// Removes `member`; whether it was present.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::ListPack(lp) => lp.find(member).map(|i| lp.remove_at(i)).is_some(),
            Repr::SkipList(sl) => sl.remove(member).is_some(),
        }
    }

    /// The 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::ListPack(lp) => lp.find(member),
            Repr::SkipList(sl) => sl.find(member).map(|slot| sl.rank(slot)),
        }
    }

    /// The member and score at 0-based `rank`.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::ListPack(lp) => lp.entries().get(rank).map(|e| (&*e.member, e.score)),
            Repr::SkipList(sl) => sl.at_rank(rank).map(|slot| (sl.member(slot), sl.score(slot))),
        }
    }

    /// Iterates in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0, false)
    }

    /// Iterates from 0-based `rank` upwards, or downwards when `reverse`.
    pub fn iter_from(&self, rank: usize, reverse: bool) -> Iter<'_> {
        let cursor = match &self.repr {
            Repr::ListPack(lp) => {
                Cursor::ListPack { entries: lp.entries(), next: Some(rank).filter(|&r| r < lp.len()) }
            }
            Repr::SkipList(sl) => Cursor::SkipList { list: sl, next: sl.at_rank(rank) },
        };
        Iter { cursor, reverse }
    }

    /// How many leading members satisfy `pred(score, member)`, which must
    /// hold for a prefix of the order (O(log n) in the skiplist encoding).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        match &self.repr {
            Repr::ListPack(lp) => lp.count_while(pred),
            Repr::SkipList(sl) => sl.count_while(pred),
        }
    }

    /// The ranks of the members whose score is in `range`.
    pub fn score_span(&self, range: &ScoreRange) -> Range<usize> {
        let start = self.count_while(|score, _| !range.above_min(score));
        let end = self.count_while(|score, _| range.below_max(score));
        start..end.max(start)
    }

    /// The ranks of the members in the lexicographic `range` (meaningful
    /// when all scores are equal, as in Redis).
    pub fn lex_span(&self, range: &LexRange) -> Range<usize> {
        let start = self.count_while(|_, member| !range.above_min(member));
        let end = self.count_while(|_, member| range.below_max(member));
        start..end.max(start)
    }

    /// Removes the members with 0-based ranks `start..end`; returns how many.
    pub fn remove_ranks(&mut self, ranks: Range<usize>) -> usize {
        match &mut self.repr {
            Repr::ListPack(lp) => lp.remove_ranks(ranks.start, ranks.end),
            Repr::SkipList(sl) => sl.remove_ranks(ranks.start, ranks.end),
        }
    }

    /// Removes and returns the lowest (or, with `max`, the highest) member.
    pub fn pop(&mut self, max: bool) -> Option<(Box<[u8]>, f64)> {
        match &mut self.repr {
            Repr::ListPack(lp) => {
                let index = if max { lp.len().checked_sub(1)? } else { 0 };
                (index < lp.len()).then(|| lp.remove_at(index)).map(|e| (e.member, e.score))
            }
            Repr::SkipList(sl) => {
                let slot = if max { sl.last()? } else { sl.first()? };
                let member: Box<[u8]> = sl.member(slot).into();
                let score = sl.remove(&member)?;
                Some((member, score))
            }
        }
    }

    /// One ZSCAN step: calls `f` on members from `cursor`; returns the next
    /// cursor (0: done). The listpack encoding returns everything at once,
    /// as Redis does.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        match &self.repr {
            Repr::ListPack(lp) => {
                lp.entries().iter().for_each(|e| f(&e.member, e.score));
                0
            }
            Repr::SkipList(sl) => sl.scan(cursor, count, f),
        }
    }
}

/// An iterator over `(member, score)` pairs in rank order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    cursor: Cursor<'a>,
    reverse: bool,
}

#[derive(Debug, Clone)]
enum Cursor<'a> {
    ListPack { entries: &'a [listpack::Entry], next: Option<usize> },
    SkipList { list: &'a SkipList, next: Option<u32> },
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let reverse = self.reverse;
        match &mut self.cursor {
            Cursor::ListPack { entries, next } => {
                let i = (*next)?;
                *next = if reverse { i.checked_sub(1) } else { Some(i + 1).filter(|&n| n < entries.len()) };
                let entry = &entries[i];
                Some((&*entry.member, entry.score))
            }
            Cursor::SkipList { list, next } => {
                let slot = (*next)?;
                *next = if reverse { list.prev(slot) } else { list.next(slot) };
                Some((list.member(slot), list.score(slot)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(z: &ZSet) -> Vec<String> {
        z.iter().map(|(m, _)| String::from_utf8_lossy(m).into_owned()).collect()
    }

    #[test]
    fn add_flags_follow_zadd() {
        let mut z = ZSet::new();
        assert_eq!(z.add(10.0, b"x", AddFlags::default()), AddOutcome::Added(10.0));
        assert_eq!(z.add(5.0, b"x", AddFlags { gt: true, ..Default::default() }), AddOutcome::Skipped);
        assert_eq!(z.add(5.0, b"x", AddFlags { lt: true, ..Default::default() }), AddOutcome::Updated(5.0));
        assert_eq!(z.add(1.0, b"y", AddFlags { xx: true, ..Default::default() }), AddOutcome::Skipped);
        assert_eq!(z.add(1.0, b"x", AddFlags { nx: true, ..Default::default() }), AddOutcome::Skipped);
        assert_eq!(z.add(2.0, b"x", AddFlags { incr: true, ..Default::default() }), AddOutcome::Updated(7.0));
        assert_eq!(z.add(7.0, b"x", AddFlags::default()), AddOutcome::Unchanged(7.0));
        z.add(f64::INFINITY, b"x", AddFlags::default());
        assert_eq!(
            z.add(f64::NEG_INFINITY, b"x", AddFlags { incr: true, ..Default::default() }),
            AddOutcome::NotANumber
        );
        assert_eq!(z.score(b"x"), Some(f64::INFINITY));
    }

    #[test]
    fn both_encodings_agree() {
        let mut small = ZSet::new();
        let mut large = ZSet { repr: Repr::SkipList(SkipList::new()) };
        for i in 0..60u32 {
            let member = format!("m{}", (i * 7) % 41);
            let score = f64::from((i * 13) % 9);
            for z in [&mut small, &mut large] {
                z.add(score, member.as_bytes(), AddFlags::default());
            }
            if i % 5 == 0 {
                let gone = format!("m{}", i % 41);
                assert_eq!(small.remove(gone.as_bytes()), large.remove(gone.as_bytes()));
            }
        }
        assert_eq!(small.encoding(), "listpack");
        assert_eq!(large.encoding(), "skiplist");
        assert_eq!(members(&small), members(&large));
        let range = ScoreRange::parse(b"(2", b"6").expect("range");
        assert_eq!(small.score_span(&range), large.score_span(&range));
        for rank in 0..small.len() {
            assert_eq!(small.get(rank), large.get(rank));
            let (m, _) = small.get(rank).expect("rank");
            assert_eq!(large.rank(m), Some(rank));
        }
        let rev_small: Vec<_> = small.iter_from(10, true).collect();
        let rev_large: Vec<_> = large.iter_from(10, true).collect();
        assert_eq!(rev_small, rev_large);
        assert_eq!(rev_small.len(), 11);
        assert_eq!(small.pop(true), large.pop(true));
        assert_eq!(small.pop(false), large.pop(false));
    }

    #[test]
    fn lex_spans() {
        let mut z = ZSet::new();
        for m in ["alpha", "bar", "cool", "down", "elephant", "foo"] {
            z.add(0.0, m.as_bytes(), AddFlags::default());
        }
        let span = |min: &[u8], max: &[u8]| z.lex_span(&LexRange::parse(min, max).expect("range"));
        assert_eq!(span(b"-", b"[cool"), 0..3);
        assert_eq!(span(b"(bar", b"(down"), 2..3);
        assert_eq!(span(b"+", b"-").len(), 0);
        assert_eq!(span(b"[e", b"+"), 4..6);
    }

    #[test]
    fn from_entries_picks_the_encoding() {
        let small = ZSet::from_entries(vec![(b"b".as_slice().into(), 2.0), (b"a".as_slice().into(), 2.0)]);
        assert_eq!(small.encoding(), "listpack");
        assert_eq!(members(&small), ["a", "b"]);
        let long = vec![(vec![b'x'; 100].into_boxed_slice(), 1.0)];
        assert_eq!(ZSet::from_entries(long).encoding(), "skiplist");
    }
}
