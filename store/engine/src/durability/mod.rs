//! Durability: the write-ahead log, group commit, snapshots and recovery.
//!
//! # Layout
//!
//! - [`storage`]: the [`Storage`] trait all file I/O goes through, and the
//!   real filesystem; [`sim`]: a simulated disk that crashes, tears writes
//!   and fails on command, for crash tests.
//! - [`record`]: the self-checking record format (length, crc32c, LSN);
//!   [`checksum`]: the crc32c it uses, fast on short records.
//! - [`segment`]: preallocated segment files, their header, and the scan of
//!   one segment that tells a torn tail from corruption.
//! - [`files`]: the segments as the syncer writes them (rotation, spares,
//!   recycling after a snapshot).
//! - [`wal`]: [`Wal`], the append buffer and the syncer (group commit);
//!   `commit`: group commit among threads that wait for their own records.
//! - [`stats`]: counters for INFO and metrics.
//! - [`recovery`]: reading the log back at startup.
//! - [`snapshot`]: snapshot files (point-in-time images as command records);
//!   [`rebuild`]: the commands that rebuild one key.
//!
//! The on-disk format and the fault model are described in
//! `docs/durability.md`.

pub mod checksum;
mod commit;
pub mod files;
pub mod rebuild;
pub mod record;
pub mod recovery;
pub mod segment;
pub mod sim;
pub mod snapshot;
pub mod stats;
pub mod storage;
pub mod wal;

pub use record::{Kind, LoggedCommand, Lsn, Record};
pub use recovery::{recover_log, RecoverOptions, RecoveryError, RecoveryReport};
pub use storage::{OsStorage, Storage, StorageFile};
pub use wal::{default_syncers, LogTail, Wal, WalError, WalOptions};

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// When a write is acknowledged, and what a power cut may lose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Tier {
    /// No log: a power cut or crash loses everything since the last snapshot.
    None,
    /// Reply before the fsync; a syncer fsyncs continuously.
    #[default]
    Async,
    /// Reply before the fsync; fsync once a second.
    Everysec,
    /// Reply after the fdatasync that covers the write (group commit).
    Sync,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::None => "none",
            Tier::Async => "async",
            Tier::Everysec => "everysec",
            Tier::Sync => "sync",
        }
    }

    /// Whether writes are logged.
    pub fn logs(self) -> bool {
        self != Tier::None
    }

    fn to_u8(self) -> u8 {
        match self {
            Tier::None => 0,
            Tier::Async => 1,
            Tier::Everysec => 2,
            Tier::Sync => 3,
        }
    }

    fn from_u8(n: u8) -> Tier {
        match n {
            0 => Tier::None,
            1 => Tier::Async,
            2 => Tier::Everysec,
            _ => Tier::Sync,
        }
    }
}

/// A tier that can change at runtime (`CONFIG SET appendfsync`): one atomic
/// byte, read where a fixed field was read before.
#[derive(Debug)]
pub struct TierCell(AtomicU8);

impl TierCell {
    pub fn new(tier: Tier) -> TierCell {
        TierCell(AtomicU8::new(tier.to_u8()))
    }

    #[inline]
    pub fn get(&self) -> Tier {
        Tier::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Sets the tier; returns the previous one.
    pub fn set(&self, tier: Tier) -> Tier {
        Tier::from_u8(self.0.swap(tier.to_u8(), Ordering::AcqRel))
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown tier name.
#[derive(Debug, thiserror::Error)]
#[error("unknown durability tier {0:?} (expected none, async, everysec or sync)")]
pub struct UnknownTier(pub String);

impl FromStr for Tier {
    type Err = UnknownTier;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Tier::None),
            "async" => Ok(Tier::Async),
            "everysec" => Ok(Tier::Everysec),
            "sync" => Ok(Tier::Sync),
            _ => Err(UnknownTier(s.to_string())),
        }
    }
}
