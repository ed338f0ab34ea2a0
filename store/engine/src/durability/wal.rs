//! The write-ahead log: appenders encode records into a shared buffer under a
//! short lock (assigning LSNs in buffer order); a syncer writes whatever is
//! buffered, fdatasyncs it and publishes the durable LSN (group commit).
//! Execution never waits for a sync in progress: appends go to the buffer
//! while the syncer works on the previous batch.
//!
//! Pipelined syncs (`WalOptions::syncers` > 1): several syncers take turns. Taking the
//! buffer and writing it is ordered (one at a time, in LSN order); the
//! fdatasync runs outside that lock, so a batch that arrives while one
//! fdatasync is in flight starts its own at once instead of waiting a whole
//! fsync time for the first to finish. An fdatasync that returns covers every
//! byte written to the file before it was called (the kernel writes back the
//! dirty pages and waits for the writeback already in flight), so the
//! durable LSN is the largest LSN written before a successful fdatasync
//! began. Each syncer syncs through its own open file (see
//! [`files::Active::sync_handles`](super::files::Active)).
//!
//! Health: a failed write or fsync is never reported durable. The log then
//! refuses appends for good ([`WalError::Failed`]); running out of space for
//! a new segment refuses appends until a retry succeeds
//! ([`WalError::DiskFull`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use thiserror::Error;

use super::commit::Committers;
use super::files::{prepare_spare, Files, SpareFill, SyncHandle, WriteError};
use super::record::{self, Header, Kind, Lsn};
use super::stats::WalStats;
use super::storage::Storage;
use super::{Tier, TierCell};
use crate::thread_affinity::CpuMask;

/// Default segment size.
pub const DEFAULT_SEGMENT_SIZE: u64 = 64 << 20;

/// Starting capacity of the append buffer and of its spare.
const INITIAL_BUFFER_BYTES: usize = 1 << 16;

/// Why an append was refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WalError {
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    DiskFull(String),
}

/// Shortest time between the starts of two `async`-tier syncer rounds
/// (see `Shared::pace_async`): the tier's loss window is about this plus
/// one fsync.
const ASYNC_ROUND_MIN: Duration = Duration::from_millis(1);

/// How long a caller parked in [`Wal::sync_through`] sleeps at most before
/// it looks again (a wake-up normally comes first; this paces the retries
/// while the disk is full).
const CALLER_RETRY: Duration = Duration::from_millis(100);

/// How long a caller in [`Wal::sync_through`] polls for its round before it
/// parks (`Shared::spin_until_settled`): about two fdatasyncs of the disks
/// measured, the wait of a caller that arrives while one is in flight.
const CALLER_SPIN: Duration = Duration::from_micros(250);

/// The longest a caller round waits for the callers the previous round
/// covered to append again (`Shared::gather`): under one fdatasync on the
/// disks measured (~100 µs), so a round that waits in vain costs less than
/// the extra round it saves.
const GATHER_MAX: Duration = Duration::from_micros(50);

/// The longest a syncer waits for busy appenders to finish their batch
/// (`Shared::let_busy_appenders_finish`): as [`GATHER_MAX`], under one
/// fdatasync.
const BUSY_APPENDERS_MAX: Duration = Duration::from_micros(50);

/// The syncer's nice value in the `async` and `everysec` tiers, where no
/// reply waits for it: when the CPUs are saturated, request processing goes
/// first and the syncer gets about a tenth of a contended CPU (a round of a
/// few tens of µs of CPU still starts every few ms), instead of preempting a
/// worker mid-batch every millisecond. With idle CPU time it runs at once,
/// as before. The `sync` tier's syncer keeps normal priority: every
/// acknowledgement waits for it.
pub const BACKGROUND_SYNCER_NICE: i32 = 10;

/// How long records may wait in the buffer for the `async` syncer's next
/// round before [`Wal::syncer_starved`] says so (five rounds' pace).
pub const ASYNC_STARVED_AFTER_MS: u64 = 5;

/// The same for `everysec`, whose syncer writes every ~10 ms.
pub const EVERYSEC_STARVED_AFTER_MS: u64 = 100;

const HEALTH_OK: u8 = 0;
const HEALTH_DISK_FULL: u8 = 1;
const HEALTH_FAILED: u8 = 2;

/// How the log runs.
#[derive(Clone, Debug)]
pub struct WalOptions {
    pub tier: Tier,
    pub segment_size: u64,
    /// Run the syncer and the spare preparer on their own threads. Tests turn
    /// this off and call [`Wal::sync_round`] themselves.
    pub background: bool,
    /// Syncer threads, so fdatasyncs in flight at once (at least 1). Only the
    /// `sync` tier gains from more than one.
    pub syncers: usize,
    /// In the `sync` tier, the threads that append wait with
    /// [`Wal::sync_through`], which runs the rounds on their own threads: an
    /// append then does not wake the syncer thread, which only runs on its
    /// tick (for records nobody waits for) and on [`Wal::request_sync`].
    /// The embedded database's callers; the server's connections cannot
    /// block, so it leaves this off.
    pub caller_rounds: bool,
    /// How many appending threads are in the middle of a batch of work (the
    /// server's workers count themselves in while their event loop runs and
    /// out before it sleeps). In the `sync` tier a syncer woken by an append
    /// first lets them finish (yielding its CPU, for at most
    /// [`BUSY_APPENDERS_MAX`]), so one fdatasync covers the whole batch
    /// instead of its first record; with many clients that halves the
    /// fdatasyncs, whose CPU cost then bounds throughput.
    pub busy_appenders: Option<Arc<AtomicUsize>>,
}

