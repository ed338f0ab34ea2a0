#!/usr/bin/env python3
"""Cairn's /metrics and dashboards against a real Prometheus (Debian `prometheus`).

Starts Cairn (ephemeral loopback ports) and Prometheus (loopback, 1 s scrape of Cairn's admin
port, temporary storage), drives load with redis-benchmark, then:
  1. `promtool check metrics` on /metrics (text format) must print nothing;
  2. Prometheus's scrape of Cairn (OpenMetrics) must be healthy;
  3. every panel query of every dashboard in dashboards/ (Grafana variables substituted) must
     evaluate through Prometheus's HTTP API with status success and a non-empty result;
  4. the alerting rules (dashboards/cairn-alerts.yaml, docs/alerts.md): generated files up to date
     (dashboards/alerts.py --check), `promtool check rules`, `promtool test rules` with the cases
     of alert_tests.py (before anything starts); then every alert expression evaluated by
     Prometheus against this Cairn (TLS on, a 90-day certificate): none fires on the healthy
     server, `up` of CairnDown's selector and the certificate expiry series are there; then
     Cairn is pushed into trouble (maxmemory below its usage with evictions and -OOM replies, a
     failed TLS reload, plaintext clients on the TLS port, maxclients reached, a refused config
     file) and exactly the
     alerts for those conditions must fire.

Usage: check.py [--cairn PATH] [--keep]   (env CAIRN_BIN also names the binary)
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)
from certs import make_pki  # noqa: E402  (e2e/lib/certs.py: a CA, server and client certificates)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dashboards"))
import alerts as alert_rules  # noqa: E402  (dashboards/alerts.py: the alert definitions)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import alert_tests  # noqa: E402  (promtool unit tests of the alerts)

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
RATE_WINDOW = "15s"  # $__rate_interval: 15 scrapes at 1 s


def free_port() -> int:
    return ports.free_port(HOST)


def http_get(url: str, timeout: float = 5.0, accept: str | None = None) -> str:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read().decode()


def wait_for(what: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 - any failure means "not yet"
            last_error = e
        time.sleep(0.2)
    sys.exit(f"FAIL: timed out waiting for {what} (last error: {last_error})")


def start_cairn(binary: str, work: Path) -> tuple[subprocess.Popen, int, str, int]:
    """Cairn with plaintext RESP, the admin port and a TLS port (a certificate valid for 90 days,
    so no certificate alert fires); returns the process, RESP port, admin address and TLS port."""
    tls = Path(make_pki(str(work / "tls"), days=90))
    (work / "cairn.toml").write_text("config-reload-interval = \"250ms\"\n[params]\nhz = 10\n")
    log = open(work / "cairn.log", "w")
    proc = subprocess.Popen(
        [binary, "--port", "0", "--admin-port", "0", "--native-port", "0", "--bind", HOST, "--data-dir", str(work / "data"),
         "--log-format", "json", "--threads", "1", "--tls-port", "0", "--tls-cert-file", str(tls / "tls.crt"),
         "--tls-key-file", str(tls / "tls.key"), "--tls-auth-clients", "no", "--config", str(work / "cairn.toml")],
        stdout=log, stderr=subprocess.STDOUT)

    def ready():
        for line in (work / "cairn.log").read_text().splitlines():
            if "Ready to accept connections" in line:
                fields = json.loads(line)["fields"]
                return fields["addr"], fields["admin_addr"], fields["tls_addr"]
        if proc.poll() is not None:
            sys.exit(f"FAIL: cairn exited: {(work / 'cairn.log').read_text()}")
        return None

    addr, admin, tls_addr = wait_for("cairn to start", ready)
    tls_port = re.search(r":(\d+)", str(tls_addr))
    if not tls_port:
        sys.exit(f"FAIL: no TLS port in cairn's start line: {tls_addr!r}")
    return proc, int(addr.rsplit(":", 1)[1]), admin, int(tls_port.group(1))


def start_prometheus(admin: str, work: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    config = work / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files: ['{alert_rules.RULES_FILE}']\n"
        f"scrape_configs:\n  - job_name: cairn\n    static_configs:\n      - targets: ['{admin}']\n")
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
         f"--web.listen-address={HOST}:{port}", "--log.level=warn"],
        stdout=open(work / "prometheus.log", "w"), stderr=subprocess.STDOUT)
    base = f"http://{HOST}:{port}"
    wait_for("prometheus to be ready", lambda: http_get(f"{base}/-/ready"))
    return proc, base


def drive_load(port: int, seconds: float):
    """Writes, reads, a failing command and keys with TTLs, for `seconds`."""
    deadline = time.monotonic() + seconds
    subprocess.run(["redis-cli", "-p", str(port), "SET", "ttl-key", "v", "EX", "600"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["redis-cli", "-p", str(port), "INCR", "ttl-key"], stdout=subprocess.DEVNULL)
    while time.monotonic() < deadline:
        subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", "20000", "-c", "8", "-P", "4",
                        "-r", "1000", "-t", "set,get,incr,lpush"], check=True, stdout=subprocess.DEVNULL)


def promtool_check(admin: str):
    metrics = http_get(f"http://{admin}/metrics")
    result = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True)
    if result.returncode != 0 or result.stdout.strip() or result.stderr.strip():
        sys.exit(f"FAIL: promtool check metrics:\n{result.stdout}{result.stderr}")
    print(f"ok   promtool check metrics ({len(metrics.splitlines())} lines)")


def scrape_healthy(base: str):
    targets = json.loads(http_get(f"{base}/api/v1/targets"))["data"]["activeTargets"]
    bad = [t for t in targets if t["health"] != "up" or t["lastError"]]
    if not targets or bad:
        sys.exit(f"FAIL: prometheus cannot scrape cairn: {bad or targets}")
    print("ok   prometheus scrapes cairn (OpenMetrics)")


def substitute(expr: str) -> str:
    for var, value in [("$__rate_interval", RATE_WINDOW), ("$__interval", "1s"), ("$__range", "1m"),
                       ("${instance}", ".*"), ("$instance", ".*"), ("${pod}", ".*"), ("$pod", ".*")]:
        expr = expr.replace(var, value)
    return expr


def dashboard_queries():
    for path in sorted((ROOT / "dashboards").glob("*.json")):
        dashboard = json.loads(path.read_text())
        panels = []
        for panel in dashboard["panels"]:
            panels.append(panel)
            panels.extend(panel.get("panels", []))
        for panel in panels:
            for target in panel.get("targets", []):
                yield f"{path.name} / {panel['title']}", target["expr"]


def evaluate_all(base: str) -> int:
    failures = []
    count = 0
    for where, expr in dashboard_queries():
        count += 1
        expr = substitute(expr)
        result, error = instant_query(base, expr)
        if error:
            failures.append(f"{where}: {expr}: {error}")
        elif not result:
            failures.append(f"{where}: {expr}: empty result")
    for failure in failures:
        print(f"FAIL {failure}")
    if failures:
        sys.exit(f"FAIL: {len(failures)} of {count} dashboard queries")
    print(f"ok   {count} dashboard queries evaluate to non-empty results")
    return count


def check_rules_offline(work: Path):
    """Generated files up to date, `promtool check rules`, `promtool test rules`."""
    if alert_rules.main(["--check"]) != 0:
        sys.exit("FAIL: dashboards/alerts.py --check")
    result = subprocess.run(["promtool", "check", "rules", alert_rules.RULES_FILE], capture_output=True, text=True)
    found = re.search(r"SUCCESS: (\d+) rules found", result.stdout)
    if result.returncode != 0 or not found or int(found.group(1)) != len(alert_rules.ALERTS):
        sys.exit(f"FAIL: promtool check rules (expected {len(alert_rules.ALERTS)} rules):\n{result.stdout}{result.stderr}")
    print(f"ok   promtool check rules dashboards/cairn-alerts.yaml ({found.group(1)} rules)")
    alert_tests.run(work)


def instant_query(base: str, expr: str) -> tuple[list, str | None]:
    """Prometheus's instant-query result of `expr`, or why there is none."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        reply = json.loads(http_get(url))
    except urllib.error.HTTPError as e:
        return [], f"HTTP {e.code}: {e.read().decode()}"
    if reply.get("status") != "success":
        return [], str(reply)
    return reply.get("data", {}).get("result", []), None


