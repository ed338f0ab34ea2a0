#!/usr/bin/env python3
"""Foundation benchmark: Cairn against Redis 7.0 with redis-benchmark (issue 2, item 8).

A program, not a test: it prints a table and writes it into docs/benchmarks.md; it never
asserts on timings. Python 3.11 standard library only.

What it does
------------
1. Starts its own Redis (Debian `redis-server`, `save ""`, `appendonly no`, or with
   `--redis-aof everysec` `appendonly yes` + `appendfsync everysec`) and its own Cairn
   (`target/release/cairn --port P --bind 127.0.0.1 --data-dir TMP --cpus 0`), each on an
   ephemeral loopback port, each in a fresh temporary directory, each pinned with `taskset`
   to the server CPU list (default `0`). It never touches the system's Redis service.
2. Runs `redis-benchmark -h 127.0.0.1 -p P -d 32 -r 100000 -t T -c C -P PIPE -n N --csv`,
   pinned to the client CPU list (default `1`), for every cell T x C x PIPE
   (default set,get,incr x 1,8,64 x 1,16), for several rounds (default 3), alternating the
   two servers cell by cell; within a round the server that goes first alternates from cell to
   cell and from round to round, so slow drift of the machine hits both sides equally.
3. Reports the median over rounds per cell of ops/s, p50 and p99 latency (ms, as
   redis-benchmark prints them) and the server's CPU seconds per million operations, from
   `/proc/PID/stat` utime+stime (all threads of the server process) plus cutime+cstime (its
   reaped children: Redis's AOF-rewrite forks; a child reaped in a later run counts there)
   sampled just before and just after each redis-benchmark run. The server processes live
   across all runs.

Choices (documented here because they change the numbers)
---------------------------------------------------------
* No FLUSHALL between runs. Each server starts empty in a fresh directory and is prefilled
  once with SET over the whole key range (`-r`), so GET mostly hits and the keyspace stays at
  about `-r` keys of 32 bytes (plus up to `-r` INCR counters once the INCR cells have run).
  Both servers see the same sequence of commands, so they hold the same data at each cell.
* Warm-up: the prefill warms each server as a whole; then, before the measured rounds, every
  cell is run once against each server as a short probe. The probe is discarded, except that
  its rate sizes N for that cell (below), so the measured runs start with warm connections,
  caches and allocator arenas for that access pattern.
* N per cell: N = (the faster server's probe rate) x `--seconds` (default 2 s, so each run
  takes about 1.5–3 s), the same N for both servers. `--ops N` fixes N for every cell.
  `--quick` is a smoke mode: short runs, one round, a smaller prefill.
* Each redis-benchmark run is killed after `--run-timeout` seconds (default 10 x `--seconds`,
  at least 30); a failed or timed-out run is recorded with its error and the program goes on,
  so all load is bounded in time. Anything redis-benchmark prints besides its CSV (e.g. an
  error reply from the server, or `Could not fetch server CONFIG`) is collected and reported.
* Every process started here is stopped by its PID (SIGTERM, then SIGKILL after a grace
  period) in a `finally` block, on normal exit, failure, Ctrl-C or SIGTERM; children also get
  PR_SET_PDEATHSIG so they die with this program even if it is SIGKILLed.

Usage (from the repository root)
--------------------------------
    python3 e2e/bench/foundation_bench.py                 # full run, writes docs/benchmarks.md
    python3 e2e/bench/foundation_bench.py --quick --no-write
    # Redis against Redis, to check the harness itself (the "Cairn" column runs this command):
    python3 e2e/bench/foundation_bench.py --quick --cairn-cmd \\
        'redis-server --port {port} --bind 127.0.0.1 --save "" --appendonly no --dir {dir}'
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import datetime
import io
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)

REPO_ROOT = Path(__file__).resolve().parents[2]
SECTION_BEGIN = "<!-- foundation-bench:begin -->"
SECTION_END = "<!-- foundation-bench:end -->"
CSV_COLUMNS = ("test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
               "p95_latency_ms", "p99_latency_ms", "max_latency_ms")
READY_TIMEOUT_S = 15.0
STOP_GRACE_S = 10.0
PR_SET_PDEATHSIG = 1
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------- data types

@dataclass(frozen=True)
class Cell:
    """One benchmark configuration: a command, a client count and a pipeline depth."""
    test: str
    clients: int
    pipeline: int

    def label(self) -> str:
        return f"{self.test} c={self.clients} P={self.pipeline}"


@dataclass
class ServerSpec:
    """How to start one side of the comparison and how to describe it."""
    name: str
    argv_template: list[str]  # may contain {port} and {dir}
    durability: str
    version: str = ""


@dataclass
class Server:
    """A running server process that this program owns."""
    spec: ServerSpec
    process: subprocess.Popen
    port: int
    data_dir: Path
    log_path: Path
    log_file: io.TextIOBase
    keys_after_prefill: str = "n/a"


@dataclass
class RunResult:
    """One redis-benchmark run against one server."""
    ops: int
    wall_s: float
    rps: float = 0.0
    latency_ms_p50: float = 0.0
    latency_ms_p99: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    error: str = ""
    messages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def cpu_s_per_mops(self) -> float:
        return self.server_cpu_s / (self.ops / 1e6) if self.ops else 0.0

    @property
    def client_core_use(self) -> float:
        """Fraction of a core redis-benchmark used; near 1.0 the client is the bottleneck."""
        return self.client_cpu_s / self.wall_s if self.wall_s else 0.0


# ----------------------------------------------------------------------------- arguments

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Cairn vs Redis 7.0 with redis-benchmark; prints a table and writes "
                    "docs/benchmarks.md.")
    p.add_argument("--cairn-bin", default=str(REPO_ROOT / "target/release/cairn"),
                   help="Cairn binary (default: target/release/cairn)")
    p.add_argument("--cairn-durability", default=None,
                   choices=["none", "async", "everysec", "sync"],
                   help="pass --durability MODE to Cairn (default: not passed)")
    p.add_argument("--cairn-arg", action="append", default=[],
                   help="extra argument for Cairn (repeatable)")
    p.add_argument("--cairn-cmd", default=None,
                   help="run this command instead of Cairn ({port} and {dir} are substituted), "
                        "e.g. a redis-server command line to check the harness")
    p.add_argument("--cairn-label", default=None,
                   help="durability label for the Cairn side (default: derived)")
    p.add_argument("--redis-bin", default="redis-server")
    p.add_argument("--redis-aof", default="no", choices=["no", "everysec"],
                   help="no: appendonly no; everysec: appendonly yes, appendfsync everysec")
    p.add_argument("--benchmark-bin", default="redis-benchmark")
    p.add_argument("--server-cpus", default="0", help="taskset CPU list for both servers")
    p.add_argument("--bench-cpus", default="1", help="taskset CPU list for redis-benchmark")
    p.add_argument("--tests", default="set,get,incr")
    p.add_argument("--clients", default="1,8,64")
    p.add_argument("--pipelines", default="1,16")
    p.add_argument("--rounds", type=int, default=None, help="default 3 (1 with --quick)")
    p.add_argument("--seconds", type=float, default=None,
                   help="target duration of one run (default 2.0; 0.4 with --quick)")
    p.add_argument("--ops", type=int, default=None, help="fixed -n for every cell (no sizing)")
    p.add_argument("--data-size", type=int, default=32, help="redis-benchmark -d")
    p.add_argument("--keyspace", type=int, default=100000, help="redis-benchmark -r")
    p.add_argument("--prefill-ops", type=int, default=None,
                   help="SETs to prefill each server (default 10x keyspace; 3x with --quick)")
    p.add_argument("--run-timeout", type=float, default=None,
                   help="kill a redis-benchmark run after this many seconds")
    p.add_argument("--quick", action="store_true", help="smoke mode: short runs, one round")
    p.add_argument("--output", default=str(REPO_ROOT / "docs/benchmarks.md"))
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/ alone")
    p.add_argument("--raw-json", default=None, help="also write every run's result here")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.seconds = args.seconds or (0.4 if args.quick else 2.0)
    args.prefill_ops = args.prefill_ops or args.keyspace * (3 if args.quick else 10)
    args.run_timeout = args.run_timeout or max(30.0, 10 * args.seconds)
    return args


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def build_cells(args: argparse.Namespace) -> list[Cell]:
    return [Cell(test, int(c), int(p))
            for test in split_list(args.tests)
            for c in split_list(args.clients)
            for p in split_list(args.pipelines)]


# ----------------------------------------------------------------------------- server specs

def redis_spec(args: argparse.Namespace) -> ServerSpec:
    argv = [args.redis_bin, "--port", "{port}", "--bind", "127.0.0.1", "--save", "",
            "--dir", "{dir}", "--daemonize", "no"]
    if args.redis_aof == "everysec":
        argv += ["--appendonly", "yes", "--appendfsync", "everysec"]
        durability = 'AOF: appendonly yes, appendfsync everysec; save ""'
    else:
        argv += ["--appendonly", "no"]
        durability = 'none: appendonly no, save ""'
    return ServerSpec("Redis", argv, durability, command_version([args.redis_bin, "--version"]))


def cairn_spec(args: argparse.Namespace) -> ServerSpec:
    if args.cairn_cmd:
        argv = shlex.split(args.cairn_cmd)
        label = args.cairn_label or f"stand-in command: {args.cairn_cmd}"
        return ServerSpec("Cairn", argv, label, command_version([argv[0], "--version"]))
    argv = [args.cairn_bin, "--port", "{port}", "--bind", "127.0.0.1", "--data-dir", "{dir}", "--admin-port", "0", "--native-port", "0",
            "--cpus", args.server_cpus]
    if args.cairn_durability:
        argv += ["--durability", args.cairn_durability]
    argv += args.cairn_arg
    label = args.cairn_label or (f"--durability {args.cairn_durability}" if args.cairn_durability
                                 else "server default (no --durability flag)")
    return ServerSpec("Cairn", argv, label, command_version([args.cairn_bin, "--version"]))


def command_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if out.returncode == 0 and lines else ""


# ----------------------------------------------------------------------------- processes

def die_with_parent() -> None:
    """preexec_fn: make the child get SIGTERM when this program dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    return ports.free_port("127.0.0.1")


