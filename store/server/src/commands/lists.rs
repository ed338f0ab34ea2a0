//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LINSERT, LLEN, LINDEX, LSET,
//! LRANGE, LTRIM, LPOS, LREM, LPOP, RPOP, LMPOP, LMOVE, RPOPLPUSH and the
//! blocking BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP.
//!
//! Every command that can make a list appear calls [`Blocking::signal`] for
//! it, so clients blocked on the key are served after the command
//! (see [`crate::blocking`]). A list that becomes empty is deleted.
//!
//! [`Blocking::signal`]: crate::blocking::Blocking::signal

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::types::List;
use cairn_engine::{Table, Value};
use cairn_protocol::ReplyWriter;

use super::table::{c, CommandSpec, F, K1, K12, MOVABLE, NONE, R, W};
use super::{int_arg, is, CmdError, CmdResult, Ctx};
use crate::blocking::deadline;

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("lpush", -3, W | F, K1, lpush),
    c("rpush", -3, W | F, K1, rpush),
    c("lpushx", -3, W | F, K1, lpushx),
    c("rpushx", -3, W | F, K1, rpushx),
    c("linsert", 5, W, K1, linsert),
    c("llen", 2, R | F, K1, llen),
    c("lindex", 3, R, K1, lindex),
    c("lset", 4, W, K1, lset),
    c("lrange", 4, R, K1, lrange),
    c("ltrim", 4, W, K1, ltrim),
    c("lpos", -3, R, K1, lpos),
    c("lrem", 4, W, K1, lrem),
    c("lpop", -2, W | F, K1, lpop),
    c("rpop", -2, W | F, K1, rpop),
    c("lmpop", -4, W | MOVABLE, NONE, lmpop),
    c("lmove", 5, W, K12, lmove),
    c("rpoplpush", 3, W, K12, rpoplpush),
    c("blpop", -3, W, (1, -2, 1), blpop),
    c("brpop", -3, W, (1, -2, 1), brpop),
    c("blmove", 6, W, K12, blmove),
    c("brpoplpush", 4, W, K12, brpoplpush),
    c("blmpop", -5, W | MOVABLE, NONE, blmpop),
];

/// An end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl End {
    fn parse(arg: &[u8]) -> Result<End, CmdError> {
        if is(arg, "left") {
            Ok(End::Left)
        } else if is(arg, "right") {
            Ok(End::Right)
        } else {
            Err(CmdError::Syntax)
        }
    }
}

/// The list inside a value, or WRONGTYPE.
#[allow(unreachable_patterns)]
fn as_list_mut(value: &mut Value) -> Result<&mut List, CmdError> {
    match value {
        Value::List(list) => Ok(list),
        _ => Err(CmdError::WrongType),
    }
}

/// Looks up a list key; `Ok(None)` when absent, WRONGTYPE for other types.
fn lookup<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut List>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => as_list_mut(&mut entry.value).map(Some),
    }
}

/// Deletes `key` if its list is empty (Redis never keeps empty lists),
/// raising the `del` event.
fn remove_if_empty(table: &mut Table, key: &[u8], now_ms: u64) {
    if matches!(table.get(key, now_ms).map(|e| &e.value), Some(Value::List(l)) if l.is_empty()) {
        table.remove(key);
        table.emit(ev::GENERIC, "del", key);
    }
}

/// The event name of a push or a pop at `end`.
fn event_name(end: End, push: bool) -> &'static str {
    match (end, push) {
        (End::Left, true) => "lpush",
        (End::Right, true) => "rpush",
        (End::Left, false) => "lpop",
        (End::Right, false) => "rpop",
    }
}

fn push(list: &mut List, end: End, data: &[u8]) {
    match end {
        End::Left => list.push_front(data),
        End::Right => list.push_back(data),
    }
}

fn pop(list: &mut List, end: End) -> Option<Vec<u8>> {
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

/// Converts Redis's inclusive `start..=end` (negative from the tail) into
/// a clamped range, or `None` when it is empty.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// A list index (negative counts from the tail) as a position, if in range.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

// ---------------------------------------------------------------- pushes

fn push_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End, only_existing: bool) -> CmdResult {
    let db = ctx.db();
    let key = args[1];
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let len = match lookup(table, key, ctx.now_ms)? {
        Some(list) => {
            args[2..].iter().for_each(|e| push(list, end, e));
            list.len()
        }
        None if only_existing => 0,
        None => {
            let mut list = List::new();
            args[2..].iter().for_each(|e| push(&mut list, end, e));
            let len = list.len();
            table.insert(key, Value::List(Box::new(list)), NO_EXPIRY, ctx.now_ms);
            ctx.server.blocking.signal(db, key);
            len
        }
    };
    if len > 0 {
        ctx.notify(ev::LIST, event_name(end, true), key);
    }
    drop(shard);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn lpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Left, false)
}

