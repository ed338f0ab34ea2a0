//! What a modified key signals (Redis's `signalModifiedKey`): its WATCHers
//! become dirty and its tracking clients are invalidated. Every write path
//! calls [`key`] for each key it changed; flushes call [`everything`].
//! Each side costs one relaxed load when nobody watches or tracks.

use crate::server::Server;
use crate::tracking::Change;

/// `key` of database `db` was changed by the running command.
#[inline]
pub fn key(server: &Server, db: usize, key: &[u8]) {
    server.watches.touch(db, key);
    if server.tracking.is_active() {
        server.tracking.invalidate(key, Change::Write);
    }
}

/// `key` of database `db` was evicted for maxmemory (no client wrote it).
pub fn evicted(server: &Server, db: usize, key: &[u8]) {
    server.watches.touch(db, key);
    if server.tracking.is_active() {
        server.tracking.invalidate(key, Change::Removed);
    }
}

/// A database (or all) was flushed or swapped: tracking clients drop every
/// cached key (WATCHers are handled by the flush, which knows which exist).
pub fn everything(server: &Server) {
    server.persistence.snapshot.changes.add(1);
    server.tracking.invalidate_all();
}
