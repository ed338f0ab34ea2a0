//! ZADD, ZINCRBY, ZREM and ZREMRANGEBYRANK/SCORE/LEX.

use std::ops::Range;

use cairn_engine::events as ev;
use cairn_engine::types::zset::{parse_score, AddFlags, AddOutcome, LexRange, ScoreRange};
use cairn_engine::types::ZSet;
use cairn_engine::Value;

use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::{drop_if_empty, zset_mut};

const NAN_RESULT: CmdError = CmdError::Static("ERR resulting score is not a number (NaN)");
pub(super) const NOT_A_FLOAT_RANGE: CmdError = CmdError::Static("ERR min or max is not a float");
pub(super) const NOT_A_LEX_RANGE: CmdError = CmdError::Static("ERR min or max not valid string range item");

pub fn zadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, AddFlags::default())
}

/// ZINCRBY is ZADD with INCR (so `ZINCRBY key nx member` is a syntax error, as in Redis).
pub fn zincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zadd_generic(ctx, args, AddFlags { incr: true, ..AddFlags::default() })
}

/// Parses ZADD's options; returns them, CH, and the index of the first score.
fn parse_zadd_options(args: &[&[u8]], mut flags: AddFlags) -> (AddFlags, bool, usize) {
    let mut ch = false;
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        if is(a, "nx") {
            flags.nx = true;
        } else if is(a, "xx") {
            flags.xx = true;
        } else if is(a, "ch") {
            ch = true;
        } else if is(a, "incr") {
            flags.incr = true;
        } else if is(a, "gt") {
            flags.gt = true;
        } else if is(a, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    (flags, ch, i)
}

fn check_zadd_flags(flags: AddFlags, pairs: usize) -> CmdResult {
    if flags.nx && flags.xx {
        return Err(CmdError::Static("ERR XX and NX options at the same time are not compatible"));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(CmdError::Static("ERR GT, LT, and/or NX options at the same time are not compatible"));
    }
    if flags.incr && pairs > 1 {
        return Err(CmdError::Static("ERR INCR option supports a single increment-element pair"));
    }
    Ok(())
}

/// What a ZADD did, for its reply.
#[derive(Default)]
struct Tally {
    added: i64,
    updated: i64,
    processed: i64,
    last_score: f64,
}

fn apply_adds(z: &mut ZSet, pairs: &[(f64, &[u8])], flags: AddFlags, tally: &mut Tally) -> CmdResult {
    for &(score, member) in pairs {
        let score = match z.add(score, member, flags) {
            AddOutcome::Added(s) => {
                tally.added += 1;
                s
            }
            AddOutcome::Updated(s) => {
                tally.updated += 1;
                s
            }
            AddOutcome::Unchanged(s) => s,
            AddOutcome::Skipped => continue,
            AddOutcome::NotANumber => return Err(NAN_RESULT),
        };
        tally.processed += 1;
        tally.last_score = score;
    }
    Ok(())
}

fn zadd_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], base: AddFlags) -> CmdResult {
    let (flags, ch, first) = parse_zadd_options(args, base);
    let elements = args.len() - first;
    if elements == 0 || elements % 2 != 0 {
        return Err(CmdError::Syntax);
    }
    check_zadd_flags(flags, elements / 2)?;
    let pairs = args[first..]
        .chunks_exact(2)
        .map(|p| parse_score(p[0]).map(|s| (s, p[1])).ok_or(CmdError::NotFloat))
        .collect::<Result<Vec<_>, _>>()?;
    let (key, db, now) = (args[1], ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let mut tally = Tally::default();
    match zset_mut(table, key, now)? {
        Some(z) => apply_adds(z, &pairs, flags, &mut tally)?,
        None if flags.xx => {}
        None => {
            let mut z = ZSet::new();
            apply_adds(&mut z, &pairs, flags, &mut tally)?;
            if !z.is_empty() {
                table.insert(key, Value::ZSet(Box::new(z)), cairn_engine::entry::NO_EXPIRY, now);
                ctx.server.blocking.signal(db, key);
            }
        }
    }
    if tally.added + tally.updated > 0 {
        ctx.notify(ev::ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    drop(shard);
    if flags.incr {
        if tally.processed > 0 {
            ctx.out.double(tally.last_score);
        } else {
            ctx.out.null_bulk();
        }
    } else {
        ctx.out.int(if ch { tally.added + tally.updated } else { tally.added });
    }
    Ok(())
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (key, db, now) = (args[1], ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let mut deleted = 0;
    if let Some(z) = zset_mut(table, key, now)? {
        for member in &args[2..] {
            deleted += i64::from(z.remove(member));
            if z.is_empty() {
                break;
            }
        }
        if deleted > 0 {
            ctx.notify(ev::ZSET, "zrem", key);
        }
        drop_if_empty(table, key, now);
    }
    drop(shard);
    ctx.out.int(deleted);
    Ok(())
}

/// Which range a ZREMRANGEBY* command removes.
enum RemoveRange {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = RemoveRange::Rank(int_arg(args[2])?, int_arg(args[3])?);
    remove_range(ctx, args[1], range)
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = ScoreRange::parse(args[2], args[3]).ok_or(NOT_A_FLOAT_RANGE)?;
    remove_range(ctx, args[1], RemoveRange::Score(range))
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = LexRange::parse(args[2], args[3]).ok_or(NOT_A_LEX_RANGE)?;
    remove_range(ctx, args[1], RemoveRange::Lex(range))
}

/// Redis's rank normalization (negative from the end, clamped); `None` when empty.
pub(super) fn rank_span(start: i64, end: i64, len: usize) -> Option<Range<usize>> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some(start as usize..(end.min(len - 1) + 1) as usize)
}

fn remove_range(ctx: &mut Ctx<'_>, key: &[u8], range: RemoveRange) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let mut removed = 0;
    if let Some(z) = zset_mut(table, key, now)? {
        let ranks = match &range {
            RemoveRange::Rank(start, end) => rank_span(*start, *end, z.len()),
            RemoveRange::Score(r) => Some(z.score_span(r)),
            RemoveRange::Lex(r) => Some(z.lex_span(r)),
        };
        removed = ranks.map_or(0, |ranks| z.remove_ranks(ranks));
        if removed > 0 {
            let event = match range {
                RemoveRange::Rank(..) => "zremrangebyrank",
                RemoveRange::Score(_) => "zremrangebyscore",
                RemoveRange::Lex(_) => "zremrangebylex",
            };
            ctx.notify(ev::ZSET, event, key);
        }
        drop_if_empty(table, key, now);
    }
    drop(shard);
    ctx.out.int(removed as i64);
    Ok(())
}
