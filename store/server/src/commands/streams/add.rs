//! Writing entries: XADD, XDEL, XTRIM, XSETID, and XLEN.

use cairn_engine::events as ev;
use cairn_engine::types::stream::{AppendError, NewId, SeqSpec, SetIdError, StreamId};

use super::super::{is, CmdError, CmdResult, Ctx};
use super::args::{int_or, parse_add_trim, strict_id};
use super::{exact_trim, lookup, lookup_or_create, write_id};

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
pub fn xadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let parsed = parse_add_trim(args, true)?;
    let field_pos = parsed.id_pos + 1;
    let pairs = args.get(field_pos..).unwrap_or_default();
    if pairs.len() < 2 || pairs.len() % 2 == 1 {
        return Err(CmdError::WrongArity);
    }
    let new_id = match parsed.id {
        None => NewId::Auto { now_ms: ctx.now_ms },
        Some((id, SeqSpec::Auto)) => NewId::AutoSeq { ms: id.ms },
        Some((id, _)) if id.is_zero() => {
            return Err(CmdError::Static("ERR The ID specified in XADD must be greater than 0-0"))
        }
        Some((id, _)) => NewId::Explicit(id),
    };
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    if parsed.no_mkstream && lookup(table, args[1], ctx.now_ms)?.is_none() {
        ctx.out.null_bulk();
        return Ok(());
    }
    let stream = lookup_or_create(table, args[1], ctx.now_ms)?;
    if stream.last_id() == StreamId::MAX {
        return Err(CmdError::Static("ERR The stream has exhausted the last possible ID, unable to add more items"));
    }
    let id = stream.append(new_id, pairs).map_err(|e| match e {
        AppendError::IdTooSmall => {
            CmdError::Static("ERR The ID specified in XADD is equal or smaller than the target stream top item")
        }
        // Redis reports a sequence overflow with whatever `errno` held, which
        // is not EDOM, so it falls through to this message.
        AppendError::SeqExhausted | AppendError::TooLarge => {
            CmdError::Static("ERR Elements are too large to be stored")
        }
    })?;
    write_id(&mut ctx.out, id);
    ctx.notify(ev::STREAM, "xadd", args[1]);
    if let Some(spec) = &parsed.trim {
        if stream.trim(spec) > 0 {
            ctx.notify(ev::STREAM, "xtrim", args[1]);
        }
        ctx.client.log_as = exact_trim::logged_form(args, &parsed, stream);
    }
    ctx.server.blocking.signal(db, args[1]);
    Ok(())
}

/// XLEN key
pub fn xlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let len = lookup(shard.db(db), args[1], ctx.now_ms)?.map_or(0, |s| s.len());
    ctx.out.int(len as i64);
    Ok(())
}

/// XDEL key id [id ...]
pub fn xdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(stream) = lookup(shard.db(db), args[1], ctx.now_ms)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let ids = args[2..].iter().map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let deleted = stream.delete_entries(&ids);
    if deleted > 0 {
        ctx.notify(ev::STREAM, "xdel", args[1]);
    }
    ctx.out.int(deleted as i64);
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let parsed = parse_add_trim(args, false)?;
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let deleted = match (lookup(shard.db(db), args[1], ctx.now_ms)?, &parsed.trim) {
        (Some(stream), Some(spec)) => {
            let deleted = stream.trim(spec);
            if deleted > 0 {
                ctx.client.log_as = exact_trim::logged_form(args, &parsed, stream);
            }
            deleted
        }
        _ => 0,
    };
    if deleted > 0 {
        ctx.notify(ev::STREAM, "xtrim", args[1]);
    } else {
        // Nothing to log or to signal, as Redis does not propagate it: an
        // approximate trim that removed nothing here may remove entries
        // from a stream of other node sizes.
        ctx.client.write_was_noop = true;
    }
    ctx.out.int(deleted as i64);
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let id = strict_id(args[2])?;
    let mut entries_added = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(args[i], "entriesadded") && more > 0 {
            let n = int_or(args[i + 1], "ERR value is not an integer or out of range")?;
            if n < 0 {
                return Err(CmdError::Static("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(args[i], "maxdeletedid") && more > 0 {
            max_deleted = strict_id(args[i + 1])?;
            if id < max_deleted {
                return Err(CmdError::Static(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let stream = lookup(shard.db(db), args[1], ctx.now_ms)?.ok_or(CmdError::NoSuchKey)?;
    stream.set_id(id, entries_added, max_deleted).map_err(|e| match e {
        SetIdError::BelowTopItem => {
            CmdError::Static("ERR The ID specified in XSETID is smaller than the target stream top item")
        }
        SetIdError::EntriesAddedBelowLength => {
            CmdError::Static("ERR The entries_added specified in XSETID is smaller than the target stream length")
        }
    })?;
    ctx.out.ok();
    Ok(())
}
