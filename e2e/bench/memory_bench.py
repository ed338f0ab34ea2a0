#!/usr/bin/env python3
"""Memory (issue 4 item 7): resident set size of Cairn and Redis 7.0 holding the same small
collections: 1M hashes of 5 small fields, and 1M lists of 5 small elements.

Each server starts fresh on an ephemeral loopback port without persistence (Redis `save ""`,
`appendonly no`; Cairn `--durability none`), one worker. The data is generated here as RESP and
loaded with `redis-cli --pipe`; then the script waits for the server to settle, reads `VmRSS`
from /proc/PID/status, and subtracts the RSS the empty server had. Prints a markdown table;
never asserts.

Usage:
    e2e/bench/memory_bench.py [--cairn-bin target/release/cairn] [--keys 1000000]
"""

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

# Same directory: the shared port and readiness helpers.
from durable_bench import free_port, wait_ready

REPO = Path(__file__).resolve().parents[2]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def command(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def write_load(path: Path, kind: str, keys: int) -> None:
    with open(path, "wb") as f:
        for i in range(keys):
            if kind == "hash":
                f.write(command("HSET", f"user:{i}", "name", f"n{i}", "age", str(i % 90), "city", "paris",
                                "score", str(i % 1000), "active", "1"))
            else:
                f.write(command("RPUSH", f"queue:{i}", "a1", "b22", "c333", str(i % 1000), "e"))


def measure(argv: list[str], port: int, load: Path, keys: int) -> tuple[int, int, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        time.sleep(0.5)
        empty = rss_kib(proc.pid)
        with open(load, "rb") as f:
            subprocess.run(["redis-cli", "-p", str(port), "--pipe"], stdin=f, check=True,
                           stdout=subprocess.DEVNULL)
        time.sleep(2)
        full = rss_kib(proc.pid)
        dbsize = subprocess.run(["redis-cli", "-p", str(port), "dbsize"], capture_output=True, text=True).stdout.strip()
        sample = "user:7" if "hash" in load.name else "queue:7"
        encoding = subprocess.run(["redis-cli", "-p", str(port), "object", "encoding", sample],
                                  capture_output=True, text=True).stdout.strip()
        if dbsize != str(keys):
            raise RuntimeError(f"expected {keys} keys, server has {dbsize}")
        return empty, full, encoding
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cairn-bin", default=str(REPO / "target/release/cairn"))
    p.add_argument("--keys", type=int, default=1_000_000)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as work:
        work_dir = Path(work)
        for kind in ("hash", "list"):
            load = work_dir / f"{kind}.resp"
            write_load(load, kind, args.keys)
            for name in ("Redis", "Cairn"):
                port = free_port()
                data = work_dir / f"{name}-{kind}"
                data.mkdir()
                if name == "Redis":
                    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", str(data)]
                else:
                    argv = [args.cairn_bin, "--port", str(port), "--admin-port", "0", "--native-port", "0", "--threads", "1",
                            "--durability", "none", "--data-dir", str(data)]
                empty, full, encoding = measure(argv, port, load, args.keys)
                rows.append((kind, name, empty, full, encoding))
                print(f"{kind} {name}: empty {empty} KiB, loaded {full} KiB, encoding {encoding}", flush=True)
    print()
    print(f"RSS for {args.keys:,} small collections (5 fields / 5 elements each), one server at a time, "
          f"no persistence; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| data | server | OBJECT ENCODING | RSS loaded MiB | RSS minus empty server MiB | bytes per key | vs Redis |")
    print("|---|---|---|---:|---:|---:|---:|")
    redis_net = {kind: full - empty for kind, name, empty, full, _ in rows if name == "Redis"}
    for kind, name, empty, full, encoding in rows:
        net = full - empty
        count = f"{args.keys / 1e6:g}M" if args.keys % 100_000 == 0 else f"{args.keys:,}"
        label = f"{count} hashes × 5 fields" if kind == "hash" else f"{count} lists × 5 elements"
        print(f"| {label} | {name} | {encoding} | {full / 1024:,.0f} | {net / 1024:,.0f} | "
              f"{net * 1024 / args.keys:,.0f} | {net / redis_net[kind]:.2f}x |")


if __name__ == "__main__":
    main()
