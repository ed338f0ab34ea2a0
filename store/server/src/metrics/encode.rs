//! The metric families Cairn exports, written from a [`Scrape`]. Every name
//! here is listed in docs/metrics.md.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::families::{Families, Labels};
use super::scrape::Scrape;

impl Collector for Scrape {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let mut f = Families::new(encoder);
        server_families(self, &mut f)?;
        client_families(self, &mut f)?;
        keyspace_families(self, &mut f)?;
        command_families(self, &mut f)?;
        durability_families(self, &mut f)?;
        config_families(self, &mut f)?;
        tls_families(self, &mut f)
    }
}

fn server_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let build = vec![("version", s.version.to_string()), ("redis_version", s.redis_version.to_string())];
    f.info("cairn_build", "Cairn version and the Redis version it is compatible with.", &build)?;
    f.gauge("cairn_start_time", "Unix time the server started.", Some(Unit::Seconds), s.start_time_seconds)?;
    f.gauge("cairn_uptime", "Seconds since the server started.", Some(Unit::Seconds), s.uptime_seconds)?;
    f.gauge("cairn_workers", "Worker threads (one event loop each).", None, s.workers)?;
    f.gauge("cairn_ready", "1 when /readyz is 200 (recovered, accepting writes, not stopping).", None, s.ready as u64)?;
    f.gauge("cairn_recovering", "1 while recovery replays the write-ahead log.", None, s.recovering as u64)?;
    let refused = vec![
        (vec![("reason", "disk_full".to_string())], s.writes_refused_disk_full as u64),
        (vec![("reason", "log_failed".to_string())], s.writes_refused_log_failed as u64),
    ];
    f.gauges(
        "cairn_writes_refused",
        "1 while writes are refused: disk_full (no space for a log segment; clears when space returns) \
         or log_failed (a log write or fsync failed; until a restart).",
        None,
        &refused,
    )?;
    f.gauge(
        "cairn_memory_used",
        "Bytes allocated and not freed, as INFO used_memory and maxmemory count them.",
        Some(Unit::Bytes),
        s.memory_used_bytes,
    )?;
    f.gauge("cairn_memory_max", "The maxmemory setting (0: no limit).", Some(Unit::Bytes), s.memory_max_bytes)?;
    let t = &s.totals;
    f.counter("cairn_net_input", "Bytes read from clients.", Some(Unit::Bytes), t.net_input_bytes)?;
    f.counter("cairn_net_output", "Bytes written to clients.", Some(Unit::Bytes), t.net_output_bytes)
}

fn client_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let t = &s.totals;
    f.gauge("cairn_connected_clients", "Client connections open now.", None, s.connected_clients)?;
    f.gauge("cairn_blocked_clients", "Clients blocked in BLPOP, XREAD BLOCK and the like.", None, s.blocked_clients)?;
    f.gauge("cairn_max_clients", "The maxclients setting.", None, s.max_clients)?;
    f.counter("cairn_connections_received", "Connections accepted.", None, t.connections_received)?;
    f.counter("cairn_rejected_connections", "Connections refused because of maxclients.", None, t.rejected_connections)
}

fn keyspace_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let db = |n: usize| vec![("db", format!("db{n}"))];
    let keys: Vec<(Labels, u64)> = s.dbs.iter().map(|(n, keys, _)| (db(*n), *keys as u64)).collect();
    let expiring: Vec<(Labels, u64)> = s.dbs.iter().map(|(n, _, e)| (db(*n), *e as u64)).collect();
    f.gauges("cairn_db_keys", "Keys per database.", None, &keys)?;
    f.gauges("cairn_db_keys_expiring", "Keys with a time to live, per database.", None, &expiring)?;
    let t = &s.totals;
    f.counter("cairn_expired_keys", "Keys deleted because their time to live passed.", None, t.expired_keys)?;
    f.counter("cairn_evicted_keys", "Keys evicted by the maxmemory policy.", None, t.evicted_keys)?;
    f.counter("cairn_keyspace_hits", "Key lookups that found the key.", None, t.keyspace_hits)?;
    f.counter("cairn_keyspace_misses", "Key lookups that did not find the key.", None, t.keyspace_misses)
}

fn command_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let mut calls: Vec<(Labels, u64)> = Vec::with_capacity(s.commands.len() * 3);
    for c in &s.commands {
        for (result, n) in [("ok", c.ok), ("failed", c.failed), ("rejected", c.rejected)] {
            calls.push((vec![("cmd", c.name.to_string()), ("result", result.to_string())], n));
        }
    }
    f.counters(
        "cairn_commands",
        "Commands by name and result: ok, failed (ran, replied an error), rejected (arity, auth).",
        None,
        &calls,
    )?;
    let latency: Vec<_> = s.commands.iter().map(|c| (vec![("cmd", c.name.to_string())], c.latency.clone())).collect();
    f.histograms(
        "cairn_command_duration",
        "Time to execute a command (excluding network and durable-ack wait).",
        Some(Unit::Seconds),
        &latency,
    )?;
    let errors: Vec<(Labels, u64)> =
        s.totals.errors.iter().map(|(code, n)| (vec![("kind", code.clone())], *n)).collect();
    f.counter("cairn_error_replies", "Error replies sent.", None, s.totals.error_replies)?;
    f.counters("cairn_errors", "Error replies by error code (ERR, WRONGTYPE, ...).", None, &errors)
}

