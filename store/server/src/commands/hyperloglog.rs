//! HyperLogLog commands, as Redis 7.0.15 runs them, over the sketches of
//! `cairn_engine::types::hll`. A sketch is a plain string value, so GET,
//! SET, APPEND, SETRANGE, DUMP, snapshots and the log see Redis's bytes.
//!
//! # Layout
//!
//! - Sketch access: `sketch` / `sketch_mut` check a value as a sketch
//!   (WRONGTYPE for other types, Redis's "not a valid HyperLogLog" for other
//!   strings); `sketch_mut` marks the string `raw`, as Redis unshares it.
//! - `pfadd`: adds elements, creating the key; reports 1 when a register
//!   changed (or the key was created), and is then logged and announced
//!   (`pfadd`, class `$`); otherwise it is a no-op the log skips.
//! - `pfcount`: one key answers from the header's cached cardinality,
//!   refreshing it when stale; many keys count their union, writing nothing.
//! - `pfmerge`: the union into the destination (dense if any source is),
//!   announced as `pfadd` as Redis does.
//! - `pfdebug`: GETREG, DECODE, ENCODING, TODENSE; `pfselftest`.
//!
//! Durability: PFADD, PFMERGE and PFDEBUG are write commands, logged as sent
//! (they are deterministic). PFCOUNT is read-only, as Redis flags it: its
//! refresh of the cached cardinality is not logged. The cache is only read
//! when valid and every change of registers marks it stale, so after replay
//! the stored bytes may differ from before the crash only in that cache, and
//! every count is the same.

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;
use cairn_engine::keyspace::MultiGuard;
use cairn_engine::types::encoding::LIMITS;
use cairn_engine::types::hll::{self, Encoding, HllError, Registers};
use cairn_engine::{StrValue, Table, Value};

use super::strings::{as_str, as_str_mut};
use super::table::{c, CommandSpec, ADMIN, F, K1, KALL, NONE, R, W};
use super::{is, text, CmdError, CmdResult, Ctx};

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("pfadd", -2, W | F, K1, pfadd),
    c("pfcount", -2, R, KALL, pfcount),
    c("pfmerge", -2, W, KALL, pfmerge),
    c("pfdebug", 3, W | ADMIN, (2, 2, 1), pfdebug),
    c("pfselftest", 1, ADMIN, NONE, pfselftest),
];

/// `hll-sparse-max-bytes`.
fn sparse_max_bytes() -> usize {
    usize::try_from(LIMITS.hll_sparse_max_bytes.get()).unwrap_or(0)
}

fn hll_error(e: HllError) -> CmdError {
    CmdError::Message(e.to_string())
}

/// The sketch a value holds: WRONGTYPE for other types, Redis's
/// "not a valid HyperLogLog" for strings that are not sketches.
fn sketch(value: &Value) -> Result<&[u8], CmdError> {
    match as_str(value)? {
        StrValue::Bytes { data, .. } => {
            hll::check(data).map_err(hll_error)?;
            Ok(data)
        }
        StrValue::Int(_) => Err(hll_error(HllError::NotHll)),
    }
}

/// [`sketch`], to modify: the string becomes `raw`.
fn sketch_mut(value: &mut Value) -> Result<&mut Vec<u8>, CmdError> {
    sketch(value)?;
    Ok(as_str_mut(value)?.make_raw())
}

/// The sketch under `key`, created empty (sparse) when the key is absent;
/// also says whether it was created.
fn sketch_or_create<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<(&'t mut Vec<u8>, bool), CmdError> {
    let created = table.get(key, now_ms).is_none();
    if created {
        let value = Value::Str(StrValue::Bytes { data: hll::new_sparse(), raw: true });
        table.insert(key, value, NO_EXPIRY, now_ms);
    }
    let entry = table.get(key, now_ms).ok_or(CmdError::NoSuchKey)?;
    Ok((sketch_mut(&mut entry.value)?, created))
}

pub fn pfadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let db = ctx.db();
    let max_bytes = sparse_max_bytes();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let (hll, created) = sketch_or_create(shard.db(db), key, ctx.now_ms)?;
    let mut changed = created;
    for element in &args[2..] {
        changed |= hll::add(hll, element, max_bytes).map_err(hll_error)?;
    }
    if changed {
        hll::invalidate_cache(hll);
        ctx.notify(ev::STRING, "pfadd", key);
    } else {
        ctx.client.write_was_noop = true;
    }
    ctx.out.int(i64::from(changed));
    Ok(())
}

