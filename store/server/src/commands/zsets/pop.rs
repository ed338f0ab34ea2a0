//! ZPOPMIN, ZPOPMAX and ZMPOP (`genericZpopCommand`).
//!
//! The reply shapes differ by command and protocol:
//! - ZPOPMIN/ZPOPMAX: a flat `[member, score, ...]` array, except with a
//!   COUNT in RESP3, where it is an array of `[member, score]` pairs;
//! - ZMPOP: `[key, [[member, score], ...]]`, or a null array when every key
//!   is empty.

use cairn_engine::keyspace::MultiGuard;

use super::super::{is, CmdError, CmdResult, Ctx};
use super::{ranged_int, reply_member, zset_mut};

/// How a pop replies.
#[derive(Debug, Clone, Copy)]
pub(super) struct PopReply {
    /// Emit the key name (ZMPOP, and BZPOP* later).
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

/// Parses `numkeys key... MIN|MAX [COUNT n]` starting at `numkeys_index`;
/// returns the keys, whether MAX, and the count (default 1).
pub(super) fn parse_mpop<'a, 'b>(
    args: &'a [&'b [u8]],
    numkeys_index: usize,
) -> Result<(&'a [&'b [u8]], bool, i64), CmdError> {
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
    let popped = pop_from_first(&mut guard, db, ctx.now_ms, keys, max, count)?;
    drop(guard);
    if reply.emit_key {
        // ZMPOP declares no key positions, so the dispatcher cannot touch WATCHers for it.
        if let Some((key, _)) = &popped {
            ctx.server.watches.touch(db, key);
        }
    }
    write_pop_reply(ctx, popped, count.is_some(), reply);
    Ok(())
}

/// What a pop took: the key and its members, or `None` when every key was
/// missing. An empty member list is a COUNT 0 pop.
pub(super) type Popped<'k> = Option<(&'k [u8], Vec<(Box<[u8]>, f64)>)>;

/// Finds the first existing key (WRONGTYPE stops the search) and pops up to
/// `count` members from it, deleting the key when it empties.
pub(super) fn pop_from_first<'k>(
    guard: &mut MultiGuard<'_>,
    db: usize,
    now_ms: u64,
    keys: &[&'k [u8]],
    max: bool,
    count: Option<i64>,
) -> Result<Popped<'k>, CmdError> {
    for &key in keys {
        let table = guard.table(db, key);
        let Some(z) = zset_mut(table, key, now_ms)? else { continue };
        let wanted = count.unwrap_or(1).max(0) as u64;
        let take = wanted.min(z.len() as u64) as usize;
        let members: Vec<(Box<[u8]>, f64)> = (0..take).map_while(|_| z.pop(max)).collect();
        if z.is_empty() {
            table.remove(key);
        }
        return Ok(Some((key, members)));
    }
    Ok(None)
}

pub(super) fn write_pop_reply(ctx: &mut Ctx<'_>, popped: Popped<'_>, counted: bool, reply: PopReply) {
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
