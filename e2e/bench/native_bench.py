#!/usr/bin/env python3
"""Native protocol vs RESP on one Cairn, with the same driver (cairn-bench).

Starts one Cairn (one worker pinned to CPU 0, durability async, RESP and
native ports), then runs `cairn-bench run` pinned to CPU 1 over each protocol
for every cell: GET, SET, INCR x 1, 8, 64 connections x pipeline/batch 1 and
16. RESP pipelines -P requests per write; native sends them as one BATCH frame
(`--protocol native`). Rounds alternate which protocol goes first; each cell
reports the median over rounds. Prints a table (ops/s, p50, p99, native/RESP
ratio) and writes it between the native-bench markers in docs/benchmarks.md.

Goals (issue 8): native >= 2x RESP ops/s for GET and >= 1.5x for SET at 64
connections.

    cargo build --release -p cairn-server -p cairn-bench
    python3 e2e/bench/native_bench.py                 # the measurement (idle machine!)
    python3 e2e/bench/native_bench.py --quick --no-doc  # a smoke test of the harness
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from durable_bench import REPO, free_port, pin, wait_ready  # noqa: E402

SECTION_BEGIN = "<!-- native-bench:begin -->"
SECTION_END = "<!-- native-bench:end -->"
PROTOCOLS = ("resp", "native")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="get,set,incr")
    p.add_argument("--conns", default="1,8,64")
    p.add_argument("--pipelines", default="1,16", help="RESP pipeline depth = native batch size")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=300_000, help="measured requests per run")
    p.add_argument("--keyspace", type=int, default=10_000)
    p.add_argument("--value-size", type=int, default=32)
    p.add_argument("--cairn", default=str(REPO / "target/release/cairn"))
    p.add_argument("--bench", default=str(REPO / "target/release/cairn-bench"))
    p.add_argument("--doc", default=str(REPO / "docs/benchmarks.md"))
    p.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md alone")
    p.add_argument("--quick", action="store_true", help="1 round, 20k requests: a smoke test, not a measurement")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.requests = 1, 20_000
    return args


def split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def start_cairn(args: argparse.Namespace, data: Path) -> tuple[subprocess.Popen, int, int]:
    port, native = free_port(), free_port()
    argv = pin(0) + [args.cairn, "--port", str(port), "--native-port", str(native), "--bind", "127.0.0.1",
                     "--data-dir", str(data), "--admin-port", "0", "--threads", "1",
                     "--durability", "async", "--log-level", "warn"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port, native


def run_cell(args: argparse.Namespace, protocol: str, port: int, op: str, conns: int, pipeline: int,
             tag: str) -> dict:
    argv = pin(1) + [args.bench, "run", "--target", f"127.0.0.1:{port}", "--protocol", protocol,
                     "--ops", op, "--clients", str(conns), "--pipeline", str(pipeline),
                     "--requests", str(args.requests), "--keyspace", str(args.keyspace),
                     "--value-size", str(args.value_size), "--threads", "1", "--warmup", "300ms",
                     "--no-final-check", "--no-progress", "--json", "--key-prefix", tag]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"cairn-bench failed ({out.returncode}): {shlex.join(argv)}\n{out.stderr}")
    report = json.loads(out.stdout)
    return {"ops": report["ops_per_sec"], "p50": report["latency"]["p50_us"], "p99": report["latency"]["p99_us"]}


def measure(args: argparse.Namespace, port: int, native: int) -> dict:
    cells = [(op, c, p) for op in split(args.ops) for c in map(int, split(args.conns))
             for p in map(int, split(args.pipelines))]
    results: dict = {cell: {proto: [] for proto in PROTOCOLS} for cell in cells}
    for r in range(args.rounds):
        order = PROTOCOLS if r % 2 == 0 else tuple(reversed(PROTOCOLS))
        for cell in cells:
            op, conns, pipeline = cell
            for proto in order:
                target = port if proto == "resp" else native
                tag = f"nb{r}{proto}{op}{conns}x{pipeline}"
                results[cell][proto].append(run_cell(args, proto, target, op, conns, pipeline, tag))
                last = results[cell][proto][-1]
                print(f"round {r + 1}/{args.rounds} {op:>4} c={conns:<3} P={pipeline:<3} {proto:<6} "
                      f"{last['ops']:>11,.0f} ops/s p50 {last['p50']:.0f} us", file=sys.stderr)
    return results


def median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def table(results: dict) -> list[str]:
    lines = ["| op | conns | P / batch | RESP ops/s | native ops/s | native/RESP | RESP p50/p99 µs | native p50/p99 µs |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for (op, conns, pipeline), runs in results.items():
        resp, nat = runs["resp"], runs["native"]
        ratio = median(nat, "ops") / max(median(resp, "ops"), 1e-9)
        lines.append(f"| {op.upper()} | {conns} | {pipeline} | {median(resp, 'ops'):,.0f} | {median(nat, 'ops'):,.0f} "
                     f"| {ratio:.2f}x | {median(resp, 'p50'):.0f} / {median(resp, 'p99'):.0f} "
                     f"| {median(nat, 'p50'):.0f} / {median(nat, 'p99'):.0f} |")
    return lines


def goals(results: dict) -> list[str]:
    lines = []
    for op, goal in (("get", 2.0), ("set", 1.5)):
        for (cell_op, conns, pipeline), runs in results.items():
            if cell_op == op and conns == 64:
                ratio = median(runs["native"], "ops") / max(median(runs["resp"], "ops"), 1e-9)
                verdict = "met" if ratio >= goal else "NOT met"
                lines.append(f"- {op.upper()} at 64 connections, P/batch {pipeline}: {ratio:.2f}x "
                             f"(goal ≥ {goal}x: {verdict})")
    return lines


def section(args: argparse.Namespace, argv: list[str], results: dict) -> str:
    lines = [SECTION_BEGIN, "", "## Native protocol vs RESP (issue 8)", "",
             f"One Cairn (`--threads 1 --durability async`, pinned to CPU 0), `cairn-bench` pinned to CPU 1, "
             f"same driver and workload over both protocols; median of {args.rounds} alternating rounds of "
             f"{args.requests:,} requests per cell; value size {args.value_size} B, {args.keyspace:,} keys. "
             "RESP pipelines P requests per write; native sends them as one BATCH frame.", "",
             "Reproduce with (from the repository root):", "", "```sh",
             "python3 " + shlex.join(["e2e/bench/native_bench.py"] + argv), "```", ""]
    if args.quick:
        lines += ["**Quick mode: a smoke test of the harness, not a measurement.**", ""]
    lines += [f"Machine: {platform.machine()}, {platform.system()} {platform.release()}.", ""]
    lines += table(results) + ["", "Goals:", ""] + goals(results) + ["", SECTION_END, ""]
    return "\n".join(lines)


def write_section(path: Path, text: str) -> None:
    """Replace this program's section of the file, keeping everything else."""
    doc = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start, end = doc.find(SECTION_BEGIN), doc.find(SECTION_END)
    if start != -1 and end > start:
        rest = doc[end + len(SECTION_END):].lstrip("\n")
        doc = doc[:start] + text + ("\n" + rest if rest else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="native-bench-") as data:
        proc, port, native = start_cairn(args, Path(data))
        try:
            results = measure(args, port, native)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = section(args, argv, results)
    print(text)
    if not args.no_doc:
        write_section(Path(args.doc), text)
        print(f"wrote {args.doc}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