pub fn rpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Right, false)
}

pub fn lpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Left, true)
}

pub fn rpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    push_generic(ctx, args, End::Right, true)
}

pub fn linsert(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let after = if is(args[2], "after") {
        true
    } else if is(args[2], "before") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let reply = match lookup(shard.db(db), args[1], ctx.now_ms)? {
        None => 0,
        Some(list) => match list.position(args[3]) {
            None => -1,
            Some(pos) => {
                list.insert(pos + after as usize, args[4]);
                ctx.notify(ev::LIST, "linsert", args[1]);
                list.len() as i64
            }
        },
    };
    drop(shard);
    ctx.out.int(reply);
    Ok(())
}

// ---------------------------------------------------------------- reads

pub fn llen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = lookup(shard.db(db), args[1], ctx.now_ms)?.map_or(0, |l| l.len());
    drop(shard);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn lindex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(list) = lookup(shard.db(db), args[1], ctx.now_ms)? else {
        ctx.out.null_bulk();
        return Ok(());
    };
    let index = int_arg(args[2])?;
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(e) => ctx.out.bulk(e),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

pub fn lrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    match lookup(shard.db(db), args[1], ctx.now_ms)? {
        None => ctx.out.array(0),
        Some(list) => reply_range(&mut ctx.out, list, start, end),
    }
    Ok(())
}

/// Replies with elements `start..=end` (Redis index rules).
fn reply_range(out: &mut ReplyWriter<'_>, list: &List, start: i64, end: i64) {
    match clamp_range(start, end, list.len()) {
        None => out.array(0),
        Some((s, e)) => {
            out.array(e - s + 1);
            list.range(s, e).for_each(|x| out.bulk(x));
        }
    }
}

/// LPOS options.
struct LposOptions {
    rank: i64,
    /// `None`: no COUNT (reply with one index); `Some(0)`: all matches.
    count: Option<u64>,
    maxlen: u64,
}

fn parse_lpos_options(args: &[&[u8]]) -> Result<LposOptions, CmdError> {
    let mut o = LposOptions { rank: 1, count: None, maxlen: 0 };
    let mut i = 0;
    while i < args.len() {
        let has_value = i + 1 < args.len();
        if is(args[i], "rank") && has_value {
            o.rank = int_arg(args[i + 1])?;
            if o.rank == 0 {
                return Err(CmdError::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative \
                     to start from the end of the list",
                ));
            }
        } else if is(args[i], "count") && has_value {
            o.count = Some(non_negative(args[i + 1], "COUNT can't be negative")?);
        } else if is(args[i], "maxlen") && has_value {
            o.maxlen = non_negative(args[i + 1], "MAXLEN can't be negative")?;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    Ok(o)
}

/// A non-negative integer argument; `message` for anything else (Redis's
/// getPositiveLongFromObjectOrReply).
fn non_negative(arg: &[u8], message: &str) -> Result<u64, CmdError> {
    match cairn_engine::number::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(CmdError::err(message)),
    }
}

pub fn lpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let o = parse_lpos_options(&args[3..])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(list) = lookup(shard.db(db), args[1], ctx.now_ms)? else {
        match o.count {
            Some(_) => ctx.out.array(0),
            None => ctx.out.null_bulk(),
        }
        return Ok(());
    };
    let matches = lpos_matches(list, args[2], &o);
    drop(shard);
    match o.count {
        Some(_) => {
            ctx.out.array(matches.len());
            matches.iter().for_each(|&i| ctx.out.int(i as i64));
        }
        None => match matches.first() {
            Some(&i) => ctx.out.int(i as i64),
            None => ctx.out.null_bulk(),
        },
    }
    Ok(())
}