impl WalOptions {
    pub fn new(tier: Tier) -> Self {
        WalOptions {
            tier,
            segment_size: DEFAULT_SEGMENT_SIZE,
            background: true,
            syncers: default_syncers(tier),
            caller_rounds: false,
            busy_appenders: None,
        }
    }
}

/// One fdatasync in flight, whatever the tier. On the virtual disks measured
/// so far (docs/benchmarks.md, "Pipelined syncs") overlapping fdatasyncs are
/// served one after the other, so a second syncer only splits the groups;
/// `--wal-syncers` tries more on disks that flush in parallel.
pub fn default_syncers(_tier: Tier) -> usize {
    1
}

/// Records encoded but not yet taken by the syncer.
#[derive(Debug, Default)]
struct Buffer {
    bytes: Vec<u8>,
    /// When the first record now in `bytes` was appended.
    first_append: Option<Instant>,
    next_lsn: Lsn,
    /// Syncers waiting for data (an append into an empty buffer wakes one).
    idle_syncers: usize,
}

/// Called with the new durable LSN after each successful sync, and with
/// `Lsn::MAX` when the log fails (so every waiter wakes and sees the failure).
pub type DurableCallback = Box<dyn Fn(Lsn) + Send + Sync>;

struct Shared {
    /// The tier, which `CONFIG SET` may change at runtime ([`Wal::set_tier`]):
    /// read by the syncer at each round, never cached.
    tier: TierCell,
    /// While set, rounds write nothing: records are buffered (and `sync`-tier
    /// replies wait) until a snapshot that logging restarts from is durable
    /// ([`Wal::hold`]).
    held: AtomicBool,
    buffer: Mutex<Buffer>,
    data_ready: Condvar,
    written: AtomicU64,
    /// The largest written LSN an fdatasync in flight (or done) covers.
    sync_started: AtomicU64,
    durable: AtomicU64,
    sync_wanted: AtomicU64,
    health: AtomicU8,
    health_message: Mutex<String>,
    stop: AtomicBool,
    files: Mutex<Files>,
    /// Bytes taken from the buffer but not yet written (a rotation failed).
    carry: Mutex<Vec<u8>>,
    /// The emptied buffer of the previous round, swapped in for the next one,
    /// so appenders never grow a fresh vector after each round (double buffering).
    spare_buffer: Mutex<Vec<u8>>,
    /// Capacity of every vector the log keeps bytes in: the buffer, the
    /// spare, the carry and the buffer a round is writing (see
    /// [`Wal::buffer_bytes`]). Exact at every moment: it changes only where
    /// one of them grows or is dropped, never when they trade places.
    buffer_capacity: AtomicUsize,
    stats: WalStats,
    on_durable: DurableCallback,
    syncers: usize,
    /// See [`WalOptions::caller_rounds`].
    caller_rounds: bool,
    /// Whether syncer threads run (`WalOptions::background`).
    background: bool,
    /// Syncer threads of an older generation exit: a change to the `sync`
    /// tier starts new ones at normal priority (see [`Wal::set_tier`]).
    syncer_generation: AtomicU64,
    /// The CPU mask of the thread that opened the log, for syncers started later.
    placement: Option<CpuMask>,
    /// The callers of [`Wal::sync_through`] (group commit on their threads).
    committers: Committers,
    /// See [`WalOptions::busy_appenders`].
    busy_appenders: Option<Arc<AtomicUsize>>,
    /// The LSN the next caller round waits for before it starts (see
    /// `Shared::gather`).
    gather_until: AtomicU64,
    /// Since when (`clock::now_ms`) records have waited in the buffer for a
    /// round to take them; 0 while it is empty (see [`Wal::syncer_starved`]).
    buffered_since_ms: AtomicU64,
    /// Taken buffers not yet covered by an fdatasync, oldest first: the
    /// last LSN each held and when its first record was appended (for
    /// [`WalStats::record_unsynced_age`]).
    unsynced: Mutex<std::collections::VecDeque<(Lsn, Instant)>>,
    spare_wanted: Condvar,
    spare_lock: Mutex<()>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal").field("tier", &self.tier.get()).field("durable", &self.durable).finish()
    }
}

