#!/usr/bin/env bash
# CPU cost per operation, counted in instructions with valgrind's callgrind:
# repeatable whatever else the (shared, noisy) machine is doing.
#
# Runs the same redis-benchmark workload (by default SET, GET, INCR; -P 16 -c 8
# -d 32 -r 100000) against Cairn (one worker) and Redis 7.0 (save "", appendonly no),
# each under callgrind, and prints total instructions and instructions per op.
# Cairn runs with --busy-poll-us 0: instructions spent spinning before a worker
# sleeps are idle time, not cost per operation.
# Usage: e2e/bench/callgrind_cost.sh [CAIRN_BIN] [OPS_PER_TEST] [TESTS]
# (TESTS: redis-benchmark's -t list, default set,get,incr; e.g. `set` alone to
# cost one command.)
set -euo pipefail
cairn_bin=${1:-target/release/cairn}
ops=${2:-200000}
tests=${3:-set,get,incr}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 "$(dirname "$0")/../lib/ports.py"; }
# Waits until the server answers DBSIZE with a number: PING answers while a server is still
# loading its data, DBSIZE answers -LOADING until it is done.
wait_ready() {
  for _ in $(seq 100); do
    [[ "$(redis-cli -p "$1" dbsize 2>/dev/null)" =~ ^[0-9]+$ ]] && return 0
    sleep 0.2
  done
  return 1
}

measure() { # name port cmd...
  local name=$1 port=$2; shift 2
  valgrind --tool=callgrind --callgrind-out-file="$work/$name.cg" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_ready "$port"
  redis-benchmark -p "$port" -n "$ops" -P 16 -c 8 -d 32 -r 100000 -t "$tests" -q >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "${pids[-1]}" 2>/dev/null || true
  callgrind_annotate "$work/$name.cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}'
}

cport=$(free_port)
cairn_ir=$(measure cairn "$cport" "$cairn_bin" --port "$cport" --threads 1 --busy-poll-us 0 --admin-port 0 --native-port 0 --data-dir "$work/cairn-data")
rport=$(free_port)
redis_ir=$(measure redis "$rport" redis-server --port "$rport" --save "" --appendonly no --dir "$work")
total_ops=$((ops * $(tr ',' '\n' <<<"$tests" | grep -c .)))
printf '| server | instructions | instructions/op | ratio |\n|---|---:|---:|---:|\n'
printf '| Redis %s | %s | %d | 1.00 |\n' "$(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2)" "$redis_ir" $((redis_ir / total_ops))
printf '| Cairn | %s | %d | %.2f |\n' "$cairn_ir" $((cairn_ir / total_ops)) "$(python3 -c "print($cairn_ir / $redis_ir)")"
echo "($tests, $ops each, redis-benchmark -P 16 -c 8 -d 32 -r 100000; totals include start-up)"