/// The indexes LPOS reports, in scan order.
fn lpos_matches(list: &List, element: &[u8], o: &LposOptions) -> Vec<usize> {
    let len = list.len();
    // Redis negates RANK in a C long: -LONG_MIN stays negative and matches from the first hit.
    let skip = if o.rank == i64::MIN { 0 } else { (o.rank.unsigned_abs() - 1) as usize };
    let wanted = match o.count {
        None => 1,
        Some(0) => usize::MAX,
        Some(n) => n as usize,
    };
    let scan = if o.maxlen == 0 { len } else { (o.maxlen as usize).min(len) };
    let hits = |it: &mut dyn Iterator<Item = (usize, &[u8])>| -> Vec<usize> {
        it.take(scan).filter(|(_, e)| *e == element).map(|(i, _)| i).skip(skip).take(wanted).collect()
    };
    if o.rank > 0 {
        hits(&mut list.iter().enumerate())
    } else {
        hits(&mut list.iter().rev().enumerate().map(|(i, e)| (len - 1 - i, e)))
    }
}

// ---------------------------------------------------------------- edits

pub fn lset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(list) = lookup(shard.db(db), args[1], ctx.now_ms)? else { return Err(CmdError::NoSuchKey) };
    let index = int_arg(args[2])?;
    match resolve_index(index, list.len()) {
        Some(i) if list.set(i, args[3]) => {
            ctx.notify(ev::LIST, "lset", args[1]);
            drop(shard);
            ctx.out.ok();
            Ok(())
        }
        _ => Err(CmdError::Static("ERR index out of range")),
    }
}

pub fn ltrim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if let Some(list) = lookup(table, args[1], ctx.now_ms)? {
        let len = list.len();
        match clamp_range(start, end, len) {
            None => list.remove_front(len),
            Some((s, e)) => {
                list.remove_back(len - 1 - e);
                list.remove_front(s);
            }
        }
        ctx.notify(ev::LIST, "ltrim", args[1]);
        remove_if_empty(table, args[1], ctx.now_ms);
    }
    drop(shard);
    ctx.out.ok();
    Ok(())
}

pub fn lrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = int_arg(args[2])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let removed = match lookup(table, args[1], ctx.now_ms)? {
        None => 0,
        Some(list) => list.remove_matching(args[3], count),
    };
    if removed > 0 {
        ctx.notify(ev::LIST, "lrem", args[1]);
    }
    remove_if_empty(table, args[1], ctx.now_ms);
    drop(shard);
    ctx.out.int(removed as i64);
    Ok(())
}

// ---------------------------------------------------------------- pops

fn pop_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::WrongArity);
    }
    let count = match args.get(2) {
        Some(arg) => Some(non_negative(arg, "value is out of range, must be positive")?),
        None => None,
    };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let Some(list) = lookup(table, args[1], ctx.now_ms)? else {
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null_bulk(),
        }
        return Ok(());
    };
    let before = list.len();
    match count {
        None => match pop(list, end) {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null_bulk(),
        },
        Some(n) => reply_popped(&mut ctx.out, list, end, n as usize),
    }
    if list.len() < before {
        ctx.notify(ev::LIST, event_name(end, false), args[1]);
    }
    remove_if_empty(table, args[1], ctx.now_ms);
    Ok(())
}

/// Pops up to `n` elements from `end` and replies with them as an array.
fn reply_popped(out: &mut ReplyWriter<'_>, list: &mut List, end: End, n: usize) {
    let take = n.min(list.len());
    out.array(take);
    if take == 0 {
        return;
    }
    let len = list.len();
    match end {
        End::Left => {
            list.range(0, take - 1).for_each(|e| out.bulk(e));
            list.remove_front(take);
        }
        End::Right => {
            list.range(len - take, len - 1).rev().for_each(|e| out.bulk(e));
            list.remove_back(take);
        }
    }
}

pub fn lpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Left)
}

pub fn rpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_generic(ctx, args, End::Right)
}

/// What a pop or move that finds nothing does.
#[derive(Clone, Copy)]
enum WhenEmpty<'a> {
    /// Reply with a null (LMPOP, LMOVE).
    Reply,
    /// Block the client until `deadline_ms` (0: forever) with this command,
    /// or reply with a null where blocking is not allowed.
    Block { args: &'a [&'a [u8]], deadline_ms: u64 },
}

/// Ends a pop that found nothing: blocks, or replies with a null array
/// (pops) or a null bulk string (moves).
fn on_empty(ctx: &mut Ctx<'_>, keys: &[&[u8]], when: WhenEmpty<'_>, null_array: bool) {
    let blocked = match when {
        WhenEmpty::Reply => false,
        WhenEmpty::Block { args, deadline_ms } => ctx.server.blocking.block(ctx.client, args, keys, deadline_ms),
    };
    match (blocked, null_array) {
        (true, _) => {}
        (false, true) => ctx.out.null_array(),
        (false, false) => ctx.out.null_bulk(),
    }
}