def start_server(spec: ServerSpec, cpus: str) -> Server:
    data_dir = Path(tempfile.mkdtemp(prefix=f"foundation-bench-{spec.name.lower()}-"))
    port = free_port()
    argv = ["taskset", "-c", cpus] + [a.format(port=port, dir=data_dir) for a in spec.argv_template]
    log_path = data_dir / "server.log"
    log_file = open(log_path, "w")
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file,
                               stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    server = Server(spec, process, port, data_dir, log_path, log_file)
    try:
        wait_ready(server)
    except Exception:
        stop_server(server)
        raise
    return server


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last_error = ""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.spec.name} exited with {server.process.returncode} "
                               f"before answering PING; log:\n{tail(server.log_path)}")
        try:
            # PING answers while a server is still loading its data; EXISTS does not.
            if resp_call(server.port, "PING") == "PONG":
                resp_call(server.port, "EXISTS", "foundation-bench:ready")
                return
        except (OSError, RuntimeError) as e:
            last_error = str(e)
        time.sleep(0.05)
    raise RuntimeError(f"{server.spec.name} did not answer PING on port {server.port} within "
                       f"{READY_TIMEOUT_S:.0f} s ({last_error}); log:\n{tail(server.log_path)}")


def stop_server(server: Server) -> None:
    stop_process(server.process)
    server.log_file.close()
    shutil.rmtree(server.data_dir, ignore_errors=True)


