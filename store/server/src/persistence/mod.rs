//! The server's side of durability: which tier runs, the write-ahead log
//! (once recovery has finished), logging every write command, waiting for
//! durable acknowledgements, snapshots, and recovery at startup.
//!
//! - [`logging`]: runs a write command with its shards held and logs its
//!   effect before the locks are released (so the log's order is the
//!   execution order of every key); [`effect`]: the deterministic form a
//!   command is logged in (INCR as the value it produced, EXPIRE as an
//!   absolute PEXPIREAT, SPOP as SREM, ...).
//! - [`replay`]: runs logged commands through the command table, as live
//!   traffic does (recovery, snapshots loading, DEBUG RELOAD).
//! - [`recover`]: startup: newest snapshot, then the log after it.
//! - [`snapshot`]: SAVE/BGSAVE/periodic snapshots and DEBUG RELOAD/LOADAOF.
//! - [`check`]: `cairn check DATA_DIR`; [`waitaof`]: WAITAOF.
//! - [`tier_switch`]: changing the tier at runtime (CONFIG SET appendonly,
//!   appendfsync, durability); [`unlogged`]: the writes in flight that a
//!   server which never logged runs without the log.
//! - [`lock`]: the data directory's lock file (server and embedded database).
//! - [`skip_fsync`]: a storage wrapper that never syncs (crash-test proof only).

pub mod check;
pub mod effect;
pub mod lock;
pub mod logging;
pub mod recover;
pub mod replay;
pub mod save_points;
pub mod skip_fsync;
pub mod snapshot;
pub mod tier_switch;
pub mod unlogged;
pub mod waitaof;
pub mod waiters;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cairn_engine::durability::{Lsn, OsStorage, Storage, Tier, TierCell, Wal, WalError};
use parking_lot::Mutex;

use crate::config::Config;

/// WAITAOF waiting in a connection.
#[derive(Debug, Clone, Copy)]
pub struct WaitAof {
    pub lsn: Lsn,
    /// Unix ms; 0: forever.
    pub deadline_ms: u64,
}

/// Snapshot bookkeeping for INFO and LASTSAVE.
#[derive(Debug, Default)]
pub struct SnapshotStatus {
    pub in_progress: AtomicBool,
    pub last_ok: AtomicBool,
    pub last_duration_ms: AtomicU64,
    /// Longest shard lock hold while the last snapshot copied a shard (µs).
    pub last_max_shard_copy_us: AtomicU64,
    pub last_lsn: AtomicU64,
    pub last_bytes: AtomicU64,
    pub saves: AtomicU64,
    /// WAL bytes written when the last snapshot started.
    pub wal_bytes_at_last: AtomicU64,
    /// Unix ms of the last successful snapshot.
    pub last_success_ms: AtomicU64,
    /// Keys changed, for save points and INFO `rdb_changes_since_last_save`.
    pub changes: save_points::Changes,
}

