//! INFO: the sections and field names Redis 7.0 reports (the names
//! redis_exporter and client libraries parse), plus Cairn's own fields.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::{CmdResult, Ctx};
use crate::server::Server;
use crate::stats::Totals;

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];
const ALL_EXTRA: &[&str] = &["commandstats", "latencystats"];

pub fn info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sections = requested_sections(&args[1..]);
    let text = render(ctx.server, &sections, ctx.now_ms);
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// The sections to render, in Redis's order, from INFO's arguments.
pub fn requested_sections(args: &[&[u8]]) -> Vec<&'static str> {
    let mut wanted: Vec<String> = args.iter().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()).collect();
    if wanted.is_empty() {
        wanted.push("default".into());
    }
    let order: Vec<&'static str> = DEFAULT_SECTIONS.iter().chain(ALL_EXTRA).copied().collect();
    order
        .into_iter()
        .filter(|section| {
            wanted.iter().any(|w| {
                w == section
                    || ((w == "default") && DEFAULT_SECTIONS.contains(section))
                    || ((w == "all" || w == "everything")
                        && (DEFAULT_SECTIONS.contains(section) || ALL_EXTRA.contains(section)))
            })
        })
        .collect()
}

/// Renders the given sections as INFO text.
pub fn render(server: &Server, sections: &[&str], now_ms: u64) -> String {
    let totals = server.totals();
    let mut out = String::new();
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        let mut body = String::new();
        let title = match *section {
            "server" => server_section(server, now_ms, &mut body),
            "clients" => clients_section(server, &mut body),
            "memory" => memory_section(server, &totals, &mut body),
            "persistence" => persistence_section(server, &mut body),
            "stats" => stats_section(server, &totals, &mut body),
            "replication" => replication_section(server, &mut body),
            "cpu" => cpu_section(&mut body),
            "modules" => "Modules",
            "errorstats" => errorstats_section(&totals, &mut body),
            "cluster" => {
                body.push_str("cluster_enabled:0\r\n");
                "Cluster"
            }
            "keyspace" => keyspace_section(server, &mut body),
            "commandstats" => commandstats_section(&totals, &mut body),
            _ => latencystats_section(server, &mut body),
        };
        let _ = write!(out, "# {title}\r\n{body}");
    }
    out
}

macro_rules! field {
    ($out:expr, $name:expr, $value:expr) => {
        let _ = write!($out, "{}:{}\r\n", $name, $value);
    };
}

fn server_section(server: &Server, now_ms: u64, out: &mut String) -> &'static str {
    let uptime = server.started.elapsed().as_secs();
    field!(out, "redis_version", super::connection::REDIS_COMPAT_VERSION);
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", 0);
    field!(out, "redis_build_id", "0");
    field!(out, "redis_mode", "standalone");
    field!(out, "os", format!("{} {}", std::env::consts::OS, std::env::consts::ARCH));
    field!(out, "arch_bits", 64);
    field!(out, "monotonic_clock", "POSIX clock_gettime");
    field!(out, "multiplexing_api", "epoll");
    field!(out, "process_id", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", server.run_id);
    field!(out, "tcp_port", server.tcp_port());
    field!(out, "server_time_usec", now_ms * 1000);
    field!(out, "uptime_in_seconds", uptime);
    field!(out, "uptime_in_days", uptime / 86400);
    field!(out, "hz", server.runtime.get("hz").unwrap_or_default());
    field!(out, "configured_hz", server.runtime.get("hz").unwrap_or_default());
    field!(out, "lru_clock", cairn_engine::clock::access_clock(now_ms) & 0xFF_FFFF);
    field!(out, "executable", std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default());
    field!(out, "config_file", server.config.config_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default());
    field!(out, "io_threads_active", 0);
    field!(out, "cairn_version", env!("CARGO_PKG_VERSION"));
    field!(out, "cairn_workers", server.workers.len());
    field!(out, "cairn_shards", server.keyspace.num_shards());
    "Server"
}

