#!/usr/bin/env python3
"""RESP over TLS: Cairn vs Redis 7.0 (Debian's build, OpenSSL), both TLS-only.

Both servers are pinned to one CPU (--server-cpus, default 0), `redis-benchmark --tls` to
another (--bench-cpus, default 1); the servers alternate within each round, and the table shows
the median requests/s per cell and the ratio. Redis runs `appendonly yes`, `appendfsync
everysec`; Cairn its default `async` tier. Certificates (a CA and a server certificate for
127.0.0.1) are made with the `openssl` command in a temporary directory. A benchmark program,
not a test: it prints a table and asserts nothing.

    python3 e2e/bench/tls_bench.py --rounds 3
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from certs import make_pki  # noqa: E402  (e2e/lib/certs.py)

CELLS = [("set", 8, 1), ("get", 8, 1), ("set", 64, 1), ("get", 64, 1), ("set", 64, 16), ("get", 64, 16)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(kind, args, port, data_dir, pki):
    cert, key = os.path.join(pki, "tls.crt"), os.path.join(pki, "tls.key")
    if kind == "cairn":
        return [args.cairn_bin, "--port", "off", "--native-port", "off", "--admin-port", str(free_port()),
                "--tls-port", str(port), "--tls-cert-file", cert, "--tls-key-file", key,
                "--tls-auth-clients", "no", "--data-dir", data_dir]
    return [args.redis_bin, "--port", "0", "--tls-port", str(port), "--tls-cert-file", cert,
            "--tls-key-file", key, "--tls-auth-clients", "no", "--dir", data_dir, "--save", "",
            "--appendonly", "yes", "--appendfsync", "everysec"]


def wait_listening(port, deadline=10.0):
    end = time.time() + deadline
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def run_cell(kind, cell, args, pki):
    test, clients, pipeline = cell
    data_dir = tempfile.mkdtemp(prefix=f"tls-bench-{kind}-")
    port = free_port()
    cmd = ["taskset", "-c", args.server_cpus, *server_command(kind, args, port, data_dir, pki)]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_listening(port):
            return None
        requests = args.requests * (10 if pipeline > 1 else 1)
        bench = ["taskset", "-c", args.bench_cpus, args.benchmark_bin, "--tls", "--cacert",
                 os.path.join(pki, "ca.crt"), "-h", "127.0.0.1", "-p", str(port), "-t", test, "-c", str(clients),
                 "-P", str(pipeline), "-n", str(requests), "-d", "32", "-r", "100000", "-q"]
        try:
            out = subprocess.run(bench, capture_output=True, text=True, timeout=args.timeout).stdout
        except subprocess.TimeoutExpired:
            return None
        found = re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
        return float(found[-1]) if found else None
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cairn-bin", default="target/release/cairn")
    p.add_argument("--redis-bin", default="redis-server")
    p.add_argument("--benchmark-bin", default="redis-benchmark")
    p.add_argument("--server-cpus", default="0")
    p.add_argument("--bench-cpus", default="1")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=200000, help="-n at pipeline 1 (10x at pipeline 16)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one redis-benchmark run may take")
    args = p.parse_args()
    pki = tempfile.mkdtemp(prefix="tls-bench-pki-")
    try:
        make_pki(pki)
        results = {cell: {"cairn": [], "redis": []} for cell in CELLS}
        for round_index in range(args.rounds):
            order = ["cairn", "redis"] if round_index % 2 == 0 else ["redis", "cairn"]
            for cell in CELLS:
                for kind in order:
                    rps = run_cell(kind, cell, args, pki)
                    if rps is not None:
                        results[cell][kind].append(rps)
                print(f"round {round_index + 1} {cell}: cairn {results[cell]['cairn'][-1:]} "
                      f"redis {results[cell]['redis'][-1:]}", file=sys.stderr)
        print(f"\n| op | clients | pipeline | Redis TLS req/s | Cairn TLS req/s | Cairn/Redis | runs |")
        print("|---|--:|--:|--:|--:|--:|--:|")
        for (test, clients, pipeline), got in results.items():
            if not got["cairn"] or not got["redis"]:
                print(f"| {test.upper()} | {clients} | {pipeline} | - | - | failed | - |")
                continue
            c, r = statistics.median(got["cairn"]), statistics.median(got["redis"])
            print(f"| {test.upper()} | {clients} | {pipeline} | {r:,.0f} | {c:,.0f} | {c / r:.2f}x "
                  f"| {len(got['cairn'])}/{len(got['redis'])} |")
    finally:
        shutil.rmtree(pki, ignore_errors=True)


if __name__ == "__main__":
    main()
