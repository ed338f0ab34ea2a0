//! Running a write command so that the log records it in execution order.
//!
//! The command's shards are held (re-entrant locks, as EXEC does) from
//! before it runs until its record is in the log buffer, and its clock is
//! read after the locks are taken from a clock that never goes backwards, so
//! for every key the log's order and times are the order and times the
//! commands ran with. Every command flagged WRITE in the table goes through
//! here whenever a log exists: adding a write command cannot skip the log
//! (and a test checks the WRITE flags against Redis's own command table).

use std::borrow::Cow;

use cairn_engine::durability::{record, Kind, Wal, WalError};
use cairn_engine::Keyspace;
use smallvec::SmallVec;

use super::effect::{self, Effect};
use crate::blocking::BlockState;
use crate::commands::table::{CommandSpec, MOVABLE, WRITE};
use crate::commands::{CmdError, CmdResult, Ctx};

/// The error a write gets while the log refuses writes.
pub fn refused(e: &WalError) -> CmdError {
    match e {
        WalError::DiskFull(m) => {
            CmdError::Message(format!("MISCONF Disk full: writes are refused until space returns ({m})"))
        }
        WalError::Failed(m) => {
            CmdError::Message(format!("MISCONF Errors writing to the WAL: writes are refused until restart ({m})"))
        }
    }
}

/// The sorted shards a write command may touch: its keys' shards, or all of
/// them when its keys are not all declared (FLUSHALL, ZUNIONSTORE, ...).
pub fn shards_for(keyspace: &Keyspace, spec: &CommandSpec, args: &[&[u8]]) -> Vec<usize> {
    let Some(positions) = spec.all_key_positions(args.len()) else {
        return (0..keyspace.num_shards()).collect();
    };
    let mut shards: Vec<usize> = positions.into_iter().map(|p| keyspace.shard_of(args[p])).collect();
    shards.sort_unstable();
    shards.dedup();
    shards
}

/// Shard locks held around a write command.
enum Held<'a> {
    /// The common case, without allocating: one key.
    One(#[allow(dead_code)] parking_lot::ReentrantMutexGuard<'a, cairn_engine::keyspace::ShardCell>),
    Many(#[allow(dead_code)] cairn_engine::keyspace::HeldShards<'a>),
}

fn hold<'a>(ctx: &Ctx<'a>, spec: &CommandSpec, args: &[&[u8]]) -> Held<'a> {
    let keyspace = &ctx.server.keyspace;
    let single = spec.first_key > 0 && spec.first_key == spec.last_key && spec.flags & MOVABLE == 0;
    match args.get(spec.first_key as usize) {
        Some(key) if single => Held::One(keyspace.hold_shard(keyspace.shard_of(key))),
        _ => Held::Many(keyspace.hold_shards(&shards_for(keyspace, spec, args))),
    }
}

/// Runs any command: write commands through [`execute`] when a log was
/// ever opened (it decides, with the shards held, whether to log),
/// everything else straight through its handler.
pub fn run(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[&[u8]]) -> CmdResult {
    if spec.flags & WRITE == 0 {
        return (spec.handler)(ctx, args);
    }
    let result = run_write(ctx, spec, args);
    // The handler's form to log, if it gave one, served this command only.
    ctx.client.log_as = None;
    result
}

fn run_write(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[&[u8]]) -> CmdResult {
    let server = ctx.server;
    if let Some(wal) = server.persistence.wal_opened() {
        return execute(ctx, spec, args, wal);
    }
    // Never logged: counted in flight, so that logging starting at runtime
    // waits for this write (see `unlogged`).
    let in_flight = server.persistence.unlogged.enter();
    if let Some(wal) = server.persistence.wal_opened() {
        drop(in_flight);
        return execute(ctx, spec, args, wal);
    }
    (spec.handler)(ctx, args)
}

/// Runs a write command and logs its effect (or, inside EXEC, queues it for
/// the transaction's record) if the tier logs when its shards are held: a
/// tier change holds every shard, so each write is either before it (and in
/// the snapshot a restart of logging takes after it) or after it.
pub fn execute(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: &[&[u8]], wal: &Wal) -> CmdResult {
    let held = hold(ctx, spec, args);
    if !wal.logs() {
        let result = (spec.handler)(ctx, args);
        drop(held);
        return result;
    }
    if let Err(e) = wal.check_writable() {
        drop(held);
        return Err(refused(&e));
    }
    if ctx.client.txn_log.is_none() {
        ctx.now_ms = cairn_engine::clock::monotonic_now_ms();
    }
    let reply_start = ctx.out.buffer().len();
    let was_blocked = matches!(ctx.client.block, BlockState::Blocked(_) | BlockState::NotServed);
    let result = (spec.handler)(ctx, args);
    let blocked = !was_blocked && matches!(ctx.client.block, BlockState::Blocked(_) | BlockState::NotServed);
    let reply = &ctx.out.buffer()[reply_start..];
    let failed = result.is_err() || reply.first().is_some_and(|&b| b == b'-' || b == b'!');
    // Read, not cleared: the dispatcher also skips touching WATCHers for it.
    let noop = ctx.client.write_was_noop;
    if !failed && !blocked && !noop {
        if let Err(e) = log(ctx, spec.name, args, reply_start, wal) {
            ctx.out.buffer().truncate(reply_start);
            drop(held);
            return Err(refused(&e));
        }
    }
    drop(held);
    result
}

fn log(ctx: &mut Ctx<'_>, name: &str, args: &[&[u8]], reply_start: usize, wal: &Wal) -> Result<(), WalError> {
    let now_ms = ctx.now_ms;
    let db = ctx.client.db as u32;
    // What the handler asked to log instead, or the effect, which may
    // borrow from the reply (a counter's new value).
    let log_as = ctx.client.log_as.take();
    let reply = &ctx.out.buffer()[reply_start..];
    let effect = match &log_as {
        Some(words) => Effect::Rewritten(words.iter().map(|w| Cow::Borrowed(w.as_slice())).collect()),
        None => effect::of(name, args, reply, now_ms),
    };
    let rewritten: SmallVec<[&[u8]; effect::INLINE_ARGS]>;
    let logged: &[&[u8]] = match &effect {
        Effect::Nothing => return Ok(()),
        Effect::AsSent => args,
        Effect::Rewritten(v) => {
            rewritten = v.iter().map(|a| &**a).collect();
            &rewritten
        }
    };
    if let Some(txn) = ctx.client.txn_log.as_mut() {
        txn.push((db, logged.iter().map(|a| a.to_vec()).collect()));
        return Ok(());
    }
    let lsn = wal.append_command(now_ms, db, logged)?;
    ctx.client.last_lsn = lsn;
    Ok(())
}

/// Writes a transaction's queued commands as one record (EXEC, still
/// holding its shards).
pub fn log_transaction(ctx: &mut Ctx<'_>, wal: &Wal, commands: Vec<(u32, Vec<Vec<u8>>)>) -> Result<(), WalError> {
    if commands.is_empty() {
        return Ok(());
    }
    let lsn = wal.append(ctx.now_ms, Kind::Transaction, commands.len(), |out| {
        for (db, args) in &commands {
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            record::put_command(out, *db, &args);
        }
    })?;
    ctx.client.last_lsn = lsn;
    Ok(())
}
