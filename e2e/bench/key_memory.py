#!/usr/bin/env python3
"""Bytes per small string key: Redis 7.0 against one or more Cairn binaries.

Two experiments, each server alone, pinned to one CPU (`taskset`), the load generator on the other:

- `fill`: N keys of 16 bytes (`key:%012d`) with 100-byte values, loaded with `redis-cli --pipe`;
  reports INFO `used_memory` and the resident set size (`VmRSS`) before and after, per key.
- `maxmemory`: `maxmemory` set to the server's own `used_memory` plus 20 MiB, `allkeys-lru`, then
  `redis-benchmark -t set -n 300000 -r 100000000 -d 100 -c 4`; reports the keys left, their cost
  (20 MiB / keys) and the evictions.

Redis runs with `--save '' --appendonly no`; Cairn with `--threads 1` in its default `async` tier
(`--durability` changes that). Each measurement holds /tmp/cairn-bench.lock (the machine's shared
benchmark lock) only while its server runs. Prints markdown tables; never asserts.

Usage:
    e2e/bench/key_memory.py --cairn NAME=BIN [--cairn NAME=BIN ...] [--keys 1000000]
                            [--experiments fill,maxmemory] [--rounds 1]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from durable_bench import free_port, wait_ready

LOCK = "/tmp/cairn-bench.lock"
SERVER_CPU = "0"
CLIENT_CPU = "1"
VALUE = b"v" * 100


@contextmanager
def bench_lock():
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cli(port: int, *args: str) -> str:
    r = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True)
    return r.stdout.strip()


def info(port: int) -> dict[str, str]:
    fields = {}
    for line in cli(port, "info").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v.strip()
    return fields


def write_load(path: Path, keys: int) -> None:
    with open(path, "wb") as f:
        for i in range(keys):
            key = b"key:%012d" % i
            f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(VALUE), VALUE))


def server_argv(name: str, binary: str, port: int, data: Path, durability: str) -> list[str]:
    if name == "Redis":
        return ["taskset", "-c", SERVER_CPU, "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(data)]
    return ["taskset", "-c", SERVER_CPU, binary, "--port", str(port), "--admin-port", "0", "--native-port", "0",
            "--threads", "1", "--durability", durability, "--data-dir", str(data)]


@contextmanager
def running(argv: list[str], port: int):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        time.sleep(0.5)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def fill(argv: list[str], port: int, load: Path, keys: int) -> dict[str, float]:
    with running(argv, port) as proc:
        before = info(port)
        rss0 = rss_bytes(proc.pid)
        with open(load, "rb") as f:
            subprocess.run(["taskset", "-c", CLIENT_CPU, "redis-cli", "-p", str(port), "--pipe"], stdin=f, check=True,
                           stdout=subprocess.DEVNULL)
        time.sleep(2)
        after = info(port)
        rss1 = rss_bytes(proc.pid)
        dbsize = int(cli(port, "dbsize"))
        if dbsize != keys:
            raise RuntimeError(f"expected {keys} keys, server has {dbsize}")
        not_counted = int(after.get("mem_not_counted_for_evict", "0")) - int(before.get("mem_not_counted_for_evict", "0"))
        used = int(after["used_memory"]) - int(before["used_memory"])
        return {"used": used, "used_evict": used - not_counted, "rss": rss1 - rss0,
                "encoding": cli(port, "object", "encoding", "key:000000000007")}


def maxmemory(argv: list[str], port: int) -> dict[str, float]:
    with running(argv, port):
        base = int(info(port)["used_memory"])
        limit = base + 20 * 1024 * 1024
        cli(port, "config", "set", "maxmemory", str(limit))
        cli(port, "config", "set", "maxmemory-policy", "allkeys-lru")
        subprocess.run(["taskset", "-c", CLIENT_CPU, "redis-benchmark", "-p", str(port), "-t", "set", "-n", "300000",
                        "-r", "100000000", "-d", "100", "-c", "4", "-q"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        after = info(port)
        keys = int(cli(port, "dbsize"))
        return {"keys": keys, "used": int(after["used_memory"]), "evicted": int(after["evicted_keys"]),
                "per_key": 20 * 1024 * 1024 / max(keys, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cairn", action="append", default=[], help="NAME=BIN (repeatable)")
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--experiments", default="fill,maxmemory")
    p.add_argument("--durability", default="async")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--no-redis", action="store_true")
    args = p.parse_args()
    servers = ([] if args.no_redis else [("Redis", "redis-server")]) + [tuple(c.split("=", 1)) for c in args.cairn]
    experiments = args.experiments.split(",")
    fills, maxes = [], []
    with tempfile.TemporaryDirectory(prefix="key-memory-") as work:
        work_dir = Path(work)
        load = work_dir / "load.resp"
        if "fill" in experiments:
            write_load(load, args.keys)
        for rnd in range(args.rounds):
            for name, binary in servers:
                for exp in experiments:
                    port = free_port()
                    data = work_dir / f"{name}-{exp}-{rnd}"
                    data.mkdir()
                    argv = server_argv(name, binary, port, data, args.durability)
                    with bench_lock():
                        if exp == "fill":
                            r = fill(argv, port, load, args.keys)
                            fills.append((name, r))
                        else:
                            r = maxmemory(argv, port)
                            maxes.append((name, r))
                    print(f"round {rnd} {name} {exp}: {r}", flush=True)
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if fills:
        print(f"\n{args.keys:,} keys of 16 bytes, 100-byte values (redis-cli --pipe)\n")
        print("| server | OBJECT ENCODING | used_memory per key | used_memory minus log buffers, per key "
              "| RSS per key |")
        print("|---|---|---:|---:|---:|")
        for name, r in fills:
            print(f"| {name} | {r['encoding']} | {r['used'] / args.keys:.1f} | {r['used_evict'] / args.keys:.1f} "
                  f"| {r['rss'] / args.keys:.1f} |")
    if maxes:
        print("\nmaxmemory = used_memory + 20 MiB, allkeys-lru, "
              "redis-benchmark -t set -n 300000 -r 100000000 -d 100 -c 4\n")
        print("| server | keys left | used_memory | evicted keys | bytes per key (20 MiB / keys) |")
        print("|---|---:|---:|---:|---:|")
        for name, r in maxes:
            print(f"| {name} | {r['keys']:,} | {r['used']:,} | {r['evicted']:,} | {r['per_key']:.0f} |")


if __name__ == "__main__":
    main()