fn durability_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let d = &s.durability;
    f.info("cairn_durability", "The durability tier: none, async, everysec or sync.", &vec![("tier", d.tier.clone())])?;
    f.gauge("cairn_wal_appended_lsn", "Highest log sequence number appended to the WAL buffer.", None, d.appended_lsn)?;
    f.gauge("cairn_wal_written_lsn", "Highest log sequence number written to the WAL.", None, d.written_lsn)?;
    f.gauge("cairn_wal_durable_lsn", "Highest log sequence number covered by a completed fsync.", None, d.durable_lsn)?;
    f.counter("cairn_wal_written", "Bytes written to the WAL.", Some(Unit::Bytes), d.wal_bytes_total)?;
    f.gauge("cairn_wal_segments", "WAL segment files on disk.", None, d.wal_segments)?;
    f.counter(
        "cairn_durable_acks",
        "Write replies sent after the fsync covering the write.",
        None,
        d.durable_acks_total,
    )?;
    f.counter("cairn_fsyncs", "fdatasync calls on the WAL.", None, d.fsyncs_total)?;
    f.counter("cairn_fsync_failures", "fdatasync calls on the WAL that failed.", None, d.fsync_failures_total)?;
    let last = d.last_fsync_micros as f64 / 1e6;
    f.gauge("cairn_fsync_last_duration", "Duration of the most recent WAL fsync.", Some(Unit::Seconds), last)?;
    let fsync = [(Labels::new(), d.fsync_seconds.clone())];
    f.histograms("cairn_fsync_duration", "Duration of WAL fsyncs.", Some(Unit::Seconds), &fsync)?;
    let group = [(Labels::new(), d.group_size.clone())];
    f.histograms("cairn_group_commit_batch_size", "Writes covered by one group-commit fsync.", None, &group)?;
    let age = [(Labels::new(), d.unsynced_age_seconds.clone())];
    f.histograms(
        "cairn_wal_unsynced_age",
        "Per WAL fsync, how long the oldest write it covered had waited since its append.",
        Some(Unit::Seconds),
        &age,
    )?;
    f.gauge(
        "cairn_snapshot_last_duration",
        "Duration of the most recent snapshot.",
        Some(Unit::Seconds),
        d.snapshot_last_duration_seconds,
    )?;
    f.gauge(
        "cairn_snapshot_last_success_timestamp",
        "Unix time of the last successful snapshot (0: never).",
        Some(Unit::Seconds),
        d.snapshot_last_success_unix,
    )?;
    f.gauge(
        "cairn_recovery_replayed_records",
        "WAL records replayed by recovery (grows while recovering).",
        None,
        d.recovery_records_replayed,
    )
}

fn config_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let r = &s.config_reloads;
    let result = |r: &str| vec![("result", r.to_string())];
    let reloads = [(result("applied"), r.applied), (result("unchanged"), r.unchanged), (result("failed"), r.failed)];
    f.counters(
        "cairn_config_reloads",
        "Config file reloads (new contents, or SIGHUP) by result: applied (parameters set), unchanged \
         (nothing to set), failed (invalid or refused; nothing changed).",
        None,
        &reloads,
    )
}

fn tls_families(s: &Scrape, f: &mut Families<'_>) -> fmt::Result {
    let Some(tls) = &s.tls else {
        return Ok(());
    };
    let result = |r: &str| vec![("result", r.to_string())];
    let handshakes = [
        (result("ok"), tls.handshakes_ok),
        (result("failed"), tls.handshakes_failed),
        (result("timeout"), tls.handshakes_timed_out),
    ];
    f.counters("cairn_tls_handshakes", "TLS handshakes by result: ok, failed, timeout.", None, &handshakes)?;
    let reloads = [(result("ok"), tls.reloads_ok), (result("failed"), tls.reloads_failed)];
    f.counters(
        "cairn_tls_reloads",
        "TLS configuration reloads (CONFIG SET tls-*, or the files changed on disk) by result.",
        None,
        &reloads,
    )?;
    f.gauge(
        "cairn_tls_config_loaded_timestamp",
        "Unix time the TLS certificate and key in use were loaded.",
        Some(Unit::Seconds),
        tls.loaded_unix_seconds,
    )?;
    match tls.not_after_unix {
        Some(not_after) => f.gauge(
            "cairn_tls_certificate_expiry_timestamp",
            "Unix time the server certificate in use expires (its notAfter).",
            Some(Unit::Seconds),
            not_after,
        ),
        None => Ok(()),
    }
}
