//! `MEMORY STATS`: Redis 7.0's memory breakdown, field for field and in its
//! order, as monitoring tools (RedisInsight, `redis-cli --memkeys`-style
//! scripts) read it.
//!
//! Where the figures come from:
//! - `total.allocated` is INFO's `used_memory` (the counting allocator's
//!   bytes), `peak.allocated` its peak, `startup.allocated` the same counter
//!   when the server was ready to load its data.
//! - `clients.normal`: the connections' input and reply buffers, as each
//!   connection publishes them for `CLIENT LIST`, plus a client record each.
//! - `aof.buffer`: the write-ahead log's bytes waiting to be written.
//! - `lua.caches`: cached script bodies; `functions.caches`: libraries' code.
//! - `db.N`: each database's hash table and expiry index
//!   ([`cairn_engine::Keyspace::db_overhead`]); Cairn has no cluster slots,
//!   so `overhead.hashtable.slot-to-keys` is 0.
//! - `allocator.*`: jemalloc's own figures (allocated, active, resident; see
//!   [`crate::allocator`]). A server started in-process runs on its
//!   program's allocator; there they are derived as Redis derives them
//!   without jemalloc: resident = RSS minus Lua's memory, active = resident,
//!   allocated = `used_memory`.
//!
//! INFO's Memory section reads the same [`Breakdown`].
//!
//! As in Redis, `dataset.bytes` is what remains of `total.allocated` after
//! the overhead, and the percentages are of the memory used since startup.

use std::sync::atomic::Ordering;

use cairn_protocol::ReplyWriter;

use crate::allocator::HeapStats;
use crate::commands::{CmdResult, Ctx};
use crate::server::Server;

/// The figures one `MEMORY STATS` reply (and INFO's Memory section) is
/// made of: Redis's `getMemoryOverheadData`.
pub(crate) struct Breakdown {
    pub peak: u64,
    pub total: u64,
    pub startup: u64,
    pub clients: u64,
    pub aof_buffer: u64,
    pub lua_caches: u64,
    pub functions_caches: u64,
    /// `(db, main table, expiry index)` for each database holding keys.
    pub dbs: Vec<(usize, u64, u64)>,
    pub keys: u64,
    pub rss: u64,
    pub heap: HeapStats,
}

/// The allocator's figures: jemalloc's, or, on another allocator, derived
/// as Redis derives them without jemalloc.
fn heap_figures(total: u64, rss: u64, lua_vm: u64) -> HeapStats {
    crate::allocator::heap_stats().unwrap_or_else(|| {
        let resident = rss.saturating_sub(lua_vm).max(1);
        HeapStats { allocated: total, active: resident, resident }
    })
}

impl Breakdown {
    pub fn measure(server: &Server) -> Breakdown {
        let total = crate::used_memory::used_memory();
        let rss = crate::used_memory::rss_bytes();
        // Both kinds of interpreter (EVAL's and the functions').
        let lua_vm = (server.scripting.lua_memory.bytes() + server.scripting.functions_memory.bytes()) as u64;
        let mut dbs = Vec::new();
        let mut keys = 0u64;
        for db in 0..server.keyspace.num_dbs() {
            let (count, _) = server.keyspace.db_size(db);
            if count == 0 {
                continue;
            }
            keys += count as u64;
            let (main, expires) = server.keyspace.db_overhead(db);
            dbs.push((db, main as u64, expires as u64));
        }
        Breakdown {
            peak: super::info::used_memory_peak(total),
            total,
            startup: server.startup_memory.load(Ordering::Relaxed),
            clients: crate::client_memory::total(server),
            aof_buffer: server.persistence.wal().map_or(0, |wal| wal.buffer_bytes()) as u64,
            lua_caches: server.scripting.cache.body_bytes() as u64,
            functions_caches: server.scripting.libraries.read().code_bytes() as u64,
            dbs,
            keys,
            rss,
            heap: heap_figures(total, rss, lua_vm),
        }
    }

    pub fn overhead(&self) -> u64 {
        let tables: u64 = self.dbs.iter().map(|(_, main, expires)| main + expires).sum();
        self.startup + self.clients + self.aof_buffer + self.lua_caches + self.functions_caches + tables
    }

    /// Memory used since startup (at least 1, as Redis divides by it).
    pub fn net_usage(&self) -> u64 {
        self.total.saturating_sub(self.startup).max(1)
    }

    /// What remains of the allocated total after the overhead.
    pub fn dataset(&self) -> u64 {
        self.total.saturating_sub(self.overhead())
    }

    pub fn dataset_percentage(&self) -> f64 {
        self.dataset() as f64 * 100.0 / self.net_usage() as f64
    }

    pub fn peak_percentage(&self) -> f64 {
        self.total as f64 * 100.0 / self.peak.max(1) as f64
    }
}

/// `a / b`, with `b` at least 1 (Redis's ratios).
pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

fn int(out: &mut ReplyWriter<'_>, name: &str, value: u64) {
    out.bulk(name.as_bytes());
    out.int(value.min(i64::MAX as u64) as i64);
}

fn double(out: &mut ReplyWriter<'_>, name: &str, value: f64) {
    out.bulk(name.as_bytes());
    out.double(value);
}

/// MEMORY STATS.
pub fn stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let m = Breakdown::measure(ctx.server);
    let overhead = m.overhead();
    let dataset = m.dataset();
    let heap = m.heap;
    let out = &mut ctx.out;
    out.map(27 + m.dbs.len());
    int(out, "peak.allocated", m.peak);
    int(out, "total.allocated", m.total);
    int(out, "startup.allocated", m.startup);
    int(out, "replication.backlog", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", m.clients);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", m.aof_buffer);
    int(out, "lua.caches", m.lua_caches);
    int(out, "functions.caches", m.functions_caches);
    for &(db, main, expires) in &m.dbs {
        out.bulk(format!("db.{db}").as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", main);
        int(out, "overhead.hashtable.expires", expires);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", overhead);
    int(out, "keys.count", m.keys);
    int(out, "keys.bytes-per-key", m.net_usage().checked_div(m.keys).unwrap_or(0));
    int(out, "dataset.bytes", dataset);
    double(out, "dataset.percentage", m.dataset_percentage());
    double(out, "peak.percentage", m.peak_percentage());
    int(out, "allocator.allocated", heap.allocated);
    int(out, "allocator.active", heap.active);
    int(out, "allocator.resident", heap.resident);
    double(out, "allocator-fragmentation.ratio", ratio(heap.active, heap.allocated));
    int(out, "allocator-fragmentation.bytes", heap.active.saturating_sub(heap.allocated));
    double(out, "allocator-rss.ratio", ratio(heap.resident, heap.active));
    int(out, "allocator-rss.bytes", heap.resident.saturating_sub(heap.active));
    double(out, "rss-overhead.ratio", ratio(m.rss, heap.resident));
    int(out, "rss-overhead.bytes", m.rss.saturating_sub(heap.resident));
    double(out, "fragmentation", ratio(m.rss, m.total));
    int(out, "fragmentation.bytes", m.rss.saturating_sub(m.total));
    Ok(())
}
