//! How a database is opened ([`DbOptions`]) and how SET behaves
//! ([`SetOptions`]).

use std::path::Path;
use std::time::Duration;

pub use cairn_engine::durability::Tier;
use cairn_server::Config;

/// Options of [`crate::Db::open`]. The defaults are the server's, except
/// the durability tier: `sync`, so that a call that returns has its write on
/// disk (what an application linking a database expects; the server's
/// default is `async`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbOptions {
    /// When a write call returns: `Sync` after the fdatasync covering it
    /// (group commit across threads), `Async`/`Everysec` before it, `None`
    /// without a log (a snapshot is saved at close).
    pub durability: Tier,
    /// Number of databases (as the server's `--databases`); a directory
    /// written by a server with more databases needs at least as many.
    pub databases: usize,
    /// Keyspace shards (rounded up to a power of two).
    pub shards: usize,
    /// WAL segment size (segments are preallocated and reused).
    pub wal_segment_bytes: u64,
    /// Take a snapshot once the WAL has grown by this many bytes.
    pub snapshot_wal_bytes: u64,
    /// Take a snapshot at least this often when anything changed (0: never by time).
    pub snapshot_interval_secs: u64,
}

impl Default for DbOptions {
    fn default() -> Self {
        let server = Config::default();
        DbOptions {
            durability: Tier::Sync,
            databases: server.databases,
            shards: server.shards,
            wal_segment_bytes: server.wal_segment_bytes,
            snapshot_wal_bytes: server.snapshot_wal_bytes,
            snapshot_interval_secs: server.snapshot_interval_secs,
        }
    }
}

impl DbOptions {
    /// The defaults with another tier.
    pub fn with_durability(durability: Tier) -> Self {
        DbOptions { durability, ..DbOptions::default() }
    }

    /// The server configuration these options stand for (no listener is
    /// ever bound: ports are unused).
    pub(crate) fn to_config(&self, dir: &Path) -> Config {
        Config {
            port: Some(0),
            admin_port: 0,
            threads: Some(1),
            data_dir: dir.to_path_buf(),
            durability: self.durability,
            databases: self.databases.max(1),
            shards: self.shards,
            wal_segment_bytes: self.wal_segment_bytes,
            snapshot_wal_bytes: self.snapshot_wal_bytes,
            snapshot_interval_secs: self.snapshot_interval_secs,
            ..Config::default()
        }
    }
}

/// When SET writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCondition {
    #[default]
    Always,
    /// Only if the key does not exist (NX).
    IfAbsent,
    /// Only if the key exists (XX).
    IfPresent,
}

/// Options of [`crate::Db::set_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// Expire the key after this long (PX; millisecond resolution, at least 1 ms).
    pub ttl: Option<Duration>,
    /// Keep the key's current time to live (KEEPTTL); ignored with `ttl`.
    pub keep_ttl: bool,
    pub condition: SetCondition,
}

impl SetOptions {
    pub fn ttl(ttl: Duration) -> Self {
        SetOptions { ttl: Some(ttl), ..SetOptions::default() }
    }

    pub fn if_absent() -> Self {
        SetOptions { condition: SetCondition::IfAbsent, ..SetOptions::default() }
    }

    pub fn if_present() -> Self {
        SetOptions { condition: SetCondition::IfPresent, ..SetOptions::default() }
    }
}
