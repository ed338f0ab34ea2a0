//! Generic key commands: DEL/UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY,
//! RENAME/RENAMENX, COPY, MOVE, TOUCH.

use cairn_engine::events as ev;
use cairn_engine::glob;
use rand::Rng;

use super::{int_arg, is, CmdError, CmdResult, Ctx};

/// DEL: frees in place, or in the background with `lazyfree-lazy-user-del`.
pub fn del(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let lazy = ctx.server.runtime.lazy_user_del.load(std::sync::atomic::Ordering::Relaxed);
    delete(ctx, args, lazy)
}

/// UNLINK: big values are freed in the background (see `crate::lazyfree`).
pub fn unlink(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    delete(ctx, args, true)
}

fn delete(ctx: &mut Ctx<'_>, args: &[&[u8]], lazy: bool) -> CmdResult {
    let keys = &args[1..];
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    let mut removed = 0;
    for key in keys {
        let table = guard.table(db, key);
        if table.get(key, ctx.now_ms).is_some() {
            let entry = table.remove(key);
            if let (true, Some(entry)) = (lazy, entry) {
                ctx.server.lazyfree.free_value(entry.value);
            }
            removed += 1;
            ctx.notify(ev::GENERIC, "del", key);
            // Blocked XREADGROUPs on a deleted stream get an error (Redis's signalDeletedKeyAsReady).
            ctx.server.blocking.signal(db, key);
        }
    }
    ctx.out.int(removed);
    Ok(())
}

pub fn exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    // Not an access (Redis's `LOOKUP_NOTOUCH`).
    let found = keys.iter().filter(|k| guard.table(db, k).get_untouched(k, ctx.now_ms).is_some()).count();
    ctx.out.int(found as i64);
    Ok(())
}

pub fn touch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keys = &args[1..];
    let db = ctx.db();
    let mut guard = ctx.server.keyspace.lock_keys(keys.iter().copied());
    // The lookup records the access (`Table::get`).
    let found = keys.iter().filter(|k| guard.table(db, k).get(k, ctx.now_ms).is_some()).count() as i64;
    ctx.out.int(found);
    Ok(())
}

pub fn type_(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let name = shard.db(db).get_untouched(args[1], ctx.now_ms).map(|e| e.value.type_name()).unwrap_or("none");
    ctx.out.simple(name);
    Ok(())
}

pub fn keys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pattern = args[1];
    let all = pattern == b"*";
    let db = ctx.db();
    let mut found: Vec<Vec<u8>> = Vec::new();
    for index in 0..ctx.server.keyspace.num_shards() {
        let shard = ctx.server.keyspace.lock(index);
        found.extend(
            shard
                .db_ref(db)
                .iter(ctx.now_ms)
                .filter(|(k, _)| all || glob::matches(pattern, k, false))
                .map(|(k, _)| k.to_vec()),
        );
    }
    ctx.out.array(found.len());
    for key in &found {
        ctx.out.bulk(key);
    }
    Ok(())
}

/// SCAN's cursor is the index of the next shard to visit: a key present for
/// the whole iteration is returned, since keys never move between shards.
pub fn scan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = cairn_engine::number::parse_u64(args[1]).ok_or(CmdError::Static("ERR invalid cursor"))?;
    let options = ScanOptions::parse(&args[2..])?;
    let db = ctx.db();
    let shards = ctx.server.keyspace.num_shards() as u64;
    let mut next = cursor;
    let mut found: Vec<Vec<u8>> = Vec::new();
    while next < shards && found.len() < options.count {
        let shard = ctx.server.keyspace.lock(next as usize);
        for (key, entry) in shard.db_ref(db).iter(ctx.now_ms) {
            if options.matches(key, entry.value.type_name()) {
                found.push(key.to_vec());
            }
        }
        next += 1;
    }
    let next = if next >= shards { 0 } else { next };
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    for key in &found {
        ctx.out.bulk(key);
    }
    Ok(())
}

/// MATCH, COUNT and TYPE options of the SCAN family.
pub struct ScanOptions<'a> {
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
    pub type_name: Option<String>,
}