def query(base: str, expr: str) -> list:
    """The instant-query result of `expr`; exits on an error."""
    result, error = instant_query(base, expr)
    if error:
        sys.exit(f"FAIL: {expr}: {error}")
    return result


def firing(base: str) -> dict[str, list]:
    """Every alert's expression evaluated once (its `for` aside): name -> result."""
    return {a.name: query(base, a.expression()) for a in alert_rules.ALERTS}


# Alerts on the disk's speed: this shared machine's fsyncs are what they are (tens of ms under
# load), so their expressions may hold here; they must still evaluate, and they are reported.
MACHINE_DEPENDENT = {"CairnFsyncLatencyHigh", "CairnDurableAckLagHigh"}


def rule_manager(base: str) -> tuple[list, dict]:
    """Prometheus's own evaluation of cairn-alerts.yaml: (rules, alert name -> state)."""
    groups = json.loads(http_get(f"{base}/api/v1/rules"))["data"]["groups"]
    loaded = [r for g in groups for r in g["rules"]]
    active = json.loads(http_get(f"{base}/api/v1/alerts"))["data"]["alerts"]
    return loaded, {a["labels"]["alertname"]: a for a in active}


def check_alerts_healthy(base: str, admin: str):
    results = firing(base)
    holding = {name: r for name, r in results.items() if r}
    if set(holding) - MACHINE_DEPENDENT:
        sys.exit(f"FAIL: alert expressions hold on a healthy Cairn: {json.dumps(holding)}")
    for name, r in holding.items():
        print(f"note {name}'s expression holds on this machine (value {r[0]['value'][1]}); its `for` keeps it pending")
    down = alert_rules.ALERTS[0]
    assert down.name == "CairnDown"
    up = query(base, "up" + down.params["selector"])
    if [r["metric"].get("instance") for r in up] != [admin]:
        sys.exit(f"FAIL: CairnDown's selector {down.params['selector']} does not select the scraped Cairn: {up}")
    expiring = next(a for a in alert_rules.ALERTS if a.name == "CairnTLSCertificateExpiringSoon")
    year = query(base, expiring.expression({"days": 365}))
    if len(year) != 1 or not 89 * 86400 < float(year[0]["value"][1]) <= 90 * 86400:
        sys.exit(f"FAIL: the 90-day certificate is not seen expiring within a year: {year}")
    loaded, active = wait_for("Prometheus to evaluate every rule", lambda: (lambda r: r if all(
        x["health"] == "ok" for x in r[0]) and len(r[0]) == len(alert_rules.ALERTS) else None)(rule_manager(base)), timeout=15)
    firing_now = {n for n, a in active.items() if a["state"] == "firing"}
    if firing_now:
        sys.exit(f"FAIL: Prometheus fires alerts on a healthy Cairn: {sorted(firing_now)}")
    print(f"ok   {len(results)} alert expressions evaluate; none holds on the healthy server (CairnDown selects "
          f"it; its certificate expires in 90 days); Prometheus loaded the {len(loaded)} rules, all healthy, none firing")