fn clients_section(server: &Server, out: &mut String) -> &'static str {
    field!(out, "connected_clients", server.clients.len());
    field!(out, "cluster_connections", 0);
    field!(out, "maxclients", server.runtime.maxclients.load(Ordering::Relaxed));
    field!(out, "client_recent_max_input_buffer", 0);
    field!(out, "client_recent_max_output_buffer", 0);
    field!(out, "blocked_clients", server.blocking.blocked_clients() + server.pause.waiting());
    field!(out, "tracking_clients", server.tracking.client_count());
    field!(out, "clients_in_timeout_table", 0);
    "Clients"
}

/// The highest used memory INFO has seen (`used_memory_peak`).
static PEAK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The peak of used memory, `used` (the current figure) included.
pub fn used_memory_peak(used: u64) -> u64 {
    PEAK.fetch_max(used, std::sync::atomic::Ordering::Relaxed).max(used)
}

/// Bytes as Redis's `*_human` fields show them.
pub fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n}B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", n / 1024.0 / 1024.0 / 1024.0)
    }
}

fn memory_section(server: &Server, t: &Totals, out: &mut String) -> &'static str {
    // Allocated bytes where the counting allocator is installed (the
    // binary), else the resident set size (see `used_memory`); the overhead
    // and allocator figures as MEMORY STATS reports them.
    let m = super::memory_stats::Breakdown::measure(server);
    let (used, rss, heap) = (m.total, m.rss, m.heap);
    let maxmemory: u64 = server.runtime.get("maxmemory").and_then(|v| v.parse().ok()).unwrap_or(0);
    let system = total_system_memory();
    field!(out, "used_memory", used);
    field!(out, "used_memory_human", human_bytes(used));
    field!(out, "used_memory_rss", rss);
    field!(out, "used_memory_rss_human", human_bytes(rss));
    field!(out, "used_memory_peak", m.peak);
    field!(out, "used_memory_peak_human", human_bytes(m.peak));
    field!(out, "used_memory_peak_perc", format!("{:.2}%", m.peak_percentage()));
    field!(out, "used_memory_overhead", m.overhead());
    field!(out, "used_memory_startup", m.startup);
    field!(out, "used_memory_dataset", m.dataset());
    field!(out, "used_memory_dataset_perc", format!("{:.2}%", m.dataset_percentage()));
    field!(out, "allocator_allocated", heap.allocated);
    field!(out, "allocator_active", heap.active);
    field!(out, "allocator_resident", heap.resident);
    field!(out, "total_system_memory", system);
    field!(out, "total_system_memory_human", human_bytes(system));
    scripting_memory(server, out);
    field!(out, "maxmemory", maxmemory);
    field!(out, "maxmemory_human", human_bytes(maxmemory));
    field!(out, "maxmemory_policy", server.runtime.get("maxmemory-policy").unwrap_or_default());
    let ratio = super::memory_stats::ratio;
    let minus = |a: u64, b: u64| a as i64 - b as i64;
    field!(out, "allocator_frag_ratio", format!("{:.2}", ratio(heap.active, heap.allocated)));
    field!(out, "allocator_frag_bytes", heap.active.saturating_sub(heap.allocated));
    field!(out, "allocator_rss_ratio", format!("{:.2}", ratio(heap.resident, heap.active)));
    field!(out, "allocator_rss_bytes", minus(heap.resident, heap.active));
    field!(out, "rss_overhead_ratio", format!("{:.2}", ratio(rss, heap.resident)));
    field!(out, "rss_overhead_bytes", minus(rss, heap.resident));
    field!(out, "mem_fragmentation_ratio", format!("{:.2}", ratio(rss, used)));
    field!(out, "mem_fragmentation_bytes", minus(rss, used));
    let not_counted = server.persistence.wal().map_or(0, |wal| wal.buffer_bytes());
    field!(out, "mem_not_counted_for_evict", not_counted);
    field!(out, "mem_replication_backlog", 0);
    field!(out, "mem_total_replication_buffers", 0);
    field!(out, "mem_clients_slaves", 0);
    field!(out, "mem_clients_normal", m.clients);
    field!(out, "mem_cluster_links", 0);
    field!(out, "mem_aof_buffer", m.aof_buffer);
    field!(out, "mem_allocator", crate::allocator::name());
    field!(out, "active_defrag_running", 0);
    field!(out, "lazyfree_pending_objects", server.lazyfree.pending());
    field!(out, "lazyfreed_objects", t.lazyfreed_objects);
    "Memory"
}

