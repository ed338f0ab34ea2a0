//! ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT and ZSCAN.

use cairn_engine::number::format_f64_reply;
use cairn_engine::types::zset::{LexRange, ScoreRange};

use super::super::keys::ScanOptions;
use super::super::{CmdError, CmdResult, Ctx};
use super::write::{NOT_A_FLOAT_RANGE, NOT_A_LEX_RANGE};
use super::zset_mut;

pub fn zcard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = zset_mut(shard.db(db), args[1], now)?.map_or(0, |z| z.len());
    drop(shard);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let score = zset_mut(shard.db(db), args[1], now)?.and_then(|z| z.score(args[2]));
    drop(shard);
    match score {
        Some(s) => ctx.out.double(s),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let z = zset_mut(shard.db(db), args[1], now)?;
    let members = &args[2..];
    ctx.out.array(members.len());
    for member in members {
        match z.as_ref().and_then(|z| z.score(member)) {
            Some(s) => ctx.out.double(s),
            None => ctx.out.null_bulk(),
        }
    }
    Ok(())
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank_generic(ctx, args, false)
}

pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank_generic(ctx, args, true)
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], reverse: bool) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let rank = zset_mut(shard.db(db), args[1], now)?
        .and_then(|z| z.rank(args[2]).map(|r| if reverse { z.len() - 1 - r } else { r }));
    drop(shard);
    match rank {
        Some(r) => ctx.out.int(r as i64),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

pub fn zcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = ScoreRange::parse(args[2], args[3]).ok_or(NOT_A_FLOAT_RANGE)?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let count = zset_mut(shard.db(db), args[1], now)?.map_or(0, |z| z.score_span(&range).len());
    drop(shard);
    ctx.out.int(count as i64);
    Ok(())
}

pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let range = LexRange::parse(args[2], args[3]).ok_or(NOT_A_LEX_RANGE)?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let count = zset_mut(shard.db(db), args[1], now)?.map_or(0, |z| z.lex_span(&range).len());
    drop(shard);
    ctx.out.int(count as i64);
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]. A listpack set comes back
/// whole with cursor 0; a skiplist set is walked by node slot, so members
/// present for the whole scan come back exactly once. Scores are bulk
/// strings in `%.17g` form, in both protocols, as in Redis.
pub fn zscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = parse_cursor(args[2]).ok_or(CmdError::Static("ERR invalid cursor"))?;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(z) = zset_mut(shard.db(db), args[1], now)? else {
        drop(shard);
        write_scan_reply(ctx, 0, &[]);
        return Ok(());
    };
    let options = ScanOptions::parse(&args[3..])?;
    if options.type_name.is_some() {
        return Err(CmdError::Syntax);
    }
    let mut found: Vec<(Vec<u8>, f64)> = Vec::new();
    let next = z.scan(cursor, options.count, |member, score| {
        if options.matches(member, "zset") {
            found.push((member.to_vec(), score));
        }
    });
    drop(shard);
    write_scan_reply(ctx, next, &found);
    Ok(())
}

/// A cursor as `strtoul` reads it (`parseScanCursorOrReply`): an optional
/// sign (a negative value wraps), decimal digits, no overflow.
fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let (negative, digits) = match arg.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if negative { value.wrapping_neg() } else { value })
}

fn write_scan_reply(ctx: &mut Ctx<'_>, cursor: u64, found: &[(Vec<u8>, f64)]) {
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(cursor).as_bytes());
    ctx.out.array(found.len() * 2);
    let mut text = Vec::with_capacity(32);
    for (member, score) in found {
        ctx.out.bulk(member);
        text.clear();
        format_f64_reply(*score, &mut text);
        ctx.out.bulk(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_read_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"007"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b" 1", b"1x", b"18446744073709551616", b"-"] {
            assert_eq!(parse_cursor(bad), None);
        }
    }
}
