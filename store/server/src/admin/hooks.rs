//! What the durability layer plugs into the server for the admin API and
//! metrics: its counters ([`DurabilityCell`]) and a way to take a snapshot
//! ([`SnapshotCell`]). Both start with stand-ins that report "no WAL yet".
//!
//! ```ignore
//! server.hooks.durability.set(Arc::new(my_wal_stats));
//! server.hooks.snapshot.set(Arc::new(my_snapshotter));
//! ```

use crate::metrics::durability::DurabilityCell;

use super::snapshot::SnapshotCell;

/// The durability layer's hooks, held by `Server`.
#[derive(Debug)]
pub struct Hooks {
    pub durability: DurabilityCell,
    pub snapshot: SnapshotCell,
}

impl Hooks {
    /// Stand-ins reporting `tier` and no snapshots.
    pub fn new(tier: &str) -> Hooks {
        Hooks { durability: DurabilityCell::new(tier), snapshot: SnapshotCell::default() }
    }
}