/// Physical memory of the machine (`/proc/meminfo` MemTotal), 0 if unknown.
fn total_system_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Redis 7.0's scripting fields of the Memory section: `used_memory_lua`
/// (`used_memory_vm_eval`) sums the EVAL interpreters (one per thread that ran
/// EVAL), `used_memory_vm_functions` the functions interpreters, as Redis
/// keeps one VM for each; `used_memory_functions` is the libraries' code.
fn scripting_memory(server: &Server, out: &mut String) {
    let lua = server.scripting.lua_memory.bytes();
    let functions_vm = server.scripting.functions_memory.bytes();
    let (functions, libraries, library_bytes) = {
        let registry = server.scripting.libraries.read();
        let bytes = registry.code_bytes();
        (registry.function_count(), registry.libraries.len(), bytes)
    };
    let scripts = server.scripting.cache.body_bytes() + library_bytes;
    field!(out, "used_memory_lua", lua);
    field!(out, "used_memory_vm_eval", lua);
    field!(out, "used_memory_lua_human", human_bytes(lua as u64));
    field!(out, "used_memory_scripts_eval", scripts - library_bytes);
    field!(out, "number_of_cached_scripts", server.scripting.cache.len());
    field!(out, "number_of_functions", functions);
    field!(out, "number_of_libraries", libraries);
    field!(out, "used_memory_vm_functions", functions_vm);
    field!(out, "used_memory_vm_total", lua + functions_vm);
    field!(out, "used_memory_vm_total_human", human_bytes((lua + functions_vm) as u64));
    field!(out, "used_memory_functions", library_bytes);
    field!(out, "used_memory_scripts", scripts);
    field!(out, "used_memory_scripts_human", human_bytes(scripts as u64));
}

