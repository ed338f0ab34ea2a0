//! Taking snapshots (SAVE, BGSAVE, BGREWRITEAOF, periodic, shutdown in the
//! `none` tier) and reloading from disk (DEBUG RELOAD, DEBUG LOADAOF).
//!
//! A snapshot freezes the keyspace at one log position (copy-on-write per
//! shard: a writer waits for at most one shard copy), writes the commands
//! that rebuild the function libraries (`FUNCTION LOAD REPLACE`) and every live key, waits until the log is durable up to that
//! position, then renames the file into place; only then are older
//! snapshots removed and the log segments it covers recycled.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_engine::durability::{rebuild, segment, snapshot, RecoverOptions, WalError};
use cairn_engine::Keyspace;

use super::replay::Replayer;
use super::Persistence;
use crate::server::Server;

/// A finished snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    pub lsn: u64,
    pub bytes: u64,
    pub millis: u64,
    /// The longest a shard stayed locked while it was copied for this
    /// snapshot (the worst writer stall it caused), in µs.
    pub max_shard_copy_us: u64,
}

/// Takes a snapshot now, on this thread.
pub fn take(p: &Persistence, keyspace: &Keyspace) -> Result<Taken, String> {
    let _one = p.snapshot_lock.lock();
    let changes = p.snapshot.changes.total();
    p.snapshot.in_progress.store(true, Ordering::Release);
    let result = write(p, keyspace);
    p.snapshot.in_progress.store(false, Ordering::Release);
    p.snapshot.last_ok.store(result.is_ok(), Ordering::Release);
    match &result {
        Ok(t) => {
            p.snapshot.changes.saved(changes);
            p.snapshot.last_lsn.store(t.lsn, Ordering::Relaxed);
            p.snapshot.last_bytes.store(t.bytes, Ordering::Relaxed);
            p.snapshot.last_duration_ms.store(t.millis, Ordering::Relaxed);
            p.snapshot.last_max_shard_copy_us.store(t.max_shard_copy_us, Ordering::Relaxed);
            p.snapshot.saves.fetch_add(1, Ordering::Relaxed);
            p.snapshot.last_success_ms.store(cairn_engine::clock::now_ms(), Ordering::Relaxed);
            tracing::info!(
                lsn = t.lsn,
                bytes = t.bytes,
                ms = t.millis,
                max_shard_copy_us = t.max_shard_copy_us,
                "snapshot saved"
            );
        }
        Err(e) => {
            // A failure midway (the file could not be created or written)
            // leaves shards marked copy-on-write or holding copies: thaw
            // them, or every write would copy its shard until the next
            // snapshot, doubling memory while the disk stays full. The
            // snapshot lock is held: no other image is in progress.
            for index in 0..keyspace.num_shards() {
                keyspace.abandon_frozen(index);
            }
            tracing::error!(error = %e, "snapshot failed")
        }
    }
    result
}

