//! String commands: GET, SET and its variants, MGET/MSET, APPEND, STRLEN,
//! INCR/DECR families, INCRBYFLOAT, GETRANGE, SETRANGE.

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::number::{format_f64_human, parse_f64};
use cairn_engine::table::StrBytes;
use cairn_engine::{Entry, StrValue, Table, Value};

use cairn_engine::events as ev;

use super::{int_arg, is, CmdError, CmdResult, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// The string inside a value, or WRONGTYPE.
#[allow(unreachable_patterns)]
pub fn as_str(value: &Value) -> Result<&StrValue, CmdError> {
    match value {
        Value::Str(s) => Ok(s),
        _ => Err(CmdError::WrongType),
    }
}

/// The string inside a value, mutably, or WRONGTYPE.
#[allow(unreachable_patterns)]
pub fn as_str_mut(value: &mut Value) -> Result<&mut StrValue, CmdError> {
    match value {
        Value::Str(s) => Ok(s),
        _ => Err(CmdError::WrongType),
    }
}

/// Looks up a string key; `Ok(None)` when absent, WRONGTYPE for other types.
pub fn lookup_str<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut Entry>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => {
            as_str(&entry.value)?;
            Ok(Some(entry))
        }
    }
}

fn proto_max_bulk_len(ctx: &Ctx<'_>) -> usize {
    ctx.server.runtime.proto_max_bulk_len.load(std::sync::atomic::Ordering::Relaxed)
}

const TOO_BIG: CmdError = CmdError::Static("ERR string exceeds maximum allowed size (proto-max-bulk-len)");

pub fn get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let out = &mut ctx.out;
    read_string(ctx.server, ctx.stats, ctx.client.db, args[1], ctx.now_ms, |value| match value {
        Some(bytes) => out.bulk(bytes),
        None => out.null_bulk(),
    })
}

/// GET's work, whatever the reply format: hands `reply` the string stored
/// under `key` in database `db` (`None` when absent), with the shard locked,
/// and counts the keyspace hit or miss. WRONGTYPE for other types.
pub fn read_string(
    server: &Server,
    stats: &WorkerStats,
    db: usize,
    key: &[u8],
    now_ms: u64,
    reply: impl FnOnce(Option<&[u8]>),
) -> CmdResult {
    let mut shard = server.keyspace.lock_key(key);
    match lookup_str(shard.db(db), key, now_ms)? {
        Some(entry) => {
            stats.keyspace_hits.add(1);
            as_str(&entry.value)?.with_bytes(|b| reply(Some(b)));
        }
        None => {
            stats.keyspace_misses.add(1);
            reply(None);
        }
    }
    Ok(())
}

/// When a SET-like command's key should expire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpirySpec {
    /// Remove any expiry.
    None,
    /// Keep the current expiry (KEEPTTL).
    Keep,
    /// Absolute Unix milliseconds.
    At(u64),
}

/// Turns an EX/PX/EXAT/PXAT argument into absolute milliseconds.
pub fn expiry_from(unit: &[u8], value: &[u8], now_ms: u64) -> Result<u64, CmdError> {
    let n = int_arg(value)?;
    if n <= 0 {
        return Err(CmdError::InvalidExpire);
    }
    let (ms, relative) = if is(unit, "ex") || is(unit, "exat") {
        (n.checked_mul(1000).ok_or(CmdError::InvalidExpire)?, is(unit, "ex"))
    } else {
        (n, is(unit, "px"))
    };
    let at = if relative { ms.checked_add(now_ms as i64).ok_or(CmdError::InvalidExpire)? } else { ms };
    Ok(at as u64)
}

#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    expire_at: Option<u64>,
}