def stop_process(process: subprocess.Popen) -> None:
    """Stop one process by its PID: SIGTERM, wait, then SIGKILL."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_GRACE_S)


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def cpu_seconds(pid: int) -> float:
    """CPU time of a server: utime + stime of the whole process (all threads) plus cutime +
    cstime, the CPU of the children it has reaped (Redis forks a child for each AOF rewrite;
    Cairn writes its snapshots on a thread, already in utime + stime), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14 to 17.
    return sum(int(f) for f in fields[11:15]) / CLOCK_TICKS_PER_S


def children_cpu_seconds() -> float:
    """CPU of reaped children; only redis-benchmark runs are reaped while servers run."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ----------------------------------------------------------------------------- a tiny RESP client

def resp_call(port: int, *args: str, timeout: float = 5.0):
    """Send one command, return the decoded reply (str, int, None, or a list); raise on -ERR."""
    payload = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload.encode())
        return read_reply(sock.makefile("rb"))


def read_reply(stream):
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise OSError("connection closed mid-reply")
    kind, body = line[:1], line[1:-2].decode(errors="replace")
    if kind in (b"+",):
        return body
    if kind == b"-":
        raise RuntimeError(body)
    if kind == b":":
        return int(body)
    if kind == b"$":
        return None if int(body) < 0 else stream.read(int(body) + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        return None if int(body) < 0 else [read_reply(stream) for _ in range(int(body))]
    raise OSError(f"unexpected reply line {line!r}")


def check_round_trip(server: Server) -> None:
    """Refuse to benchmark a server that does not store what it is given."""
    key, value = "foundation-bench:probe", "x" * 32
    resp_call(server.port, "SET", key, value)
    got = resp_call(server.port, "GET", key)
    if got != value:
        raise RuntimeError(f"{server.spec.name}: GET after SET returned {got!r}")
    resp_call(server.port, "DEL", key)


def key_count(server: Server) -> str:
    try:
        return str(resp_call(server.port, "DBSIZE"))
    except (OSError, RuntimeError) as e:
        return f"DBSIZE failed: {e}"


# ----------------------------------------------------------------------------- redis-benchmark

def run_benchmark(args: argparse.Namespace, server: Server, cell: Cell, ops: int) -> RunResult:
    argv = ["taskset", "-c", args.bench_cpus, args.benchmark_bin,
            "-h", "127.0.0.1", "-p", str(server.port), "-d", str(args.data_size),
            "-r", str(args.keyspace), "-t", cell.test, "-c", str(cell.clients),
            "-P", str(cell.pipeline), "-n", str(ops), "--csv"]
    pid = server.process.pid
    cpu_before, client_before = cpu_seconds(pid), children_cpu_seconds()
    start = time.monotonic()
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=args.run_timeout,
                             stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    except subprocess.TimeoutExpired:
        return RunResult(ops, time.monotonic() - start,
                         error=f"timed out after {args.run_timeout:.0f} s")
    wall_s = time.monotonic() - start
    result = RunResult(ops, wall_s, server_cpu_s=cpu_seconds(pid) - cpu_before,
                       client_cpu_s=children_cpu_seconds() - client_before)
    parse_benchmark_output(out, cell, result)
    if server.process.poll() is not None:
        result.error = f"server exited with {server.process.returncode}"
    return result


def parse_benchmark_output(out: subprocess.CompletedProcess, cell: Cell, result: RunResult) -> None:
    """Fill rps and latencies from the CSV; keep every other line as a message."""
    csv_lines = [ln for ln in out.stdout.splitlines() if ln.startswith('"')]
    other = [ln for ln in out.stdout.splitlines() + out.stderr.splitlines()
             if ln.strip() and not ln.startswith('"')]
    result.messages = unique(other)
    rows = list(csv.DictReader(csv_lines))
    row = next((r for r in rows if r.get("test", "").upper() == cell.test.upper()), None)
    if out.returncode != 0 or row is None:
        result.error = f"exit {out.returncode}, no CSV row for {cell.test.upper()}"
        return
    missing = [c for c in CSV_COLUMNS if c not in row]
    if missing:
        result.error = f"CSV lacks columns {missing}"
        return
    result.rps = float(row["rps"])
    result.latency_ms_p50 = float(row["p50_latency_ms"])
    result.latency_ms_p99 = float(row["p99_latency_ms"])


def unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(ln.strip() for ln in lines))


def prefill(args: argparse.Namespace, server: Server, problems: dict) -> None:
    result = run_benchmark(args, server, Cell("set", 64, 16), args.prefill_ops)
    log(f"  prefill {server.spec.name}: {args.prefill_ops} SETs, "
        f"{result.rps:,.0f} ops/s {result.error}")
    report_messages(server, "prefill", result, problems)
    server.keys_after_prefill = key_count(server)


def probe_ops(cell: Cell) -> int:
    """A short first run (about 0.2-0.4 s on this class of machine), used to size N."""
    return 4000 * cell.pipeline * (1 if cell.clients == 1 else 3)


def size_cells(args: argparse.Namespace, servers: list[Server],
               cells: list[Cell], problems: dict) -> dict[Cell, int]:
    """Warm up every cell on every server and choose N (same for both servers)."""
    ops_by_cell = {}
    for cell in cells:
        rates = []
        for server in servers:
            result = run_benchmark(args, server, cell, probe_ops(cell))
            report_messages(server, f"warm-up {cell.label()}", result, problems)
            if result.ok:
                rates.append(result.rps)
        fastest = max(rates, default=0.0)
        sized = round_up(int(fastest * args.seconds), 1000) if fastest else probe_ops(cell)
        ops_by_cell[cell] = args.ops or max(sized, probe_ops(cell))
        log(f"  {cell.label():22} warm-up {', '.join(f'{r:,.0f}' for r in rates)} ops/s "
            f"-> n={ops_by_cell[cell]}")
    return ops_by_cell


def round_up(value: int, step: int) -> int:
    return max(step, (value + step - 1) // step * step)


def run_rounds(args: argparse.Namespace, servers: list[Server], cells: list[Cell],
               ops_by_cell: dict[Cell, int], problems: dict) -> dict:
    """results[cell][server name] = [RunResult, ...], servers alternating cell by cell."""
    results = {cell: {s.spec.name: [] for s in servers} for cell in cells}
    for rnd in range(args.rounds):
        log(f"round {rnd + 1}/{args.rounds}")
        for index, cell in enumerate(cells):
            order = servers if (rnd + index) % 2 == 0 else list(reversed(servers))
            parts = []
            for server in order:
                result = run_benchmark(args, server, cell, ops_by_cell[cell])
                results[cell][server.spec.name].append(result)
                report_messages(server, cell.label(), result, problems)
                parts.append(f"{server.spec.name} {describe(result)}")
            log(f"  {cell.label():22} " + " | ".join(parts))
    return results


def describe(result: RunResult) -> str:
    if not result.ok:
        return f"ERROR ({result.error})"
    return (f"{result.rps:>11,.0f} ops/s p50 {result.latency_ms_p50:.3f} "
            f"p99 {result.latency_ms_p99:.3f} ms cpu {result.cpu_s_per_mops:.2f} s/M "
            f"client {result.client_core_use:.2f}")


def report_messages(server: Server, what: str, result: RunResult, problems: dict) -> None:
    """Print (once) and remember anything unexpected redis-benchmark said."""
    notes = list(result.messages) + ([result.error] if result.error else [])
    for note in notes:
        key = (server.spec.name, note)
        if key not in problems:
            problems[key] = what
            log(f"  !! {server.spec.name} [{what}]: {note}")


# ----------------------------------------------------------------------------- summary

@dataclass
class CellSummary:
    """Medians over rounds for one server in one cell (None when no run succeeded)."""
    rps: float | None
    latency_ms_p50: float | None
    latency_ms_p99: float | None
    cpu_s_per_mops: float | None
    client_core_use: float | None
    failed_runs: int


def summarize(runs: list[RunResult]) -> CellSummary:
    ok = [r for r in runs if r.ok]

    def med(values):
        return statistics.median(values) if values else None

    return CellSummary(med([r.rps for r in ok]), med([r.latency_ms_p50 for r in ok]),
                       med([r.latency_ms_p99 for r in ok]), med([r.cpu_s_per_mops for r in ok]),
                       med([r.client_core_use for r in ok]), len(runs) - len(ok))


def table_rows(results: dict) -> list[list[str]]:
    rows = []
    for cell, by_server in results.items():
        redis, cairn = summarize(by_server["Redis"]), summarize(by_server["Cairn"])
        rows.append([cell.test.upper(), str(cell.clients), str(cell.pipeline),
                     fmt_rps(redis.rps), fmt_rps(cairn.rps) + fmt_ratio(cairn.rps, redis.rps),
                     fmt_ms(redis.latency_ms_p50), fmt_ms(cairn.latency_ms_p50),
                     fmt_ms(redis.latency_ms_p99), fmt_ms(cairn.latency_ms_p99),
                     fmt_cpu(redis.cpu_s_per_mops), fmt_cpu(cairn.cpu_s_per_mops),
                     f"{fmt_cpu(redis.client_core_use)} / {fmt_cpu(cairn.client_core_use)}",
                     fmt_failures(redis.failed_runs, cairn.failed_runs)])
    return rows


TABLE_HEADER = ["op", "clients", "pipeline", "Redis ops/s", "Cairn ops/s (Cairn/Redis)",
                "Redis p50 ms", "Cairn p50 ms", "Redis p99 ms", "Cairn p99 ms",
                "Redis CPU s/M ops", "Cairn CPU s/M ops", "client cores (R / C)", "failed runs"]


def fmt_rps(value: float | None) -> str:
    return "failed" if value is None else f"{value:,.0f}"


def fmt_ratio(cairn: float | None, redis: float | None) -> str:
    return f" ({cairn / redis:.2f}x)" if cairn and redis else ""


def fmt_failures(redis: int, cairn: int) -> str:
    return "-" if not (redis or cairn) else f"Redis {redis}, Cairn {cairn}"


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def fmt_cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_text_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [TABLE_HEADER] + rows) for i in range(len(TABLE_HEADER))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(TABLE_HEADER, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def render_markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(TABLE_HEADER) + " |",
             "|" + "|".join(["---"] * 3 + ["---:"] * (len(TABLE_HEADER) - 3)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def acceptance(results: dict) -> list[str]:
    """Issue 2 item 8's bars, evaluated on the medians (informational, not an assertion)."""
    every_cell, p16_busy, cpu = [], [], []
    for cell, by_server in results.items():
        redis, cairn = summarize(by_server["Redis"]), summarize(by_server["Cairn"])
        if not (redis.rps and cairn.rps):
            every_cell.append(f"{cell.label()} failed")
            continue
        ratio = cairn.rps / redis.rps
        if ratio < 1.0:
            every_cell.append(f"{cell.label()} {ratio:.2f}x")
        if cell.pipeline == 16 and cell.clients in (8, 64) and ratio < 1.3:
            p16_busy.append(f"{cell.label()} {ratio:.2f}x")
        if round(cairn.cpu_s_per_mops, 2) > round(redis.cpu_s_per_mops, 2):
            cpu.append(f"{cell.label()} {cairn.cpu_s_per_mops:.2f} > {redis.cpu_s_per_mops:.2f}")
    return [verdict("Cairn >= 1.0x Redis in every cell", every_cell),
            verdict("Cairn >= 1.3x Redis at pipeline 16 with 8 and 64 clients", p16_busy),
            verdict("Cairn CPU per op <= Redis's in every cell", cpu)]


