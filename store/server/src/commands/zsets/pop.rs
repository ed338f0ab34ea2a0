//! ZPOPMIN, ZPOPMAX and ZMPOP (`genericZpopCommand`), and their blocking
//! forms BZPOPMIN, BZPOPMAX and BZMPOP through [`crate::blocking`].
//!
//! The reply shapes differ by command and protocol:
//! - ZPOPMIN/ZPOPMAX: a flat `[member, score, ...]` array, except with a
//!   COUNT in RESP3, where it is an array of `[member, score]` pairs;
//! - ZMPOP: `[key, [[member, score], ...]]`, or a null array when every key
//!   is empty.

use cairn_engine::events as ev;
use cairn_engine::keyspace::MultiGuard;

use crate::blocking::deadline;

use super::super::{is, CmdError, CmdResult, Ctx};
use super::{ranged_int, reply_member, zset_mut};

/// How a pop replies.
#[derive(Debug, Clone, Copy)]
struct PopReply {
    /// Emit the key name (ZMPOP, BZPOP*).
    pub emit_key: bool,
    /// Member/score pairs as nested arrays.
    pub nested: bool,
    /// A null array (rather than an empty one) when nothing was popped.
    pub nil_when_empty: bool,
}

pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop_min_max(ctx, args, false)
}

pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop_min_max(ctx, args, true)
}

fn zpop_min_max(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = match args.get(2) {
        Some(arg) => Some(ranged_int(arg, 0, i64::MAX, "ERR value is out of range, must be positive")?),
        None => None,
    };
    let reply = PopReply { emit_key: false, nested: ctx.out.is_resp3() && count.is_some(), nil_when_empty: false };
    pop_generic(ctx, &args[1..2], max, count, reply)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
pub fn zmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(args, 1)?;
    let reply = PopReply { emit_key: true, nested: true, nil_when_empty: true };
    pop_generic(ctx, keys, max, Some(count), reply)
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bzpop_min_max(ctx, args, false)
}

pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    bzpop_min_max(ctx, args, true)
}

/// BZPOPMIN|BZPOPMAX key [key ...] timeout.
fn bzpop_min_max(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    let deadline_ms = deadline(args[args.len() - 1], ctx.now_ms)?;
    let keys = &args[1..args.len() - 1];
    let reply = PopReply { emit_key: true, nested: false, nil_when_empty: true };
    blocking_pop(ctx, args, keys, max, None, deadline_ms, reply)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
pub fn bzmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, max, count) = parse_mpop(args, 2)?;
    let deadline_ms = deadline(args[1], ctx.now_ms)?;
    let reply = PopReply { emit_key: true, nested: true, nil_when_empty: true };
    blocking_pop(ctx, args, keys, max, Some(count), deadline_ms, reply)
}

/// Pops like [`pop_generic`], or blocks the client on `keys` when all are
/// empty (registering while the keys' locks are held, so no ZADD slips in).
/// Re-run for a blocked client, a key of another type is skipped, as Redis
/// serves a blocked BZPOP* from sorted sets only.
fn blocking_pop(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    keys: &[&[u8]],
    max: bool,
    count: Option<i64>,
    deadline_ms: u64,
    reply: PopReply,
) -> CmdResult {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let skip_wrong_type = ctx.client.block.is_retrying();
    let server = ctx.server;
    let mut guard = server.keyspace.lock_keys(keys.iter().copied());
    let popped = pop_from_first(&mut guard, db, now, keys, max, count, skip_wrong_type)?;
    let Some((key, _)) = &popped else {
        if !server.blocking.block(ctx.client, args, keys, deadline_ms) {
            ctx.out.null_array();
        }
        return Ok(());
    };
    drop(guard);
    // BZMPOP declares no key positions, and a served waiter bypasses the dispatcher.
    crate::modified::key(server, db, key);
    write_pop_reply(ctx, popped, false, reply);
    Ok(())
}