/// Durability state shared by all workers.
pub struct Persistence {
    /// The tier now (CONFIG SET may change it: [`tier_switch`]).
    tier: Arc<TierCell>,
    /// The logging tier `appendfsync` names, which `appendonly yes` starts
    /// (kept while the tier is `none`).
    fsync_tier: TierCell,
    /// Writes with an LSN up to this one were made in the `sync` tier:
    /// their replies wait for durability even after a change away from it.
    pub sync_acks_through: AtomicU64,
    /// Logging restarted after a time without (`none`): the log is held
    /// until the snapshot it continues from is durable (INFO
    /// `aof_rewrite_in_progress`).
    pub enabling: AtomicBool,
    /// BGREWRITEAOF asked for a snapshot that has not finished yet (INFO
    /// `aof_rewrite_scheduled` until it starts, `aof_rewrite_in_progress`
    /// while it runs).
    pub rewrite_requested: AtomicBool,
    /// Whether the last snapshot that logging restarted from, or that
    /// BGREWRITEAOF asked for, succeeded (INFO `aof_last_bgrewrite_status`).
    pub last_rewrite_ok: AtomicBool,
    /// One tier change at a time.
    pub switch_lock: Mutex<()>,
    /// Writes in flight without the log on a server that never logged.
    pub unlogged: unlogged::UnloggedWrites,
    pub storage: Arc<dyn Storage>,
    pub dir: PathBuf,
    /// Set once recovery has finished in a logging tier, or when logging
    /// first starts at runtime; never dropped (`none` at runtime keeps it
    /// open with its tier set to `none`).
    wal: OnceLock<Wal>,
    /// Connections waiting for durable acks, woken by LSN after each sync.
    pub waiters: Arc<waiters::DurableWaiters>,
    /// True until recovery has finished: commands get -LOADING.
    pub loading: AtomicBool,
    /// The LSN recovery ended at: what a snapshot covers when nothing is logged.
    pub recovered_lsn: AtomicU64,
    pub snapshot: SnapshotStatus,
    /// One snapshot at a time.
    pub snapshot_lock: Mutex<()>,
    /// Records replayed by recovery so far (metrics).
    pub recovery_records: AtomicU64,
    /// Asks the background snapshot thread for a snapshot (BGSAVE).
    pub snapshot_requested: AtomicBool,
    /// Run the log's syncer on its own thread (false: tests drive it with
    /// `Wal::sync_round`).
    pub background_sync: bool,
    /// In the `sync` tier, the threads that write wait with
    /// `Wal::sync_through` and run the log's rounds themselves (the embedded
    /// database; `WalOptions::caller_rounds`).
    pub caller_rounds: bool,
    /// The workers mid-batch, which the log's syncer lets finish before a
    /// `sync`-tier round (`WalOptions::busy_appenders`).
    pub worker_activity: crate::worker_activity::WorkerActivity,
    /// The function libraries, which snapshots carry (shared with scripting).
    pub libraries: Arc<crate::scripting::library::Libraries>,
}

impl std::fmt::Debug for Persistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistence").field("tier", &self.tier()).field("dir", &self.dir).finish()
    }
}

impl Persistence {
    pub fn new(config: &Config) -> Persistence {
        let storage: Arc<dyn Storage> = if config.unsafe_skip_fsync {
            tracing::warn!("--unsafe-skip-fsync: nothing is ever fsynced; acknowledged writes can be lost");
            Arc::new(skip_fsync::SkipFsync(OsStorage))
        } else {
            Arc::new(OsStorage)
        };
        Persistence::with_storage(config, storage)
    }

    pub fn with_storage(config: &Config, storage: Arc<dyn Storage>) -> Persistence {
        let fsync_tier = if config.durability.logs() { config.durability } else { Tier::Async };
        Persistence {
            tier: Arc::new(TierCell::new(config.durability)),
            fsync_tier: TierCell::new(fsync_tier),
            sync_acks_through: AtomicU64::new(0),
            enabling: AtomicBool::new(false),
            rewrite_requested: AtomicBool::new(false),
            last_rewrite_ok: AtomicBool::new(true),
            switch_lock: Mutex::new(()),
            unlogged: unlogged::UnloggedWrites::default(),
            storage,
            dir: config.data_dir.clone(),
            wal: OnceLock::new(),
            waiters: Arc::new(waiters::DurableWaiters::default()),
            loading: AtomicBool::new(true),
            recovered_lsn: AtomicU64::new(0),
            snapshot: SnapshotStatus { last_ok: AtomicBool::new(true), ..SnapshotStatus::default() },
            snapshot_lock: Mutex::new(()),
            recovery_records: AtomicU64::new(0),
            snapshot_requested: AtomicBool::new(false),
            background_sync: true,
            caller_rounds: false,
            worker_activity: crate::worker_activity::WorkerActivity::default(),
            libraries: Arc::default(),
        }
    }

    /// The tier now.
    #[inline]
    pub fn tier(&self) -> Tier {
        self.tier.get()
    }

    /// The tier, shared (for observers that outlive a borrow).
    pub fn tier_cell(&self) -> Arc<TierCell> {
        self.tier.clone()
    }

