//! Server commands: CONFIG, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, TIME, LASTSAVE, SAVE.

use std::collections::HashSet;

use super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use crate::config_params;

/// Writes a HELP reply: one status line per entry.
pub fn write_help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.out.array(lines.len());
    for line in lines {
        ctx.out.simple(line);
    }
}

pub fn config(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let sub_arity = || CmdError::subcommand_arity("config", sub);
    if is(sub, "get") {
        if args.len() < 3 {
            return Err(sub_arity());
        }
        config_get(ctx, &args[2..]);
    } else if is(sub, "set") {
        if args.len() < 4 || args.len() % 2 == 1 {
            return Err(sub_arity());
        }
        config_set(ctx, &args[2..])?;
    } else if is(sub, "resetstat") {
        if args.len() != 2 {
            return Err(sub_arity());
        }
        ctx.server.reset_stats();
        ctx.out.ok();
    } else if is(sub, "rewrite") {
        if args.len() != 2 {
            return Err(sub_arity());
        }
        return Err(match ctx.server.config.config_file {
            None => CmdError::Static("ERR The server is running without a config file"),
            Some(_) => CmdError::Static("ERR CONFIG REWRITE is not supported by Cairn yet"),
        });
    } else if is(sub, "help") {
        write_help(
            ctx,
            &[
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Print this help.",
            ],
        );
    } else {
        return Err(CmdError::unknown_subcommand("config", sub));
    }
    Ok(())
}

fn config_get(ctx: &mut Ctx<'_>, patterns: &[&[u8]]) {
    let mut seen = HashSet::new();
    let mut pairs = Vec::new();
    for pattern in patterns {
        for (name, value) in ctx.server.runtime.matching(pattern) {
            if seen.insert(name) {
                pairs.push((name, value));
            }
        }
    }
    ctx.out.map(pairs.len());
    for (name, value) in pairs {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
}

fn config_set(ctx: &mut Ctx<'_>, pairs: &[&[u8]]) -> CmdResult {
    let texts: Vec<(String, String)> = pairs.chunks_exact(2).map(|pair| (text(pair[0]), text(pair[1]))).collect();
    let changes = texts.iter().map(|(name, value)| (name.as_str(), value.as_str()));
    let updates = config_params::validate_changes(&ctx.server.runtime, changes).map_err(CmdError::err)?;
    // Lower limits (maxmemory, tracking-table-max-keys) take effect inside.
    ctx.server.set_config(&updates).map_err(CmdError::err)?;
    ctx.out.ok();
    Ok(())
}

pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let (keys, _) = ctx.server.keyspace.db_size(ctx.db());
    ctx.out.int(keys as i64);
    Ok(())
}

/// Checks FLUSHDB/FLUSHALL's optional ASYNC|SYNC argument.
/// Whether a flush frees in the background: ASYNC, SYNC, or neither (then
/// `lazyfree-lazy-user-flush` decides).
fn flush_is_async(ctx: &Ctx<'_>, args: &[&[u8]]) -> Result<bool, CmdError> {
    match args {
        [] => Ok(ctx.server.runtime.lazy_user_flush.load(std::sync::atomic::Ordering::Relaxed)),
        [mode] if is(mode, "async") => Ok(true),
        [mode] if is(mode, "sync") => Ok(false),
        _ => Err(CmdError::Syntax),
    }
}

/// Empties database `db` of one shard: in place, or into `garbage` (freed
/// in the background once every shard lock is released).
fn flush_table(table: &mut cairn_engine::Table, garbage: Option<&mut Vec<cairn_engine::Table>>) {
    match garbage {
        Some(garbage) => garbage.push(table.take()),
        None => table.clear(),
    }
}

/// Marks dirty the WATCHers of keys that exist in `db` (a flush or swap
/// changes them; watched keys that do not exist stay untouched, as in Redis).
fn touch_existing_watched(ctx: &Ctx<'_>, db: usize) {
    for key in ctx.server.watches.keys_in_db(db) {
        if ctx.server.keyspace.lock_key(&key).db(db).peek(&key, ctx.now_ms).is_some() {
            ctx.server.watches.touch(db, &key);
        }
    }
}

/// SWAPDB: a watched key of `db` changes if it exists there now or will
/// after the swap (it exists in `other`); expired keys count as missing.
fn touch_swapped_watched(ctx: &Ctx<'_>, db: usize, other: usize) {
    for key in ctx.server.watches.keys_in_db(db) {
        let mut shard = ctx.server.keyspace.lock_key(&key);
        let changes = shard.db(db).peek(&key, ctx.now_ms).is_some() || shard.db(other).peek(&key, ctx.now_ms).is_some();
        drop(shard);
        if changes {
            ctx.server.watches.touch(db, &key);
        }
    }
}

pub fn flushdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let lazy = flush_is_async(ctx, &args[1..])?;
    let db = ctx.db();
    touch_existing_watched(ctx, db);
    let mut garbage = Vec::new();
    let mut all = ctx.server.keyspace.lock_all();
    all.for_each_shard(|shard| flush_table(shard.db(db), lazy.then_some(&mut garbage)));
    drop(all);
    crate::modified::everything(ctx.server);
    ctx.server.lazyfree.free_tables(garbage);
    ctx.server.blocking.signal_db(db);
    ctx.out.ok();
    Ok(())
}