fn persistence_section(server: &Server, out: &mut String) -> &'static str {
    let p = &server.persistence;
    let snap = &p.snapshot;
    let wal = p.wal_opened();
    let ok = |b: bool| if b { "ok" } else { "err" };
    field!(out, "loading", u8::from(p.is_loading()));
    field!(out, "async_loading", 0);
    field!(out, "current_cow_peak", 0);
    field!(out, "rdb_changes_since_last_save", snap.changes.since_last_save());
    field!(out, "rdb_bgsave_in_progress", u8::from(snap.in_progress.load(Ordering::Relaxed)));
    field!(out, "rdb_last_save_time", server.last_save_secs.load(Ordering::Relaxed));
    field!(out, "rdb_last_bgsave_status", ok(snap.last_ok.load(Ordering::Relaxed)));
    field!(out, "rdb_last_bgsave_time_sec", snap.last_duration_ms.load(Ordering::Relaxed) / 1000);
    field!(out, "rdb_saves", snap.saves.load(Ordering::Relaxed));
    field!(out, "aof_enabled", u8::from(p.tier().logs()));
    // Logging restarted at runtime waits for its snapshot, as Redis's AOF
    // waits for its rewrite; BGREWRITEAOF's snapshot is Cairn's rewrite.
    let snapshotting = snap.in_progress.load(Ordering::Acquire);
    let rewrite = p.rewrite_requested.load(Ordering::Acquire);
    let in_progress = p.enabling.load(Ordering::Acquire) || (rewrite && snapshotting);
    field!(out, "aof_rewrite_in_progress", u8::from(in_progress));
    field!(out, "aof_rewrite_scheduled", u8::from(rewrite && !snapshotting));
    field!(out, "aof_last_bgrewrite_status", ok(p.last_rewrite_ok.load(Ordering::Acquire)));
    field!(out, "aof_last_write_status", ok(wal.is_none_or(|w| w.check_writable().is_ok())));
    field!(out, "aof_delayed_fsync", 0);
    field!(out, "cairn_durability", p.tier());
    if let Some(w) = wal {
        let s = w.stats();
        let fsyncs = s.fsyncs.load(Ordering::Relaxed);
        field!(out, "cairn_last_lsn", w.last_lsn());
        field!(out, "cairn_written_lsn", w.written_lsn());
        field!(out, "cairn_durable_lsn", w.durable_lsn());
        field!(out, "cairn_fsyncs", fsyncs);
        field!(out, "cairn_fsync_failures", s.fsync_failures.load(Ordering::Relaxed));
        field!(out, "cairn_last_fsync_us", s.last_fsync_micros.load(Ordering::Relaxed));
        field!(out, "cairn_avg_fsync_us", s.fsync_micros_total.load(Ordering::Relaxed) / fsyncs.max(1));
        field!(out, "cairn_last_group_size", s.last_group_records.load(Ordering::Relaxed));
        field!(out, "cairn_avg_group_size", s.group_records_total.load(Ordering::Relaxed) / fsyncs.max(1));
        field!(out, "cairn_unsynced_age_last_us", s.unsynced_age_last_micros.load(Ordering::Relaxed));
        field!(out, "cairn_unsynced_age_max_us", s.unsynced_age_max_micros.load(Ordering::Relaxed));
        field!(out, "cairn_wal_bytes", s.bytes_written.load(Ordering::Relaxed));
        field!(out, "cairn_wal_segments", w.segment_count());
        if let Some(message) = w.health_message() {
            field!(out, "cairn_wal_error", message.replace(['\r', '\n'], " "));
        }
    }
    field!(out, "cairn_snapshot_lsn", snap.last_lsn.load(Ordering::Relaxed));
    field!(out, "cairn_snapshot_bytes", snap.last_bytes.load(Ordering::Relaxed));
    field!(out, "cairn_snapshot_max_shard_copy_us", snap.last_max_shard_copy_us.load(Ordering::Relaxed));
    field!(out, "cairn_recovered_records", p.recovery_records.load(Ordering::Relaxed));
    "Persistence"
}

fn stats_section(server: &Server, t: &Totals, out: &mut String) -> &'static str {
    field!(out, "total_connections_received", t.connections_received);
    field!(out, "total_commands_processed", t.commands);
    field!(out, "instantaneous_ops_per_sec", server.ops_per_sec());
    field!(out, "total_net_input_bytes", t.net_input_bytes);
    field!(out, "total_net_output_bytes", t.net_output_bytes);
    field!(out, "rejected_connections", t.rejected_connections);
    field!(out, "expired_keys", t.expired_keys);
    field!(out, "evicted_keys", t.evicted_keys);
    field!(out, "keyspace_hits", t.keyspace_hits);
    field!(out, "keyspace_misses", t.keyspace_misses);
    field!(out, "pubsub_channels", server.pubsub.channel_count());
    field!(out, "pubsub_patterns", server.pubsub.pattern_count());
    field!(out, "pubsubshard_channels", server.pubsub.shard_channel_count());
    field!(out, "migrate_cached_sockets", server.migrate_sockets.len());
    field!(out, "tracking_total_keys", server.tracking.keys.len());
    field!(out, "tracking_total_items", server.tracking.keys.items());
    field!(out, "tracking_total_prefixes", server.tracking.prefixes.len());
    field!(out, "total_error_replies", t.error_replies);
    field!(out, "total_reads_processed", t.commands);
    field!(out, "reply_buffer_shrinks", t.reply_buffer_shrinks);
    field!(out, "reply_buffer_expands", t.reply_buffer_expands);
    let scripts = &server.scripting.where_ran;
    field!(out, "cairn_scripts_on_worker", scripts.on_worker.load(Ordering::Relaxed));
    field!(out, "cairn_scripts_on_script_thread", scripts.on_script_thread.load(Ordering::Relaxed));
    field!(out, "cairn_scripts_abandoned_on_worker", scripts.abandoned_on_worker.load(Ordering::Relaxed));
    field!(out, "cairn_scripts_keyed_on_worker", scripts.keyed_on_worker.load(Ordering::Relaxed));
    field!(out, "cairn_scripts_left_keys_on_worker", scripts.left_keys_on_worker.load(Ordering::Relaxed));
    field!(out, "cairn_connections_moved", server.rebalance.moved.load(Ordering::Relaxed));
    "Stats"
}

