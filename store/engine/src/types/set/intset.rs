//! An intset: the sorted integers of a small all-integer set (Redis's
//! `intset` encoding). Membership is a binary search; inserts and deletes
//! shift the tail, as in Redis, which keeps intsets small
//! (`set-max-intset-entries`). The values are a boxed slice of exact size.

/// Sorted, distinct integers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intset {
    values: Box<[i64]>,
}

impl Intset {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.values)
    }

    pub fn contains(&self, v: i64) -> bool {
        self.values.binary_search(&v).is_ok()
    }

    /// Inserts `v`; returns whether it was new.
    pub fn insert(&mut self, v: i64) -> bool {
        match self.values.binary_search(&v) {
            Ok(_) => false,
            Err(at) => {
                let mut values = std::mem::take(&mut self.values).into_vec();
                values.reserve_exact(1);
                values.insert(at, v);
                self.values = values.into_boxed_slice();
                true
            }
        }
    }

    /// Removes `v`; returns whether it was there.
    pub fn remove(&mut self, v: i64) -> bool {
        match self.values.binary_search(&v) {
            Ok(at) => {
                self.remove_at(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Removes and returns the value at `index` (in ascending order).
    pub fn remove_at(&mut self, index: usize) -> i64 {
        let mut values = std::mem::take(&mut self.values).into_vec();
        let v = values.remove(index);
        self.values = values.into_boxed_slice();
        v
    }

    /// The value at `index` in ascending order.
    pub fn get(&self, index: usize) -> Option<i64> {
        self.values.get(index).copied()
    }

    /// The values in ascending order.
    pub fn iter(&self) -> std::iter::Copied<std::slice::Iter<'_, i64>> {
        self.values.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_distinct() {
        let mut s = Intset::default();
        assert!(s.insert(5));
        assert!(s.insert(-3));
        assert!(s.insert(i64::MAX));
        assert!(!s.insert(5));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![-3, 5, i64::MAX]);
        assert!(s.contains(-3));
        assert!(s.remove(-3));
        assert!(!s.remove(-3));
        assert_eq!(s.remove_at(0), 5);
        assert_eq!(s.len(), 1);
    }
}