/// The write-ahead log.
#[derive(Debug)]
pub struct Wal {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Where the log continues after recovery.
#[derive(Debug, Default)]
pub struct LogTail {
    /// The LSN the next record gets.
    pub next_lsn: Lsn,
    /// Existing segments, oldest first: (base LSN, file name).
    pub segments: Vec<(Lsn, String)>,
    /// Offset just past the last valid record of the last segment.
    pub end_offset: u64,
    /// Spare files found in the directory.
    pub spares: Vec<String>,
    /// Continue writing the last segment at `end_offset`; false when the log
    /// must start a new segment (the snapshot is ahead of the log's end).
    pub resume: bool,
}

impl Wal {
    /// Opens the log for appending where recovery left it.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        options: WalOptions,
        tail: LogTail,
        on_durable: DurableCallback,
    ) -> std::io::Result<Wal> {
        let mut files = Files::new(storage, dir, options.segment_size, spare_fill(options.tier));
        for spare in &tail.spares {
            files.adopt_spare(spare)?;
        }
        match tail.segments.split_last() {
            Some(((base, name), older)) if tail.resume => {
                files.sealed.extend(older.iter().cloned());
                files.resume(*base, name, tail.end_offset)?;
            }
            _ => files.sealed.extend(tail.segments.iter().cloned()),
        }
        let next_lsn = tail.next_lsn.max(1);
        files.ensure_active(next_lsn).map_err(|e| match e {
            WriteError::NoSpace(e) => e,
            WriteError::Failed(m) => std::io::Error::other(m),
        })?;
        let shared = Arc::new(Shared {
            tier: TierCell::new(options.tier),
            held: AtomicBool::new(false),
            buffer: Mutex::new(Buffer {
                bytes: Vec::with_capacity(INITIAL_BUFFER_BYTES),
                first_append: None,
                next_lsn,
                idle_syncers: 0,
            }),
            data_ready: Condvar::new(),
            written: AtomicU64::new(next_lsn - 1),
            sync_started: AtomicU64::new(next_lsn - 1),
            durable: AtomicU64::new(next_lsn - 1),
            sync_wanted: AtomicU64::new(0),
            health: AtomicU8::new(HEALTH_OK),
            health_message: Mutex::new(String::new()),
            stop: AtomicBool::new(false),
            files: Mutex::new(files),
            carry: Mutex::new(Vec::new()),
            spare_buffer: Mutex::new(Vec::with_capacity(INITIAL_BUFFER_BYTES)),
            buffer_capacity: AtomicUsize::new(2 * INITIAL_BUFFER_BYTES),
            stats: WalStats::default(),
            on_durable,
            syncers: options.syncers.max(1),
            caller_rounds: options.caller_rounds,
            background: options.background,
            syncer_generation: AtomicU64::new(0),
            placement: CpuMask::of_this_thread(),
            committers: Committers::default(),
            busy_appenders: options.busy_appenders.clone(),
            gather_until: AtomicU64::new(0),
            buffered_since_ms: AtomicU64::new(0),
            unsynced: Mutex::new(std::collections::VecDeque::new()),
            spare_wanted: Condvar::new(),
            spare_lock: Mutex::new(()),
        });
        let wal = Wal { shared, threads: Mutex::new(Vec::new()) };
        if options.background {
            wal.spawn_threads()?;
        }
        Ok(wal)
    }

    fn spawn_threads(&self) -> std::io::Result<()> {
        self.spawn_syncers(0, None)?;
        let preparer = self.shared.clone();
        self.threads
            .lock()
            .push(std::thread::Builder::new().name("cairn-wal-spare".into()).spawn(move || preparer.run_preparer())?);
        Ok(())
    }

    /// Starts the syncer threads of `generation` (placed on `placement`'s
    /// CPUs when given: syncers started at runtime).
    fn spawn_syncers(&self, generation: u64, placement: Option<CpuMask>) -> std::io::Result<()> {
        let mut threads = self.threads.lock();
        threads.retain(|t| !t.is_finished());
        for index in 0..self.shared.syncers {
            let syncer = self.shared.clone();
            let name = format!("cairn-wal-sync{index}");
            threads.push(std::thread::Builder::new().name(name).spawn(move || {
                if let Some(mask) = placement {
                    mask.apply_to_this_thread("WAL syncer");
                }
                syncer.run_syncer(index, generation)
            })?);
        }
        Ok(())
    }

    pub fn tier(&self) -> Tier {
        self.shared.tier.get()
    }

    /// Whether appends are expected (the tier is not `none`).
    #[inline]
    pub fn logs(&self) -> bool {
        self.tier().logs()
    }

    /// Changes the tier at runtime. The syncer follows at its next round:
    /// its pacing, whether every round fdatasyncs, and how new spare segments
    /// are filled (spares already prepared keep their fill). `none` keeps
    /// the log open: the syncer writes and fdatasyncs what is buffered, then
    /// idles. Changing to `sync` from a background tier starts new syncer
    /// threads at normal priority (the old ones, at a raised nice value that
    /// an unprivileged thread cannot lower again, exit at their next round).
    /// Callers that need a cut (every write before or after the change)
    /// hold every shard around this.
    pub fn set_tier(&self, tier: Tier) -> std::io::Result<Tier> {
        let old = self.shared.tier.set(tier);
        self.shared.files.lock().fill = spare_fill(tier);
        if tier == Tier::Sync && old != Tier::Sync && self.shared.background {
            let generation = self.shared.syncer_generation.fetch_add(1, Ordering::AcqRel) + 1;
            self.spawn_syncers(generation, self.shared.placement)?;
        }
        // Wake the syncers, so they notice the change now.
        drop(self.shared.buffer.lock());
        self.shared.data_ready.notify_all();
        Ok(old)
    }

    /// Holds (true) or releases (false) the log's writes. While held, the
    /// syncer writes nothing and the durable LSN stays where it is; appends
    /// go on into the buffer. Used when logging starts again after a time
    /// without (`none`): records appended after that start must not reach
    /// the disk before the snapshot they follow is durable, or a crash in
    /// between would replay them onto a state without the unlogged writes.
    pub fn hold(&self, held: bool) {
        self.shared.held.store(held, Ordering::SeqCst);
        if !held {
            drop(self.shared.buffer.lock());
            self.shared.data_ready.notify_all();
        }
    }

    /// Whether writes are held (see [`Wal::hold`]).
    pub fn is_held(&self) -> bool {
        self.shared.held.load(Ordering::SeqCst)
    }

