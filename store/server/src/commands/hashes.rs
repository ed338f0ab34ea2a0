//! Hash commands: HSET, HSETNX, HGET, HMSET, HMGET, HGETALL, HDEL, HLEN,
//! HEXISTS, HKEYS, HVALS, HINCRBY, HINCRBYFLOAT, HSTRLEN, HRANDFIELD, HSCAN.
//!
//! The value type and its encodings live in `cairn_engine::types::hash`.

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::number::{format_f64_human, parse_f64, parse_i64};
use cairn_engine::types::Hash;
use cairn_engine::{Table, Value};

use super::keys::ScanOptions;
use super::table::{c, CommandSpec, F, K1, R, W};
use super::{float_arg, int_arg, is, CmdError, CmdResult, Ctx};
use crate::stats::WorkerStats;

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("hset", -4, W | F, K1, hset),
    c("hsetnx", 4, W | F, K1, hsetnx),
    c("hget", 3, R | F, K1, hget),
    c("hmset", -4, W | F, K1, hmset),
    c("hmget", -3, R | F, K1, hmget),
    c("hgetall", 2, R, K1, hgetall),
    c("hdel", -3, W | F, K1, hdel),
    c("hlen", 2, R | F, K1, hlen),
    c("hexists", 3, R | F, K1, hexists),
    c("hkeys", 2, R, K1, hkeys),
    c("hvals", 2, R, K1, hvals),
    c("hincrby", 4, W | F, K1, hincrby),
    c("hincrbyfloat", 4, W | F, K1, hincrbyfloat),
    c("hstrlen", 3, R | F, K1, hstrlen),
    c("hrandfield", -2, R, K1, hrandfield),
    c("hscan", -3, R, K1, hscan),
];

/// The hash at `key`: `None` when absent, WRONGTYPE for another type.
pub fn lookup_hash<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut Hash>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Hash(hash) => Ok(Some(hash)),
            _ => Err(CmdError::WrongType),
        },
    }
}

/// As [`lookup_hash`], counting a keyspace hit or miss (read commands).
fn read_hash<'t>(
    table: &'t mut Table,
    key: &[u8],
    now_ms: u64,
    stats: &WorkerStats,
) -> Result<Option<&'t mut Hash>, CmdError> {
    let found = lookup_hash(table, key, now_ms)?;
    match found {
        Some(_) => stats.keyspace_hits.add(1),
        None => stats.keyspace_misses.add(1),
    }
    Ok(found)
}

/// The hash at `key`, created empty when absent; WRONGTYPE for another type.
/// The caller must leave it non-empty (it always writes a field).
fn hash_for_write<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<&'t mut Hash, CmdError> {
    if lookup_hash(table, key, now_ms)?.is_none() {
        table.insert(key, Value::Hash(Hash::default()), NO_EXPIRY, now_ms);
    }
    lookup_hash(table, key, now_ms)?.ok_or(CmdError::Static("ERR internal error: hash vanished"))
}

fn hset_generic(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Result<i64, CmdError> {
    if args.len() % 2 == 1 {
        return Err(CmdError::WrongArity);
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = hash_for_write(shard.db(db), args[1], ctx.now_ms)?;
    hash.prepare_for(args[2..].iter().copied());
    let created = args[2..].chunks_exact(2).filter(|pair| hash.set(pair[0], pair[1])).count();
    ctx.notify(ev::HASH, "hset", args[1]);
    Ok(created as i64)
}

pub fn hset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let created = hset_generic(ctx, args)?;
    ctx.out.int(created);
    Ok(())
}

pub fn hmset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    hset_generic(ctx, args)?;
    ctx.out.ok();
    Ok(())
}

pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = hash_for_write(shard.db(db), args[1], ctx.now_ms)?;
    if hash.contains(args[2]) {
        ctx.out.int(0);
    } else {
        hash.prepare_for([args[2], args[3]]);
        hash.set(args[2], args[3]);
        ctx.notify(ev::HASH, "hset", args[1]);
        ctx.out.int(1);
    }
    Ok(())
}