def verdict(bar: str, misses: list[str]) -> str:
    return f"- {bar}: " + ("met" if not misses else "NOT met (" + "; ".join(misses) + ")")


# ----------------------------------------------------------------------------- machine and report

def machine_description(args: argparse.Namespace) -> list[str]:
    return [f"- Machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
            f"{cpu_model()}, Linux {platform.release()}, load average at start "
            f"{load_average()}",
            f"- Pinning: servers on CPU {args.server_cpus}, redis-benchmark on CPU "
            f"{args.bench_cpus} (taskset)",
            f"- Source: git {git_revision()}"]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "") if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def reproduce_command(argv: list[str]) -> str:
    script = Path(__file__).resolve()
    try:
        script = script.relative_to(REPO_ROOT)
    except ValueError:
        pass
    return " ".join(shlex.quote(a) for a in ["python3", str(script)] + argv)


def render_section(args: argparse.Namespace, argv: list[str], servers: list[Server],
                   rows: list[list[str]], verdicts: list[str], problems: dict,
                   ops_by_cell: dict[Cell, int]) -> str:
    redis, cairn = servers
    lines = [SECTION_BEGIN,
             "## Foundation benchmark: Cairn vs Redis (redis-benchmark)",
             "",
             f"Generated by `e2e/bench/foundation_bench.py` on "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}. "
             f"Reproduce with (from the repository root):",
             "",
             "```sh",
             reproduce_command(argv),
             "```",
             ""]
    if args.quick:
        lines += ["**Quick mode: a smoke test of the harness, not a measurement.** Run without "
                  "`--quick` on an otherwise idle machine for numbers to quote.", ""]
    lines += machine_description(args)
    lines += [f"- Redis: {redis.spec.version or args.redis_bin}; durability: "
              f"{redis.spec.durability}",
              f"- Cairn: {cairn.spec.version or cairn.spec.argv_template[0]}; durability: "
              f"{cairn.spec.durability}",
              f"- Load: `redis-benchmark -d {args.data_size} -r {args.keyspace} -t T -c C -P P "
              f"-n N --csv`; N per cell {ops_range(args, ops_by_cell)}, same N for "
              f"both servers; {args.rounds} round(s), servers alternating cell by cell; "
              f"median per cell.",
              f"- Keys after the prefill ({args.prefill_ops:,} SETs): "
              f"Redis {redis.keys_after_prefill}, Cairn {cairn.keys_after_prefill}; "
              f"no FLUSHALL between runs.",
              "- CPU s/M ops: server process utime+stime plus reaped children's cutime+cstime (Redis's AOF-rewrite forks) (/proc/PID/stat) during the run, per "
              "million requests. Latencies are redis-benchmark's, in ms. Client cores: "
              "redis-benchmark's CPU time / wall time (near 1.0 the load generator, not the "
              "server, limits the cell).",
              "",
              render_markdown_table(rows),
              "",
              "Against issue 2 item 8 (noisy on a shared 2-CPU machine; quote ratios):",
              ""]
    lines += verdicts
    if problems:
        lines += ["", "Unexpected output from redis-benchmark or the servers (first seen in):", ""]
        lines += [f"- {name} [{where}]: `{note}`" for (name, note), where in problems.items()]
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