    /// Bytes of memory the log's buffers hold (their capacity: the emptied
    /// buffer is kept for the next round). `maxmemory` leaves them out, as
    /// Redis leaves out its AOF buffer, so a burst of writes that grew them
    /// does not evict keys.
    /// Read without a lock, and never caught mid-swap: the eviction loop
    /// compares `used - buffer_bytes` with `maxmemory` before and after each
    /// eviction, and a sum of separately locked parts would jump by a whole
    /// buffer while a round trades them.
    pub fn buffer_bytes(&self) -> usize {
        self.shared.buffer_capacity.load(Ordering::Relaxed)
    }

    /// Refuses writes while the log is unhealthy.
    pub fn check_writable(&self) -> Result<(), WalError> {
        match self.shared.health.load(Ordering::Acquire) {
            HEALTH_OK => Ok(()),
            HEALTH_DISK_FULL => Err(WalError::DiskFull(self.shared.health_message.lock().clone())),
            _ => Err(WalError::Failed(self.shared.health_message.lock().clone())),
        }
    }

    /// Appends one record of `count` commands that `body` encodes (with
    /// [`record::put_command`]); returns its LSN.
    pub fn append(
        &self,
        time_ms: u64,
        kind: Kind,
        count: usize,
        body: impl FnOnce(&mut Vec<u8>),
    ) -> Result<Lsn, WalError> {
        self.check_writable()?;
        let durable_hint = self.shared.durable.load(Ordering::Acquire);
        let mut buffer = self.shared.buffer.lock();
        let lsn = buffer.next_lsn;
        buffer.next_lsn += 1;
        // Only the first record of a batch wakes a syncer: later ones find
        // the buffer taken by then, or a syncer that will take it.
        let was_empty = buffer.bytes.is_empty();
        if was_empty {
            buffer.first_append = Some(Instant::now());
            self.shared.buffered_since_ms.store(crate::clock::now_ms().max(1), Ordering::Relaxed);
        }
        let wake = was_empty && buffer.idle_syncers > 0 && self.shared.appends_wake_syncer();
        let capacity = buffer.bytes.capacity();
        record::encode(&mut buffer.bytes, Header { lsn, time_ms, durable_hint, kind }, count, body);
        self.shared.count_growth(capacity, buffer.bytes.capacity());
        drop(buffer);
        if wake {
            self.shared.data_ready.notify_one();
        }
        Ok(lsn)
    }

    /// Appends one command.
    pub fn append_command(&self, time_ms: u64, db: u32, args: &[&[u8]]) -> Result<Lsn, WalError> {
        self.append(time_ms, Kind::Command, 1, |out| record::put_command(out, db, args))
    }

    /// The LSN of the last record appended (0: none).
    pub fn last_lsn(&self) -> Lsn {
        self.shared.buffer.lock().next_lsn - 1
    }

    /// Every record up to this LSN is on disk and synced.
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.durable.load(Ordering::Acquire)
    }

    /// Every record up to this LSN was written to the file (maybe not synced).
    pub fn written_lsn(&self) -> Lsn {
        self.shared.written.load(Ordering::Acquire)
    }

    /// Asks for a sync covering `lsn` as soon as possible (WAITAOF in the
    /// `everysec` tier).
    pub fn request_sync(&self, lsn: Lsn) {
        self.shared.sync_wanted.fetch_max(lsn, Ordering::AcqRel);
        // Taking the lock orders this wake-up after a syncer's check for work.
        drop(self.shared.buffer.lock());
        self.shared.data_ready.notify_one();
    }

    /// One syncer round: write what is buffered and, if the tier says so,
    /// fdatasync it. Returns the durable LSN. Background mode calls this in a
    /// loop; tests call it directly.
    pub fn sync_round(&self, force_sync: bool) -> Lsn {
        self.shared.round(force_sync, 0);
        self.durable_lsn()
    }

    /// Blocks until every record up to `lsn` is durable, running rounds on
    /// this thread (group commit among the callers, see [`super::commit`]):
    /// a caller that finds no round in flight leads one (writes everything
    /// buffered, one fdatasync, publishes the durable LSN, wakes the callers
    /// it covers and hands the lead to one it does not); the others park
    /// until a round covers them. Rounds are ordered by the carry lock and
    /// fdatasync through the first syncer's handle, so this is safe beside
    /// the background syncer. Err when the log failed: the record will never
    /// be durable. A full disk keeps waiting, retrying every
    /// [`CALLER_RETRY`].
    pub fn sync_through(&self, lsn: Lsn) -> Result<(), WalError> {
        let shared = &self.shared;
        loop {
            if shared.durable.load(Ordering::Acquire) >= lsn {
                return Ok(());
            }
            if let Err(e @ WalError::Failed(_)) = self.check_writable() {
                return Err(e);
            }
            if shared.committers.try_lead() {
                shared.lead_round();
                if shared.durable.load(Ordering::Acquire) >= lsn {
                    return Ok(());
                }
                // Covered by an fdatasync in flight on another round (which
                // wakes us), or the disk is full (retry after a while).
                shared.park_until_covered(lsn, false);
            } else {
                shared.park_until_covered(lsn, true);
            }
        }
    }

    pub fn stats(&self) -> &WalStats {
        &self.shared.stats
    }

    /// Whether the background syncer (`async`, `everysec`) is being kept
    /// from its round: records have waited in the buffer longer than the
    /// tier's pace allows ([`ASYNC_STARVED_AFTER_MS`],
    /// [`EVERYSEC_STARVED_AFTER_MS`]) while the log is healthy and not held.
    /// At nice [`BACKGROUND_SYNCER_NICE`] on a CPU a worker keeps busy, the
    /// scheduler was measured to leave it waiting for up to 0.7 s (the
    /// loss window then grows to that, docs/durability.md); a worker that
    /// sees this yields its CPU once. One atomic load while the buffer is
    /// empty, a clock read otherwise.
    pub fn syncer_starved(&self) -> bool {
        let shared = &self.shared;
        let since = shared.buffered_since_ms.load(Ordering::Relaxed);
        if since == 0 {
            return false;
        }
        let limit = match shared.tier.get() {
            Tier::Async => ASYNC_STARVED_AFTER_MS,
            Tier::Everysec => EVERYSEC_STARVED_AFTER_MS,
            Tier::Sync | Tier::None => return false,
        };
        crate::clock::now_ms().saturating_sub(since) > limit
            && !shared.held.load(Ordering::Relaxed)
            && shared.health.load(Ordering::Relaxed) == HEALTH_OK
    }

    /// The failure message, if the log is unhealthy.
    pub fn health_message(&self) -> Option<String> {
        self.check_writable().err().map(|e| e.to_string())
    }

    /// After a snapshot covering `lsn` is durable: segments wholly at or
    /// below it become spares.
    pub fn recycle_through(&self, lsn: Lsn) -> std::io::Result<usize> {
        self.shared.files.lock().recycle_through(lsn)
    }

    /// Spare segments prepared (created, filled and synced) and ready for
    /// the next rotation.
    pub fn spare_count(&self) -> usize {
        self.shared.files.lock().spares.len()
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.shared.files.lock().segment_count()
    }

    /// Writes and syncs everything, then stops the threads.
    pub fn close(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.data_ready.notify_all();
        self.shared.spare_wanted.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        self.shared.round(true, 0);
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        if !self.shared.stop.load(Ordering::Acquire) {
            self.close();
        }
    }
}

