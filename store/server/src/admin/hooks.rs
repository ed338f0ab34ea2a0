//! Replacements for what the admin API and metrics read from the server's
//! persistence layer by default: its counters ([`DurabilityCell`]) and how a
//! snapshot is taken ([`SnapshotCell`]). Tests and embedding programs
//! install their own; the server itself installs nothing.
//!
//! ```ignore
//! server.hooks.durability.set(Arc::new(my_wal_stats));
//! server.hooks.snapshot.set(Arc::new(my_snapshotter));
//! ```

use crate::metrics::durability::DurabilityCell;

use super::snapshot::SnapshotCell;

/// The durability layer's hooks, held by `Server`.
#[derive(Debug, Default)]
pub struct Hooks {
    pub durability: DurabilityCell,
    pub snapshot: SnapshotCell,
}
