//! `maxmemory`: refusing commands that may grow memory (Redis's `denyoom`
//! flag) with `-OOM`, and evicting keys under the `allkeys-*`/`volatile-*`
//! policies, when the server's memory is above the limit.
//!
//! Used memory is the process's resident set size (what INFO `used_memory`
//! reports), so the check is coarse: freed memory the allocator keeps counts
//! until it is returned. With `maxmemory 0` (the default) the only cost is
//! one relaxed load per command in the dispatcher.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use cairn_engine::events;

use crate::commands::table;
use crate::server::Server;

/// Redis's reply to a `denyoom` command above the limit.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Which keys a policy may evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    None,
    AllKeys,
    Volatile,
}

impl Eviction {
    pub fn from_policy(policy: &str) -> Eviction {
        if policy.starts_with("allkeys") {
            Eviction::AllKeys
        } else if policy.starts_with("volatile") {
            Eviction::Volatile
        } else {
            Eviction::None
        }
    }
}

/// Whether command `index` carries Redis's `denyoom` flag (from Redis's
/// own command table, `redis_meta.json`).
pub fn denyoom(index: usize) -> bool {
    static FLAGS: OnceLock<Vec<bool>> = OnceLock::new();
    FLAGS
        .get_or_init(|| {
            let meta: serde_json::Value =
                serde_json::from_str(include_str!("commands/redis_meta.json")).unwrap_or_default();
            table::all()
                .iter()
                .map(|spec| {
                    let flags = &meta[spec.name][0][2];
                    let list = flags.get("~+").or_else(|| flags.get("~")).and_then(|f| f.as_array());
                    list.is_some_and(|l| l.iter().any(|v| v.as_str() == Some("denyoom")))
                })
                .collect()
        })
        .get(index)
        .copied()
        .unwrap_or(false)
}

/// Whether used memory is above a non-zero `maxmemory`.
pub fn over_limit(server: &Server) -> bool {
    let max = server.runtime.maxmemory.load(Ordering::Relaxed);
    max != 0 && crate::commands::info::rss_bytes() > max
}

/// Evicts keys (if the policy allows) while above the limit; returns whether
/// memory is still above it (a `denyoom` command must then be refused).
pub fn make_room(server: &Server, now_ms: u64) -> bool {
    // Nothing is evicted during CLIENT PAUSE (its writes wait anyway).
    if !over_limit(server) || server.pause.is_paused() {
        return false;
    }
    let eviction = server.runtime.eviction();
    if eviction != Eviction::None {
        evict(server, eviction, now_ms);
    }
    over_limit(server)
}

/// Deletes keys shard by shard until memory is below the limit or nothing
/// evictable is left; each deletion raises `evicted` and is logged as DEL.
fn evict(server: &Server, eviction: Eviction, now_ms: u64) {
    let keyspace = &server.keyspace;
    let wal = server.persistence.wal();
    for index in 0..keyspace.num_shards() {
        let mut shard = keyspace.lock(index);
        for db in 0..keyspace.num_dbs() {
            let table = shard.db(db);
            let victims: Vec<Vec<u8>> = table
                .iter(now_ms)
                .filter(|(_, e)| eviction == Eviction::AllKeys || e.expire_at().is_some())
                .map(|(k, _)| k.to_vec())
                .collect();
            for key in victims {
                table.remove(&key);
                table.emit(events::EVICTED, "evicted", &key);
                crate::modified::evicted(server, db, &key);
                if let Some(wal) = wal {
                    let _ = wal.append_command(now_ms, db as u32, &[b"DEL", &key]);
                }
            }
        }
        drop(shard);
        if !over_limit(server) {
            return;
        }
    }
}