impl Shared {
    fn set_health(&self, level: u8, message: String) {
        if self.health.load(Ordering::Acquire) == HEALTH_FAILED {
            return;
        }
        if level != HEALTH_OK {
            tracing::error!(%message, "write-ahead log refuses writes");
        } else {
            tracing::info!("write-ahead log accepts writes again");
        }
        *self.health_message.lock() = message;
        self.health.store(level, Ordering::Release);
    }

    /// Whether an append into an empty buffer wakes an idle syncer (not when
    /// the appenders run the `sync` rounds: `WalOptions::caller_rounds`).
    #[inline]
    fn appends_wake_syncer(&self) -> bool {
        !(self.caller_rounds && self.tier.get() == Tier::Sync)
    }

    fn run_syncer(&self, index: usize, generation: u64) {
        let mut lowered = false;
        let mut last_sync = Instant::now();
        // Records the previous round covered.
        let mut last_round = 0;
        while !self.stop.load(Ordering::Acquire) {
            if self.syncer_generation.load(Ordering::Acquire) != generation {
                return;
            }
            // The tier as of this round (it may change at runtime).
            let tier = self.tier.get();
            if tier != Tier::Sync && !lowered {
                crate::thread_priority::lower_this_thread(BACKGROUND_SYNCER_NICE, "WAL syncer");
                lowered = true;
            }
            let tick = match tier {
                Tier::Everysec => Duration::from_millis(10),
                _ => Duration::from_millis(100),
            };
            if self.held.load(Ordering::SeqCst) {
                // Nothing may be written; `Wal::hold(false)` wakes us (checked
                // again under the lock it takes before its notify).
                let mut buffer = self.buffer.lock();
                if self.held.load(Ordering::SeqCst) {
                    self.data_ready.wait_for(&mut buffer, tick);
                }
                continue;
            }
            if self.appends_wake_syncer() {
                self.wait_for_data(tick);
            } else {
                self.wait_for_tick(tick);
            }
            let wanted = self.sync_wanted.load(Ordering::Acquire) > self.durable.load(Ordering::Acquire);
            let due = match tier {
                Tier::Everysec => last_sync.elapsed() >= Duration::from_secs(1) || wanted,
                _ => true,
            };
            let gathers = tier == Tier::Sync && self.syncers == 1;
            if gathers {
                self.gather_expected(last_round);
            } else if tier == Tier::Sync {
                self.let_busy_appenders_finish();
            }
            let round_started = Instant::now();
            let before = self.durable.load(Ordering::Acquire);
            self.round(due, index);
            if gathers {
                last_round = self.expect_next_round(before);
            }
            if due {
                last_sync = round_started;
            }
            if self.health.load(Ordering::Acquire) == HEALTH_FAILED {
                break;
            }
            if tier == Tier::Async {
                self.pace_async(round_started);
            }
        }
    }

    /// Waits until something is buffered (an append wakes an idle syncer) or
    /// `tick` passes.
    fn wait_for_data(&self, tick: Duration) {
        let mut buffer = self.buffer.lock();
        // try_lock, never lock: a round holds the carry lock and then takes
        // the buffer lock, and rounds run on the other syncers and on caller
        // threads (`Wal::sync_through`). A round that is writing counts as
        // work.
        if buffer.bytes.is_empty() && self.carry.try_lock().is_some_and(|carry| carry.is_empty()) {
            // The `everysec` syncer runs on its clock, not on appends.
            let wakeable = self.tier.get() != Tier::Everysec;
            buffer.idle_syncers += usize::from(wakeable);
            self.data_ready.wait_for(&mut buffer, tick);
            buffer.idle_syncers -= usize::from(wakeable);
        }
    }

