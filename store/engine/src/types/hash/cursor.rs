//! The SCAN cursor of the dense tables behind large hashes and sets.
//!
//! Those tables keep their entries in a vector: inserts append, deletes move
//! the last entry into the hole (`swap_remove`). A scan walks the positions
//! from the end towards the start, and its cursor is the number of positions
//! still to visit. That gives HSCAN/SSCAN Redis's guarantee:
//!
//! - an entry present for the whole iteration is returned: it only moves
//!   when it is the last entry, and then into a lower position, which is
//!   either still to visit (it is below the cursor) or was already visited
//!   (it was visited before it moved);
//! - entries may be returned twice (an entry that moves down after being
//!   visited), and entries added during the iteration may or may not be.
//!
//! Cursor 0 starts an iteration; a returned cursor of 0 ends it.

use std::ops::Range;

/// The positions to visit for `cursor` in a table of `len` entries, at most
/// `count` of them (visit them from the end of the range down), and the
/// cursor to return.
pub fn scan_range(len: usize, cursor: u64, count: usize) -> (Range<usize>, u64) {
    let remaining = if cursor == 0 { len } else { usize::try_from(cursor).unwrap_or(usize::MAX).min(len) };
    let start = remaining.saturating_sub(count.max(1));
    (start..remaining, start as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_down_to_zero() {
        assert_eq!(scan_range(25, 0, 10), (15..25, 15));
        assert_eq!(scan_range(25, 15, 10), (5..15, 5));
        assert_eq!(scan_range(25, 5, 10), (0..5, 0));
        // The table shrank below the cursor: continue from its end.
        assert_eq!(scan_range(3, 15, 10), (0..3, 0));
        assert_eq!(scan_range(0, 0, 10), (0..0, 0));
    }

    #[test]
    fn entries_present_throughout_are_returned_despite_swap_removes() {
        // Simulate a table of 100 entries where, after each scan call, the
        // entry at a pseudo-random position is swap-removed and a new one is
        // appended.
        let mut table: Vec<u32> = (0..100).collect();
        let mut removed = std::collections::HashSet::new();
        let mut seen = std::collections::HashSet::new();
        let mut next_new = 1000;
        let mut cursor = 0;
        let mut step = 7usize;
        loop {
            let (range, next) = scan_range(table.len(), cursor, 5);
            for pos in range.rev() {
                seen.insert(table[pos]);
            }
            let victim = step % table.len();
            removed.insert(table.swap_remove(victim));
            table.push(next_new);
            next_new += 1;
            step = step.wrapping_mul(31).wrapping_add(11) % 1_000_003;
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        for v in 0..100 {
            assert!(removed.contains(&v) || seen.contains(&v), "{v} missed");
        }
    }
}