pub fn flushall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let lazy = flush_is_async(ctx, &args[1..])?;
    let dbs = ctx.server.keyspace.num_dbs();
    (0..dbs).for_each(|db| touch_existing_watched(ctx, db));
    let mut garbage = Vec::new();
    let mut all = ctx.server.keyspace.lock_all();
    all.for_each_shard(|shard| (0..dbs).for_each(|db| flush_table(shard.db(db), lazy.then_some(&mut garbage))));
    drop(all);
    crate::modified::everything(ctx.server);
    ctx.server.lazyfree.free_tables(garbage);
    (0..dbs).for_each(|db| ctx.server.blocking.signal_db(db));
    ctx.out.ok();
    Ok(())
}

pub fn swapdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let a = int_arg(args[1]).map_err(|_| CmdError::Static("ERR invalid first DB index"))?;
    let b = int_arg(args[2]).map_err(|_| CmdError::Static("ERR invalid second DB index"))?;
    let dbs = ctx.server.keyspace.num_dbs() as i64;
    if a < 0 || a >= dbs || b < 0 || b >= dbs {
        return Err(CmdError::DbIndexOutOfRange);
    }
    if a != b {
        touch_swapped_watched(ctx, a as usize, b as usize);
        touch_swapped_watched(ctx, b as usize, a as usize);
        let mut all = ctx.server.keyspace.lock_all();
        all.for_each_shard(|shard| shard.swap_dbs(a as usize, b as usize));
        ctx.server.blocking.signal_db(a as usize);
        ctx.server.blocking.signal_db(b as usize);
        drop(all);
        // Cached keys of either database now hold other values (Redis 7.0
        // leaves them cached; a client would read stale values).
        crate::modified::everything(ctx.server);
    }
    ctx.out.ok();
    Ok(())
}

pub fn time(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let us = cairn_engine::clock::now_us();
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
    Ok(())
}

/// CLUSTER: Cairn runs as a standalone server, and answers as Redis does
/// with `cluster-enabled no` (cluster clients probe with CLUSTER INFO): each
/// of Redis's subcommands is refused, after Redis's own checks of its name
/// and its arity.
pub fn cluster(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let full = format!("cluster|{}", text(sub));
    let Some(arity) = super::meta::arity(&full) else {
        return Err(CmdError::unknown_subcommand("cluster", sub));
    };
    if !super::arity_fits(arity, args.len()) {
        return Err(CmdError::subcommand_arity("cluster", sub));
    }
    Err(CmdError::Static("ERR This instance has cluster support disabled"))
}

pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.out.int(ctx.server.last_save_secs.load(std::sync::atomic::Ordering::Relaxed) as i64);
    Ok(())
}

/// SAVE: a snapshot now, on this connection's worker.
pub fn save(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() || ctx.client.txn_log.is_some() {
        return Err(CmdError::Static("ERR Command not allowed inside a transaction"));
    }
    crate::persistence::snapshot::take(&ctx.server.persistence, &ctx.server.keyspace).map_err(CmdError::err)?;
    ctx.server.last_save_secs.store(cairn_engine::clock::now_ms() / 1000, std::sync::atomic::Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

/// BGSAVE [SCHEDULE] and BGREWRITEAOF: a snapshot on the background thread
/// (a snapshot is Cairn's log rewrite: it lets old segments be recycled).
pub fn bgsave(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() > 2 || (args.len() == 2 && !is(args[1], "schedule")) {
        return Err(CmdError::Syntax);
    }
    let p = &ctx.server.persistence;
    let rewrite = is(args[0], "bgrewriteaof");
    if p.snapshot.in_progress.load(std::sync::atomic::Ordering::Acquire) && args.len() == 1 && !rewrite {
        return Err(CmdError::Static("ERR Background save already in progress"));
    }
    if rewrite {
        p.rewrite_requested.store(true, std::sync::atomic::Ordering::Release);
    }
    p.snapshot_requested.store(true, std::sync::atomic::Ordering::Release);
    if rewrite {
        ctx.out.simple("Background append only file rewriting started");
    } else if args.len() == 2 {
        ctx.out.simple("Background saving scheduled");
    } else {
        ctx.out.simple("Background saving started");
    }
    Ok(())
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops the server (there is
/// nothing to save until persistence lands, so SAVE and NOSAVE are alike).
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    for arg in &args[1..] {
        if is(arg, "abort") {
            return Err(CmdError::Static("ERR No shutdown in progress."));
        }
        if !(is(arg, "nosave") || is(arg, "save") || is(arg, "now") || is(arg, "force")) {
            return Err(CmdError::Syntax);
        }
    }
    tracing::warn!(client = ctx.client.id(), "SHUTDOWN requested by a client");
    ctx.server.shutdown.trigger();
    // SHUTDOWN stops a running script, even one that wrote (SHUTDOWN NOSAVE in Redis).
    ctx.server.scripting.busy.force_kill();
    ctx.client.close_after_reply = true;
    Ok(())
}