    /// When the appenders run the rounds (`WalOptions::caller_rounds`): the
    /// syncer is a backstop for records nobody waits for, once per `tick`,
    /// or at once when [`Wal::request_sync`] asks. Running whenever data is
    /// buffered would take the callers' records from under them and split
    /// their groups.
    fn wait_for_tick(&self, tick: Duration) {
        let mut buffer = self.buffer.lock();
        if self.sync_wanted.load(Ordering::Acquire) <= self.durable.load(Ordering::Acquire) {
            self.data_ready.wait_for(&mut buffer, tick);
        }
    }

    /// Yields this CPU while appenders are busy (see
    /// [`WalOptions::busy_appenders`]), for at most [`BUSY_APPENDERS_MAX`].
    fn let_busy_appenders_finish(&self) {
        let Some(busy) = &self.busy_appenders else { return };
        let started = Instant::now();
        while busy.load(Ordering::Acquire) > 0 && started.elapsed() < BUSY_APPENDERS_MAX {
            std::thread::yield_now();
        }
    }

    /// In the `async` tier, starts rounds at most every [`ASYNC_ROUND_MIN`]:
    /// each fdatasync costs I/O submissions (VM exits on virtual disks) and
    /// wake-ups whatever it covers, so an unpaced syncer under load spends
    /// CPU the workers need while narrowing the loss window only from about
    /// one round to about one fsync. A WAITAOF request skips the wait.
    fn pace_async(&self, round_started: Instant) {
        let elapsed = round_started.elapsed();
        if elapsed >= ASYNC_ROUND_MIN {
            return;
        }
        let mut buffer = self.buffer.lock();
        if self.sync_wanted.load(Ordering::Acquire) > self.durable.load(Ordering::Acquire) {
            return;
        }
        self.data_ready.wait_for(&mut buffer, ASYNC_ROUND_MIN - elapsed);
    }

    /// Writes what is buffered; syncs when `sync` (or when the tier syncs
    /// every round). `syncer` picks the file handle the fdatasync goes
    /// through.
    fn round(&self, sync: bool, syncer: usize) {
        if self.health.load(Ordering::Acquire) == HEALTH_FAILED || self.held.load(Ordering::SeqCst) {
            return;
        }
        // The carry lock orders rounds: the bytes taken first are written first.
        self.round_locked(self.carry.lock(), sync, syncer);
    }

    /// A caller's round (it leads, see [`super::commit`]): gathers the
    /// callers expected back, runs the round, hands over the lead.
    fn lead_round(&self) {
        self.gather();
        let before = self.durable.load(Ordering::Acquire);
        self.round(true, 0);
        self.expect_next_round(before);
        self.committers.end_lead(self.durable.load(Ordering::Acquire));
    }

    /// After a round that started with the log durable through `before`:
    /// the writers it covered usually write again at once, and the records
    /// buffered now (written during the round) wait for the next one, so the
    /// next round is expected to cover both (see [`Shared::gather`]).
    /// Returns how many records the round covered.
    fn expect_next_round(&self, before: Lsn) -> u64 {
        let covered = self.durable.load(Ordering::Acquire).saturating_sub(before);
        let expected = self.buffer.lock().next_lsn - 1 + covered;
        self.gather_until.store(expected, Ordering::Release);
        covered
    }

    /// Before a `sync`-tier syncer round takes the buffer: lets busy workers
    /// finish their batch, then gathers the writers the previous round
    /// covered (expected back with their next write, see
    /// [`Shared::expect_next_round`]), each for at most
    /// [`BUSY_APPENDERS_MAX`] and [`GATHER_MAX`]. Without the gathering, N
    /// clients writing in a loop split into groups that take turns, each
    /// write waiting about two fdatasyncs. A lone writer (the previous round
    /// covered one record, and the one expected is buffered) has nothing to
    /// wait for: its round starts at once, without the two context switches
    /// that letting its worker finish first costs.
    fn gather_expected(&self, last_round: u64) {
        let expected_here = self.buffer.lock().next_lsn > self.gather_until.load(Ordering::Acquire);
        if expected_here && last_round <= 1 {
            return;
        }
        self.let_busy_appenders_finish();
        self.gather();
    }

    /// Before a caller round takes the buffer: waits, at most [`GATHER_MAX`],
    /// until the records the previous round expected are appended (the
    /// callers it covered, back with their next write). Without this, with
    /// N callers writing in a loop the round would start on the first one's
    /// record and the others' would wait for the round after, so every call
    /// would wait about two fdatasyncs; gathered, it waits one plus the
    /// gathering. A lone caller expects only its own record: no wait. Polls,
    /// yielding the CPU to the callers it waits for between looks.
    fn gather(&self) {
        let until = self.gather_until.load(Ordering::Acquire);
        let deadline = Instant::now() + GATHER_MAX;
        while self.buffer.lock().next_lsn <= until && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }

    /// Parks this thread until a round covers `lsn`, the log fails, or (when
    /// `lead_when_idle`) no round is led any more; wakes at least every
    /// [`CALLER_RETRY`]. The caller re-checks what it waits for.
    fn park_until_covered(&self, lsn: Lsn, lead_when_idle: bool) {
        if self.spin_until_settled(lsn, lead_when_idle) {
            return;
        }
        let ticket = self.committers.register(lsn);
        // Checked after registering: a wake-up from here on is not lost.
        if !self.settled(lsn, lead_when_idle) {
            std::thread::park_timeout(CALLER_RETRY);
        }
        self.committers.unregister(ticket);
    }

