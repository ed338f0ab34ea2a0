#!/usr/bin/env python3
"""Driver overhead (issue 5 item 5): CPU per request of `cairn-bench run` against `redis-benchmark`
at the same load, against the same server.

One Redis 7.0 (Debian `redis-server`, `save ""`, `appendonly no`) is started on an ephemeral
loopback port, pinned to CPU 0; each driver runs pinned to CPU 1 (when the machine has 2+ CPUs)
with the same operation, connections, pipeline depth, request count, value size and key space,
alternating, for --rounds rounds. The driver's CPU time (user + system, from the kernel's
accounting of the finished child) is divided by the requests it sent. `cairn-bench` checks every
reply (that is its job) but skips its prefill and final read-back here (`--no-prefill
--no-final-check`, `--warmup 0s`), so both drivers send exactly the measured requests.

Usage:
    e2e/bench/driver_overhead.py [--cairn-bench target/release/cairn-bench] [--rounds 3]
                                 [--requests 200000]

Prints a markdown table; never asserts on speed.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

# Same directory: the shared port and readiness helpers.
from durable_bench import free_port, wait_ready

REPO = Path(__file__).resolve().parents[2]
CELLS = [("set", 1, 1), ("set", 8, 1), ("set", 64, 1), ("set", 8, 16), ("get", 8, 1), ("get", 64, 16)]


def pin(cpu: int) -> list[str]:
    return ["taskset", "-c", str(cpu)] if (os.cpu_count() or 1) >= 2 else []


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """Runs argv to completion; returns (its CPU seconds, wall seconds)."""
    before, started = children_cpu(), time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return children_cpu() - before, time.monotonic() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cairn-bench", default=str(REPO / "target/release/cairn-bench"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--cells", help="comma-separated op:clients:pipeline cells (default: all six)")
    p.add_argument("--baseline", help="another cairn-bench binary (e.g. an earlier build), measured in the "
                                      "same rounds as a third driver for a before/after column")
    args = p.parse_args()
    cells = CELLS
    if args.cells:
        cells = [(op, int(c), int(pl)) for op, c, pl in (cell.split(":") for cell in args.cells.split(","))]
    for tool in ("redis-server", "redis-benchmark", "redis-cli", args.cairn_bench):
        if shutil.which(tool) is None and not Path(tool).exists():
            raise SystemExit(f"missing {tool}")
    work = Path(tempfile.mkdtemp(prefix="driver-overhead-"))
    port = free_port()
    server = subprocess.Popen(pin(0) + ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                        "--appendonly", "no", "--dir", str(work)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, server)
        rows = []
        for op, clients, pipeline in cells:
            n = args.requests
            rb = pin(1) + ["redis-benchmark", "-p", str(port), "-t", op, "-c", str(clients), "-P", str(pipeline),
                           "-n", str(n), "-d", "32", "-r", "100000", "-q"]
            cb = pin(1) + [args.cairn_bench, "run", "--port", str(port), "--ops", op, "-c", str(clients),
                           "-P", str(pipeline), "-n", str(n), "-d", "32", "-r", "100000", "--warmup", "0s",
                           "--no-prefill", "--no-final-check", "--no-progress"]
            drivers = [("redis-benchmark", rb), ("cairn-bench", cb)]
            if args.baseline:
                drivers.append(("baseline", [args.baseline if a == args.cairn_bench else a for a in cb]))
            samples = {name: [] for name, _ in drivers}
            for _ in range(args.rounds):
                for name, argv in drivers:
                    cpu, wall = timed(argv)
                    samples[name].append((cpu / n * 1e6, n / wall))
            rb_cpu = statistics.median(s[0] for s in samples["redis-benchmark"])
            cb_cpu = statistics.median(s[0] for s in samples["cairn-bench"])
            rb_rate = statistics.median(s[1] for s in samples["redis-benchmark"])
            cb_rate = statistics.median(s[1] for s in samples["cairn-bench"])
            base_cpu = statistics.median(s[0] for s in samples["baseline"]) if args.baseline else None
            rows.append((op.upper(), clients, pipeline, rb_cpu, cb_cpu, rb_rate, cb_rate, base_cpu))
            base = f", baseline {base_cpu:.2f} µs/req" if base_cpu is not None else ""
            print(f"{op} c={clients} P={pipeline}: redis-benchmark {rb_cpu:.2f} µs/req, cairn-bench {cb_cpu:.2f} µs/req"
                  f"{base}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"Driver CPU per request against Redis 7.0 (`save \"\"`, pinned to CPU 0; drivers on CPU 1), "
          f"{args.requests:,} requests per run, median of {args.rounds} rounds; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    extra = " baseline µs CPU/req | baseline / redis-benchmark |" if args.baseline else ""
    print("| op | clients | pipeline | redis-benchmark µs CPU/req | cairn-bench µs CPU/req | cairn-bench / redis-benchmark "
          f"| redis-benchmark req/s | cairn-bench req/s |{extra}")
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.baseline else ""))
    for op, c, pl, rb_cpu, cb_cpu, rb_rate, cb_rate, base_cpu in rows:
        tail = f" {base_cpu:.2f} | {base_cpu / rb_cpu:.2f}x |" if base_cpu is not None else ""
        print(f"| {op} | {c} | {pl} | {rb_cpu:.2f} | {cb_cpu:.2f} | {cb_cpu / rb_cpu:.2f}x | {rb_rate:,.0f} | {cb_rate:,.0f} |"
              f"{tail}")


if __name__ == "__main__":
    main()
