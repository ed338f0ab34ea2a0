#!/usr/bin/env python3
"""Generates cairn-overview.json and cairn-durability.json (Grafana dashboards) in this directory.

Edit the panels here and run `python3 dashboards/generate.py`; the Rust test
store/server/tests/dashboards.rs and e2e/steps/30-metrics.sh check every query. It also runs
alerts.py, which generates the alerting rules (cairn-alerts.yaml and the chart's PrometheusRule).
"""
import json
import os
SEL='instance=~"$instance", pod=~"$pod"'
def s(extra=""):
    return "{" + SEL + (", " + extra if extra else "") + "}"
RI="$__rate_interval"
OK = s('result="ok"')

def templating():
    return {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1, "options": []},
        {"name": "instance", "label": "Instance", "type": "query",
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": {"query": "label_values(cairn_build_info, instance)", "refId": "instance"},
         "definition": "label_values(cairn_build_info, instance)",
         "multi": True, "includeAll": True, "allValue": ".*", "current": {}, "refresh": 2, "sort": 1, "options": []},
        {"name": "pod", "label": "Pod", "type": "query",
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "query": {"query": 'label_values(cairn_build_info{instance=~"$instance"}, pod)', "refId": "pod"},
         "definition": 'label_values(cairn_build_info{instance=~"$instance"}, pod)',
         "multi": True, "includeAll": True, "allValue": ".*", "current": {}, "refresh": 2, "sort": 1, "options": []},
    ]}

def panel(pid, title, targets, x, y, w=12, h=8, unit="short", kind="timeseries", desc=""):
    p = {"id": pid, "type": kind, "title": title, "description": desc,
         "datasource": {"type": "prometheus", "uid": "${datasource}"},
         "gridPos": {"x": x, "y": y, "w": w, "h": h},
         "targets": [dict(refId=chr(65+i), expr=e, legendFormat=l,
                          datasource={"type": "prometheus", "uid": "${datasource}"},
                          **({"format": "heatmap"} if kind == "heatmap" else {}))
                     for i, (e, l) in enumerate(targets)],
         "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
         "options": {}}
    if kind == "heatmap":
        p["options"] = {"calculate": False, "yAxis": {"unit": unit}, "cellGap": 1}
    return p

def q(phi, metric, by):
    return f'histogram_quantile({phi}, sum by ({by}) (rate({metric}_bucket{s()}[{RI}])))'

