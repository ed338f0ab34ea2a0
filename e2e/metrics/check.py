#!/usr/bin/env python3
"""Cairn's /metrics and dashboards against a real Prometheus (Debian `prometheus`).

Starts Cairn (ephemeral loopback ports) and Prometheus (loopback, 1 s scrape of Cairn's admin
port, temporary storage), drives load with redis-benchmark, then:
  1. `promtool check metrics` on /metrics (text format) must print nothing;
  2. Prometheus's scrape of Cairn (OpenMetrics) must be healthy;
  3. every panel query of every dashboard in dashboards/ (Grafana variables substituted) must
     evaluate through Prometheus's HTTP API with status success and a non-empty result.

Usage: check.py [--cairn PATH] [--keep]   (env CAIRN_BIN also names the binary)
"""

import argparse
import json
import os
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


def start_cairn(binary: str, work: Path) -> tuple[subprocess.Popen, int, str]:
    log = open(work / "cairn.log", "w")
    proc = subprocess.Popen(
        [binary, "--port", "0", "--admin-port", "0", "--native-port", "0", "--bind", HOST, "--data-dir", str(work / "data"),
         "--log-format", "json", "--threads", "1"],
        stdout=log, stderr=subprocess.STDOUT)

    def ready():
        for line in (work / "cairn.log").read_text().splitlines():
            if "Ready to accept connections" in line:
                fields = json.loads(line)["fields"]
                return fields["addr"], fields["admin_addr"]
        if proc.poll() is not None:
            sys.exit(f"FAIL: cairn exited: {(work / 'cairn.log').read_text()}")
        return None

    addr, admin = wait_for("cairn to start", ready)
    return proc, int(addr.rsplit(":", 1)[1]), admin


def start_prometheus(admin: str, work: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    config = work / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
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
        query = substitute(expr)
        url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})
        try:
            reply = json.loads(http_get(url))
        except urllib.error.HTTPError as e:
            failures.append(f"{where}: {query}: HTTP {e.code}: {e.read().decode()}")
            continue
        result = reply.get("data", {}).get("result", [])
        if reply.get("status") != "success":
            failures.append(f"{where}: {query}: {reply}")
        elif not result:
            failures.append(f"{where}: {query}: empty result")
    for failure in failures:
        print(f"FAIL {failure}")
    if failures:
        sys.exit(f"FAIL: {len(failures)} of {count} dashboard queries")
    print(f"ok   {count} dashboard queries evaluate to non-empty results")
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    parser.add_argument("--cairn", default=os.environ.get("CAIRN_BIN", f"{target}/release/cairn"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    for tool in ["prometheus", "promtool", "redis-benchmark", "redis-cli"]:
        if not shutil.which(tool):
            sys.exit(f"FAIL: {tool} not found (e2e/install-deps.sh installs it)")
    work = Path(tempfile.mkdtemp(prefix="cairn-metrics-e2e-"))
    procs = []
    try:
        cairn, port, admin = start_cairn(args.cairn, work)
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