pub fn hget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    match read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?.and_then(|h| h.get(args[2])) {
        Some(value) => ctx.out.bulk(value),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

pub fn hmget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    ctx.out.array(args.len() - 2);
    for field in &args[2..] {
        match hash.as_ref().and_then(|h| h.get(field)) {
            Some(value) => ctx.out.bulk(value),
            None => ctx.out.null_bulk(),
        }
    }
    Ok(())
}

/// What HGETALL, HKEYS and HVALS reply with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

fn getall_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], part: Part) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    let len = hash.as_ref().map_or(0, |h| h.len());
    if part == Part::Both {
        ctx.out.map(len);
    } else {
        ctx.out.array(len);
    }
    for (field, value) in hash.iter().flat_map(|h| h.iter()) {
        if part != Part::Values {
            ctx.out.bulk(field);
        }
        if part != Part::Fields {
            ctx.out.bulk(value);
        }
    }
    Ok(())
}

pub fn hgetall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    getall_generic(ctx, args, Part::Both)
}

pub fn hkeys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    getall_generic(ctx, args, Part::Fields)
}

pub fn hvals(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    getall_generic(ctx, args, Part::Values)
}

pub fn hdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let Some(hash) = lookup_hash(table, args[1], ctx.now_ms)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let mut deleted = 0;
    for field in &args[2..] {
        if hash.remove(field) {
            deleted += 1;
            if hash.is_empty() {
                break;
            }
        }
    }
    if deleted > 0 {
        ctx.notify(ev::HASH, "hdel", args[1]);
    }
    if hash.is_empty() {
        table.remove(args[1]);
        ctx.notify(ev::GENERIC, "del", args[1]);
    }
    ctx.out.int(deleted);
    Ok(())
}

pub fn hlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?.map_or(0, |h| h.len());
    ctx.out.int(len as i64);
    Ok(())
}

pub fn hexists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let found = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?.is_some_and(|h| h.contains(args[2]));
    ctx.out.int(i64::from(found));
    Ok(())
}

pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    let len = hash.and_then(|h| h.get(args[2])).map_or(0, <[u8]>::len);
    ctx.out.int(len as i64);
    Ok(())
}

