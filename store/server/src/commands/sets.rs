//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
//! SRANDMEMBER, SMOVE, SSCAN, and the algebra (SINTER, SINTERCARD,
//! SINTERSTORE, SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE) in [`algebra`].
//!
//! The value type and its encodings live in `cairn_engine::types::set`.

mod algebra;

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::types::set::Member;
use cairn_engine::types::Set;
use cairn_engine::{Table, Value};

use super::hashes::{collection_scan_options, empty_scan, random_count, scan_cursor};
use super::table::{c, CommandSpec, F, K1, K12, KALL, NONE, R, W};
use super::{int_arg, CmdError, CmdResult, Ctx};
use crate::stats::WorkerStats;

/// Keys of the *STORE commands: the destination and the sources.
const KSTORE: (i32, i32, i32) = (1, -1, 1);

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("sadd", -3, W | F, K1, sadd),
    c("srem", -3, W | F, K1, srem),
    c("smembers", 2, R, K1, smembers),
    c("sismember", 3, R | F, K1, sismember),
    c("smismember", -3, R | F, K1, smismember),
    c("scard", 2, R | F, K1, scard),
    c("spop", -2, W | F, K1, spop),
    c("srandmember", -2, R, K1, srandmember),
    c("smove", 4, W | F, K12, smove),
    c("sinter", -2, R, KALL, algebra::sinter),
    c("sintercard", -3, R, NONE, algebra::sintercard),
    c("sinterstore", -3, W, KSTORE, algebra::sinterstore),
    c("sunion", -2, R, KALL, algebra::sunion),
    c("sunionstore", -3, W, KSTORE, algebra::sunionstore),
    c("sdiff", -2, R, KALL, algebra::sdiff),
    c("sdiffstore", -3, W, KSTORE, algebra::sdiffstore),
    c("sscan", -3, R, K1, sscan),
];

/// The set at `key`: `None` when absent, WRONGTYPE for another type.
pub fn lookup_set<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut Set>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Set(set) => Ok(Some(set)),
            _ => Err(CmdError::WrongType),
        },
    }
}

/// As [`lookup_set`], counting a keyspace hit or miss (read commands).
fn read_set<'t>(
    table: &'t mut Table,
    key: &[u8],
    now_ms: u64,
    stats: &WorkerStats,
) -> Result<Option<&'t mut Set>, CmdError> {
    let found = lookup_set(table, key, now_ms)?;
    match found {
        Some(_) => stats.keyspace_hits.add(1),
        None => stats.keyspace_misses.add(1),
    }
    Ok(found)
}

/// Writes one member as a bulk string.
fn reply_member(out: &mut cairn_protocol::ReplyWriter<'_>, member: Member<'_>) {
    match member {
        Member::Int(n) => out.bulk_int(n),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// Replies with a whole set as a set reply (an array in RESP2).
fn reply_set(out: &mut cairn_protocol::ReplyWriter<'_>, set: Option<&Set>) {
    out.set(set.map_or(0, Set::len));
    for member in set.iter().flat_map(|s| s.iter()) {
        reply_member(out, member);
    }
}

pub fn sadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if lookup_set(table, args[1], ctx.now_ms)?.is_none() {
        table.insert(args[1], Value::Set(Set::for_first(args[2])), NO_EXPIRY, ctx.now_ms);
    }
    let set = lookup_set(table, args[1], ctx.now_ms)?.ok_or(CmdError::Static("ERR internal error: set vanished"))?;
    let added = args[2..].iter().filter(|m| set.add(m)).count();
    if added > 0 {
        ctx.notify(ev::SET, "sadd", args[1]);
    }
    ctx.out.int(added as i64);
    Ok(())
}

pub fn srem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let Some(set) = lookup_set(table, args[1], ctx.now_ms)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let mut removed = 0;
    for member in &args[2..] {
        if set.remove(member) {
            removed += 1;
            if set.is_empty() {
                break;
            }
        }
    }
    if removed > 0 {
        ctx.notify(ev::SET, "srem", args[1]);
    }
    if set.is_empty() {
        table.remove(args[1]);
        ctx.notify(ev::GENERIC, "del", args[1]);
    }
    ctx.out.int(removed);
    Ok(())
}

pub fn smembers(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let set = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    reply_set(&mut ctx.out, set.as_deref());
    Ok(())
}

pub fn sismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let found = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)?.is_some_and(|s| s.contains(args[2]));
    ctx.out.int(i64::from(found));
    Ok(())
}

pub fn smismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let set = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    ctx.out.array(args.len() - 2);
    for member in &args[2..] {
        let found = set.as_ref().is_some_and(|s| s.contains(member));
        ctx.out.int(i64::from(found));
    }
    Ok(())
}

pub fn scard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)?.map_or(0, |s| s.len());
    ctx.out.int(len as i64);
    Ok(())
}

