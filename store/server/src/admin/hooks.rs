//! Replacements for what the admin API and metrics read from the server's
//! persistence layer by default: its counters ([`DurabilityCell`]) and how a
//! snapshot is taken ([`SnapshotCell`]). Tests and embedding programs
//! install their own; the server itself installs nothing.
//!
//! ```ignore
//! server.hooks.durability.set(Arc::new(my_wal_stats));
//! server.hooks.snapshot.set(Arc::new(my_snapshotter));
//! ```

use std::sync::Arc;

use parking_lot::RwLock;

use crate::metrics::durability::DurabilityCell;

use super::snapshot::SnapshotCell;

/// One replaceable hook: empty until something is installed.
pub struct HookCell<T: ?Sized>(RwLock<Option<Arc<T>>>);

impl<T: ?Sized> Default for HookCell<T> {
    fn default() -> Self {
        HookCell(RwLock::new(None))
    }
}

impl<T: ?Sized> std::fmt::Debug for HookCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookCell")
    }
}

impl<T: ?Sized> HookCell<T> {
    /// Installs a hook (replaces the previous one).
    pub fn set(&self, hook: Arc<T>) {
        *self.0.write() = Some(hook);
    }

    /// The installed hook, if any.
    pub fn installed(&self) -> Option<Arc<T>> {
        self.0.read().clone()
    }
}

/// The durability layer's hooks, held by `Server`.
#[derive(Debug, Default)]
pub struct Hooks {
    pub durability: DurabilityCell,
    pub snapshot: SnapshotCell,
}