pub fn hincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let incr = int_arg(args[3])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = hash_for_write(shard.db(db), args[1], ctx.now_ms)?;
    let current = match hash.get(args[2]) {
        Some(value) => parse_i64(value).ok_or(CmdError::Static("ERR hash value is not an integer"))?,
        None => 0,
    };
    let new = current.checked_add(incr).ok_or(CmdError::Overflow)?;
    hash.set(args[2], itoa::Buffer::new().format(new).as_bytes());
    ctx.notify(ev::HASH, "hincrby", args[1]);
    ctx.out.int(new);
    Ok(())
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let incr = float_arg(args[3])?;
    if incr.is_infinite() {
        return Err(CmdError::Static("ERR value is NaN or Infinity"));
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = hash_for_write(shard.db(db), args[1], ctx.now_ms)?;
    let current = match hash.get(args[2]) {
        Some(value) => parse_f64(value).ok_or(CmdError::Static("ERR hash value is not a float"))?,
        None => 0.0,
    };
    let new = current + incr;
    if !new.is_finite() {
        return Err(CmdError::Static("ERR increment would produce NaN or Infinity"));
    }
    let text = format_f64_human(new);
    hash.set(args[2], text.as_bytes());
    ctx.notify(ev::HASH, "hincrbyfloat", args[1]);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

/// HRANDFIELD key [count [WITHVALUES]]
pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() >= 3 {
        let count = random_count(args[2])?;
        let with_values = match args.len() {
            3 => false,
            4 if is(args[3], "withvalues") => true,
            _ => return Err(CmdError::Syntax),
        };
        if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
            return Err(CmdError::Static("ERR value is out of range"));
        }
        return hrandfield_count(ctx, args[1], count, with_values);
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let hash = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    match hash.and_then(|h| h.random(&mut rand::thread_rng())) {
        Some((field, _)) => ctx.out.bulk(field),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

/// The count of HRANDFIELD / SRANDMEMBER: any integer but `i64::MIN`.
pub fn random_count(arg: &[u8]) -> Result<i64, CmdError> {
    let count = int_arg(arg)?;
    if count == i64::MIN {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(count)
}

fn hrandfield_count(ctx: &mut Ctx<'_>, key: &[u8], count: i64, with_values: bool) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(hash) = read_hash(shard.db(db), key, ctx.now_ms, ctx.stats)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let hash: &Hash = hash;
    let resp3 = ctx.out.is_resp3();
    let unique = count >= 0;
    let wanted = count.unsigned_abs() as usize;
    let replied = if unique { wanted.min(hash.len()) } else { wanted };
    ctx.out.array(if with_values && !resp3 { replied * 2 } else { replied });
    let out = &mut ctx.out;
    let mut reply = |field: &[u8], value: &[u8]| {
        if with_values && resp3 {
            out.array(2);
        }
        out.bulk(field);
        if with_values {
            out.bulk(value);
        }
    };
    let mut rng = rand::thread_rng();
    if !unique {
        hash.random_pairs(wanted, &mut rng, reply);
    } else if wanted >= hash.len() {
        hash.iter().for_each(|(field, value)| reply(field, value));
    } else {
        hash.random_distinct_pairs(wanted, &mut rng, reply);
    }
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
pub fn hscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = scan_cursor(args[2])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(hash) = read_hash(shard.db(db), args[1], ctx.now_ms, ctx.stats)? else {
        empty_scan(ctx);
        return Ok(());
    };
    let options = collection_scan_options(&args[3..])?;
    let mut found: Vec<(&[u8], &[u8])> = Vec::new();
    let next = hash.scan(cursor, options.count, |field, value| {
        if options.matches(field, "") {
            found.push((field, value));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len() * 2);
    for (field, value) in found {
        ctx.out.bulk(field);
        ctx.out.bulk(value);
    }
    Ok(())
}

/// A SCAN-family cursor argument, read as Redis reads it (`strtoul`): no
/// leading space, an optional sign (a negative cursor wraps around), decimal
/// digits up to `u64::MAX`, nothing after them (but a NUL ends the text, and
/// an empty cursor is 0).
pub fn scan_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    const INVALID: CmdError = CmdError::Static("ERR invalid cursor");
    let text = arg.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        return Ok(0);
    }
    let (negative, digits) = match text[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(INVALID);
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value.checked_mul(10).and_then(|v| v.checked_add(u64::from(d - b'0'))).ok_or(INVALID)?;
    }
    Ok(if negative { value.wrapping_neg() } else { value })
}

/// MATCH and COUNT of HSCAN/SSCAN/ZSCAN (TYPE is SCAN's only).
pub fn collection_scan_options<'a>(args: &[&'a [u8]]) -> Result<ScanOptions<'a>, CmdError> {
    let options = ScanOptions::parse(args)?;
    if options.type_name.is_some() {
        return Err(CmdError::Syntax);
    }
    Ok(options)
}

/// The reply to a SCAN-family command on a missing key: cursor 0, nothing.
pub fn empty_scan(ctx: &mut Ctx<'_>) {
    ctx.out.array(2);
    ctx.out.bulk(b"0");
    ctx.out.array(0);
}

#[cfg(test)]
mod tests {
    use super::scan_cursor;

    #[test]
    fn cursors_parse_like_strtoul() {
        assert_eq!(scan_cursor(b"0"), Ok(0));
        assert_eq!(scan_cursor(b""), Ok(0));
        assert_eq!(scan_cursor(b"+17"), Ok(17));
        assert_eq!(scan_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(scan_cursor(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(scan_cursor(b"5\0junk"), Ok(5));
        for bad in [&b"18446744073709551616"[..], b" 1", b"1 ", b"x", b"-", b"1.5"] {
            assert!(scan_cursor(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
