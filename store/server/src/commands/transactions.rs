//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Commands sent after MULTI are checked (name, arity) and queued. EXEC holds
//! the locks of every shard the queued commands touch (all shards when a
//! command has no declared keys), in ascending order, then runs them: the
//! shard locks are re-entrant per thread, so each command's own locking
//! re-enters them and no other worker can interleave. WATCH records whether
//! each key was live; EXEC fails when a watched key was written (the
//! registry marks the client dirty) or has since expired.

use std::sync::atomic::Ordering;

use super::table::{c, lookup, spec, CommandSpec, F, LOADING_OK, NONE, R, TXN_CONTROL};
use super::{dispatch, is, CmdError, CmdResult, Ctx};
use crate::client::MultiState;

pub static COMMANDS: &[CommandSpec] = &[
    c("multi", 1, F | TXN_CONTROL | LOADING_OK, NONE, multi),
    c("exec", 1, TXN_CONTROL | LOADING_OK, NONE, exec),
    c("discard", 1, F | TXN_CONTROL | LOADING_OK, NONE, discard),
    c("watch", -2, F | TXN_CONTROL | LOADING_OK, (1, -1, 1), watch),
    c("unwatch", 1, F | LOADING_OK, NONE, unwatch),
];

/// Whether command `index` carries Redis's `no-multi` flag (SAVE, SHUTDOWN,
/// ...: refused inside MULTI), from Redis's own command table.
pub fn no_multi(index: usize) -> bool {
    static FLAGS: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    FLAGS
        .get_or_init(|| {
            let meta: serde_json::Value = serde_json::from_str(include_str!("redis_meta.json")).unwrap_or_default();
            super::table::all()
                .iter()
                .map(|spec| {
                    let flags = &meta[spec.name][0][2];
                    let list = flags.get("~+").or_else(|| flags.get("~")).and_then(|f| f.as_array());
                    list.is_some_and(|l| l.iter().any(|v| v.as_str() == Some("no_multi")))
                })
                .collect()
        })
        .get(index)
        .copied()
        .unwrap_or(false)
}

pub fn multi(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::Static("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(MultiState::default());
    ctx.out.ok();
    Ok(())
}

pub fn discard(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.take().is_none() {
        return Err(CmdError::Static("ERR DISCARD without MULTI"));
    }
    unwatch_all(ctx);
    ctx.out.ok();
    Ok(())
}

pub fn watch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::Static("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    for key in &args[1..] {
        if ctx.client.watched.iter().any(|w| w.db == db && w.key == *key) {
            continue;
        }
        let live = ctx.server.keyspace.lock_key(key).db(db).peek(key, ctx.now_ms).is_some();
        ctx.server.watches.watch(db, key, ctx.client.id(), &ctx.client.watch_dirty);
        ctx.client.watched.push(crate::client::WatchedKey { db, key: key.to_vec(), live_at_watch: live });
    }
    ctx.out.ok();
    Ok(())
}

pub fn unwatch(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    unwatch_all(ctx);
    ctx.out.ok();
    Ok(())
}

/// Forgets every watched key of this client and clears its dirty flag.
pub fn unwatch_all(ctx: &mut Ctx<'_>) {
    let watched: Vec<(usize, Vec<u8>)> = ctx.client.watched.drain(..).map(|w| (w.db, w.key)).collect();
    ctx.server.watches.forget(ctx.client.id(), &watched);
    ctx.client.watch_dirty.store(false, Ordering::SeqCst);
}

/// Whether a watched key was written, or was live at WATCH and is not now.
fn watch_failed(ctx: &Ctx<'_>) -> bool {
    if ctx.client.watch_dirty.load(Ordering::SeqCst) {
        return true;
    }
    ctx.client
        .watched
        .iter()
        .any(|w| w.live_at_watch && ctx.server.keyspace.lock_key(&w.key).db(w.db).peek(&w.key, ctx.now_ms).is_none())
}

/// Whether `maxmemory` is set and a queued command is `denyoom`.
fn queued_needs_memory(ctx: &Ctx<'_>, state: &crate::client::MultiState) -> bool {
    ctx.server.runtime.maxmemory.load(std::sync::atomic::Ordering::Relaxed) != 0
        && state
            .queued
            .iter()
            .any(|args| args.first().and_then(|name| super::table::lookup(name)).is_some_and(crate::maxmemory::denyoom))
}

