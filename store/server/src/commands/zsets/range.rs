//! ZRANGE and ZRANGESTORE (by rank, BYSCORE or BYLEX, REV, LIMIT), and the
//! older ZREVRANGE, Z[REV]RANGEBYSCORE and Z[REV]RANGEBYLEX, all through one
//! parser (`zrangeGenericCommand`).
//!
//! Every form resolves to a [`Selection`]: a starting rank, a direction and a
//! count, read from the set in O(log n + count).

use std::ops::Range;

use cairn_engine::types::zset::{AddFlags, LexRange, ScoreRange};
use cairn_engine::types::ZSet;

use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::write::{rank_span, NOT_A_FLOAT_RANGE, NOT_A_LEX_RANGE};
use super::{reply_members, store_result, zset_mut};

/// How the range is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    Auto,
    Rank,
    Score,
    Lex,
}

/// A parsed range request.
#[derive(Debug)]
struct Request {
    by: By,
    reverse: bool,
    with_scores: bool,
    offset: i64,
    /// -1: no limit.
    limit: i64,
    spec: Spec,
}

/// The bounds, parsed according to `By`.
#[derive(Debug)]
enum Spec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Members to read: `count` from rank `first`, going down when `reverse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Selection {
    first: usize,
    count: usize,
    reverse: bool,
}

impl Selection {
    const EMPTY: Selection = Selection { first: 0, count: 0, reverse: false };
}

pub fn zrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Auto, None)
}

pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Rank, Some(true))
}

pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Score, Some(false))
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Score, Some(true))
}

pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Lex, Some(false))
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_to_client(ctx, args, By::Lex, Some(true))
}

/// Parses `<min> <max> [options...]` (`rest` starts at `<min>`).
fn parse_request(rest: &[&[u8]], store: bool, by: By, direction: Option<bool>) -> Result<Request, CmdError> {
    let mut request = Request {
        by,
        reverse: direction.unwrap_or(false),
        with_scores: false,
        offset: 0,
        limit: -1,
        spec: Spec::Rank(0, 0),
    };
    let mut j = 2;
    while j < rest.len() {
        let a = rest[j];
        let left = rest.len() - j - 1;
        if !store && is(a, "withscores") {
            request.with_scores = true;
        } else if is(a, "limit") && left >= 2 {
            request.offset = int_arg(rest[j + 1])?;
            request.limit = int_arg(rest[j + 2])?;
            j += 2;
        } else if direction.is_none() && !request.reverse && is(a, "rev") {
            request.reverse = true;
        } else if request.by == By::Auto && is(a, "bylex") {
            request.by = By::Lex;
        } else if request.by == By::Auto && is(a, "byscore") {
            request.by = By::Score;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if request.by == By::Auto {
        request.by = By::Rank;
    }
    if request.limit != -1 && request.by == By::Rank {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if request.with_scores && request.by == By::Lex {
        return Err(CmdError::Static("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    let (min, max) = match request.by {
        By::Score | By::Lex if request.reverse => (rest[1], rest[0]),
        _ => (rest[0], rest[1]),
    };
    request.spec = match request.by {
        By::Score => Spec::Score(ScoreRange::parse(min, max).ok_or(NOT_A_FLOAT_RANGE)?),
        By::Lex => Spec::Lex(LexRange::parse(min, max).ok_or(NOT_A_LEX_RANGE)?),
        By::Auto | By::Rank => Spec::Rank(int_arg(min)?, int_arg(max)?),
    };
    Ok(request)
}

/// Where in `z` the request's members are.
fn select(z: &ZSet, request: &Request) -> Selection {
    match &request.spec {
        Spec::Rank(start, end) => {
            let Some(span) = rank_span(*start, *end, z.len()) else { return Selection::EMPTY };
            let first = if request.reverse { z.len() - 1 - span.start } else { span.start };
            Selection { first, count: span.len(), reverse: request.reverse }
        }
        Spec::Score(range) => limited(z.score_span(range), z.len(), request),
        Spec::Lex(range) => limited(z.lex_span(range), z.len(), request),
    }
}

/// Applies LIMIT to the ranks `span` (as Redis walks it: a negative offset
/// runs off the end, a negative count means all).
fn limited(span: Range<usize>, len: usize, request: &Request) -> Selection {
    let offset = request.offset;
    if offset < 0 || (offset > 0 && offset as u64 >= len as u64) || offset as u64 >= span.len() as u64 {
        return Selection::EMPTY;
    }
    let available = span.len() - offset as usize;
    let count = if request.limit < 0 { available } else { available.min(request.limit as usize) };
    let first = if request.reverse { span.end - 1 - offset as usize } else { span.start + offset as usize };
    Selection { first, count, reverse: request.reverse }
}

fn range_to_client(ctx: &mut Ctx<'_>, args: &[&[u8]], by: By, direction: Option<bool>) -> CmdResult {
    let request = parse_request(&args[2..], false, by, direction)?;
    let (key, db, now) = (args[1], ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(z) = zset_mut(shard.db(db), key, now)? else {
        drop(shard);
        ctx.out.array(0);
        return Ok(());
    };
    let selection = select(z, &request);
    let items = z.iter_from(selection.first, selection.reverse);
    reply_members(&mut ctx.out, selection.count, items, request.with_scores);
    Ok(())
}

/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count].
pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let request = parse_request(&args[3..], true, By::Auto, None)?;
    let (dst, src, db, now) = (args[1], args[2], ctx.db(), ctx.now_ms);
    let mut guard = ctx.server.keyspace.lock_keys([dst, src]);
    let result = match zset_mut(guard.table(db, src), src, now)? {
        Some(z) => {
            let selection = select(z, &request);
            // Built as Redis builds it, so the encoding (and a listpack's -0 -> 0) match.
            let hint = (request.by == By::Rank).then_some(selection.count);
            let mut result = ZSet::with_len_hint(hint);
            for (member, score) in z.iter_from(selection.first, selection.reverse).take(selection.count) {
                result.add(score, member, AddFlags::default());
            }
            result
        }
        None => ZSet::new(),
    };
    let stored = store_result(guard.table(db, dst), dst, result, now, "zrangestore");
    if stored > 0 {
        ctx.server.blocking.signal(db, dst);
    }
    drop(guard);
    ctx.out.int(stored as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> ZSet {
        let mut z = ZSet::new();
        for (i, m) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            z.add(i as f64, m.as_bytes(), AddFlags::default());
        }
        z
    }

    fn members(z: &ZSet, rest: &[&[u8]], by: By, direction: Option<bool>) -> Vec<String> {
        let request = parse_request(rest, false, by, direction).expect("valid");
        let s = select(z, &request);
        z.iter_from(s.first, s.reverse).take(s.count).map(|(m, _)| String::from_utf8_lossy(m).into_owned()).collect()
    }

    #[test]
    fn selections() {
        let z = set();
        assert_eq!(members(&z, &[b"1", b"-2"], By::Auto, None), ["b", "c", "d"]);
        assert_eq!(members(&z, &[b"0", b"1"], By::Rank, Some(true)), ["e", "d"]);
        assert_eq!(members(&z, &[b"(1", b"+inf", b"LIMIT", b"1", b"2"], By::Score, Some(false)), ["d", "e"]);
        assert_eq!(
            members(&z, &[b"+inf", b"-inf", b"LIMIT", b"1", b"-1"], By::Score, Some(true)),
            ["d", "c", "b", "a"]
        );
        assert_eq!(members(&z, &[b"0", b"10", b"LIMIT", b"-1", b"2"], By::Score, Some(false)), Vec::<String>::new());
        assert_eq!(members(&z, &[b"5", b"0", b"BYSCORE", b"REV", b"LIMIT", b"0", b"2"], By::Auto, None), ["e", "d"]);
    }

    #[test]
    fn option_errors() {
        let parse = |rest: &[&[u8]]| parse_request(rest, false, By::Auto, None).err();
        assert!(
            matches!(parse(&[b"0", b"-1", b"limit", b"1", b"2"]), Some(CmdError::Static(m)) if m.contains("LIMIT"))
        );
        assert!(matches!(parse(&[b"[a", b"[b", b"bylex", b"withscores"]), Some(CmdError::Static(_))));
        assert_eq!(parse(&[b"0", b"-1", b"bogus"]), Some(CmdError::Syntax));
        for (first, second) in [("rev", "rev"), ("byscore", "byscore"), ("bylex", "byscore")] {
            assert_eq!(parse(&[b"0", b"-1", first.as_bytes(), second.as_bytes()]), Some(CmdError::Syntax));
        }
        assert_eq!(parse(&[b"x", b"1"]), Some(CmdError::NotInteger));
        assert_eq!(parse_request(&[b"0", b"1", b"withscores"], true, By::Auto, None).err(), Some(CmdError::Syntax));
    }
}
