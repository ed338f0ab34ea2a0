//! Startup recovery: load the newest snapshot, replay the log after it
//! through the command table, then open the log for appending (or, in the
//! `none` tier, fold a leftover log into a fresh snapshot).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cairn_engine::durability::{
    default_syncers, recover_log, snapshot, LogTail, RecoverOptions, RecoveryReport, Tier, Wal, WalOptions,
};

use super::replay::Replayer;
use crate::server::Server;

/// Why the server refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error(transparent)]
    Snapshot(#[from] snapshot::SnapshotError),
    #[error(transparent)]
    Log(#[from] cairn_engine::durability::RecoveryError),
    #[error("cannot open the write-ahead log in {dir}: {source}")]
    Open { dir: String, source: std::io::Error },
    #[error("cannot prepare the data directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
}

/// What recovery did, for the log line and INFO.
#[derive(Debug, Default, Clone)]
pub struct Recovered {
    pub snapshot_lsn: u64,
    pub snapshot_records: u64,
    pub log: RecoveryReport,
    pub replay_errors: u64,
    pub seconds: f64,
}

/// What [`load_from_disk`] found.
pub struct Loaded {
    pub snapshot: Option<snapshot::SnapshotInfo>,
    pub tail: LogTail,
    pub log: RecoveryReport,
}

/// Loads the newest snapshot, then replays the log after it, through
/// `replayer`; counts replayed records into `progress` if given.
pub fn load_from_disk(
    server: &Server,
    replayer: &mut Replayer<'_>,
    options: RecoverOptions,
    progress: Option<&AtomicU64>,
) -> Result<Loaded, RecoverError> {
    let p = &server.persistence;
    let mut info = None;
    if let Some((_, name)) = snapshot::newest(p.storage.as_ref(), &p.dir)? {
        info =
            Some(snapshot::load(p.storage.as_ref(), &p.dir, &name, |time, db, args| replayer.apply(time, db, args))?);
    }
    let after = info.as_ref().map_or(0, |i| i.lsn);
    let (tail, log) = recover_log(&p.storage, &p.dir, after, options, |rec, scratch| {
        if let Some(progress) = progress {
            progress.fetch_add(1, Ordering::Relaxed);
        }
        rec.for_each_command(scratch, |db, args| replayer.apply(rec.time_ms, db, args))
    })?;
    Ok(Loaded { snapshot: info, tail, log })
}

/// Rebuilds the keyspace from disk and opens the log. The server answers
/// -LOADING meanwhile.
pub fn recover(server: &Server) -> Result<Recovered, RecoverError> {
    let p = &server.persistence;
    let started = Instant::now();
    let dir_error = |source| RecoverError::Dir { dir: p.dir.display().to_string(), source };
    p.storage.create_dir_all(&p.dir).map_err(dir_error)?;
    // A freshly created data directory is durable only once its parent's
    // entry is synced (best effort: the parent may not be ours to open).
    if let Some(parent) = p.dir.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = p.storage.sync_dir(parent);
    }
    let mut out = Recovered::default();
    let mut replayer = Replayer::new(server);
    let loaded = load_from_disk(server, &mut replayer, RecoverOptions::default(), Some(&p.recovery_records))?;
    if let Some(info) = &loaded.snapshot {
        out.snapshot_lsn = info.lsn;
        out.snapshot_records = info.records;
        p.snapshot.last_lsn.store(info.lsn, Ordering::Relaxed);
        p.snapshot.last_success_ms.store(info.created_ms, Ordering::Relaxed);
    }
    let tail = loaded.tail;
    out.log = loaded.log;
    out.replay_errors = replayer.errors;
    p.recovered_lsn.store(tail.next_lsn - 1, Ordering::Release);
    if p.tier().logs() {
        let wal = open_wal(server, p.tier(), tail)
            .map_err(|source| RecoverError::Open { dir: p.dir.display().to_string(), source })?;
        p.set_wal(wal);
    } else if !tail.segments.is_empty() {
        // The `none` tier keeps no log: fold the old one into a snapshot.
        p.loading.store(false, Ordering::Release);
        if let Err(e) = super::snapshot::take(p, &server.keyspace) {
            tracing::error!(error = %e, "cannot fold the old write-ahead log into a snapshot");
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Opens the log at `tier` where `tail` says it continues (at startup, or
/// when logging first starts at runtime), waking durable waiters after each
/// sync and reporting slow syncs to the latency monitor.
pub fn open_wal(server: &Server, tier: Tier, tail: LogTail) -> std::io::Result<Wal> {
    let p = &server.persistence;
    let waiters = p.waiters.clone();
    let options = WalOptions {
        segment_size: server.config.wal_segment_bytes,
        background: p.background_sync,
        caller_rounds: p.caller_rounds,
        busy_appenders: Some(p.worker_activity.counter()),
        syncers: match server.config.wal_syncers {
            0 => default_syncers(tier),
            n => n,
        },
        ..WalOptions::new(tier)
    };
    let wal =
        Wal::open(p.storage.clone(), &p.dir, options, tail, Box::new(move |durable| waiters.wake_through(durable)))?;
    observe_syncs(server, &wal);
    Ok(wal)
}

/// Reports slow syncs of the log to the latency monitor: `aof-fsync-always`
/// in the `sync` tier (replies wait for them, as for Redis's `appendfsync
/// always`), `aof-fdatasync` in the others (replies do not wait); the tier
/// as of each sync.
fn observe_syncs(server: &Server, wal: &Wal) {
    let monitor = server.runtime.latency.clone();
    let tier = server.persistence.tier_cell();
    wal.stats().observe_syncs(Box::new(move |micros| {
        let event = if tier.get() == Tier::Sync { "aof-fsync-always" } else { "aof-fdatasync" };
        monitor.observe(event, micros)
    }));
}