/// Whether `args` is an EXEC, on a worker thread, of a transaction that
/// calls a script: the connection then runs it on a blocking thread, since a
/// script may run for long and a worker must never wait for one.
pub fn exec_runs_script(ctx: &Ctx<'_>, args: &[&[u8]]) -> bool {
    ctx.client.multi.is_some() && !ctx.client.off_worker && is(args[0], "exec") && queued_script(ctx.client)
}

/// Whether the client is inside MULTI, not aborted, and queued a script.
pub fn queued_script(client: &crate::client::Client) -> bool {
    client.multi.as_ref().is_some_and(|state| !state.aborted && runs_script(state))
}

pub fn exec(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let Some(state) = ctx.client.multi.take() else {
        return Err(CmdError::Static("ERR EXEC without MULTI"));
    };
    if state.aborted {
        unwatch_all(ctx);
        return Err(CmdError::Static("EXECABORT Transaction discarded because of previous errors."));
    }
    if queued_needs_memory(ctx, &state) && crate::maxmemory::make_room(ctx.server, ctx.now_ms) {
        unwatch_all(ctx);
        return Err(CmdError::Message(format!(
            "EXECABORT Transaction discarded because of: {}",
            crate::maxmemory::OOM
        )));
    }
    let shards = shards_for(ctx, &state);
    // A script inside holds every shard: announce it, and let the workers
    // leave their batches, before taking them (see scripting::quiesce).
    let quiesce = &ctx.server.scripting.quiesce;
    let mut announced = runs_script(&state).then(|| quiesce.announce());
    if announced.is_some() {
        quiesce.wait_for_workers();
    }
    let held = ctx.server.keyspace.hold_shards(&shards);
    if watch_failed(ctx) {
        drop(held);
        if announced.take().is_some() {
            ctx.server.scripting.busy.notify_changed();
        }
        unwatch_all(ctx);
        ctx.out.null_array();
        return Ok(());
    }
    ctx.out.array(state.queued.len());
    // Blocking commands act as their non-blocking forms inside a transaction.
    let block = std::mem::replace(&mut ctx.client.block, crate::blocking::BlockState::Denied);
    // One clock for the whole transaction, read with its shards held; its
    // writes are logged as one record (see persistence::logging).
    ctx.now_ms = cairn_engine::clock::monotonic_now_ms();
    let wal = ctx.server.persistence.wal();
    if wal.is_some() {
        ctx.client.txn_log = Some(Vec::new());
    }
    ctx.client.in_exec = true;
    for queued in &state.queued {
        let args: Vec<&[u8]> = queued.iter().map(Vec::as_slice).collect();
        dispatch(ctx, &args);
    }
    ctx.client.in_exec = false;
    let logged = ctx.client.txn_log.take().unwrap_or_default();
    if let Some(wal) = wal {
        if let Err(e) = crate::persistence::logging::log_transaction(ctx, wal, logged) {
            // The writes ran but cannot be made durable: the log now refuses
            // writes; the client must not take the replies as durable.
            tracing::error!(error = %e, "a transaction could not be logged");
            ctx.client.close_after_reply = true;
        }
    }
    ctx.client.block = block;
    drop(held);
    if announced.take().is_some() {
        ctx.server.scripting.busy.notify_changed();
    }
    unwatch_all(ctx);
    Ok(())
}

fn runs_script(state: &MultiState) -> bool {
    state.queued.iter().any(|queued| super::table::names_script(&queued[0]))
}

/// The sorted shard indexes the queued commands need: what the write path
/// holds for each of them (their keys' shards, or every shard when their
/// keys are not all declared), so EXEC already holds whatever its commands
/// lock; keyless commands that touch no data (PING, ...) need none.
fn shards_for(ctx: &Ctx<'_>, state: &MultiState) -> Vec<usize> {
    let keyspace = &ctx.server.keyspace;
    let mut shards = Vec::new();
    for queued in &state.queued {
        let Some(index) = lookup(&queued[0]) else { continue };
        let spec = spec(index);
        if spec.runs_script() {
            return (0..keyspace.num_shards()).collect();
        }
        if spec.key_positions(queued.len()).is_empty() && spec.flags & (super::table::WRITE | R) == 0 {
            continue;
        }
        let args: Vec<&[u8]> = queued.iter().map(Vec::as_slice).collect();
        let needed = crate::persistence::logging::shards_for(keyspace, spec, &args);
        if needed.len() == keyspace.num_shards() {
            return needed;
        }
        shards.extend(needed);
    }
    for watched in &ctx.client.watched {
        shards.push(keyspace.shard_of(&watched.key));
    }
    shards.sort_unstable();
    shards.dedup();
    shards
}