fn replication_section(server: &Server, out: &mut String) -> &'static str {
    field!(out, "role", "master");
    field!(out, "connected_slaves", 0);
    field!(out, "master_failover_state", "no-failover");
    field!(out, "master_replid", server.run_id);
    field!(out, "master_replid2", "0000000000000000000000000000000000000000");
    field!(out, "master_repl_offset", 0);
    field!(out, "second_repl_offset", -1);
    field!(out, "repl_backlog_active", 0);
    "Replication"
}

fn cpu_section(out: &mut String) -> &'static str {
    let (user, sys) = cpu_seconds(libc::RUSAGE_SELF);
    let (cuser, csys) = cpu_seconds(libc::RUSAGE_CHILDREN);
    field!(out, "used_cpu_sys", format!("{sys:.6}"));
    field!(out, "used_cpu_user", format!("{user:.6}"));
    field!(out, "used_cpu_sys_children", format!("{csys:.6}"));
    field!(out, "used_cpu_user_children", format!("{cuser:.6}"));
    "CPU"
}

/// User and system CPU seconds from getrusage.
fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

fn errorstats_section(t: &Totals, out: &mut String) -> &'static str {
    let mut codes: Vec<_> = t.errors.iter().collect();
    codes.sort();
    for (code, count) in codes {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
    "Errorstats"
}

fn keyspace_section(server: &Server, out: &mut String) -> &'static str {
    for db in 0..server.keyspace.num_dbs() {
        let (keys, expires) = server.keyspace.db_size(db);
        if keys > 0 {
            let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
    "Keyspace"
}

fn commandstats_section(t: &Totals, out: &mut String) -> &'static str {
    for (index, [calls, usec, rejected, failed]) in t.per_command.iter().enumerate() {
        if calls + rejected == 0 {
            continue;
        }
        let per_call = if *calls > 0 { *usec as f64 / *calls as f64 } else { 0.0 };
        let _ = write!(
            out,
            "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
            super::table::stat_name(index)
        );
    }
    "Commandstats"
}

/// Percentiles of each command's latency (empty while `latency-tracking` is `no`).
fn latencystats_section(server: &Server, out: &mut String) -> &'static str {
    if server.runtime.get("latency-tracking").as_deref() != Some("yes") {
        return "Latencystats";
    }
    let percentiles = server.runtime.info_percentiles();
    let counts = server.command_latency.read(&server.workers);
    for (stat, buckets) in counts.iter().enumerate() {
        if crate::latency_stats::calls(buckets) > 0 {
            crate::latency_stats::info_line(out, super::table::stat_name(stat), buckets, &percentiles);
        }
    }
    "Latencystats"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections() {
        assert_eq!(requested_sections(&[]), DEFAULT_SECTIONS.to_vec());
        assert_eq!(requested_sections(&[b"CPU"]), vec!["cpu"]);
        let all = requested_sections(&[b"all"]);
        assert!(all.contains(&"commandstats") && all.contains(&"keyspace"));
        assert_eq!(requested_sections(&[b"cpu", b"sentinel"]), vec!["cpu"]);
        assert_eq!(requested_sections(&[b"nosuch"]), Vec::<&str>::new());
    }
}