fn parse_set_options(args: &[&[u8]], now_ms: u64) -> Result<SetOptions, CmdError> {
    let mut o = SetOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let has_expire = o.expire_at.is_some();
        if is(a, "nx") && !o.xx {
            o.nx = true;
        } else if is(a, "xx") && !o.nx {
            o.xx = true;
        } else if is(a, "get") {
            o.get = true;
        } else if is(a, "keepttl") && !has_expire {
            o.keep_ttl = true;
        } else if (is(a, "ex") || is(a, "px") || is(a, "exat") || is(a, "pxat"))
            && !has_expire
            && !o.keep_ttl
            && i + 1 < args.len()
        {
            o.expire_at = Some(expiry_from(a, args[i + 1], now_ms)?);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    Ok(o)
}

pub fn set(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let options = parse_set_options(&args[3..], ctx.now_ms)?;
    let expiry = match (options.expire_at, options.keep_ttl) {
        (Some(at), _) => ExpirySpec::At(at),
        (None, true) => ExpirySpec::Keep,
        (None, false) => ExpirySpec::None,
    };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if !(options.get || options.nx || options.xx) {
        // A plain SET needs nothing from the old value: one lookup stores it.
        let replaced = store_string(table, args[1], args[2], expiry, ctx.now_ms);
        announce_set(ctx, db, args[1], options.expire_at.is_some(), replaced);
        ctx.out.ok();
        return Ok(());
    }
    // SET overwrites a key of any type; only SET ... GET needs the old value to be a string.
    let existing = table.get(args[1], ctx.now_ms);
    let exists = existing.is_some();
    let old = match existing {
        Some(entry) if options.get => Some(as_str(&entry.value)?.to_vec()),
        _ => None,
    };
    let blocked = (options.nx && exists) || (options.xx && !exists);
    if !blocked {
        store_string(table, args[1], args[2], expiry, ctx.now_ms);
        announce_set(ctx, db, args[1], options.expire_at.is_some(), exists);
    }
    match (options.get, blocked) {
        (true, _) => match old {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null_bulk(),
        },
        (false, true) => ctx.out.null_bulk(),
        (false, false) => ctx.out.ok(),
    }
    Ok(())
}

/// The keyspace events and wake-ups of a SET that stored `key`; `replaced`
/// says whether a live key was overwritten.
fn announce_set(ctx: &mut Ctx<'_>, db: usize, key: &[u8], with_expiry: bool, replaced: bool) {
    ctx.notify(ev::STRING, "set", key);
    if with_expiry {
        ctx.notify(ev::GENERIC, "expire", key);
    }
    if replaced {
        // A stream overwritten by SET unblocks its XREADGROUP clients with an error.
        ctx.server.blocking.signal(db, key);
    }
}

/// Stores a string value under `key` with the given expiry rule; returns
/// whether it replaced a live key.
pub fn store_string(table: &mut Table, key: &[u8], value: &[u8], expiry: ExpirySpec, now_ms: u64) -> bool {
    let value = StrBytes(value);
    match expiry {
        ExpirySpec::None => table.insert(key, value, NO_EXPIRY, now_ms),
        ExpirySpec::At(at) => table.insert(key, value, at, now_ms),
        ExpirySpec::Keep => table.insert_keep_ttl(key, value, now_ms),
    }
}

pub fn setnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if table.get(args[1], ctx.now_ms).is_some() {
        ctx.out.int(0);
    } else {
        store_string(table, args[1], args[2], ExpirySpec::None, ctx.now_ms);
        ctx.notify(ev::STRING, "set", args[1]);
        ctx.out.int(1);
    }
    Ok(())
}

fn set_with_expire(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: &str) -> CmdResult {
    let at = expiry_from(unit.as_bytes(), args[2], ctx.now_ms)?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    store_string(shard.db(db), args[1], args[3], ExpirySpec::At(at), ctx.now_ms);
    ctx.notify(ev::STRING, "set", args[1]);
    ctx.notify(ev::GENERIC, "expire", args[1]);
    ctx.out.ok();
    Ok(())
}

pub fn setex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_expire(ctx, args, "ex")
}

pub fn psetex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_expire(ctx, args, "px")
}

pub fn getset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let old = lookup_str(table, args[1], ctx.now_ms)?.map(|e| as_str(&e.value).map(StrValue::to_vec)).transpose()?;
    store_string(table, args[1], args[2], ExpirySpec::None, ctx.now_ms);
    ctx.notify(ev::STRING, "set", args[1]);
    match old {
        Some(v) => ctx.out.bulk(&v),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

pub fn getdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if lookup_str(table, args[1], ctx.now_ms)?.is_none() {
        ctx.out.null_bulk();
        return Ok(());
    }
    if let Some(entry) = table.remove(args[1]) {
        as_str(&entry.value)?.with_bytes(|b| ctx.out.bulk(b));
        ctx.notify(ev::GENERIC, "del", args[1]);
    }
    Ok(())
}

