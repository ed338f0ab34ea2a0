//! The end of a MIGRATE without COPY: the keys the target acknowledged are
//! deleted here, each only if it is unchanged since it was serialized.
//!
//! Why not hold the keys' shards for the whole MIGRATE, as Redis (which
//! blocks its whole server) in effect does: the transfer waits on the
//! network for up to `timeout` per read, and a held shard stalls every
//! worker whose clients touch any key of it. So the shards are held only
//! while a key is serialized (with a copy of its value and its expiry) and
//! again while the acknowledged keys are deleted. A key counts as changed,
//! and is left alone, when its value or expiry differs from that copy
//! (compared under its shard lock, so a write either lands before the check
//! and keeps the key, or after the delete and recreates it), or when a write
//! command touched it meanwhile: its keys are WATCHed under an id of the
//! MIGRATE's own from the serialization on, which also catches a write that
//! put back the same value, and a MIGRATE whose target is this very server
//! (its RESTORE ... REPLACE would otherwise look unchanged). Leaving the key
//! is the outcome of the other write running just after the MIGRATE, so no
//! write is lost.
//!
//! The deletes run through the write path as `DEL` of the keys actually
//! deleted (so the WAL records them, and a restart keeps them deleted),
//! raise `del` keyspace events, touch WATCHers and tracking clients, and
//! count as changes, as Redis's `migrateCommand` does; MIGRATE itself was
//! counted once in the command statistics.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairn_engine::events as ev;
use cairn_engine::Value;

use crate::commands::table::{c, CommandSpec, KALL, WRITE};
use crate::commands::{CmdResult, Ctx};
use crate::server::Server;

/// What a key held when it was serialized.
#[derive(Debug, Clone)]
pub struct Sent {
    pub key: Vec<u8>,
    pub value: Value,
    pub expire_at_ms: Option<u64>,
    /// Set when a write command touches the key (its watch, see [`watch`]).
    pub touched: Arc<AtomicBool>,
}

/// Watcher ids of MIGRATEs: far above any client id, so they never meet
/// a client's own WATCHes in the registry.
static NEXT_WATCHER: AtomicU64 = AtomicU64::new(1 << 63);

/// A new id to watch a MIGRATE's keys under.
pub fn new_watcher() -> u64 {
    NEXT_WATCHER.fetch_add(1, Ordering::Relaxed)
}

/// Watches `key` of database `db` for MIGRATE `watcher`; the flag returned
/// is set by the writes that touch it from now on.
pub fn watch(server: &Server, db: usize, watcher: u64, key: &[u8]) -> Arc<AtomicBool> {
    let touched = Arc::new(AtomicBool::new(false));
    server.watches.watch(db, key, watcher, &touched);
    touched
}

/// Stops watching the keys of `sent` for MIGRATE `watcher`.
pub fn forget(server: &Server, db: usize, watcher: u64, sent: &[Sent]) {
    let watched: Vec<(usize, Vec<u8>)> = sent.iter().map(|s| (db, s.key.clone())).collect();
    server.watches.forget(watcher, &watched);
}

/// The deletes as the write path sees them: a DEL (never in the command
/// table; the WAL records the keys it deleted).
static DELETE_UNCHANGED: CommandSpec = c("del", -2, WRITE, KALL, delete_unchanged);

/// Deletes the acknowledged keys (`acked`, by index in `sent`) that are
/// unchanged, in the client's database (the one MIGRATE ran in: the client
/// ran nothing else meanwhile).
pub fn remove_acked(ctx: &mut Ctx<'_>, sent: Vec<Sent>, acked: &[bool]) -> CmdResult {
    let acked: Vec<Sent> = sent.into_iter().zip(acked).filter(|(_, &ok)| ok).map(|(s, _)| s).collect();
    if acked.is_empty() {
        return Ok(());
    }
    let keys: Vec<Vec<u8>> = acked.iter().map(|s| s.key.clone()).collect();
    let mut args: Vec<&[u8]> = vec![b"DEL"];
    args.extend(keys.iter().map(Vec::as_slice));
    ctx.client.migrated = acked;
    let result = crate::persistence::logging::run(ctx, &DELETE_UNCHANGED, &args);
    ctx.client.migrated = Vec::new();
    ctx.client.write_was_noop = false;
    result
}

/// The handler of [`DELETE_UNCHANGED`]: deletes the keys of
/// `client.migrated` that still hold what was sent, and has the write path
/// log them (nothing when none was).
fn delete_unchanged(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let sent = std::mem::take(&mut ctx.client.migrated);
    let db = ctx.db();
    let mut deleted: Vec<Vec<u8>> = Vec::new();
    {
        let mut guard = ctx.server.keyspace.lock_keys(sent.iter().map(|s| s.key.as_slice()));
        for s in &sent {
            let table = guard.table(db, &s.key);
            let unchanged = !s.touched.load(Ordering::SeqCst)
                && table
                    .get_untouched(&s.key, ctx.now_ms)
                    .is_some_and(|entry| entry.value == s.value && entry.expire_at() == s.expire_at_ms);
            if unchanged {
                table.remove(&s.key);
                ctx.notify(ev::GENERIC, "del", &s.key);
                ctx.server.blocking.signal(db, &s.key);
                deleted.push(s.key.clone());
            }
        }
    }
    for key in &deleted {
        crate::modified::key(ctx.server, db, key);
    }
    if deleted.is_empty() {
        ctx.client.write_was_noop = true;
        return Ok(());
    }
    ctx.server.persistence.snapshot.changes.add(deleted.len() as u64);
    let mut logged = vec![b"DEL".to_vec()];
    logged.extend(deleted);
    ctx.client.log_as = Some(logged);
    Ok(())
}
