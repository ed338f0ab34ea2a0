//! Ordering search results by distance as Redis does: a full sort when every
//! result is returned (glibc's `qsort`, a stable merge sort), and otherwise
//! Redis's partial quicksort `pqsort` (`pqsort.c`, from NetBSD's qsort),
//! ported step by step so that results at equal distances come out in the
//! same order.

use std::cmp::Ordering;

/// Sorts `v` with `cmp`, only as far as needed for its first `wanted` items
/// to be in place.
pub fn sort_prefix<T>(v: &mut [T], wanted: usize, cmp: impl Fn(&T, &T) -> Ordering) {
    if wanted >= v.len() {
        v.sort_by(cmp);
    } else if wanted > 0 {
        pqsort(v, 0, v.len(), &cmp, 0, wanted - 1);
    }
}

/// The median of three items, by index (`med3`).
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Ordering::Greater {
        b
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else {
        c
    }
}

/// Swaps the `n` items from `a` with the `n` items from `b` (`vecswap`).
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Whether the items `start..start + n` hold any rank of `left..=right`.
fn overlaps(start: usize, n: usize, left: usize, right: usize) -> bool {
    let before = left < start && right < start;
    let after = left >= start + n && right >= start + n;
    !(before || after)
}

/// Insertion sort of `n` items from `lo`, for small runs.
fn insertion_sort<T>(v: &mut [T], lo: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) {
    for m in lo + 1..lo + n {
        let mut l = m;
        while l > lo && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
            v.swap(l, l - 1);
            l -= 1;
        }
    }
}

/// Picks the pivot of `n` items from `lo` (median of three, or of nine
/// beyond 40 items).
fn pivot<T>(v: &[T], lo: usize, n: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let mut m = lo + n / 2;
    if n > 7 {
        let mut l = lo;
        let mut r = lo + n - 1;
        if n > 40 {
            let d = n / 8;
            l = med3(v, l, l + d, l + 2 * d, cmp);
            m = med3(v, m - d, m, m + d, cmp);
            r = med3(v, r - 2 * d, r - d, r, cmp);
        }
        m = med3(v, l, m, r, cmp);
    }
    m
}

/// `_pqsort` on the `n` items from `lo`, sorting only the parts that hold
/// ranks `left..=right`.
fn pqsort<T>(v: &mut [T], mut lo: usize, mut n: usize, cmp: &impl Fn(&T, &T) -> Ordering, left: usize, right: usize) {
    loop {
        if n < 7 {
            insertion_sort(v, lo, n, cmp);
            return;
        }
        let m = pivot(v, lo, n, cmp);
        v.swap(lo, m);
        // Items equal to the pivot gather at both ends: [lo+1, pa) and (pd, end].
        let (mut pa, mut pb) = (lo + 1, lo + 1);
        let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
        loop {
            while pb <= pc {
                let order = cmp(&v[pb], &v[lo]);
                if order == Ordering::Greater {
                    break;
                }
                if order == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let order = cmp(&v[pc], &v[lo]);
                if order == Ordering::Less {
                    break;
                }
                if order == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let end = lo + n;
        let r = (pa - lo).min(pb - pa);
        swap_runs(v, lo, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - r, r);
        let smaller = pb - pa;
        if smaller > 1 && overlaps(lo, smaller, left, right) {
            pqsort(v, lo, smaller, cmp, left, right);
        }
        let larger = pd - pc;
        if larger > 1 && overlaps(end - larger, larger, left, right) {
            lo = end - larger;
            n = larger;
            continue;
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency on `rand` here).
    fn numbers(seed: u64, len: usize) -> Vec<u64> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) % 50
            })
            .collect()
    }

    #[test]
    fn the_wanted_prefix_is_sorted() {
        for seed in 0..200 {
            for len in [0, 1, 5, 7, 8, 40, 41, 100, 300] {
                for wanted in [1, 2, 10, 50] {
                    let mut v = numbers(seed, len);
                    let mut sorted = v.clone();
                    sorted.sort();
                    sort_prefix(&mut v, wanted, |a, b| a.cmp(b));
                    let k = wanted.min(len);
                    assert_eq!(v[..k], sorted[..k], "seed {seed} len {len} wanted {wanted}");
                }
            }
        }
    }

    #[test]
    fn a_full_sort_is_stable() {
        let mut v = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
        sort_prefix(&mut v, 4, |a, b| a.0.cmp(&b.0));
        assert_eq!(v, [(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c')]);
    }
}
