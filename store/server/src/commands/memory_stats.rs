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
//! - Cairn runs on the C library's allocator, so the `allocator.*` figures
//!   are derived as Redis derives them without jemalloc: resident = RSS minus
//!   Lua's memory, active = resident, allocated = `used_memory`.
//!
//! As in Redis, `dataset.bytes` is what remains of `total.allocated` after
//! the overhead, and the percentages are of the memory used since startup.

use std::sync::atomic::Ordering;

use cairn_protocol::ReplyWriter;

use crate::commands::{CmdResult, Ctx};
use crate::server::Server;

/// The figures one `MEMORY STATS` reply is made of.
struct Breakdown {
    peak: u64,
    total: u64,
    startup: u64,
    clients: u64,
    aof_buffer: u64,
    lua_caches: u64,
    functions_caches: u64,
    /// `(db, main table, expiry index)` for each database holding keys.
    dbs: Vec<(usize, u64, u64)>,
    keys: u64,
    rss: u64,
    lua_vm: u64,
}

impl Breakdown {
    fn measure(server: &Server) -> Breakdown {
        let total = crate::used_memory::used_memory();
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
            rss: crate::used_memory::rss_bytes(),
            lua_vm: (server.scripting.lua_memory.bytes() + server.scripting.functions_memory.bytes()) as u64,
        }
    }

    fn overhead(&self) -> u64 {
        let tables: u64 = self.dbs.iter().map(|(_, main, expires)| main + expires).sum();
        self.startup + self.clients + self.aof_buffer + self.lua_caches + self.functions_caches + tables
    }

    /// Memory used since startup (at least 1, as Redis divides by it).
    fn net_usage(&self) -> u64 {
        self.total.saturating_sub(self.startup).max(1)
    }
}

fn int(out: &mut ReplyWriter<'_>, name: &str, value: u64) {
    out.bulk(name.as_bytes());
    out.int(value.min(i64::MAX as u64) as i64);
}

fn double(out: &mut ReplyWriter<'_>, name: &str, value: f64) {
    out.bulk(name.as_bytes());
    out.double(value);
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// MEMORY STATS.
pub fn stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let m = Breakdown::measure(ctx.server);
    let overhead = m.overhead();
    let dataset = m.total.saturating_sub(overhead);
    let resident = m.rss.saturating_sub(m.lua_vm).max(1);
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
    double(out, "dataset.percentage", dataset as f64 * 100.0 / m.net_usage() as f64);
    double(out, "peak.percentage", m.total as f64 * 100.0 / m.peak.max(1) as f64);
    int(out, "allocator.allocated", m.total);
    int(out, "allocator.active", resident);
    int(out, "allocator.resident", resident);
    double(out, "allocator-fragmentation.ratio", ratio(resident, m.total));
    int(out, "allocator-fragmentation.bytes", resident.saturating_sub(m.total));
    double(out, "allocator-rss.ratio", 1.0);
    int(out, "allocator-rss.bytes", 0);
    double(out, "rss-overhead.ratio", ratio(m.rss, resident));
    int(out, "rss-overhead.bytes", m.rss.saturating_sub(resident));
    double(out, "fragmentation", ratio(m.rss, m.total));
    int(out, "fragmentation.bytes", m.rss.saturating_sub(m.total));
    Ok(())
}
