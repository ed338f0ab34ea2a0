//! The small sorted-set encoding (Redis's `listpack`): entries in one
//! contiguous, sorted vector. Lookups by member are linear, as in Redis; the
//! size limits (`zset-max-listpack-entries/value`) keep them short.

/// One member with its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub member: Box<[u8]>,
    pub score: f64,
}

/// Entries sorted by score, then member bytes. A listpack stores a score of
/// -0 as the integer 0, so -0 reads back as 0 in this encoding (unlike the
/// skiplist, which keeps the double).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPack {
    entries: Vec<Entry>,
}

impl ListPack {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.entries.iter().map(|e| e.member.len()).sum::<usize>()
    }

    /// The position of `member`.
    pub fn find(&self, member: &[u8]) -> Option<usize> {
        self.entries.iter().position(|e| *e.member == *member)
    }

    /// Inserts a member that is not present yet, at its sorted position.
    pub fn insert(&mut self, score: f64, member: &[u8]) {
        let score = as_stored(score);
        let at = self.count_while(|s, m| s < score || (s == score && m < member));
        self.entries.insert(at, Entry { member: member.into(), score });
    }

    /// Removes and returns the entry at `index`.
    pub fn remove_at(&mut self, index: usize) -> Entry {
        self.entries.remove(index)
    }

    /// Changes the score of the entry at `index`, keeping the order.
    pub fn set_score(&mut self, index: usize, score: f64) {
        let score = as_stored(score);
        let entry = self.entries.remove(index);
        let member = &*entry.member;
        let at = self.count_while(|s, m| s < score || (s == score && m < member));
        self.entries.insert(at, Entry { score, ..entry });
    }

    /// How many leading entries satisfy `pred` (a partition point).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        self.entries.partition_point(|e| pred(e.score, &e.member))
    }

    /// Removes the entries with ranks `start..end`; returns how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.entries.len());
        if start >= end {
            return 0;
        }
        self.entries.drain(start..end);
        end - start
    }

    /// Builds from entries already sorted by score then member.
    pub fn from_sorted(mut entries: Vec<Entry>) -> ListPack {
        entries.iter_mut().for_each(|e| e.score = as_stored(e.score));
        debug_assert!(entries.windows(2).all(|w| (w[0].score, &w[0].member) < (w[1].score, &w[1].member)));
        ListPack { entries }
    }

    /// Takes the entries out, in order.
    pub fn into_entries(self) -> Vec<Entry> {
        self.entries
    }
}

/// The score as a listpack gives it back: -0 becomes 0.
fn as_stored(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_score_then_member_order() {
        let mut lp = ListPack::default();
        lp.insert(2.0, b"b");
        lp.insert(1.0, b"z");
        lp.insert(2.0, b"a");
        let order: Vec<&[u8]> = lp.entries().iter().map(|e| &*e.member).collect();
        assert_eq!(order, [&b"z"[..], b"a", b"b"]);
        let at = lp.find(b"z").expect("present");
        lp.set_score(at, 3.0);
        assert_eq!(lp.find(b"z"), Some(2));
        assert_eq!(lp.count_while(|s, _| s < 3.0), 2);
        assert_eq!(lp.remove_ranks(0, 2), 2);
        assert_eq!(lp.len(), 1);
        lp.insert(-0.0, b"zero");
        assert!(lp.entries()[0].score.is_sign_positive());
    }
}