/// Pops from the first non-empty list among `keys`: one element replied as
/// `[key, element]` (`count` None: BLPOP/BRPOP) or up to `count` as
/// `[key, [elements]]` (LMPOP/BLMPOP).
fn pop_first(ctx: &mut Ctx<'_>, keys: &[&[u8]], end: End, count: Option<usize>, when: WhenEmpty<'_>) -> CmdResult {
    let db = ctx.db();
    // A blocked client being served skips keys of other types (Redis serves it from lists only).
    let retrying = ctx.client.block.is_retrying();
    let server = ctx.server;
    let mut guard = server.keyspace.lock_keys(keys.iter().copied());
    for &key in keys {
        let table = guard.table(db, key);
        let list = match lookup(table, key, ctx.now_ms) {
            Ok(Some(list)) if !list.is_empty() => list,
            Ok(_) => continue,
            Err(_) if retrying => continue,
            Err(e) => return Err(e),
        };
        ctx.out.array(2);
        ctx.out.bulk(key);
        match count {
            None => match pop(list, end) {
                Some(v) => ctx.out.bulk(&v),
                None => ctx.out.null_bulk(),
            },
            Some(n) => reply_popped(&mut ctx.out, list, end, n),
        }
        ctx.notify(ev::LIST, event_name(end, false), key);
        remove_if_empty(table, key, ctx.now_ms);
        // LMPOP/BLMPOP declare no key positions, so dispatch cannot touch WATCHed keys for them.
        crate::modified::key(server, db, key);
        return Ok(());
    }
    on_empty(ctx, keys, when, true);
    drop(guard);
    Ok(())
}

/// Moves one element from `src`'s `from` end to `dst`'s `to` end (LMOVE).
fn move_element(ctx: &mut Ctx<'_>, keys: [&[u8]; 2], from: End, to: End, when: WhenEmpty<'_>) -> CmdResult {
    let [src, dst] = keys;
    let db = ctx.db();
    let now = ctx.now_ms;
    let retrying = ctx.client.block.is_retrying();
    let server = ctx.server;
    let mut guard = server.keyspace.lock_keys(keys);
    match lookup(guard.table(db, src), src, now) {
        Ok(Some(list)) if !list.is_empty() => {}
        Ok(_) => {
            on_empty(ctx, &keys[..1], when, false);
            return Ok(());
        }
        Err(_) if retrying => {
            on_empty(ctx, &keys[..1], when, false);
            return Ok(());
        }
        Err(e) => return Err(e),
    }
    lookup(guard.table(db, dst), dst, now)?;
    let Some(value) = lookup(guard.table(db, src), src, now)?.and_then(|l| pop(l, from)) else {
        ctx.out.null_bulk();
        return Ok(());
    };
    let table = guard.table(db, dst);
    match lookup(table, dst, now)? {
        Some(list) => push(list, to, &value),
        None => {
            let mut list = List::new();
            push(&mut list, to, &value);
            table.insert(dst, Value::List(Box::new(list)), NO_EXPIRY, now);
            ctx.server.blocking.signal(db, dst);
        }
    }
    ctx.notify(ev::LIST, event_name(to, true), dst);
    ctx.notify(ev::LIST, event_name(from, false), src);
    remove_if_empty(guard.table(db, src), src, now);
    drop(guard);
    ctx.out.bulk(&value);
    Ok(())
}

pub fn lmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let from = End::parse(args[3])?;
    let to = End::parse(args[4])?;
    move_element(ctx, [args[1], args[2]], from, to, WhenEmpty::Reply)
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    move_element(ctx, [args[1], args[2]], End::Right, End::Left, WhenEmpty::Reply)
}

/// LMPOP/BLMPOP arguments after the timeout: `numkeys key... LEFT|RIGHT [COUNT n]`.
struct MpopArgs<'a> {
    keys: &'a [&'a [u8]],
    end: End,
    count: usize,
}