impl<'a> ScanOptions<'a> {
    pub fn parse(args: &[&'a [u8]]) -> Result<Self, CmdError> {
        let mut o = ScanOptions { pattern: None, count: 10, type_name: None };
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).ok_or(CmdError::Syntax)?;
            if is(args[i], "match") {
                o.pattern = Some(*value).filter(|p| *p != b"*");
            } else if is(args[i], "count") {
                let n = int_arg(value)?;
                if n < 1 {
                    return Err(CmdError::Syntax);
                }
                o.count = n as usize;
            } else if is(args[i], "type") {
                o.type_name = Some(String::from_utf8_lossy(value).to_ascii_lowercase());
            } else {
                return Err(CmdError::Syntax);
            }
            i += 2;
        }
        Ok(o)
    }

    pub fn matches(&self, key: &[u8], type_name: &str) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, key, false))
            && self.type_name.as_deref().is_none_or(|t| t == type_name)
    }
}

pub fn randomkey(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let keyspace = &ctx.server.keyspace;
    let shards = keyspace.num_shards();
    let mut rng = rand::thread_rng();
    let start = rng.gen_range(0..shards);
    for step in 0..shards {
        let mut shard = keyspace.lock((start + step) % shards);
        let table = shard.db(db);
        // A few tries in this shard, in case the picks have expired.
        for _ in 0..8 {
            if table.is_empty() {
                break;
            }
            let pick = rng.gen_range(0..table.len());
            let Some(key) = table.nth_key(pick).cloned() else { break };
            if table.get(&key, ctx.now_ms).is_some() {
                ctx.out.bulk(&key);
                return Ok(());
            }
        }
    }
    ctx.out.null_bulk();
    Ok(())
}

fn rename_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], only_if_absent: bool) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut guard = ctx.server.keyspace.lock_keys([src, dst]);
    if guard.table(db, src).get(src, now).is_none() {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        if only_if_absent {
            ctx.out.int(0);
        } else {
            ctx.out.ok();
        }
        return Ok(());
    }
    if only_if_absent && guard.table(db, dst).get(dst, now).is_some() {
        ctx.out.int(0);
        return Ok(());
    }
    if let Some(entry) = guard.table(db, src).remove(src) {
        let table = guard.table(db, dst);
        table.remove(dst);
        table.insert_entry(dst, entry, now);
        ctx.server.blocking.signal(db, dst);
        ctx.notify(ev::GENERIC, "rename_from", src);
        ctx.notify(ev::GENERIC, "rename_to", dst);
    }
    if only_if_absent {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

pub fn rename(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, false)
}

pub fn renamenx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// Parses a database index argument, checking it exists.
pub fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, CmdError> {
    let n = int_arg(arg)?;
    if n < 0 || n as usize >= ctx.server.keyspace.num_dbs() {
        return Err(CmdError::DbIndexOutOfRange);
    }
    Ok(n as usize)
}

pub fn copy(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src, dst) = (args[1], args[2]);
    let mut dst_db = ctx.db();
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if is(args[i], "replace") {
            replace = true;
            i += 1;
        } else if is(args[i], "db") && i + 1 < args.len() {
            dst_db = db_index(ctx, args[i + 1])?;
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let src_db = ctx.db();
    if src == dst && src_db == dst_db {
        return Err(CmdError::Static("ERR source and destination objects are the same"));
    }
    let now = ctx.now_ms;
    let mut guard = ctx.server.keyspace.lock_keys([src, dst]);
    let Some(entry) = guard.table(src_db, src).get(src, now).cloned() else {
        ctx.out.int(0);
        return Ok(());
    };
    let target = guard.table(dst_db, dst);
    if target.get(dst, now).is_some() {
        if !replace {
            ctx.out.int(0);
            return Ok(());
        }
        target.remove(dst);
    }
    target.insert_entry(dst, entry, now);
    ctx.server.blocking.signal(dst_db, dst);
    ctx.notify_db(ev::GENERIC, "copy_to", dst_db, dst);
    ctx.out.int(1);
    Ok(())
}

pub fn move_(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = args[1];
    let dst_db = db_index(ctx, args[2])?;
    let src_db = ctx.db();
    if src_db == dst_db {
        return Err(CmdError::Static("ERR source and destination objects are the same"));
    }
    let now = ctx.now_ms;
    let mut shard = ctx.server.keyspace.lock_key(key);
    if shard.db(src_db).get(key, now).is_none() || shard.db(dst_db).get(key, now).is_some() {
        ctx.out.int(0);
        return Ok(());
    }
    if let Some(entry) = shard.db(src_db).remove(key) {
        shard.db(dst_db).insert_entry(key, entry, now);
        ctx.server.blocking.signal(dst_db, key);
        ctx.notify_db(ev::GENERIC, "move_from", src_db, key);
        ctx.notify_db(ev::GENERIC, "move_to", dst_db, key);
    }
    ctx.out.int(1);
    Ok(())
}
