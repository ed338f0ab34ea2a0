//! LCS: the longest common subsequence of two strings, as Redis 7.0 computes
//! it (`LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`).
//!
//! Redis fills the full dynamic-programming table of `u32` lengths and walks
//! it back from the end; the walk's tie-breaking decides which subsequence and
//! which match ranges are reported, so this file keeps the same table and the
//! same walk. The table's size is bounded by `proto-max-bulk-len`, with
//! Redis's error when it would exceed it. Missing keys are empty strings.

use std::sync::atomic::Ordering;

use super::strings::as_str;
use super::{int_arg, is, CmdError, CmdResult, Ctx};

const NOT_STRINGS: CmdError = CmdError::Static("ERR The specified keys must contain string values");
const LEN_AND_IDX: CmdError = CmdError::Static("ERR If you want both the length and indexes, please just use IDX.");
const TOO_LONG: CmdError = CmdError::Static("ERR String too long for LCS");
const TABLE_TOO_BIG: CmdError =
    CmdError::Static("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
const ALLOC_FAILED: CmdError = CmdError::Static("ERR Insufficient memory, failed allocating transient memory for LCS");

/// LCS's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

fn parse_options(args: &[&[u8]]) -> Result<LcsOptions, CmdError> {
    let mut options = LcsOptions::default();
    let mut j = 0;
    while j < args.len() {
        let arg = args[j];
        if is(arg, "idx") {
            options.idx = true;
        } else if is(arg, "len") {
            options.len = true;
        } else if is(arg, "withmatchlen") {
            options.with_match_len = true;
        } else if is(arg, "minmatchlen") && j + 1 < args.len() {
            options.min_match_len = int_arg(args[j + 1])?.max(0) as u64;
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if options.len && options.idx {
        return Err(LEN_AND_IDX);
    }
    Ok(options)
}

/// The table of LCS lengths: `cell(i, j)` is the LCS length of `a[..i]` and
/// `b[..j]`, stored row by row.
struct LcsTable {
    columns: usize,
    cells: Vec<u32>,
}

impl LcsTable {
    /// Fills the table for `a` and `b`; refuses tables larger than
    /// `max_bytes`, as Redis does.
    fn build(a: &[u8], b: &[u8], max_bytes: usize) -> Result<LcsTable, CmdError> {
        if a.len() as u64 >= u64::from(u32::MAX - 1) || b.len() as u64 >= u64::from(u32::MAX - 1) {
            return Err(TOO_LONG);
        }
        let columns = b.len() + 1;
        let cell_count = (a.len() + 1).checked_mul(columns).ok_or(ALLOC_FAILED)?;
        let table_bytes = cell_count.checked_mul(std::mem::size_of::<u32>()).ok_or(ALLOC_FAILED)?;
        if table_bytes > max_bytes {
            return Err(TABLE_TOO_BIG);
        }
        let mut cells = Vec::new();
        cells.try_reserve_exact(cell_count).map_err(|_| ALLOC_FAILED)?;
        cells.resize(cell_count, 0u32);
        for (i, &a_byte) in a.iter().enumerate() {
            let (done, rest) = cells.split_at_mut((i + 1) * columns);
            let above = &done[i * columns..];
            let row = &mut rest[..columns];
            for (j, &b_byte) in b.iter().enumerate() {
                row[j + 1] = if a_byte == b_byte { above[j] + 1 } else { above[j + 1].max(row[j]) };
            }
        }
        Ok(LcsTable { columns, cells })
    }

    fn cell(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.columns + j]
    }

    /// The LCS length of the whole strings.
    fn len(&self) -> u32 {
        self.cells[self.cells.len() - 1]
    }
}

/// A run of consecutive matching bytes: inclusive ranges in `a` and `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MatchRange {
    a: (usize, usize),
    b: (usize, usize),
}

impl MatchRange {
    fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// What the walk back through the table produces.
#[derive(Debug, Default, PartialEq, Eq)]
struct LcsWalk {
    subsequence: Vec<u8>,
    /// From the end of the strings towards their start, as Redis emits them.
    matches: Vec<MatchRange>,
}

/// Walks the table back from `(a.len(), b.len())` exactly as Redis does,
/// collecting the subsequence and the match ranges of at least
/// `min_match_len` bytes (0: all).
fn walk(table: &LcsTable, a: &[u8], b: &[u8], min_match_len: u64) -> LcsWalk {
    let mut subsequence = vec![0u8; table.len() as usize];
    let mut matches = Vec::new();
    let mut remaining = subsequence.len();
    let (mut i, mut j) = (a.len(), b.len());
    let mut current: Option<MatchRange> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            subsequence[remaining - 1] = a[i - 1];
            match current.as_mut() {
                None => current = Some(MatchRange { a: (i - 1, i - 1), b: (j - 1, j - 1) }),
                // Extend the range backwards while it stays contiguous.
                Some(range) if range.a.0 == i && range.b.0 == j => {
                    range.a.0 -= 1;
                    range.b.0 -= 1;
                }
                Some(_) => emit = true,
            }
            // A range touching the start of either string cannot grow further.
            if current.is_some_and(|r| r.a.0 == 0 || r.b.0 == 0) {
                emit = true;
            }
            remaining -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table.cell(i - 1, j) > table.cell(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = current.is_some();
        }
        if emit {
            if let Some(range) = current.take() {
                if min_match_len == 0 || range.len() as u64 >= min_match_len {
                    matches.push(range);
                }
            }
        }
    }
    LcsWalk { subsequence, matches }
}

/// Copies the values of both keys (missing keys read as empty).
fn load_strings(ctx: &mut Ctx<'_>, key_a: &[u8], key_b: &[u8]) -> Result<(Vec<u8>, Vec<u8>), CmdError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys([key_a, key_b]);
    let mut values = [None, None];
    let mut wrong_type = false;
    for (slot, key) in values.iter_mut().zip([key_a, key_b]) {
        if let Some(entry) = guard.table(db, key).get(key, now) {
            match as_str(&entry.value) {
                Ok(s) => *slot = Some(s.to_vec()),
                Err(_) => wrong_type = true,
            }
        }
    }
    drop(guard);
    for value in &values {
        if value.is_some() {
            ctx.stats.keyspace_hits.add(1);
        } else if !wrong_type {
            ctx.stats.keyspace_misses.add(1);
        }
    }
    if wrong_type {
        return Err(NOT_STRINGS);
    }
    let [a, b] = values;
    Ok((a.unwrap_or_default(), b.unwrap_or_default()))
}

fn write_idx_reply(ctx: &mut Ctx<'_>, result: &LcsWalk, lcs_len: u32, with_match_len: bool) {
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(result.matches.len());
    for range in &result.matches {
        ctx.out.array(if with_match_len { 3 } else { 2 });
        for (start, end) in [range.a, range.b] {
            ctx.out.array(2);
            ctx.out.int(start as i64);
            ctx.out.int(end as i64);
        }
        if with_match_len {
            ctx.out.int(range.len() as i64);
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.int(i64::from(lcs_len));
}

pub fn lcs(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (a, b) = load_strings(ctx, args[1], args[2])?;
    let options = parse_options(&args[3..])?;
    let max_bytes = ctx.server.runtime.proto_max_bulk_len.load(Ordering::Relaxed);
    let table = LcsTable::build(&a, &b, max_bytes)?;
    if options.len {
        ctx.out.int(i64::from(table.len()));
        return Ok(());
    }
    let result = walk(&table, &a, &b, options.min_match_len);
    if options.idx {
        write_idx_reply(ctx, &result, table.len(), options.with_match_len);
    } else {
        ctx.out.bulk(&result.subsequence);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 512 * 1024 * 1024;

    fn lcs_of(a: &str, b: &str, min_match_len: u64) -> (String, Vec<MatchRange>) {
        let table = LcsTable::build(a.as_bytes(), b.as_bytes(), MAX).expect("small table");
        let walk = walk(&table, a.as_bytes(), b.as_bytes(), min_match_len);
        assert_eq!(walk.subsequence.len(), table.len() as usize);
        (String::from_utf8(walk.subsequence).expect("ascii"), walk.matches)
    }

    fn range(a: (usize, usize), b: (usize, usize)) -> MatchRange {
        MatchRange { a, b }
    }

    #[test]
    fn redis_documentation_example() {
        // From the LCS command page and unit/type/string.tcl.
        let (s, matches) = lcs_of("ohmytext", "mynewtext", 0);
        assert_eq!(s, "mytext");
        assert_eq!(matches, vec![range((4, 7), (5, 8)), range((2, 3), (0, 1))]);
        let (_, matches) = lcs_of("ohmytext", "mynewtext", 4);
        assert_eq!(matches, vec![range((4, 7), (5, 8))]);
    }

    #[test]
    fn redis_test_suite_strings() {
        // unit/type/string.tcl, "LCS basic" / "LCS indexes".
        let rna1 = "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG";
        let rna2 = "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT";
        let expected = "ACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT";
        let (s, matches) = lcs_of(rna1, rna2, 0);
        assert_eq!(s, expected);
        let expected_matches = vec![
            range((238, 238), (239, 239)),
            range((236, 236), (238, 238)),
            range((229, 230), (236, 237)),
            range((224, 224), (235, 235)),
            range((1, 222), (13, 234)),
        ];
        assert_eq!(matches, expected_matches);
        assert_eq!(lcs_of(rna1, rna2, 5).1, vec![range((1, 222), (13, 234))]);
    }

    #[test]
    fn empty_and_disjoint_strings() {
        assert_eq!(lcs_of("", "", 0), (String::new(), vec![]));
        assert_eq!(lcs_of("abc", "", 0), (String::new(), vec![]));
        assert_eq!(lcs_of("abc", "xyz", 0), (String::new(), vec![]));
        assert_eq!(lcs_of("abc", "abc", 0), ("abc".into(), vec![range((0, 2), (0, 2))]));
        assert_eq!(lcs_of("a", "xxa", 0), ("a".into(), vec![range((0, 0), (2, 2))]));
    }

    #[test]
    fn options() {
        let args = |a: &[&'static str]| a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>();
        let parsed = parse_options(&args(&["IDX", "minmatchlen", "-5", "WithMatchLen"])).expect("valid");
        assert_eq!(parsed, LcsOptions { len: false, idx: true, with_match_len: true, min_match_len: 0 });
        assert_eq!(parse_options(&args(&["len", "idx"])), Err(LEN_AND_IDX));
        assert_eq!(parse_options(&args(&["minmatchlen"])), Err(CmdError::Syntax));
        assert_eq!(parse_options(&args(&["minmatchlen", "x"])), Err(CmdError::NotInteger));
        assert_eq!(parse_options(&args(&["bogus", "len", "idx"])), Err(CmdError::Syntax));
    }

    #[test]
    fn table_size_is_bounded() {
        let a = vec![b'a'; 1000];
        assert!(matches!(LcsTable::build(&a, &a, 1000), Err(TABLE_TOO_BIG)));
        assert!(LcsTable::build(&a, &a, 4 * 1001 * 1001).is_ok());
        assert!(matches!(LcsTable::build(&a, &a, 4 * 1001 * 1001 - 1), Err(TABLE_TOO_BIG)));
    }
}