fn parse_mpop<'a>(args: &'a [&'a [u8]]) -> Result<MpopArgs<'a>, CmdError> {
    const NUMKEYS: &str = "numkeys should be greater than 0";
    let numkeys = match cairn_engine::number::parse_i64(args[0]) {
        Some(n) if n >= 1 => n as usize,
        _ => return Err(CmdError::err(NUMKEYS)),
    };
    let where_at = numkeys.checked_add(1).filter(|&w| w < args.len()).ok_or(CmdError::Syntax)?;
    let end = End::parse(args[where_at])?;
    let mut count = None;
    let mut i = where_at + 1;
    while i < args.len() {
        if count.is_none() && is(args[i], "count") && i + 1 < args.len() {
            match cairn_engine::number::parse_i64(args[i + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err(CmdError::err("count should be greater than 0")),
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(MpopArgs { keys: &args[1..where_at], end, count: count.unwrap_or(1) })
}

pub fn lmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let m = parse_mpop(&args[1..])?;
    pop_first(ctx, m.keys, m.end, Some(m.count), WhenEmpty::Reply)
}

// ---------------------------------------------------------------- blocking

fn blocking_pop(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    let deadline_ms = deadline(args[args.len() - 1], ctx.now_ms)?;
    let keys = &args[1..args.len() - 1];
    pop_first(ctx, keys, end, None, WhenEmpty::Block { args, deadline_ms })
}

pub fn blpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    blocking_pop(ctx, args, End::Left)
}

pub fn brpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    blocking_pop(ctx, args, End::Right)
}

pub fn blmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let m = parse_mpop(&args[2..])?;
    let deadline_ms = deadline(args[1], ctx.now_ms)?;
    pop_first(ctx, m.keys, m.end, Some(m.count), WhenEmpty::Block { args, deadline_ms })
}

pub fn blmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let from = End::parse(args[3])?;
    let to = End::parse(args[4])?;
    let deadline_ms = deadline(args[5], ctx.now_ms)?;
    move_element(ctx, [args[1], args[2]], from, to, WhenEmpty::Block { args, deadline_ms })
}

pub fn brpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let deadline_ms = deadline(args[3], ctx.now_ms)?;
    move_element(ctx, [args[1], args[2]], End::Right, End::Left, WhenEmpty::Block { args, deadline_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis_rules() {
        assert_eq!(clamp_range(0, -1, 5), Some((0, 4)));
        assert_eq!(clamp_range(-1000, 1000, 4), Some((0, 3)));
        assert_eq!(clamp_range(6, 2, 10), None);
        assert_eq!(clamp_range(0, -5, 4), None);
        assert_eq!(clamp_range(0, -4, 4), Some((0, 0)));
        assert_eq!(clamp_range(5, 10, 5), None);
        assert_eq!(resolve_index(-1, 3), Some(2));
        assert_eq!(resolve_index(3, 3), None);
        assert_eq!(resolve_index(-4, 3), None);
    }

    #[test]
    fn lpos_scans_with_rank_count_and_maxlen() {
        let owned: Vec<&[u8]> = vec![b"a", b"b", b"c", b"1", b"2", b"3", b"c", b"c"];
        let list: List = owned.into_iter().collect();
        let o = |rank, count, maxlen| LposOptions { rank, count, maxlen };
        assert_eq!(lpos_matches(&list, b"c", &o(1, None, 0)), vec![2]);
        assert_eq!(lpos_matches(&list, b"c", &o(-1, None, 0)), vec![7]);
        assert_eq!(lpos_matches(&list, b"c", &o(2, Some(0), 0)), vec![6, 7]);
        assert_eq!(lpos_matches(&list, b"c", &o(-1, Some(2), 0)), vec![7, 6]);
        assert_eq!(lpos_matches(&list, b"c", &o(1, Some(0), 3)), vec![2]);
        assert_eq!(lpos_matches(&list, b"c", &o(2, Some(0), 7)), vec![6]);
        assert!(lpos_matches(&list, b"c", &o(4, None, 0)).is_empty());
    }

    #[test]
    fn mpop_arguments() {
        let args: Vec<&[u8]> = vec![b"2", b"a", b"b", b"LEFT", b"COUNT", b"3"];
        let m = parse_mpop(&args).map_err(|e| e.message("lmpop")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((m.keys.len(), m.end, m.count), (2, End::Left, 3));
        let bad = |a: &[&[u8]]| parse_mpop(a).err().map(|e| e.message("lmpop"));
        assert_eq!(bad(&[b"0", b"a", b"left"]).as_deref(), Some("ERR numkeys should be greater than 0"));
        assert_eq!(bad(&[b"1", b"a", b"left", b"count"]).as_deref(), Some("ERR syntax error"));
        assert_eq!(bad(&[b"1", b"a", b"left", b"count", b"0"]).as_deref(), Some("ERR count should be greater than 0"));
        assert_eq!(bad(&[b"5", b"a", b"left"]).as_deref(), Some("ERR syntax error"));
    }
}