def ops_range(args: argparse.Namespace, ops_by_cell: dict[Cell, int]) -> str:
    if args.ops:
        return f"fixed at {args.ops:,}"
    low, high = min(ops_by_cell.values()), max(ops_by_cell.values())
    return f"sized to about {args.seconds:g} s ({low:,}–{high:,})"


def write_section(path: Path, section: str) -> None:
    """Replace this program's section of the file, keeping everything else."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start, end = text.find(SECTION_BEGIN), text.find(SECTION_END)
    if start != -1 and end > start:
        rest = text[end + len(SECTION_END):].lstrip("\n")
        text = text[:start] + section + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_raw_json(path: str, results: dict, ops_by_cell: dict[Cell, int]) -> None:
    data = [{"test": cell.test, "clients": cell.clients, "pipeline": cell.pipeline,
             "ops": ops_by_cell[cell],
             "runs": {name: [vars(r) | {"cpu_s_per_mops": r.cpu_s_per_mops} for r in runs]
                      for name, runs in by_server.items()}}
            for cell, by_server in results.items()]
    Path(path).write_text(json.dumps(data, indent=1))


def log(message: str) -> None:
    print(message, flush=True)


# ----------------------------------------------------------------------------- main

def raise_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def check_tools(args: argparse.Namespace, specs: list[ServerSpec]) -> None:
    for tool in ["taskset", args.benchmark_bin] + [s.argv_template[0] for s in specs]:
        if shutil.which(tool) is None and not Path(tool).is_file():
            raise SystemExit(f"foundation_bench: cannot find {tool!r} "
                             f"(build Cairn with cargo build --release; e2e/install-deps.sh "
                             f"installs redis-server and redis-tools)")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    signal.signal(signal.SIGHUP, raise_on_sigterm)
    specs = [redis_spec(args), cairn_spec(args)]
    check_tools(args, specs)
    cells = build_cells(args)
    servers: list[Server] = []
    problems: dict = {}
    try:
        for spec in specs:
            servers.append(start_server(spec, args.server_cpus))
            log(f"started {spec.name} (pid {servers[-1].process.pid}) on port "
                f"{servers[-1].port}: {spec.durability}")
        for server in servers:
            check_round_trip(server)
            prefill(args, server, problems)
        log("warm-up and sizing")
        ops_by_cell = size_cells(args, servers, cells, problems)
        results = run_rounds(args, servers, cells, ops_by_cell, problems)
    finally:
        for server in servers:
            stop_server(server)
    rows = table_rows(results)
    verdicts = acceptance(results)
    log("\n" + render_text_table(rows) + "\n\n" + "\n".join(verdicts))
    if args.raw_json:
        write_raw_json(args.raw_json, results, ops_by_cell)
    if not args.no_write:
        section = render_section(args, argv, servers, rows, verdicts, problems, ops_by_cell)
        write_section(Path(args.output), section)
        log(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped", file=sys.stderr)
        sys.exit(130)
    except RuntimeError as error:
        print(f"foundation_bench: {error}", file=sys.stderr)
        sys.exit(1)