    /// The logging tier `appendfsync` names.
    pub fn fsync_tier(&self) -> Tier {
        self.fsync_tier.get()
    }

    pub(crate) fn set_fsync_tier(&self, tier: Tier) {
        if tier.logs() {
            self.fsync_tier.set(tier);
        }
    }

    pub(crate) fn set_tier(&self, tier: Tier) {
        self.tier.set(tier);
    }

    /// The log while writes are logged (None in the `none` tier, also when
    /// logging stopped at runtime). A write's decision to log is taken with
    /// its shards held: see `logging::execute`.
    #[inline]
    pub fn wal(&self) -> Option<&Wal> {
        self.wal.get().filter(|wal| wal.logs())
    }

    /// The log if one was ever opened, logging or not (snapshots recycle
    /// its segments, durable waits keep waiting on it).
    #[inline]
    pub fn wal_opened(&self) -> Option<&Wal> {
        self.wal.get()
    }

    /// Yields this worker's CPU once when the background syncer has been
    /// kept from its round too long ([`Wal::syncer_starved`]): called after
    /// each batch, so a worker that never parks still lets it run. Every
    /// batch, not once per millisecond: a yield does not always hand the CPU
    /// over (the scheduler may not pick the low-priority syncer yet), and
    /// with one yield per ms the largest loss window measured went back to
    /// 0.14–0.69 s (docs/durability.md).
    #[inline]
    pub fn yield_to_starved_syncer(&self) {
        if self.wal_opened().is_some_and(Wal::syncer_starved) {
            std::thread::yield_now();
        }
    }

    /// Whether a reply for a write at `lsn` waits until it is durable: in
    /// `sync`, and for writes made in `sync` before a change away from it.
    #[inline]
    pub fn acks_wait_for(&self, lsn: Lsn) -> bool {
        lsn != 0 && (self.tier() == Tier::Sync || lsn <= self.sync_acks_through.load(Ordering::Acquire))
    }

    pub fn set_wal(&self, wal: Wal) {
        if self.wal.set(wal).is_err() {
            tracing::error!("the write-ahead log was opened twice");
        }
    }

    pub fn is_loading(&self) -> bool {
        self.loading.load(Ordering::Acquire)
    }

    /// The LSN a snapshot taken now covers.
    pub fn current_lsn(&self) -> Lsn {
        match self.wal_opened() {
            Some(wal) => wal.last_lsn(),
            None => self.recovered_lsn.load(Ordering::Acquire),
        }
    }

    /// Waits until `lsn` is durable. Err when the log failed (the write will
    /// never be durable). A full disk keeps waiting: the records are kept and
    /// written once space returns.
    pub async fn wait_durable(&self, lsn: Lsn) -> Result<(), WalError> {
        waiters::DurableWait::new(self, lsn).await
    }

    /// [`Persistence::wait_durable`] for a plain thread: blocks until `lsn`
    /// is durable (true) or `deadline` passes (false); Err when the log failed.
    pub fn wait_durable_blocking(&self, lsn: Lsn, deadline: Option<std::time::Instant>) -> Result<bool, WalError> {
        waiters::wait_blocking(self, lsn, deadline)
    }

    /// At shutdown: finish a restart of logging in progress (its held
    /// records need their snapshot), save a snapshot in the `none` tier,
    /// then sync and close the log.
    pub fn close(&self, keyspace: &cairn_engine::Keyspace, save: bool) {
        if !self.is_loading() {
            if let Err(e) = tier_switch::finish_enabling(self, keyspace) {
                tracing::error!(error = %e, "the snapshot that logging restarts from failed at shutdown");
            }
        }
        if save && !self.is_loading() && self.tier() == Tier::None {
            if let Err(e) = snapshot::take(self, keyspace) {
                tracing::error!(error = %e, "snapshot at shutdown failed");
            }
        }
        if let Some(wal) = self.wal_opened() {
            wal.close();
        }
    }
}
