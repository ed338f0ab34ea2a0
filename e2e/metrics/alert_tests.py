#!/usr/bin/env python3
"""`promtool test rules` unit tests of dashboards/cairn-alerts.yaml: input series, then the alerts
that must fire (labels and the rendered summary and description, exactly) and the ones that must
not.

Every alert needs at least one case where it fires and one where it must stay silent (checked
before promtool runs). The expected annotations are the rule's own text (from
dashboards/alerts.py) rendered here with the values the case states, so a template error, a wrong
label or a wrong value fails the test.

Usage: alert_tests.py [--write FILE]   (e2e/metrics/check.py calls run() itself)
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dashboards"))
import alerts as rules  # noqa: E402  (dashboards/alerts.py: the alert definitions)

A = 'job="cairn", instance="cairn-0:8379"'
B = 'job="cairn", instance="cairn-1:8379"'
C = 'job="cairn", instance="cairn-2:8379"'


def labels_of(selector: str) -> dict:
    return dict(re.findall(r'(\w+)="([^"]*)"', selector))


@dataclass
class Fires:
    selector: str          # the labels of the alert (the series' job and instance)
    value: float           # the alert's value, for the annotations
    extra: dict = field(default_factory=dict)


@dataclass
class Case:
    alert: str
    what: str
    series: dict           # series -> promtool expanding notation
    eval_time: str
    fires: list            # [Fires]; empty: the alert must not fire
    interval: str = "1m"


def buckets(metric: str, selector: str, per_minute: dict) -> dict:
    """Cumulative histogram buckets growing by `per_minute[le]` observations each minute
    (cumulative counts per bucket: give each `le` its own cumulative rate)."""
    return {f'{metric}_bucket{{{selector}, le="{le}"}}': f"0+{n}x20" for le, n in per_minute.items()}


FSYNC_SLOW = {"0.032768": 0, "0.065536": 0, "0.131072": 60, "+Inf": 60}   # all in (65.5 ms, 131 ms]
FSYNC_FAST = {"0.000256": 0, "0.000512": 60, "0.131072": 60, "+Inf": 60}   # all in (256 µs, 512 µs]
AGE_1S = {"0.262144": 0, "0.524288": 0, "1.048576": 60, "+Inf": 60}        # all in (0.52 s, 1.05 s]
DAY = 86400

CASES = [
    Case("CairnDown", "a target that does not answer for a minute fires", {
        f"up{{{A}}}": "0x10", f"up{{{B}}}": "1x10", 'up{job="other", instance="x:9100"}': "0x10"},
        "5m", [Fires(A, 0)]),
    Case("CairnDown", "a scrape that failed once does not", {f"up{{{A}}}": "1 1 0 1 1 1"}, "3m", []),

    Case("CairnRecoveryTakingLong", "recovering for 5 minutes fires", {
        f"cairn_recovering{{{A}}}": "1x10", f"cairn_recovering{{{B}}}": "1 1 1 0x7"}, "6m", [Fires(A, 1)]),
    Case("CairnRecoveryTakingLong", "a 3-minute recovery does not", {
        f"cairn_recovering{{{A}}}": "1 1 1 0x7"}, "4m", []),

    Case("CairnWALFailed", "a failed fsync fires at once", {
        f"cairn_fsync_failures_total{{{A}}}": "0 0 1x5", f"cairn_fsync_failures_total{{{B}}}": "0x7"},
        "2m", [Fires(A, 1)]),
    Case("CairnWALFailed", "no failure, no alert", {f"cairn_fsync_failures_total{{{A}}}": "0x7"}, "5m", []),

    Case("CairnDiskFull", "writes refused for a full disk over a minute", {
        f'cairn_writes_refused{{{A}, reason="disk_full"}}': "0 0 1x8", f'cairn_writes_refused{{{A}, reason="log_failed"}}': "0x10"},
        "4m", [Fires(A, 1, {"reason": "disk_full"})]),
    Case("CairnDiskFull", "a failed log, or a full disk for less than a minute: no", {
        f'cairn_writes_refused{{{A}, reason="disk_full"}}': "0x10", f'cairn_writes_refused{{{A}, reason="log_failed"}}': "1x10",
        f'cairn_writes_refused{{{B}, reason="disk_full"}}': "0x4 1 0x4"},
        "6m", []),

    Case("CairnWALSyncStalled", "records wait and the durable LSN is stuck", {
        f"cairn_wal_appended_lsn{{{A}}}": "0+10x10", f"cairn_wal_durable_lsn{{{A}}}": "0 10 20 30x7",
        f"cairn_ready{{{A}}}": "1x10"},
        "6m", [Fires(A, 30)]),
    Case("CairnWALSyncStalled", "idle, busy but syncing, or already refusing writes: no", {
        f"cairn_wal_appended_lsn{{{A}}}": "50x10", f"cairn_wal_durable_lsn{{{A}}}": "50x10", f"cairn_ready{{{A}}}": "1x10",
        f"cairn_wal_appended_lsn{{{B}}}": "5+10x10", f"cairn_wal_durable_lsn{{{B}}}": "0+10x10", f"cairn_ready{{{B}}}": "1x10",
        f"cairn_wal_appended_lsn{{{C}}}": "0+10x10", f"cairn_wal_durable_lsn{{{C}}}": "0 10 20 30x7", f"cairn_ready{{{C}}}": "0x10"},
        "6m", []),

    Case("CairnFsyncLatencyHigh", "p99 in the 65-131 ms bucket for 10 minutes", {
        **buckets("cairn_fsync_duration_seconds", A, FSYNC_SLOW)}, "16m",
        [Fires(A, 0.065536 + 0.065536 * 0.99)]),
    Case("CairnFsyncLatencyHigh", "sub-millisecond fsyncs do not", {
        **buckets("cairn_fsync_duration_seconds", A, FSYNC_FAST)}, "16m", []),

    Case("CairnDurableAckLagHigh", "async: p99 ≈ 1 s fires; everysec: the same does not", {
        **buckets("cairn_wal_unsynced_age_seconds", A, AGE_1S), f'cairn_durability_info{{{A}, tier="async"}}': "1x20",
        **buckets("cairn_wal_unsynced_age_seconds", B, AGE_1S), f'cairn_durability_info{{{B}, tier="everysec"}}': "1x20"},
        "16m", [Fires(A, 0.524288 + 0.524288 * 0.99)]),
    Case("CairnDurableAckLagHigh", "fast syncs do not", {
        **buckets("cairn_wal_unsynced_age_seconds", A, FSYNC_FAST), f'cairn_durability_info{{{A}, tier="sync"}}': "1x20"},
        "16m", []),

    Case("CairnTLSCertificateExpiringSoon", "10 days left fires; 30 days and expired do not", {
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{A}}}": f"{10 * DAY}x20",
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{B}}}": f"{30 * DAY}x20",
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{C}}}": "300x20"},
        "15m", [Fires(A, 10 * DAY - 15 * 60)]),
    Case("CairnTLSCertificateExpiringSoon", "15 days left does not", {
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{A}}}": f"{15 * DAY}x20"}, "15m", []),

    Case("CairnTLSCertificateExpired", "expired 5 minutes ago", {
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{A}}}": "300x20",
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{B}}}": f"{DAY}x20"}, "10m", [Fires(A, 300)]),
    Case("CairnTLSCertificateExpired", "valid for a day does not", {
        f"cairn_tls_certificate_expiry_timestamp_seconds{{{A}}}": f"{DAY}x20"}, "10m", []),

    Case("CairnTLSReloadFailed", "a failed reload fires", {
        f'cairn_tls_reloads_total{{{A}, result="failed"}}': "0 0 1x20", f'cairn_tls_reloads_total{{{A}, result="ok"}}': "0 1 1x20"},
        "3m", [Fires(A, 1, {"result": "failed"})]),
    Case("CairnTLSReloadFailed", "15 minutes after the failure it clears", {
        f'cairn_tls_reloads_total{{{A}, result="failed"}}': "0 0 1x30", f'cairn_tls_reloads_total{{{A}, result="ok"}}': "0+1x30"},
        "20m", []),

    Case("CairnConfigReloadFailed", "a refused config file fires", {
        f'cairn_config_reloads_total{{{A}, result="failed"}}': "0 0 1x20",
        f'cairn_config_reloads_total{{{A}, result="applied"}}': "0 1 1x20"},
        "3m", [Fires(A, 1, {"result": "failed"})]),
    Case("CairnConfigReloadFailed", "15 minutes after the refusal it clears", {
        f'cairn_config_reloads_total{{{A}, result="failed"}}': "0 0 1x30",
        f'cairn_config_reloads_total{{{A}, result="applied"}}': "0+1x30"},
        "20m", []),

    Case("CairnTLSHandshakeFailures", "0.5/s of 1.5/s handshakes fail", {
        f'cairn_tls_handshakes_total{{{A}, result="ok"}}': "0+60x20",
        f'cairn_tls_handshakes_total{{{A}, result="failed"}}': "0+20x20",
        f'cairn_tls_handshakes_total{{{A}, result="timeout"}}': "0+10x20"},
        "12m", [Fires(A, 0.5)]),
    Case("CairnTLSHandshakeFailures", "a small share of many, or a few of few, do not", {
        f'cairn_tls_handshakes_total{{{A}, result="ok"}}': "0+6000x20",
        f'cairn_tls_handshakes_total{{{A}, result="failed"}}': "0+30x20",
        f'cairn_tls_handshakes_total{{{A}, result="timeout"}}': "0x20",
        f'cairn_tls_handshakes_total{{{B}, result="ok"}}': "0x20",
        f'cairn_tls_handshakes_total{{{B}, result="failed"}}': "0+3x20",
        f'cairn_tls_handshakes_total{{{B}, result="timeout"}}': "0x20"},
        "12m", []),

    Case("CairnMemoryNearLimit", "95% of maxmemory", {
        f"cairn_memory_used_bytes{{{A}}}": "950x10", f"cairn_memory_max_bytes{{{A}}}": "1000x10"},
        "6m", [Fires(A, 0.95)]),
    Case("CairnMemoryNearLimit", "no maxmemory, or half of it: no", {
        f"cairn_memory_used_bytes{{{A}}}": "950x10", f"cairn_memory_max_bytes{{{A}}}": "0x10",
        f"cairn_memory_used_bytes{{{B}}}": "500x10", f"cairn_memory_max_bytes{{{B}}}": "1000x10"}, "6m", []),

    Case("CairnOutOfMemoryRejections", "-OOM replies fire", {
        f'cairn_errors_total{{{A}, kind="OOM"}}': "0 0 10 20 30", f'cairn_errors_total{{{A}, kind="ERR"}}': "0+5x4"},
        "4m", [Fires(A, 30, {"kind": "OOM"})]),
    Case("CairnOutOfMemoryRejections", "other errors, or old OOMs, do not", {
        f'cairn_errors_total{{{A}, kind="OOM"}}': "7x10", f'cairn_errors_total{{{A}, kind="ERR"}}': "0+5x10"},
        "8m", []),

    Case("CairnKeysEvicted", "evictions fire at the default threshold 0", {
        f"cairn_evicted_keys_total{{{A}}}": "0+10x10"}, "6m", [Fires(A, 50)]),
    Case("CairnKeysEvicted", "no eviction, no alert", {f"cairn_evicted_keys_total{{{A}}}": "3x10"}, "6m", []),

    Case("CairnRejectedConnections", "refused connections fire", {
        f"cairn_rejected_connections_total{{{A}}}": "0+2x10"}, "6m", [Fires(A, 10)]),
    Case("CairnRejectedConnections", "none refused lately: no", {
        f"cairn_rejected_connections_total{{{A}}}": "0 5 5x10"}, "8m", []),

    Case("CairnClientsNearLimit", "95 of 100 clients", {
        f"cairn_connected_clients{{{A}}}": "95x10", f"cairn_max_clients{{{A}}}": "100x10"}, "6m", [Fires(A, 0.95)]),
    Case("CairnClientsNearLimit", "10 of 100 does not", {
        f"cairn_connected_clients{{{A}}}": "10x10", f"cairn_max_clients{{{A}}}": "100x10"}, "6m", []),
]


# --- Prometheus's template functions used by the annotations (Go's %.4g is C's) -----------------

def humanize(v: float) -> str:
    if v == 0:
        return "%.4g" % v
    prefix = ""
    if abs(v) >= 1:
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"]:
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
    else:
        for p in ["m", "u", "n", "p", "f", "a", "z", "y"]:
            if abs(v) >= 1:
                break
            prefix, v = p, v * 1000
    return "%.4g%s" % (v, prefix)


def humanize_duration(v: float) -> str:
    if v == 0:
        return "%.4gs" % v
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        v = abs(v)
        d = int(v)
        s, m, h, days = d % 60, (d // 60) % 60, (d // 3600) % 24, d // 86400
        if days:
            return f"{sign}{days}d {h}h {m}m {s}s"
        if h:
            return f"{sign}{h}h {m}m {s}s"
        if m:
            return f"{sign}{m}m {s}s"
        return "%s%.4gs" % (sign, v)
    prefix = ""
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"]:
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return "%.4g%ss" % (v, prefix)


FUNCS = {"humanize": humanize, "humanizeDuration": humanize_duration,
         "humanizePercentage": lambda v: "%.4g%%" % (v * 100)}


def render(text: str, labels: dict, value: float) -> str:
    def action(m):
        body = m.group(1).strip()
        if body.startswith("$labels."):
            return labels[body[len("$labels."):]]
        f = re.fullmatch(r'\$value \| (\w+)(?: "(.*)")?', body)
        if not f:
            raise SystemExit(f"alert_tests.py cannot render {{{{ {body} }}}}")
        if f.group(1) == "printf":
            return f.group(2) % value
        return FUNCS[f.group(1)](value)
    return re.sub(r"\{\{(.*?)\}\}", action, text)


def expected(alert: rules.Alert, fires: Fires) -> dict:
    labels = {**labels_of(fires.selector), **fires.extra}
    return {"exp_labels": {**labels, "severity": alert.severity},
            "exp_annotations": {"summary": render(alert.filled(alert.summary), labels, fires.value),
                                "description": render(alert.filled(alert.description), labels, fires.value)}}


def test_file(rules_file: Path) -> dict:
    by_name = {a.name: a for a in rules.ALERTS}
    problems = [f"case for unknown alert {c.alert}" for c in CASES if c.alert not in by_name]
    for name in by_name:
        mine = [c for c in CASES if c.alert == name]
        if not any(c.fires for c in mine):
            problems.append(f"{name} has no case where it fires")
        if not any(not c.fires for c in mine):
            problems.append(f"{name} has no case where it must not fire")
    if problems:
        raise SystemExit("FAIL alert unit tests: " + "; ".join(problems))
    tests = []
    for case in CASES:
        alert = by_name[case.alert]
        tests.append({
            "name": f"{case.alert}: {case.what}",
            "interval": case.interval,
            "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
            "alert_rule_test": [{"eval_time": case.eval_time, "alertname": case.alert,
                                 "exp_alerts": [expected(alert, f) for f in case.fires]}],
        })
    return {"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": tests}


def run(workdir: Path, rules_file: Path = Path(rules.RULES_FILE)) -> None:
    """Writes the test file (JSON, which YAML reads) into `workdir` and runs promtool on it."""
    path = workdir / "cairn-alerts.test.yaml"
    path.write_text(json.dumps(test_file(rules_file), indent=1, ensure_ascii=False) + "\n")
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL promtool test rules ({path}):\n{result.stdout}{result.stderr}")
    firing = sum(1 for c in CASES if c.fires)
    print(f"ok   promtool test rules: {len(CASES)} cases ({firing} firing, {len(CASES) - firing} silent) "
          f"for {len(rules.ALERTS)} alerts")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        Path(sys.argv[2]).write_text(json.dumps(test_file(Path(rules.RULES_FILE)), indent=1, ensure_ascii=False) + "\n")
    else:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            run(Path(d))
