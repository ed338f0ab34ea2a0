//! Active expiry: one pass over a share of the shards, deleting keys whose
//! time has come. Workers run it from their housekeeping task; the embedded
//! database runs it from its own thread. Deletions by expiry are logged as
//! DEL (under the shard lock), so replay never depends on when a pass ran.

use std::time::Duration;

use crate::server::Server;

/// How often active expiry runs over each share of the shards.
pub const EXPIRE_PERIOD: Duration = Duration::from_millis(100);
/// Most keys one shard's table may expire per pass, bounding the pause.
pub const EXPIRE_BUDGET_PER_SHARD: usize = 200;

/// Expires keys in share `index` of `shares` of the shards; returns how many
/// keys it deleted. Does nothing while recovery runs, while CLIENT PAUSE
/// holds writes, or while a script is
/// pending (it holds every shard; worker `index` marks itself executing, see
/// `scripting::quiesce`).
pub fn expire_pass(server: &Server, index: usize, shares: usize) -> usize {
    let _executing = server.scripting.quiesce.enter(index);
    if server.persistence.is_loading() || server.scripting.script_pending() || server.pause.is_paused() {
        return 0;
    }
    let started = quanta::Instant::now();
    let now = cairn_engine::clock::monotonic_now_ms();
    let expired = match server.persistence.wal() {
        Some(wal) => server.keyspace.expire_cycle_with(index, shares, now, EXPIRE_BUDGET_PER_SHARD, &mut |db, key| {
            let _ = wal.append_command(now, db as u32, &[b"DEL", key]);
        }),
        None => server.keyspace.expire_cycle(index, shares, now, EXPIRE_BUDGET_PER_SHARD),
    };
    // The latency monitor's `expire-cycle` event, as Redis's activeExpireCycle.
    server.runtime.latency.observe("expire-cycle", started.elapsed().as_micros() as u64);
    // Expired keys reached tracking clients through the engine's expiry
    // hook; BCAST ones get theirs now (and whatever else is pending).
    if server.tracking.is_active() {
        server.tracking.broadcast();
    }
    expired
}