/// SPOP key [count]
pub fn spop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => spop_one(ctx, args[1]),
        3 => {
            const NOT_POSITIVE: CmdError = CmdError::Static("ERR value is out of range, must be positive");
            let count = int_arg(args[2]).map_err(|_| NOT_POSITIVE)?;
            let count = usize::try_from(count).map_err(|_| NOT_POSITIVE)?;
            spop_count(ctx, args[1], count)
        }
        _ => Err(CmdError::Syntax),
    }
}

fn spop_one(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let Some(set) = lookup_set(table, key, ctx.now_ms)? else {
        ctx.out.null_bulk();
        return Ok(());
    };
    match set.pop_random(&mut rand::thread_rng()) {
        Some(member) => {
            ctx.out.bulk(&member);
            ctx.notify(ev::SET, "spop", key);
        }
        None => ctx.out.null_bulk(),
    }
    if set.is_empty() {
        table.remove(key);
        ctx.notify(ev::GENERIC, "del", key);
    }
    Ok(())
}

fn spop_count(ctx: &mut Ctx<'_>, key: &[u8], count: usize) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let Some(set) = lookup_set(table, key, ctx.now_ms)? else {
        ctx.out.set(0);
        return Ok(());
    };
    if count == 0 {
        ctx.out.set(0);
        return Ok(());
    }
    if count >= set.len() {
        reply_set(&mut ctx.out, Some(set));
        table.remove(key);
        ctx.notify(ev::SET, "spop", key);
        ctx.notify(ev::GENERIC, "del", key);
        return Ok(());
    }
    ctx.notify(ev::SET, "spop", key);
    ctx.out.set(count);
    let mut rng = rand::thread_rng();
    for _ in 0..count {
        if let Some(member) = set.pop_random(&mut rng) {
            ctx.out.bulk(&member);
        }
    }
    Ok(())
}

/// SRANDMEMBER key [count]
pub fn srandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => {}
        3 => return srandmember_count(ctx, args[1], random_count(args[2])?),
        _ => return Err(CmdError::Syntax),
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let set = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)?;
    match set.and_then(|s| s.random(&mut rand::thread_rng())) {
        Some(member) => reply_member(&mut ctx.out, member),
        None => ctx.out.null_bulk(),
    }
    Ok(())
}

fn srandmember_count(ctx: &mut Ctx<'_>, key: &[u8], count: i64) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let Some(set) = read_set(shard.db(db), key, ctx.now_ms, ctx.stats)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let set: &Set = set;
    let wanted = count.unsigned_abs() as usize;
    let mut rng = rand::thread_rng();
    let out = &mut ctx.out;
    if count < 0 {
        out.array(wanted);
        set.random_members(wanted, &mut rng, |m| reply_member(out, m));
    } else if wanted >= set.len() {
        out.array(set.len());
        set.iter().for_each(|m| reply_member(out, m));
    } else {
        out.array(wanted);
        set.random_distinct_members(wanted, &mut rng, |m| reply_member(out, m));
    }
    Ok(())
}

/// SMOVE source destination member
pub fn smove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src, dst, member) = (args[1], args[2], args[3]);
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut guard = ctx.server.keyspace.lock_keys([src, dst]);
    if lookup_set(guard.table(db, src), src, now)?.is_none() {
        ctx.out.int(0);
        return Ok(());
    }
    let dst_exists = lookup_set(guard.table(db, dst), dst, now)?.is_some();
    if src == dst {
        let found = lookup_set(guard.table(db, src), src, now)?.is_some_and(|s| s.contains(member));
        ctx.out.int(i64::from(found));
        return Ok(());
    }
    let src_table = guard.table(db, src);
    let Some(src_set) = lookup_set(src_table, src, now)? else { return Err(CmdError::NoSuchKey) };
    if !src_set.remove(member) {
        ctx.out.int(0);
        return Ok(());
    }
    ctx.notify(ev::SET, "srem", src);
    if src_set.is_empty() {
        src_table.remove(src);
        ctx.notify(ev::GENERIC, "del", src);
    }
    let dst_table = guard.table(db, dst);
    if !dst_exists {
        dst_table.insert(dst, Value::Set(Set::for_first(member)), NO_EXPIRY, now);
    }
    if lookup_set(dst_table, dst, now)?.is_some_and(|dst_set| dst_set.add(member)) {
        ctx.notify(ev::SET, "sadd", dst);
    }
    ctx.out.int(1);
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]
pub fn sscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = scan_cursor(args[2])?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(set) = read_set(shard.db(db), args[1], ctx.now_ms, ctx.stats)? else {
        empty_scan(ctx);
        return Ok(());
    };
    let options = collection_scan_options(&args[3..])?;
    let mut found: Vec<Member<'_>> = Vec::new();
    let next = set.scan(cursor, options.count, |member| {
        if options.pattern.is_none() || member.with_bytes(|b| options.matches(b, "")) {
            found.push(member);
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    for member in found {
        reply_member(&mut ctx.out, member);
    }
    Ok(())
}
