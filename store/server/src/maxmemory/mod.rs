//! `maxmemory`: refusing commands that may grow memory (Redis's `denyoom`
//! flag) with `-OOM`, and evicting keys under the `allkeys-*`/`volatile-*`
//! policies, one at a time, until used memory is back under the limit.
//!
//! # Layout
//!
//! - this file: the checks the dispatcher makes, and the eviction loop;
//! - [`policy`]: `maxmemory-policy` and how each policy ranks keys;
//! - [`pool`]: sampling keys and the pool of the best candidates.
//!
//! Used memory is what the counting allocator says ([`crate::used_memory`]),
//! so it drops as soon as an evicted value is freed. As in Redis, every
//! command first evicts if memory is above the limit (so reads make room
//! too); only `denyoom` commands are refused when eviction cannot. With
//! `maxmemory 0` (the default) the only cost is one relaxed load per command.

pub mod policy;
pub mod pool;

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use cairn_engine::events;

use self::policy::Policy;
use self::pool::Sampling;
use crate::commands::table;
use crate::server::Server;
use crate::used_memory::used_memory;

/// Redis's reply to a `denyoom` command above the limit.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Whether command `index` carries Redis's `denyoom` flag (from Redis's
/// own command table, `redis_meta.json`).
pub fn denyoom(index: usize) -> bool {
    static FLAGS: OnceLock<Vec<bool>> = OnceLock::new();
    FLAGS.get_or_init(|| table::redis_flagged("denyoom")).get(index).copied().unwrap_or(false)
}

/// Whether used memory is above a non-zero `maxmemory`.
pub fn over_limit(server: &Server) -> bool {
    let max = server.runtime.maxmemory.load(Ordering::Relaxed);
    max != 0 && used_memory() > max && counted_memory(server) > max
}

/// Used memory as `maxmemory` counts it: without the write-ahead log's
/// buffers (Redis's `freeMemoryGetNotCountedMemory` leaves out its AOF
/// buffer the same way).
pub fn counted_memory(server: &Server) -> u64 {
    let buffers = server.persistence.wal().map_or(0, |wal| wal.buffer_bytes() as u64);
    used_memory().saturating_sub(buffers)
}

/// Evicts keys (if the policy allows) while above the limit; returns whether
/// memory is still above it (a `denyoom` command must then be refused).
pub fn make_room(server: &Server, now_ms: u64) -> bool {
    let max = server.runtime.maxmemory.load(Ordering::Relaxed);
    // All used memory is an upper bound of the counted part, and cheaper
    // to read (no lock on the log's buffers): the common case stops there.
    // Nothing is evicted during CLIENT PAUSE (its writes wait anyway).
    if max == 0 || used_memory() <= max || counted_memory(server) <= max || server.pause.is_paused() {
        return false;
    }
    let policy = server.runtime.policy();
    if policy.rank().is_none() {
        return counted_memory(server) > max;
    }
    let started = quanta::Instant::now();
    // The loop's own last reading decides: memory other threads allocate
    // or free in between must not refuse a command the loop made room for.
    let still_over = evict(server, policy, max, now_ms);
    // The latency monitor's `eviction-cycle` event, as Redis's performEvictions.
    server.runtime.latency.observe("eviction-cycle", started.elapsed().as_micros() as u64);
    still_over
}

/// Evicts the best-ranked key, one at a time, until used memory is at most
/// `max` (returns false) or nothing evictable is left (true). Each eviction
/// raises `evicted`, dirties WATCHes and is logged as a DEL.
fn evict(server: &Server, policy: Policy, max: u64, now_ms: u64) -> bool {
    let Some(rank) = policy.rank() else { return counted_memory(server) > max };
    let how = Sampling {
        policy,
        rank,
        samples: server.runtime.maxmemory_samples.load(Ordering::Relaxed).max(1),
        now_ms,
        decay_minutes: cairn_engine::access::ACCESS.decay_minutes(),
    };
    // try_lock: a caller holding shard locks (a script) must never wait for
    // an evictor that holds the pool and waits for those shards; a
    // contended pool is replaced by a fresh one for this eviction.
    let mut shared = server.eviction_pool.try_lock();
    let mut fresh = pool::Pool::default();
    let pool = shared.as_deref_mut().unwrap_or(&mut fresh);
    pool.rank_under(policy);
    let mut rng = rand::thread_rng();
    // Misses in a row: candidates gone by the time they are taken.
    let mut misses = 0;
    while counted_memory(server) > max {
        if misses >= 64 {
            return true;
        }
        // Fresh samples before every eviction, as Redis does.
        if pool::populate(&server.keyspace, &how, pool, &mut rng) == 0 && pool.is_empty() {
            return true; // nothing evictable at all
        }
        let Some(victim) = pool.pop_best() else { return true };
        if remove_victim(server, &victim, policy, now_ms) {
            misses = 0;
        } else {
            misses += 1;
        }
    }
    false
}

/// Deletes the candidate if it is still there and still evictable.
fn remove_victim(server: &Server, victim: &pool::Candidate, policy: Policy, now_ms: u64) -> bool {
    let mut shard = server.keyspace.lock_key(&victim.key);
    let table = shard.db(victim.db);
    let Some(entry) = table.get_untouched(&victim.key, now_ms) else { return false };
    if policy.volatile_only() && entry.expire_at().is_none() {
        return false;
    }
    table.remove(&victim.key);
    table.emit(events::EVICTED, "evicted", &victim.key);
    drop(shard);
    // WATCHes dirtied, tracking clients told.
    crate::modified::evicted(server, victim.db, &victim.key);
    server.evicted_keys.fetch_add(1, Ordering::Relaxed);
    if let Some(wal) = server.persistence.wal() {
        let _ = wal.append_command(now_ms, victim.db as u32, &[b"DEL", &victim.key]);
    }
    true
}
