//! One scrape's worth of readings, taken from the server's per-worker
//! counters and shared state at scrape time (nothing is counted for metrics
//! on the command path beyond what the workers already count).

use cairn_engine::durability::WalError;
use std::sync::atomic::Ordering;

use super::durability::{DurabilitySnapshot, HistogramSnapshot};
use crate::server::Server;
use crate::stats::{collect_latency, latency_bucket_upper_seconds, Totals, LATENCY_BUCKETS};

/// Counters of one command that has been called at least once.
#[derive(Debug)]
pub struct CommandReading {
    pub name: &'static str,
    /// Flagged WRITE in the command table.
    pub write: bool,
    pub ok: u64,
    pub failed: u64,
    pub rejected: u64,
    pub latency: HistogramSnapshot,
}

/// Everything one scrape reports.
#[derive(Debug)]
pub struct Scrape {
    pub version: &'static str,
    pub redis_version: &'static str,
    pub start_time_seconds: f64,
    pub uptime_seconds: f64,
    pub workers: usize,
    pub connected_clients: usize,
    pub blocked_clients: usize,
    pub max_clients: usize,
    /// Since the process started (not reset by CONFIG RESETSTAT: Prometheus
    /// counters only go up).
    pub totals: Totals,
    pub commands: Vec<CommandReading>,
    /// `(db, keys, keys with a TTL)` for every database.
    pub dbs: Vec<(usize, usize, usize)>,
    pub memory_used_bytes: u64,
    pub memory_max_bytes: u64,
    pub ready: bool,
    pub recovering: bool,
    /// Writes refused for lack of space for a log segment (clears by itself).
    pub writes_refused_disk_full: bool,
    /// Writes refused after a failed log write or fsync (until a restart).
    pub writes_refused_log_failed: bool,
    pub durability: DurabilitySnapshot,
    /// Handshakes, reloads and the certificate in use, when TLS is on.
    pub tls: Option<crate::tls::TlsReading>,
    /// Reloads of the config file's `[params]` by result.
    pub config_reloads: crate::config_reload::ReloadReading,
}

impl Scrape {
    pub fn read(server: &Server) -> Scrape {
        let mut totals = server.raw_totals();
        let mut latency = collect_latency(&server.workers, crate::commands::table::stat_count());
        fold_subcommands(&mut totals.per_command, &mut latency);
        let commands = command_readings(&totals, &latency);
        let durability = durability_with_acks(server, &commands);
        let refusal = server.persistence.wal().map(|wal| wal.check_writable());
        let dbs = (0..server.keyspace.num_dbs())
            .map(|db| {
                let (keys, expiring) = server.keyspace.db_size(db);
                (db, keys, expiring)
            })
            .collect();
        Scrape {
            version: env!("CARGO_PKG_VERSION"),
            redis_version: crate::commands::connection::REDIS_COMPAT_VERSION,
            start_time_seconds: server.started_ms as f64 / 1000.0,
            uptime_seconds: server.started.elapsed().as_secs_f64(),
            workers: server.workers.len(),
            connected_clients: server.clients.len(),
            blocked_clients: server.blocking.blocked_clients(),
            max_clients: server.runtime.maxclients.load(Ordering::Relaxed),
            totals,
            commands,
            dbs,
            memory_used_bytes: crate::used_memory::used_memory(),
            memory_max_bytes: server.runtime.get("maxmemory").and_then(|v| v.parse().ok()).unwrap_or(0),
            ready: crate::admin::readiness(server).is_ok(),
            recovering: server.health.is_recovering(),
            writes_refused_disk_full: matches!(refusal, Some(Err(WalError::DiskFull(_)))),
            writes_refused_log_failed: matches!(refusal, Some(Err(WalError::Failed(_))))
                || server.health.write_error().is_some(),
            durability,
            tls: server.tls.as_ref().map(|tls| tls.reading()),
            config_reloads: server.config_reload.reading(),
        }
    }
}

/// The durability snapshot, with durable acks estimated when the source does
/// not count them: in the `sync` tier every successful write's reply waits
/// for the fsync covering it, so they are the successful write commands
/// (counted at execution, slightly ahead of the reply).
fn durability_with_acks(server: &Server, commands: &[CommandReading]) -> DurabilitySnapshot {
    let mut d = super::wal::durability_snapshot(server);
    if d.durable_acks_total == 0 && d.tier == "sync" {
        d.durable_acks_total = commands.iter().filter(|c| c.write).map(|c| c.ok).sum();
    }
    d
}

/// Adds each subcommand's counters (`client|list`) to its command's
/// (`client`) and drops the subcommand slots: metrics are per command.
fn fold_subcommands(per_command: &mut Vec<[u64; 4]>, latency: &mut Vec<[u64; LATENCY_BUCKETS]>) {
    let commands = crate::commands::table::count();
    for stat in commands..per_command.len().min(latency.len()) {
        let parent = crate::commands::table::stat_command(stat);
        let (cell, buckets) = (per_command[stat], latency[stat]);
        per_command[parent].iter_mut().zip(cell).for_each(|(a, b)| *a += b);
        latency[parent].iter_mut().zip(buckets).for_each(|(a, b)| *a += b);
    }
    per_command.truncate(commands);
    latency.truncate(commands);
}

fn command_readings(totals: &Totals, latency: &[[u64; LATENCY_BUCKETS]]) -> Vec<CommandReading> {
    totals
        .per_command
        .iter()
        .zip(latency)
        .enumerate()
        .filter(|(_, ([calls, _, rejected, _], _))| calls + rejected > 0)
        .map(|(index, ([calls, usec, rejected, failed], buckets))| CommandReading {
            name: crate::commands::table::spec(index).name,
            write: crate::commands::table::spec(index).flags & crate::commands::table::WRITE != 0,
            ok: calls.saturating_sub(*failed),
            failed: *failed,
            rejected: *rejected,
            latency: latency_histogram(buckets, *usec),
        })
        .collect()
}

/// The log2 µs buckets as a histogram in seconds.
fn latency_histogram(buckets: &[u64; LATENCY_BUCKETS], usec: u64) -> HistogramSnapshot {
    let buckets = buckets
        .iter()
        .enumerate()
        .map(|(i, n)| (latency_bucket_upper_seconds(i).unwrap_or(f64::INFINITY), *n))
        .collect();
    HistogramSnapshot { buckets, sum: usec as f64 / 1e6 }
}