def resp(sock: socket.socket, *args) -> bytes:
    """Sends one command, returns the reply's first line."""
    words = [str(a).encode() for a in args]
    sock.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words))
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        reply += chunk
    return reply.split(b"\r\n")[0]


EXPECTED_IN_TROUBLE = {"CairnMemoryNearLimit", "CairnOutOfMemoryRejections", "CairnKeysEvicted",
                       "CairnTLSReloadFailed", "CairnTLSHandshakeFailures", "CairnRejectedConnections",
                       "CairnClientsNearLimit", "CairnConfigReloadFailed"}


def check_alerts_in_trouble(base: str, port: int, tls_port: int, work: Path):
    """Real trouble on the real server; exactly the alerts for it must fire."""
    # a config file the server refuses (a parameter's value of the wrong type)
    (work / "cairn.toml").write_text("config-reload-interval = \"250ms\"\n[params]\nhz = \"fast\"\n")
    client = socket.create_connection((HOST, port), timeout=5)
    for i in range(50):
        resp(client, "SET", f"big-{i}", "x" * 20000)
    # maxmemory below what is used: an eviction policy evicts, noeviction refuses (-OOM)
    for setting in [("maxmemory-policy", "allkeys-lru"), ("maxmemory", "1mb")]:
        assert resp(client, "CONFIG", "SET", *setting) == b"+OK", setting
    resp(client, "SET", "evict-me", "v")
    assert resp(client, "CONFIG", "SET", "maxmemory-policy", "noeviction") == b"+OK"
    for round_ in range(2):  # two scrapes apart: the OOM series appears with the first error
        for i in range(10):
            reply = resp(client, "SET", f"oom-{round_}-{i}", "v")
            if not reply.startswith(b"-OOM"):
                sys.exit(f"FAIL: a write above maxmemory was not refused with -OOM: {reply!r}")
        time.sleep(2.5)
    # a failed TLS reload; plaintext clients on the TLS port (failed handshakes)
    reply = resp(client, "CONFIG", "SET", "tls-cert-file", "/nonexistent/tls.crt")
    if not reply.startswith(b"-ERR"):
        sys.exit(f"FAIL: CONFIG SET tls-cert-file of a missing file did not fail: {reply!r}")
    for _ in range(120):
        with socket.create_connection((HOST, tls_port), timeout=5) as s:
            s.sendall(b"PING\r\n")
            try:
                s.recv(100)
            except OSError:
                pass
    # maxclients reached: this client is the only one allowed, others are refused
    assert resp(client, "CONFIG", "SET", "maxclients", "1") == b"+OK"
    for _ in range(3):
        with socket.create_connection((HOST, port), timeout=5) as s:
            if not s.recv(100).startswith(b"-ERR max number of clients"):
                sys.exit("FAIL: a client beyond maxclients was not refused")
    time.sleep(3)  # a few scrapes
    results = firing(base)
    client.close()
    holding = {name for name, r in results.items() if r}
    if not EXPECTED_IN_TROUBLE <= holding or holding - EXPECTED_IN_TROUBLE - MACHINE_DEPENDENT:
        sys.exit(f"FAIL: in trouble, these alert expressions hold: {sorted(holding)}, expected "
                 f"{sorted(EXPECTED_IN_TROUBLE)}:\n"
                 + "\n".join(f"  {n}: {results[n]}" for n in sorted(holding ^ EXPECTED_IN_TROUBLE)))
    print(f"ok   in trouble (maxmemory, -OOM, evictions, a failed TLS reload, failed handshakes, maxclients, "
          f"a refused config file) "
          f"exactly these expressions hold: {', '.join(sorted(EXPECTED_IN_TROUBLE))}")
    # Prometheus's rule manager: the ones without `for` fire (annotations rendered), the others wait
    by_name = {a.name: a for a in alert_rules.ALERTS}
    want_firing = {n for n in EXPECTED_IN_TROUBLE if by_name[n].for_ == "0m"}

    def settled():
        _, active = rule_manager(base)
        states = {n: a["state"] for n, a in active.items()}
        return active if {n for n, s in states.items() if s == "firing"} == want_firing and \
            EXPECTED_IN_TROUBLE <= set(states) else None
    active = wait_for("Prometheus to fire the alerts", settled, timeout=15)
    extra = set(active) - EXPECTED_IN_TROUBLE - MACHINE_DEPENDENT
    if extra:
        sys.exit(f"FAIL: Prometheus has unexpected alerts active: {sorted(extra)}")
    for name in want_firing:
        summary = active[name]["annotations"].get("summary", "")
        if active[name]["labels"].get("instance", "?") not in summary:
            sys.exit(f"FAIL: {name}'s summary does not name the instance: {active[name]}")
    print(f"ok   Prometheus fires {', '.join(sorted(want_firing))} (summaries name the instance); "
          f"{', '.join(sorted(EXPECTED_IN_TROUBLE - want_firing))} pending their `for`")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    parser.add_argument("--cairn", default=os.environ.get("CAIRN_BIN", f"{target}/release/cairn"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    for tool in ["prometheus", "promtool", "redis-benchmark", "redis-cli", "openssl"]:
        if not shutil.which(tool):
            sys.exit(f"FAIL: {tool} not found (e2e/install-deps.sh installs it)")
    work = Path(tempfile.mkdtemp(prefix="cairn-metrics-e2e-"))
    procs = []
    try:
        check_rules_offline(work)
        cairn, port, admin, tls_port = start_cairn(args.cairn, work)
        procs.append(cairn)
        prometheus, base = start_prometheus(admin, work)
        procs.append(prometheus)
        wait_for("the first scrape", lambda: json.loads(http_get(
            f"{base}/api/v1/query?query=cairn_build_info"))["data"]["result"])
        drive_load(port, seconds=6)
        time.sleep(3)  # a few more scrapes after the load
        promtool_check(admin)
        scrape_healthy(base)
        evaluate_all(base)
        check_alerts_healthy(base, admin)
        check_alerts_in_trouble(base, port, tls_port, work)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