pub fn getex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut new_expiry: Option<u64> = None;
    let mut persist = false;
    let rest = &args[2..];
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i];
        if (is(a, "ex") || is(a, "px") || is(a, "exat") || is(a, "pxat"))
            && new_expiry.is_none()
            && !persist
            && i + 1 < rest.len()
        {
            new_expiry = Some(expiry_from(a, rest[i + 1], ctx.now_ms)?);
            i += 2;
        } else if is(a, "persist") && new_expiry.is_none() {
            persist = true;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let Some(entry) = lookup_str(table, args[1], ctx.now_ms)? else {
        ctx.out.null_bulk();
        return Ok(());
    };
    let value = as_str(&entry.value)?.to_vec();
    let had_expiry = entry.expire_at().is_some();
    if let Some(at) = new_expiry {
        if at <= ctx.now_ms {
            table.remove(args[1]);
            ctx.notify(ev::GENERIC, "del", args[1]);
        } else {
            table.set_expire(args[1], at, ctx.now_ms);
            ctx.notify(ev::GENERIC, "expire", args[1]);
        }
    } else if persist && had_expiry {
        table.set_expire(args[1], NO_EXPIRY, ctx.now_ms);
        ctx.notify(ev::GENERIC, "persist", args[1]);
    }
    ctx.out.bulk(&value);
    Ok(())
}

pub fn mget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    ctx.out.array(keys.len());
    for key in keys {
        match guard.table(db, key).get(key, ctx.now_ms) {
            Some(Entry { value: Value::Str(s), .. }) => s.with_bytes(|b| ctx.out.bulk(b)),
            #[allow(unreachable_patterns)]
            _ => ctx.out.null_bulk(),
        }
    }
    Ok(())
}

/// MSET and MSETNX: all pairs under the keys' shard locks, so the write is
/// atomic; with `only_if_none_exist`, nothing is written if any key exists.
fn mset_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], only_if_none_exist: bool) -> Result<bool, CmdError> {
    if args.len() % 2 == 0 {
        return Err(CmdError::WrongArity);
    }
    let pairs = &args[1..];
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut guard = ctx.server.keyspace.lock_keys(pairs.iter().step_by(2).copied());
    if only_if_none_exist && pairs.iter().step_by(2).any(|k| guard.table(db, k).get(k, now).is_some()) {
        return Ok(false);
    }
    for pair in pairs.chunks_exact(2) {
        store_string(guard.table(db, pair[0]), pair[0], pair[1], ExpirySpec::None, now);
        ctx.notify(ev::STRING, "set", pair[0]);
    }
    Ok(true)
}

pub fn mset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    mset_generic(ctx, args, false)?;
    ctx.out.ok();
    Ok(())
}

pub fn msetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let written = mset_generic(ctx, args, true)?;
    ctx.out.int(i64::from(written));
    Ok(())
}

pub fn append(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let max = proto_max_bulk_len(ctx);
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let len = match lookup_str(table, args[1], ctx.now_ms)? {
        Some(entry) => {
            let s = as_str_mut(&mut entry.value)?;
            if s.len() + args[2].len() > max {
                return Err(TOO_BIG);
            }
            let data = s.make_raw();
            data.extend_from_slice(args[2]);
            data.len()
        }
        None => {
            store_string(table, args[1], args[2], ExpirySpec::None, ctx.now_ms);
            args[2].len()
        }
    };
    ctx.notify(ev::STRING, "append", args[1]);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn strlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = match lookup_str(shard.db(db), args[1], ctx.now_ms)? {
        Some(entry) => as_str(&entry.value)?.len(),
        None => 0,
    };
    ctx.out.int(len as i64);
    Ok(())
}

/// Adds `delta` to the integer at `key` (created as 0), keeping its expiry.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let value = match lookup_str(table, key, ctx.now_ms)? {
        Some(entry) => {
            let s = as_str_mut(&mut entry.value)?;
            let current = s.as_i64().ok_or(CmdError::NotInteger)?;
            let next = current.checked_add(delta).ok_or(CmdError::Overflow)?;
            *s = StrValue::Int(next);
            next
        }
        None => {
            table.insert(key, Value::Str(StrValue::Int(delta)), NO_EXPIRY, ctx.now_ms);
            delta
        }
    };
    ctx.notify(ev::STRING, "incrby", key);
    ctx.out.int(value);
    Ok(())
}