fn write(p: &Persistence, keyspace: &Keyspace) -> Result<Taken, String> {
    let started = Instant::now();
    let time_ms = cairn_engine::clock::monotonic_now_ms();
    if let Some(wal) = p.wal_opened() {
        p.snapshot.wal_bytes_at_last.store(wal.stats().bytes_written.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    // The libraries as of the cut: their changes are logged under the
    // registry's lock, so the LSN read under it matches them.
    let (lsn, libraries) = keyspace.begin_freeze(|| {
        let registry = p.libraries.read();
        (p.current_lsn(), registry.libraries.values().cloned().collect::<Vec<_>>())
    });
    if let Some(wal) = p.wal_opened() {
        wal.request_sync(lsn);
    }
    let mut writer =
        snapshot::SnapshotWriter::create(p.storage.clone(), &p.dir, lsn, time_ms).map_err(|e| e.to_string())?;
    for library in &libraries {
        if let Err(e) = writer.add(0, &[b"FUNCTION", b"LOAD", b"REPLACE", &library.code]) {
            writer.abandon();
            return Err(e.to_string());
        }
    }
    for index in 0..keyspace.num_shards() {
        let shard = keyspace.take_frozen(index);
        for db in 0..keyspace.num_dbs() {
            for (key, entry) in shard.db_ref(db).iter(time_ms) {
                let mut emit = |args: &[&[u8]]| writer.add(db as u32, args);
                if let Err(e) = rebuild::commands_for(key, entry, &mut emit) {
                    writer.abandon();
                    return Err(e.to_string());
                }
            }
        }
    }
    if let Err(e) = wait_log_durable(p, lsn) {
        writer.abandon();
        return Err(format!("the log could not be made durable up to the snapshot: {e}"));
    }
    let (_, bytes) = writer.finish().map_err(|e| e.to_string())?;
    snapshot::remove_older(p.storage.as_ref(), &p.dir, lsn).map_err(|e| e.to_string())?;
    match p.wal_opened() {
        Some(wal) => {
            wal.recycle_through(lsn).map_err(|e| format!("recycling WAL segments: {e}"))?;
        }
        None => remove_log(p).map_err(|e| format!("removing the old WAL: {e}"))?,
    }
    let max_shard_copy_us = u64::try_from(keyspace.longest_freeze_copy().as_micros()).unwrap_or(u64::MAX);
    Ok(Taken { lsn, bytes, millis: started.elapsed().as_millis() as u64, max_shard_copy_us })
}

/// Waits (polling) until the log is durable up to `lsn`. Not while the log
/// is held (logging restarting, `tier_switch`): the records it holds come
/// after what is on disk and are written only once this snapshot, which
/// covers them, is durable.
fn wait_log_durable(p: &Persistence, lsn: u64) -> Result<(), WalError> {
    let Some(wal) = p.wal_opened() else { return Ok(()) };
    while wal.durable_lsn() < lsn && !wal.is_held() {
        if let Err(e @ WalError::Failed(_)) = wal.check_writable() {
            return Err(e);
        }
        if p.background_sync {
            wal.request_sync(lsn);
            std::thread::sleep(Duration::from_millis(1));
        } else {
            wal.sync_round(true);
        }
    }
    Ok(())
}

/// In the `none` tier: removes WAL files a snapshot now covers.
fn remove_log(p: &Persistence) -> std::io::Result<()> {
    let names = p.storage.list(&p.dir)?;
    let mut removed = false;
    for name in names {
        if segment::parse_name(&name).is_some() || segment::is_spare_name(&name) {
            p.storage.remove(&p.dir.join(&name))?;
            removed = true;
        }
    }
    if removed {
        p.storage.sync_dir(&p.dir)?;
    }
    Ok(())
}

/// DEBUG RELOAD (`from_log_only` false: save a snapshot, then load it) and
/// DEBUG LOADAOF (true: sync the log, then rebuild from the last snapshot
/// and the log). Every shard is held meanwhile, so no other command runs.
pub fn reload(server: &Server, from_log_only: bool) -> Result<(), String> {
    let p = &server.persistence;
    let keyspace = &server.keyspace;
    // A restart of logging still waiting for its snapshot: the log on disk
    // is whole only after it (taken before the shards are held: see
    // `tier_switch::finish_enabling`).
    super::tier_switch::finish_enabling(p, keyspace)?;
    let held = keyspace.hold_all_shards();
    if from_log_only {
        if let Some(wal) = p.wal_opened() {
            wait_log_durable(p, wal.last_lsn()).map_err(|e| e.to_string())?;
        }
    } else {
        take(p, keyspace)?;
    }
    for index in 0..keyspace.num_shards() {
        let mut shard = keyspace.lock(index);
        for db in 0..keyspace.num_dbs() {
            shard.db(db).clear();
        }
    }
    // Functions are part of the dataset: what the snapshot (or the log)
    // holds replaces them.
    let _ = p.libraries.change(
        |registry| {
            *registry = crate::scripting::library::Registry::default();
            Ok(())
        },
        || Ok(()),
    );
    let mut replayer = Replayer::new(server);
    let read_only = RecoverOptions { read_only: true, repair: false };
    super::recover::load_from_disk(server, &mut replayer, read_only, None).map_err(|e| e.to_string())?;
    drop(held);
    Ok(())
}

/// The snapshot thread's nice value: nobody waits for a periodic snapshot or
/// a BGSAVE, so on a saturated CPU requests go first and the snapshot takes
/// longer (the shard copies writers make for it, copy-on-write, then live
/// that much longer). With idle CPU time it runs at once. SAVE and DEBUG
/// RELOAD run on the caller's thread, at its priority.
pub const SNAPSHOT_NICE: i32 = 10;

/// The background thread: BGSAVE requests, and snapshots by WAL growth and
/// by time.
pub fn spawn_scheduler(server: std::sync::Arc<Server>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("cairn-snapshot".into()).spawn(move || {
        cairn_engine::thread_priority::lower_this_thread(SNAPSHOT_NICE, "snapshot");
        let p = &server.persistence;
        while !server.shutdown.is_triggered() {
            nap(p);
            if p.is_loading() {
                continue;
            }
            if p.enabling.load(Ordering::Acquire) {
                if super::tier_switch::finish_enabling(p, &server.keyspace).is_ok() {
                    server.last_save_secs.store(cairn_engine::clock::now_ms() / 1000, Ordering::Relaxed);
                } else {
                    // Retried, as Redis retries a failed rewrite.
                    std::thread::sleep(Duration::from_secs(1));
                }
                continue;
            }
            if p.snapshot_requested.swap(false, Ordering::AcqRel) || due(&server) {
                let rewrite = p.rewrite_requested.load(Ordering::Acquire);
                let result = take(p, &server.keyspace);
                if rewrite {
                    p.last_rewrite_ok.store(result.is_ok(), Ordering::Release);
                    p.rewrite_requested.store(false, Ordering::Release);
                }
                server.last_save_secs.store(cairn_engine::clock::now_ms() / 1000, Ordering::Relaxed);
            }
        }
    })
}

/// Sleeps up to 200 ms, less when logging restarts or a BGSAVE asks.
fn nap(p: &Persistence) {
    for _ in 0..20 {
        if p.enabling.load(Ordering::Acquire) || p.snapshot_requested.load(Ordering::Acquire) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a save point is reached, the log grew enough, or enough time
/// passed with changes.
fn due(server: &Server) -> bool {
    save_point_reached(server) || log_snapshot_due(server)
}

/// Redis's save points (`save`), in every tier.
fn save_point_reached(server: &Server) -> bool {
    let points = server.runtime.get("save").map(|v| super::save_points::parse(&v).unwrap_or_default());
    let Some(points) = points.filter(|p| !p.is_empty()) else { return false };
    let p = &server.persistence;
    let last_save_ms = p.snapshot.last_success_ms.load(Ordering::Relaxed).max(server.started_ms);
    let secs = cairn_engine::clock::now_ms().saturating_sub(last_save_ms) / 1000;
    super::save_points::reached(&points, p.snapshot.changes.since_last_save(), secs)
}

/// Snapshots that keep the log short: by its growth, and by time.
fn log_snapshot_due(server: &Server) -> bool {
    let p = &server.persistence;
    let Some(wal) = p.wal_opened() else { return false };
    let grown = wal
        .stats()
        .bytes_written
        .load(Ordering::Relaxed)
        .saturating_sub(p.snapshot.wal_bytes_at_last.load(Ordering::Relaxed));
    if grown >= server.config.snapshot_wal_bytes {
        return true;
    }
    let interval = server.config.snapshot_interval_secs;
    let age_ms = cairn_engine::clock::now_ms()
        .saturating_sub(p.snapshot.last_success_ms.load(Ordering::Relaxed).max(server.started_ms));
    interval > 0 && grown > 0 && age_ms >= interval * 1000
}
