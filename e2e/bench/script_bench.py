#!/usr/bin/env python3
"""Lua scripts: Cairn vs Redis 7.0 with redis-benchmark (EVAL, EVALSHA, FCALL).

Starts Redis (appendonly yes, appendfsync everysec, as the foundation table)
and one or more Cairn binaries (default durability), each pinned to the same
CPU with redis-benchmark on another, and runs every cell against each server
in turn, several rounds, median per cell. Prints a Markdown table of ops/s
and the ratio of each Cairn binary to Redis. A program, not a test: nothing
here asserts a speed.

    python3 e2e/bench/script_bench.py --cairn-bin before=/tmp/cairn-old --cairn-bin after=target/release/cairn
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)
import processes  # noqa: E402  (e2e/lib/processes.py: terminate, then kill)

SET_SCRIPT = "return redis.call('set', KEYS[1], ARGV[1])"
LIBRARY = "#!lua name=benchlib\nredis.register_function('bset', function(keys, args) return redis.call('set', keys[1], args[1]) end)"


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def wait_ready(port, proc):
    for _ in range(100):
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        if cli(port, "PING") == "PONG":
            return
        time.sleep(0.1)
    raise SystemExit(f"server on port {port} did not answer PING")


def start(kind, binary, cpus, threads):
    port = ports.free_port()
    data = tempfile.mkdtemp(prefix="script-bench-")
    if kind == "redis":
        cmd = [binary, "--port", str(port), "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
               "--dir", data]
    else:
        cmd = [binary, "--threads", str(threads), "--port", str(port), "--native-port", "0", "--admin-port", "0",
               "--data-dir", data]
    proc = subprocess.Popen(["taskset", "-c", cpus, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port, data


def stop(proc, data):
    processes.stop(proc)
    shutil.rmtree(data, ignore_errors=True)


def workload_args(name, sha):
    if name == "EVAL":
        return ["EVAL", SET_SCRIPT, "1", "key:__rand_int__", "value"]
    if name == "EVALSHA":
        return ["EVALSHA", sha, "1", "key:__rand_int__", "value"]
    if name == "FCALL":
        return ["FCALL", "bset", "1", "key:__rand_int__", "value"]
    raise SystemExit(f"unknown workload {name}")


def run_cell(port, bench_cpus, workload, clients, pipeline, requests, sha):
    cmd = ["taskset", "-c", bench_cpus, "redis-benchmark", "-p", str(port), "-n", str(requests), "-c", str(clients),
           "-P", str(pipeline), "-r", "100000", "-q", *workload_args(workload, sha)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout.replace("\r", "\n")
    rates = re.findall(r"([0-9.]+) requests per second", out)
    if not rates:
        raise SystemExit(f"no result from {' '.join(cmd)}: {out[-300:]}")
    return float(rates[-1])


def prepare(port):
    sha = cli(port, "SCRIPT", "LOAD", SET_SCRIPT)
    cli(port, "FUNCTION", "LOAD", "REPLACE", LIBRARY)
    # One run of each, so that a server that learns from first runs has seen them.
    cli(port, "EVALSHA", sha, "1", "warm", "up")
    cli(port, "FCALL", "bset", "1", "warm", "up")
    return sha


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cairn-bin", action="append", default=[],
                        help="LABEL=PATH of a Cairn binary (repeatable; default: cairn=target/release/cairn)")
    parser.add_argument("--redis-bin", default="redis-server")
    parser.add_argument("--workloads", default="EVAL,EVALSHA,FCALL")
    parser.add_argument("--clients", default="1,8,64")
    parser.add_argument("--pipelines", default="1,16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100000, help="requests per run at pipeline 1 (x4 at 16)")
    parser.add_argument("--server-cpus", default="0")
    parser.add_argument("--bench-cpus", default="1")
    parser.add_argument("--cairn-threads", type=int, default=1, help="Cairn's workers (--threads)")
    args = parser.parse_args()

    cairns = [tuple(spec.split("=", 1)) for spec in (args.cairn_bin or ["cairn=target/release/cairn"])]
    servers = [("redis", "Redis", args.redis_bin)] + [("cairn", label, os.path.abspath(path)) for label, path in cairns]
    cells = [(w, int(c), int(p)) for w in args.workloads.split(",") for c in args.clients.split(",")
             for p in args.pipelines.split(",")]
    results = {(label, cell): [] for _, label, _ in servers for cell in cells}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for round_number in range(args.rounds):
        for cell in cells:
            workload, clients, pipeline = cell
            requests = args.requests * (4 if pipeline > 1 else 1)
            for kind, label, binary in servers:
                proc, port, data = start(kind, binary, args.server_cpus, args.cairn_threads)
                try:
                    sha = prepare(port)
                    rate = run_cell(port, args.bench_cpus, workload, clients, pipeline, requests, sha)
                finally:
                    stop(proc, data)
                results[(label, cell)].append(rate)
                print(f"round {round_number + 1} {workload} c={clients} P={pipeline} {label}: {rate:,.0f}/s", flush=True)

    labels = [label for _, label, _ in servers]
    print()
    print(f"Scripts, {args.rounds} round(s), median ops/s, started {started}; servers on CPU {args.server_cpus}, "
          f"redis-benchmark on CPU {args.bench_cpus}; Redis appendfsync everysec, Cairn default durability, "
          f"{args.cairn_threads} worker(s).")
    print()
    print("| workload | clients | pipeline | " + " | ".join(labels) + " |")
    print("|---|---:|---:|" + "---:|" * len(labels))
    for cell in cells:
        redis = statistics.median(results[("Redis", cell)])
        row = [f"{redis:,.0f}"]
        for label in labels[1:]:
            median = statistics.median(results[(label, cell)])
            row.append(f"{median:,.0f} ({median / redis:.2f}x)")
        workload, clients, pipeline = cell
        print(f"| {workload} | {clients} | {pipeline} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