pub fn pfcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let count = if args.len() > 2 { count_union(ctx, &args[1..])? } else { count_one(ctx, args[1])? };
    ctx.out.int(i64::try_from(count).unwrap_or(i64::MAX));
    Ok(())
}

/// Counts the keyspace hit or miss of a read lookup.
fn record_lookup(ctx: &Ctx<'_>, found: bool) {
    if found {
        ctx.stats.keyspace_hits.add(1);
    } else {
        ctx.stats.keyspace_misses.add(1);
    }
}

/// PFCOUNT of one key: the cached cardinality, recomputed and stored when
/// stale (a change of the value, as WATCH sees it, but not logged).
fn count_one(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<u64, CmdError> {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let entry = shard.db(db).get(key, ctx.now_ms);
    record_lookup(ctx, entry.is_some());
    let Some(entry) = entry else { return Ok(0) };
    let hll = sketch_mut(&mut entry.value)?;
    if let Some(cached) = hll::cached_count(hll) {
        return Ok(cached);
    }
    let count = hll::count(hll).map_err(hll_error)?;
    hll::cache_count(hll, count);
    crate::modified::key(ctx.server, db, key);
    Ok(count)
}

/// The register-wise maximum of the sketches under `keys` (absent keys
/// count as empty), read through `guard`, and whether any of them is dense.
fn union_of(ctx: &Ctx<'_>, guard: &mut MultiGuard<'_>, keys: &[&[u8]]) -> Result<(Registers, bool), CmdError> {
    let db = ctx.db();
    let mut union = Registers::default();
    let mut any_dense = false;
    for key in keys {
        let entry = guard.table(db, key).get(key, ctx.now_ms);
        record_lookup(ctx, entry.is_some());
        let Some(entry) = entry else { continue };
        let hll = sketch(&entry.value)?;
        any_dense |= hll::encoding_of(hll) == Encoding::Dense;
        union.merge(hll).map_err(hll_error)?;
    }
    Ok((union, any_dense))
}

/// PFCOUNT of several keys: the cardinality of their union.
fn count_union(ctx: &Ctx<'_>, keys: &[&[u8]]) -> Result<u64, CmdError> {
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    Ok(union_of(ctx, &mut guard, keys)?.0.count())
}

pub fn pfmerge(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let destination = args[1];
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(args[1..].iter().copied());
    let (union, any_dense) = union_of(ctx, &mut guard, &args[1..])?;
    let (hll, _) = sketch_or_create(guard.table(db, destination), destination, ctx.now_ms)?;
    if any_dense {
        hll::to_dense(hll).map_err(hll_error)?;
    }
    union.store_into(hll, sparse_max_bytes());
    ctx.notify(ev::STRING, "pfadd", destination);
    ctx.out.ok();
    Ok(())
}

pub fn pfdebug(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (subcommand, key) = (args[1], args[2]);
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let entry = shard.db(db).get(key, ctx.now_ms).ok_or(CmdError::err("The specified key does not exist"))?;
    let hll = sketch_mut(&mut entry.value)?;
    let mut converted = false;
    if is(subcommand, "getreg") {
        converted = hll::to_dense(hll).map_err(hll_error)?;
        ctx.out.array(hll::REGISTERS);
        for value in hll::dense_registers(hll) {
            ctx.out.int(i64::from(value));
        }
    } else if is(subcommand, "decode") {
        if hll::encoding_of(hll) != Encoding::Sparse {
            return Err(CmdError::err("HLL encoding is not sparse"));
        }
        ctx.out.bulk(hll::decode_sparse(hll).as_bytes());
    } else if is(subcommand, "encoding") {
        ctx.out.simple(hll::encoding_of(hll).name());
    } else if is(subcommand, "todense") {
        converted = hll::to_dense(hll).map_err(hll_error)?;
        ctx.out.int(i64::from(converted));
    } else {
        return Err(CmdError::err(format!("Unknown PFDEBUG subcommand '{}'", text(subcommand))));
    }
    // Only a conversion to dense changes the value (and is logged).
    ctx.client.write_was_noop = !converted;
    Ok(())
}

pub fn pfselftest(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    hll::self_test(sparse_max_bytes()).map_err(CmdError::err)?;
    ctx.out.ok();
    Ok(())
}