pub fn incr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = int_arg(args[2])?;
    incr_by(ctx, args[1], delta)
}

pub fn decrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = int_arg(args[2])?;
    if delta == i64::MIN {
        return Err(CmdError::Static("ERR decrement would overflow"));
    }
    incr_by(ctx, args[1], -delta)
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = parse_f64(args[2]).ok_or(CmdError::NotFloat)?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let current = match lookup_str(table, args[1], ctx.now_ms)? {
        Some(entry) => as_str(&entry.value)?.with_bytes(parse_f64).ok_or(CmdError::NotFloat)?,
        None => 0.0,
    };
    let next = current + delta;
    if !next.is_finite() {
        return Err(CmdError::Static("ERR increment would produce NaN or Infinity"));
    }
    let text = format_f64_human(next);
    match table.get(args[1], ctx.now_ms) {
        Some(entry) => entry.value = Value::Str(StrValue::Bytes { data: text.as_bytes().to_vec(), raw: false }),
        None => {
            table.insert(args[1], Value::from_bytes(text.as_bytes()), NO_EXPIRY, ctx.now_ms);
        }
    }
    ctx.notify(ev::STRING, "incrbyfloat", args[1]);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

/// Resolves GETRANGE's inclusive `start..=end` (negative from the end) on a
/// string of `len` bytes; `None` for an empty range.
pub fn resolve_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if len == 0 || start > end {
        return None;
    }
    Some((start as usize, end as usize))
}

pub fn getrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let start = int_arg(args[2])?;
    let end = int_arg(args[3])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    match lookup_str(shard.db(db), args[1], ctx.now_ms)? {
        Some(entry) => as_str(&entry.value)?.with_bytes(|b| match resolve_range(start, end, b.len()) {
            Some((s, e)) => ctx.out.bulk(&b[s..=e]),
            None => ctx.out.bulk(b""),
        }),
        None => ctx.out.bulk(b""),
    }
    Ok(())
}

pub fn setrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let offset = int_arg(args[2])?;
    if offset < 0 {
        return Err(CmdError::Static("ERR offset is out of range"));
    }
    let offset = offset as usize;
    let patch = args[3];
    let max = proto_max_bulk_len(ctx);
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let len = match lookup_str(table, args[1], ctx.now_ms)? {
        Some(entry) => {
            let s = as_str_mut(&mut entry.value)?;
            if patch.is_empty() {
                s.len()
            } else {
                if offset + patch.len() > max {
                    return Err(TOO_BIG);
                }
                write_at(s.make_raw(), offset, patch)
            }
        }
        None if patch.is_empty() => 0,
        None => {
            if offset + patch.len() > max {
                return Err(TOO_BIG);
            }
            let mut data = Vec::new();
            let len = write_at(&mut data, offset, patch);
            table.insert(args[1], Value::Str(StrValue::Bytes { data, raw: true }), NO_EXPIRY, ctx.now_ms);
            len
        }
    };
    if !patch.is_empty() {
        ctx.notify(ev::STRING, "setrange", args[1]);
    }
    ctx.out.int(len as i64);
    Ok(())
}

/// Writes `patch` at `offset`, zero-padding; returns the new length.
fn write_at(data: &mut Vec<u8>, offset: usize, patch: &[u8]) -> usize {
    if data.len() < offset + patch.len() {
        data.resize(offset + patch.len(), 0);
    }
    data[offset..offset + patch.len()].copy_from_slice(patch);
    data.len()
}

pub fn lcs(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    super::lcs::lcs(ctx, args)
}

#[cfg(test)]
mod tests {
    use super::resolve_range;

    #[test]
    fn ranges() {
        assert_eq!(resolve_range(0, -1, 5), Some((0, 4)));
        assert_eq!(resolve_range(-3, -1, 5), Some((2, 4)));
        assert_eq!(resolve_range(3, 1, 5), None);
        assert_eq!(resolve_range(0, 100, 5), Some((0, 4)));
        assert_eq!(resolve_range(-1, -5, 5), None);
        assert_eq!(resolve_range(0, 0, 0), None);
    }
}