/// Parses `numkeys key... MIN|MAX [COUNT n]` starting at `numkeys_index`;
/// returns the keys, whether MAX, and the count (default 1).
fn parse_mpop<'a, 'b>(args: &'a [&'b [u8]], numkeys_index: usize) -> Result<(&'a [&'b [u8]], bool, i64), CmdError> {
    let numkeys = ranged_int(args[numkeys_index], 1, i64::MAX, "ERR numkeys should be greater than 0")? as u64;
    let where_index = (numkeys_index as u64).saturating_add(numkeys).saturating_add(1);
    if where_index >= args.len() as u64 {
        return Err(CmdError::Syntax);
    }
    let where_index = where_index as usize;
    let max = match args[where_index] {
        a if is(a, "min") => false,
        a if is(a, "max") => true,
        _ => return Err(CmdError::Syntax),
    };
    let mut count = None;
    let mut j = where_index + 1;
    while j < args.len() {
        if count.is_none() && is(args[j], "count") && j + 1 < args.len() {
            count = Some(ranged_int(args[j + 1], 1, i64::MAX, "ERR count should be greater than 0")?);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok((&args[numkeys_index + 1..where_index], max, count.unwrap_or(1)))
}

/// Pops from the first non-empty sorted set among `keys`; `count` `None` is
/// a plain single pop.
fn pop_generic(ctx: &mut Ctx<'_>, keys: &[&[u8]], max: bool, count: Option<i64>, reply: PopReply) -> CmdResult {
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    let popped = pop_from_first(&mut guard, db, ctx.now_ms, keys, max, count, false)?;
    drop(guard);
    if reply.emit_key {
        // ZMPOP declares no key positions, so the dispatcher cannot touch WATCHers for it.
        if let Some((key, _)) = &popped {
            crate::modified::key(ctx.server, db, key);
        }
    }
    write_pop_reply(ctx, popped, count.is_some(), reply);
    Ok(())
}

/// What a pop took: the key and its members, or `None` when every key was
/// missing. An empty member list is a COUNT 0 pop.
type Popped<'k> = Option<(&'k [u8], Vec<(Box<[u8]>, f64)>)>;

/// Finds the first existing key (WRONGTYPE stops the search, unless
/// `skip_wrong_type`) and pops up to `count` members from it, deleting the
/// key when it empties.
fn pop_from_first<'k>(
    guard: &mut MultiGuard<'_>,
    db: usize,
    now_ms: u64,
    keys: &[&'k [u8]],
    max: bool,
    count: Option<i64>,
    skip_wrong_type: bool,
) -> Result<Popped<'k>, CmdError> {
    for &key in keys {
        let table = guard.table(db, key);
        let z = match zset_mut(table, key, now_ms) {
            Ok(Some(z)) => z,
            Ok(None) => continue,
            Err(_) if skip_wrong_type => continue,
            Err(e) => return Err(e),
        };
        let wanted = count.unwrap_or(1).max(0) as u64;
        let take = wanted.min(z.len() as u64) as usize;
        let members: Vec<(Box<[u8]>, f64)> = (0..take).map_while(|_| z.pop(max)).collect();
        let emptied = z.is_empty();
        if !members.is_empty() {
            table.emit(ev::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
        }
        if emptied {
            table.remove(key);
            table.emit(ev::GENERIC, "del", key);
        }
        return Ok(Some((key, members)));
    }
    Ok(None)
}

fn write_pop_reply(ctx: &mut Ctx<'_>, popped: Popped<'_>, counted: bool, reply: PopReply) {
    let out = &mut ctx.out;
    let Some((key, members)) = popped else {
        if reply.nil_when_empty {
            out.null_array();
        } else {
            out.array(0);
        }
        return;
    };
    if counted && members.is_empty() {
        out.array(0);
        return;
    }
    match (reply.emit_key, reply.nested) {
        (false, false) => out.array(members.len() * 2),
        (false, true) => out.array(members.len()),
        (true, false) => {
            out.array(members.len() * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(members.len());
        }
    }
    for (member, score) in &members {
        reply_member(out, member, *score, true, reply.nested);
    }
}
