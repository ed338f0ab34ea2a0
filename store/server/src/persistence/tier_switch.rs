//! Changing the durability tier at runtime: `CONFIG SET appendonly`,
//! `appendfsync` and Cairn's own `durability` (docs/durability.md, "Changing
//! the tier at runtime").
//!
//! - Between logging tiers (`async`, `everysec`, `sync`): with every shard
//!   held, the log's tier and the server's change together, so each write is
//!   logged and acknowledged under one tier. Writes made in `sync` keep
//!   waiting for their fdatasync after a change away from it
//!   (`Persistence::sync_acks_through`).
//! - To `none`: the same cut; the log stays open, its syncer writes and
//!   fdatasyncs what was appended before, then idles. Nothing is logged.
//! - From `none` to a logging tier: like Redis's rewrite when AOF is turned
//!   on. With every shard held, the log is held (records are buffered, not
//!   written) and the tier changes; then a snapshot is taken (its cut comes
//!   after the change, so it holds every unlogged write) and only once it is
//!   durable is the log released ([`finish_enabling`]). A crash before that
//!   leaves the disk as it was before the change; after it, the snapshot plus
//!   the log. A server that never logged opens its log first.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_engine::durability::{segment, LogTail, Lsn, Tier, Wal};
use cairn_engine::Keyspace;

use super::Persistence;
use crate::server::Server;

/// How long a restart of logging waits for the log to write what was
/// appended before logging stopped (correct without: those records are
/// held too, and the snapshot covers them; the wait only spares `sync`
/// writers still waiting for them the snapshot's time).
const DRAIN_MAX: Duration = Duration::from_secs(1);

/// Moves to `fsync` (a logging tier) if `logging`, else to `none`; `fsync`
/// is remembered for a later `appendonly yes` either way.
pub fn apply(server: &Server, logging: bool, fsync: Tier) -> Result<(), String> {
    let p = &server.persistence;
    let _one = p.switch_lock.lock();
    p.set_fsync_tier(fsync);
    let target = if logging { p.fsync_tier() } else { Tier::None };
    let current = p.tier();
    if target == current {
        return Ok(());
    }
    tracing::info!(from = %current, to = %target, "changing the durability tier");
    if current == Tier::None {
        start_logging(server, target)
    } else {
        change_logging(server, current, target)
    }
}

/// Between logging tiers, or from one to `none`.
fn change_logging(server: &Server, current: Tier, target: Tier) -> Result<(), String> {
    let p = &server.persistence;
    let wal = p.wal_opened().ok_or("the write-ahead log is not open")?;
    let last = {
        let _cut = server.keyspace.hold_all_shards();
        let last = wal.last_lsn();
        if current == Tier::Sync {
            p.sync_acks_through.fetch_max(last, Ordering::AcqRel);
        }
        wal.set_tier(target).map_err(|e| format!("cannot start the WAL syncer: {e}"))?;
        p.set_tier(target);
        last
    };
    if current == Tier::Sync {
        // Replies still waiting for these need not wait for `everysec`'s clock.
        wal.request_sync(last);
    }
    Ok(())
}

/// From `none`: hold the log, change the tier, ask for the snapshot.
fn start_logging(server: &Server, target: Tier) -> Result<(), String> {
    let p = &server.persistence;
    let wal = match p.wal_opened() {
        Some(wal) => {
            drain(p, wal);
            wal
        }
        None => open_first_log(server)?,
    };
    {
        let _cut = server.keyspace.hold_all_shards();
        wal.hold(true);
        wal.set_tier(target).map_err(|e| format!("cannot start the WAL syncer: {e}"))?;
        p.set_tier(target);
        p.enabling.store(true, Ordering::Release);
    }
    Ok(())
}

/// Opens a log on a server that never had one (started in `none`), at the
/// tier `none`, after whatever the directory holds; then waits for the
/// writes that decided not to log before it existed (`unlogged`).
fn open_first_log(server: &Server) -> Result<&Wal, String> {
    let p = &server.persistence;
    let tail = existing_tail(p).map_err(|e| format!("cannot list the data directory: {e}"))?;
    let wal = super::recover::open_wal(server, Tier::None, tail)
        .map_err(|e| format!("cannot open the write-ahead log in {}: {e}", p.dir.display()))?;
    p.set_wal(wal);
    p.unlogged.wait_for_none();
    p.wal_opened().ok_or_else(|| "the write-ahead log could not be installed".to_string())
}

/// Where a new log continues: a new segment after the LSN the data reached,
/// after the segments a `none` server left (normally none: it folds its log
/// into a snapshot at start and removes it at each snapshot).
fn existing_tail(p: &Persistence) -> std::io::Result<LogTail> {
    let names = p.storage.list(&p.dir)?;
    let next_lsn = p.current_lsn() + 1;
    let mut segments: Vec<(Lsn, String)> = names
        .iter()
        .filter_map(|name| segment::parse_name(name).map(|base| (base, name.clone())))
        .filter(|(base, _)| *base < next_lsn)
        .collect();
    segments.sort();
    let spares = names.into_iter().filter(|name| segment::is_spare_name(name)).collect();
    Ok(LogTail { next_lsn, segments, end_offset: 0, spares, resume: false })
}

/// Waits, at most [`DRAIN_MAX`], until what was appended is durable.
fn drain(p: &Persistence, wal: &Wal) {
    let last = wal.last_lsn();
    let deadline = Instant::now() + DRAIN_MAX;
    // Held (a restart of logging still waits for its snapshot): nothing
    // becomes durable before that snapshot, which covers these records.
    while wal.durable_lsn() < last && !wal.is_held() && wal.check_writable().is_ok() && Instant::now() < deadline {
        if p.background_sync {
            wal.request_sync(last);
            std::thread::sleep(Duration::from_millis(1));
        } else {
            wal.sync_round(true);
        }
    }
}

/// If logging restarted and waits for its snapshot: takes it (on this
/// thread) and releases the log. Called by the snapshot thread, DEBUG
/// LOADAOF and shutdown; never with shards held (a tier change takes the
/// switch lock, then the shards). On failure the log stays held (and
/// `sync` replies wait) until a later attempt succeeds.
pub fn finish_enabling(p: &Persistence, keyspace: &Keyspace) -> Result<(), String> {
    if !p.enabling.load(Ordering::Acquire) {
        return Ok(());
    }
    let _one = p.switch_lock.lock();
    if !p.enabling.load(Ordering::Acquire) {
        return Ok(());
    }
    let Some(wal) = p.wal_opened() else { return Ok(()) };
    let result = super::snapshot::take(p, keyspace);
    p.last_rewrite_ok.store(result.is_ok(), Ordering::Release);
    let taken = result?;
    wal.hold(false);
    wal.request_sync(wal.last_lsn());
    p.enabling.store(false, Ordering::Release);
    tracing::info!(lsn = taken.lsn, "logging restarted from a snapshot");
    Ok(())
}