    /// Whether a caller waiting for `lsn` should stop waiting: covered, the
    /// log failed, or (when `lead_when_idle`) no round is led.
    fn settled(&self, lsn: Lsn, lead_when_idle: bool) -> bool {
        self.durable.load(Ordering::Acquire) >= lsn
            || self.health.load(Ordering::Acquire) == HEALTH_FAILED
            || (lead_when_idle && !self.committers.is_led())
    }

    /// Before parking, polls for up to [`CALLER_SPIN`] (yielding the CPU to
    /// any other runnable thread between looks): a round usually ends within
    /// one fdatasync, and a parked thread's wake-up costs a scheduler round
    /// trip (tens of µs on a virtual machine) that delays both its return and
    /// its next write. Returns whether it settled.
    fn spin_until_settled(&self, lsn: Lsn, lead_when_idle: bool) -> bool {
        let deadline = Instant::now() + CALLER_SPIN;
        loop {
            if self.settled(lsn, lead_when_idle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
    }

    fn round_locked(&self, carry: parking_lot::MutexGuard<'_, Vec<u8>>, sync: bool, syncer: usize) {
        if let Some(plan) = self.write_buffered(carry, sync, syncer) {
            self.sync_written(plan);
        }
    }

    /// The ordered half of a round: takes the buffer and writes it (carry
    /// and files locks held, so rounds write in LSN order). Returns what to
    /// fdatasync, if anything.
    fn write_buffered(
        &self,
        mut carry: parking_lot::MutexGuard<'_, Vec<u8>>,
        sync: bool,
        syncer: usize,
    ) -> Option<SyncPlan> {
        let empty = std::mem::take(&mut *self.spare_buffer.lock());
        let (last, bytes) = {
            let mut buffer = self.buffer.lock();
            let last = buffer.next_lsn - 1;
            if let Some(first) = buffer.first_append.take() {
                self.unsynced.lock().push_back((last, first));
            }
            self.buffered_since_ms.store(0, Ordering::Relaxed);
            (last, std::mem::replace(&mut buffer.bytes, empty))
        };
        // Bytes left over by a failed round go first; usually there are none
        // and the taken buffer is written as it is.
        if !carry.is_empty() {
            self.carry_extend(&mut carry, &bytes);
        }
        // `none` (logging stopped at runtime) syncs what is left, as `async`.
        let sync = sync || matches!(self.tier.get(), Tier::Sync | Tier::Async | Tier::None);
        let mut files = self.files.lock();
        let pending: &[u8] = if carry.is_empty() { &bytes } else { &carry };
        if !pending.is_empty() {
            let (len, records) = (pending.len() as u64, count_records(pending));
            match files.write(pending) {
                Ok(()) => {
                    self.stats.record_write(len, records);
                    carry.clear();
                    self.written.store(last, Ordering::Release);
                    if self.health.load(Ordering::Acquire) == HEALTH_DISK_FULL {
                        self.set_health(HEALTH_OK, String::new());
                    }
                }
                Err((done, WriteError::NoSpace(e))) => {
                    if carry.is_empty() {
                        self.carry_extend(&mut carry, &bytes[done..]);
                    } else {
                        carry.drain(..done);
                    }
                    self.set_health(HEALTH_DISK_FULL, format!("no space left for a new WAL segment: {e}"));
                    self.spare_wanted.notify_one();
                    self.reuse_buffer(bytes);
                    return None;
                }
                Err((_, WriteError::Failed(message))) => {
                    self.fail(message);
                    self.reuse_buffer(bytes);
                    return None;
                }
            }
        }
        self.reuse_buffer(bytes);
        let written = self.written.load(Ordering::Acquire);
        // Nothing new since the last fdatasync began: that one covers it.
        if !sync || written <= self.sync_started.load(Ordering::Acquire) {
            return None;
        }
        let handle = match files.sync_handle(syncer) {
            Ok(h) => h,
            Err(e) => {
                self.fail(write_error_message(e));
                return None;
            }
        };
        self.sync_started.fetch_max(written, Ordering::AcqRel);
        if files.wants_spare() {
            self.spare_wanted.notify_one();
        }
        let segment = files.active.as_ref().map(|a| a.name.clone()).unwrap_or_default();
        Some(SyncPlan { written, handle, segment })
    }

    /// The concurrent half: fdatasync (no lock held but the handle's own)
    /// and publish the durable LSN.
    fn sync_written(&self, plan: SyncPlan) {
        let started = Instant::now();
        let mut handle = plan.handle.lock();
        // Queued behind another fdatasync on this handle that covered it.
        if self.durable.load(Ordering::Acquire) >= plan.written {
            return;
        }
        // Everything written by now (other rounds' bytes too) was written
        // before this fdatasync begins, so it covers all of it.
        let covers = self.written.load(Ordering::Acquire).max(plan.written);
        if let Err(e) = handle.sync_data() {
            drop(handle);
            self.fail(format!("fdatasync of WAL segment {}: {e}", plan.segment));
            return;
        }
        if self.health.load(Ordering::Acquire) == HEALTH_FAILED {
            return;
        }
        // Published before the handle is released, so a round queued on it
        // sees that this fdatasync covered its bytes and skips its own.
        let before = self.durable.fetch_max(covers, Ordering::AcqRel);
        drop(handle);
        let group = covers.saturating_sub(before);
        self.stats.record_sync(started.elapsed(), group);
        self.record_unsynced_age(covers);
        if group > 0 {
            self.committers.wake(covers, false);
            (self.on_durable)(covers);
        }
    }

    /// Forgets the taken buffers an fdatasync covering `covers` made
    /// durable, recording how long the oldest of them had waited.
    fn record_unsynced_age(&self, covers: Lsn) {
        let mut oldest = None;
        let mut unsynced = self.unsynced.lock();
        while let Some(&(last, first)) = unsynced.front() {
            if last > covers {
                break;
            }
            oldest.get_or_insert(first);
            unsynced.pop_front();
        }
        drop(unsynced);
        if let Some(first) = oldest {
            self.stats.record_unsynced_age(first.elapsed());
        }
    }

    /// Keeps the written vector, emptied, as the next round's fresh buffer
    /// (unless a burst made it huge).
    fn reuse_buffer(&self, mut bytes: Vec<u8>) {
        bytes.clear();
        let dropped =
            if bytes.capacity() <= 16 << 20 { std::mem::replace(&mut *self.spare_buffer.lock(), bytes) } else { bytes };
        self.count_growth(dropped.capacity(), 0);
    }

    /// Appends to the carry, counting what it grew by.
    fn carry_extend(&self, carry: &mut Vec<u8>, bytes: &[u8]) {
        let capacity = carry.capacity();
        carry.extend_from_slice(bytes);
        self.count_growth(capacity, carry.capacity());
    }

    /// Records that one of the log's vectors went from `before` to `after`
    /// bytes of capacity (0: dropped).
    fn count_growth(&self, before: usize, after: usize) {
        if after > before {
            self.buffer_capacity.fetch_add(after - before, Ordering::Relaxed);
        } else if before > after {
            self.buffer_capacity.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    fn fail(&self, message: String) {
        self.stats.record_failure();
        self.set_health(HEALTH_FAILED, message);
        self.health.store(HEALTH_FAILED, Ordering::Release);
        self.committers.wake(Lsn::MAX, false);
        (self.on_durable)(Lsn::MAX);
    }

    /// Keeps a zero-filled spare segment ready so rotation never waits for
    /// the zero fill; retries every second while the disk is full.
    fn run_preparer(&self) {
        while !self.stop.load(Ordering::Acquire) {
            let name = {
                let mut files = self.files.lock();
                files.wants_spare().then(|| (files.next_spare_name(), files.storage.clone(), files.dir.clone()))
            };
            if let Some((name, storage, dir)) = name {
                let (size, fill) = {
                    let files = self.files.lock();
                    (files.segment_size, files.fill)
                };
                match prepare_spare(storage.as_ref(), &dir, &name, size, fill) {
                    Ok(spare) => {
                        self.files.lock().spares.push(spare);
                        continue;
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot prepare a spare WAL segment; retrying"),
                }
            }
            let mut guard = self.spare_lock.lock();
            self.spare_wanted.wait_for(&mut guard, Duration::from_secs(1));
        }
    }
}

/// How a tier's new spare segments get their blocks (see [`SpareFill`]).
fn spare_fill(tier: Tier) -> SpareFill {
    if tier == Tier::Sync {
        SpareFill::Zeros
    } else {
        SpareFill::Allocate
    }
}

/// An fdatasync to make: through which handle, covering which LSN.
struct SyncPlan {
    written: Lsn,
    handle: SyncHandle,
    /// The segment's name, for the error message.
    segment: String,
}

fn write_error_message(e: WriteError) -> String {
    match e {
        WriteError::Failed(m) => m,
        WriteError::NoSpace(e) => e.to_string(),
    }
}

/// Number of whole records in `bytes`.
fn count_records(bytes: &[u8]) -> u64 {
    let mut n = 0;
    let mut pos = 0;
    while let Some(len) = record::claimed_len(&bytes[pos..]) {
        pos += record::PREFIX_LEN + len;
        n += 1;
        if pos >= bytes.len() {
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::durability::sim::SimStorage;

    fn manual_log() -> Wal {
        let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
        storage.create_dir_all(Path::new("/data")).expect("mkdir");
        let options = WalOptions { segment_size: 4 << 20, background: false, ..WalOptions::new(Tier::Async) };
        let tail = LogTail { next_lsn: 1, ..LogTail::default() };
        Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open")
    }

    /// The capacities summed under their locks (only when no round runs).
    fn summed(wal: &Wal) -> usize {
        let s = &wal.shared;
        s.buffer.lock().bytes.capacity() + s.spare_buffer.lock().capacity() + s.carry.lock().capacity()
    }

    #[test]
    fn buffer_bytes_follows_every_growth_and_swap() {
        let wal = manual_log();
        assert_eq!(wal.buffer_bytes(), summed(&wal));
        let value = vec![b'v'; 300];
        for round in 0..6 {
            // Each round appends more than the last, so the buffers grow.
            for i in 0..(500 << round) {
                let key = format!("k{round}:{i}");
                wal.append_command(0, 0, &[b"SET", key.as_bytes(), &value]).expect("append");
            }
            assert_eq!(wal.buffer_bytes(), summed(&wal), "after the appends of round {round}");
            wal.sync_round(true);
            assert_eq!(wal.buffer_bytes(), summed(&wal), "after round {round}");
        }
        assert!(wal.buffer_bytes() > 2 * INITIAL_BUFFER_BYTES, "the buffers grew");
        wal.close();
    }
}