def dashboard(uid, title, panels, tags):
    return {"uid": uid, "title": title, "tags": tags, "timezone": "", "editable": True,
            "schemaVersion": 39, "version": 1, "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
            "graphTooltip": 1, "templating": templating(), "annotations": {"list": []},
            "links": [], "panels": panels,
            "__inputs": [], "__requires": [{"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}]}

overview = [
    panel(1, "Ops/s by command", [(f'sum by (cmd) (rate(cairn_commands_total{s()}[{RI}]))', "{{cmd}}")], 0, 0, unit="ops"),
    panel(2, "Durable acks/s", [(f'sum(rate(cairn_durable_acks_total{s()}[{RI}]))', "durable acks"),
                                (f'sum(rate(cairn_commands_total{OK}[{RI}]))', "all ok commands")], 12, 0, unit="ops",
          desc="Write replies sent after the fsync that covers them (sync tier, WAITAOF)."),
    panel(3, "Command latency p50 / p99 / p99.9", [
        (q(0.5, "cairn_command_duration_seconds", "cmd, le"), "p50 {{cmd}}"),
        (q(0.99, "cairn_command_duration_seconds", "cmd, le"), "p99 {{cmd}}"),
        (q(0.999, "cairn_command_duration_seconds", "cmd, le"), "p99.9 {{cmd}}")], 0, 8, w=24, unit="s",
          desc="Execution time on the worker (log2 buckets: a quantile is accurate to a factor of 2)."),
    panel(4, "fsync p99", [(q(0.99, "cairn_fsync_duration_seconds", "instance, le"), "{{instance}}")], 0, 16, w=8, unit="s"),
    panel(5, "Group commit size (writes per fsync)", [
        (f'sum(rate(cairn_group_commit_batch_size_sum{s()}[{RI}])) / sum(rate(cairn_group_commit_batch_size_count{s()}[{RI}]))', "mean"),
        (q(0.99, "cairn_group_commit_batch_size", "le"), "p99")], 8, 16, w=8),
    panel(6, "Clients", [(f'sum by (instance) (cairn_connected_clients{s()})', "connected {{instance}}"),
                         (f'sum by (instance) (cairn_blocked_clients{s()})', "blocked {{instance}}"),
                         (f'sum by (instance) (rate(cairn_rejected_connections_total{s()}[{RI}]))', "rejected/s {{instance}}")], 16, 16, w=8),
    panel(7, "Memory", [(f'cairn_memory_used_bytes{s()}', "used {{instance}}"),
                        (f'cairn_memory_max_bytes{s()}', "maxmemory (0: none) {{instance}}")], 0, 24, w=8, unit="bytes"),
    panel(8, "Keys", [(f'sum by (db) (cairn_db_keys{s()})', "{{db}}"),
                      (f'sum by (db) (cairn_db_keys_expiring{s()})', "{{db}} with TTL")], 8, 24, w=8),
    panel(9, "Expired and evicted keys/s", [(f'sum(rate(cairn_expired_keys_total{s()}[{RI}]))', "expired"),
                                            (f'sum(rate(cairn_evicted_keys_total{s()}[{RI}]))', "evicted")], 16, 24, w=8, unit="ops"),
    panel(10, "Network", [(f'sum(rate(cairn_net_input_bytes_total{s()}[{RI}]))', "in"),
                          (f'sum(rate(cairn_net_output_bytes_total{s()}[{RI}]))', "out")], 0, 32, w=8, unit="Bps"),
    panel(11, "Error replies/s", [(f'sum(rate(cairn_error_replies_total{s()}[{RI}]))', "errors")], 8, 32, w=8, unit="ops"),
    panel(12, "Ready", [(f'cairn_ready{s()}', "{{instance}}")], 16, 32, w=8, kind="stat"),
]
durability = [
    panel(1, "fsync latency", [(f'sum by (le) (rate(cairn_fsync_duration_seconds_bucket{s()}[{RI}]))', "{{le}}")], 0, 0, w=24, unit="s", kind="heatmap"),
    panel(2, "fsyncs/s and failures", [(f'sum(rate(cairn_fsyncs_total{s()}[{RI}]))', "fsyncs/s"),
                                       (f'sum(increase(cairn_fsync_failures_total{s()}[{RI}]))', "failures")], 0, 8, w=8, unit="ops"),
    panel(3, "WAL throughput", [(f'sum by (instance) (rate(cairn_wal_written_bytes_total{s()}[{RI}]))', "{{instance}}")], 8, 8, w=8, unit="Bps"),
    panel(4, "WAL segments", [(f'cairn_wal_segments{s()}', "{{instance}}")], 16, 8, w=8),
    panel(5, "Snapshot age", [(f'time() - cairn_snapshot_last_success_timestamp_seconds{s()}', "{{instance}}")], 0, 16, w=8, unit="s",
          desc="Seconds since the last successful snapshot (the whole Unix time when there has been none)."),
    panel(6, "Snapshot duration", [(f'cairn_snapshot_last_duration_seconds{s()}', "{{instance}}")], 8, 16, w=8, unit="s"),
    panel(7, "Loss window (async, everysec)", [
        (q(0.5, "cairn_wal_unsynced_age_seconds", "instance, le"), "p50 {{instance}}"),
        (q(0.99, "cairn_wal_unsynced_age_seconds", "instance, le"), "p99 {{instance}}"),
        ], 16, 16, w=8, unit="s",
          desc="Outside the sync tier a write is acknowledged before its fsync. Per fsync, how long the oldest write it made durable had waited since its append: what a power failure at that moment would have lost (log2 buckets: accurate to a factor of 2)."),
    panel(8, "Unsynced log records", [(f'cairn_wal_appended_lsn{s()} - cairn_wal_durable_lsn{s()}', "{{instance}}")], 0, 24, w=8,
          desc="Appended but not yet covered by an fsync: what a power failure would lose right now."),
    panel(9, "Group commit size", [(f'sum by (le) (rate(cairn_group_commit_batch_size_bucket{s()}[{RI}]))', "{{le}}")], 8, 24, w=8, kind="heatmap"),
    panel(10, "Durable acks/s", [(f'sum(rate(cairn_durable_acks_total{s()}[{RI}]))', "durable acks")], 16, 24, w=8, unit="ops"),
    panel(11, "Recovery", [(f'cairn_recovery_replayed_records{s()}', "records replayed {{instance}}"),
                           (f'cairn_recovering{s()}', "recovering {{instance}}")], 0, 32, w=12),
    panel(12, "Durability tier", [(f'cairn_durability_info{s()}', "{{tier}}")], 12, 32, w=12, kind="stat"),
]
for name, title, panels in [("overview", "Cairn / Overview", overview), ("durability", "Cairn / Durability", durability)]:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"cairn-{name}.json"), "w") as f:
        json.dump(dashboard(f"cairn-{name}", title, panels, ["cairn"]), f, indent=2)
        f.write("\n")

# The alerting rules (dashboards/cairn-alerts.yaml and the chart's PrometheusRule) are generated
# from dashboards/alerts.py along with the dashboards.
import alerts  # noqa: E402
alerts.main([])
