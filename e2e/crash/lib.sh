#!/usr/bin/env bash
# The crash-test cycle shared by kill9.sh and powercut.sh (sourced, not run).
#
# One cycle: writers start against the server (cairn-crashtest run), the server is killed with
# SIGKILL at a seeded random moment, [power is cut on the crashfs mount], the server restarts on
# the same data directory, and every write acknowledged in that cycle is verified. After the last
# cycle, every cycle's writes are verified once more (later crashes must not lose earlier data).
#
# Exit codes of the scripts: 0 pass, 1 acknowledged writes lost, 2 state changed (corruption, a
# value never written, a non-prefix loss), 3 harness error (server would not start, ...),
# 77 skipped (power cut only: FUSE unavailable).

set -euo pipefail

CRASH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$CRASH_ROOT/target}"
BIN_DIR="${CAIRN_BIN_DIR:-$TARGET_DIR/release}"
CRASHTEST="$BIN_DIR/cairn-crashtest"
CRASHFS="$BIN_DIR/cairn-crashfs"

# Options (the scripts' usage text lists them).
SERVER="$BIN_DIR/cairn"
SERVER_KIND=""
CYCLES="${CAIRN_CRASH_CYCLES:-}"
WRITERS=64
SEED="${CAIRN_CRASH_SEED:-$(( $(date +%s) % 100000 ))}"
MIN_KILL_MS=300
MAX_KILL_MS=2000
ALLOW_LOSS=0
TORN=0
FS_METADATA=strict
KEEP=0
EXTRA_ARGS=()
EXTRA_GIVEN=0

usage() {
  cat <<USAGE
usage: $(basename "$0") [options] [-- extra server args...]
  --server PATH      server binary (default target/release/cairn; redis-server* is driven as Redis)
  --kind cairn|redis how to pass port and data dir (default: from the binary's name)
  --cycles K         crash cycles (default 20; 100 with CAIRN_CRASH_LONG=1; env CAIRN_CRASH_CYCLES)
  --writers N        concurrent writers (default 64)
  --seed S           seed of the kill schedule and the workload (env CAIRN_CRASH_SEED; printed)
  --kill-ms MIN:MAX  kill window after the load starts (default 300:2000)
  --allow-loss       report lost acknowledged writes and the loss window, do not fail on loss
  --torn             (power cut) the last unsynced write of each file lands partially
  --fs-metadata M    (power cut) strict (POSIX, default) or journal (ext4-like: any fsync commits
                     all directory changes made before it)
  --keep             keep the work directory (ack logs, server logs); it is kept on failure
                     unless CAIRN_CRASH_KEEP_ON_FAIL=0
Extra server args default to '--durability sync' for Cairn and
'--appendonly yes --appendfsync always --save ""' for Redis.
USAGE
}

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --server) SERVER="$2"; shift 2 ;;
      --kind) SERVER_KIND="$2"; shift 2 ;;
      --cycles) CYCLES="$2"; shift 2 ;;
      --writers) WRITERS="$2"; shift 2 ;;
      --seed) SEED="$2"; shift 2 ;;
      --kill-ms) MIN_KILL_MS="${2%:*}"; MAX_KILL_MS="${2#*:}"; shift 2 ;;
      --allow-loss) ALLOW_LOSS=1; shift ;;
      --torn) TORN=1; shift ;;
      --fs-metadata) FS_METADATA="$2"; shift 2 ;;
      --keep) KEEP=1; shift ;;
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA_ARGS=("$@"); EXTRA_GIVEN=1; break ;;
      *) echo "unknown option $1" >&2; usage >&2; exit 3 ;;
    esac
  done
  if [ -z "$CYCLES" ]; then
    if [ "${CAIRN_CRASH_LONG:-0}" = 1 ]; then CYCLES=100; else CYCLES=20; fi
  fi
  if [ -z "$SERVER_KIND" ]; then
    case "$(basename "$SERVER")" in redis-server*|valkey-server*) SERVER_KIND=redis ;; *) SERVER_KIND=cairn ;; esac
  fi
  if [ "$EXTRA_GIVEN" = 0 ]; then
    if [ "$SERVER_KIND" = redis ]; then
      EXTRA_ARGS=(--appendonly yes --appendfsync always --save "")
    else
      EXTRA_ARGS=(--durability sync)
    fi
  fi
  # Cairn's HTTP admin port: an ephemeral one, so that runs never collide on the default.
  ADMIN_PORT_ZERO=0
  NATIVE_PORT_ZERO=0
  if [ "$SERVER_KIND" = cairn ] && "$SERVER" --help 2>/dev/null | grep -q -- --admin-port; then ADMIN_PORT_ZERO=1; fi
  if [ "$SERVER_KIND" = cairn ] && "$SERVER" --help 2>/dev/null | grep -q -- --native-port; then NATIVE_PORT_ZERO=1; fi
  for bin in "$CRASHTEST" "$SERVER"; do
    command -v "$bin" >/dev/null || { echo "missing binary $bin (cargo build --release --workspace --bins)" >&2; exit 3; }
  done
}

# A free loopback port below the kernel's ephemeral range (so that no outgoing
# connection, such as a writer's, holds it as its local port): the rule every
# harness shares, in e2e/lib/ports.py.
pick_port() {
  python3 "$CRASH_ROOT/e2e/lib/ports.py"
}

SERVER_PID=""

launch_server() {
  local cmd=("$SERVER")
  if [ "$SERVER_KIND" = redis ]; then
    cmd+=(--port "$PORT" --bind 127.0.0.1 --dir "$DATA_DIR")
  else
    cmd+=(--port "$PORT" --bind 127.0.0.1 --data-dir "$DATA_DIR")
    [ "$ADMIN_PORT_ZERO" = 1 ] && cmd+=(--admin-port 0)
    [ "$NATIVE_PORT_ZERO" = 1 ] && cmd+=(--native-port 0)
  fi
  cmd+=("${EXTRA_ARGS[@]}")
  echo "--- start $(date +%T.%N): ${cmd[*]}" >>"$WORK/server.log"
  # No backtraces in the log: a start-up error must show as its message.
  RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 "${cmd[@]}" >>"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
}

# Starts the server on $PORT and waits until it answers; if the port turns out
# to be taken (another process bound it after pick_port), moves to another one.
start_server() {
  local attempt
  for attempt in 1 2 3 4 5; do
    launch_server
    if wait_ready; then return 0; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null && tail -5 "$WORK/server.log" | grep -q "Address already in use"; then
      PORT=$(pick_port)
      echo "--- the port was taken; attempt $((attempt + 1)) on port $PORT" >>"$WORK/server.log"
      continue
    fi
    break
  done
  echo "server did not become ready; last lines of its log (and of the harness's):" >&2
  tail -20 "$WORK/server.log" >&2
  tail -5 "$WORK/harness.log" >&2
  ss -tanp 2>/dev/null | grep -E ":$PORT\b" >&2 || true
  exit 3
}

# Waits up to 120 s for PONG, giving up early when the server has exited.
wait_ready() {
  for _ in $(seq 1 120); do
    if "$CRASHTEST" ping --addr "127.0.0.1:$PORT" --timeout 1 >>"$WORK/harness.log" 2>&1; then return 0; fi
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
  done
  return 1
}

kill9_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -9 "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill9_server
}

# The value of key=... in a `verify:` summary line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# Runs `verify` on the given ack-log dirs; sets VERIFY_LINE and VERIFY_RC, logs the details.
run_verify() {
  local flags=()
  [ "$ALLOW_LOSS" = 1 ] && flags+=(--allow-loss)
  set +e
  local out
  out=$("$CRASHTEST" verify --addr "127.0.0.1:$PORT" "${flags[@]}" "$@" 2>&1)
  VERIFY_RC=$?
  set -e
  echo "$out" >>"$WORK/harness.log"
  VERIFY_LINE=$(grep '^verify:' <<<"$out" || true)
  VERIFY_PROBLEMS=$(grep '^  ' <<<"$out" | head -3 || true)
  if [ -z "$VERIFY_LINE" ]; then
    echo "verify failed to run: $out" >&2
    VERIFY_RC=3
  fi
}

# Hooks the power-cut script overrides.
before_cycles() { :; }
after_kill() { :; }
after_all() { :; }

WORST=0
note_rc() { if [ "$1" -gt "$WORST" ] && [ "$1" != 0 ]; then WORST=$1; fi; }

# Runs the cycles and prints the table; returns the exit code.
crash_cycles() {
  local label="$1"
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-crash.XXXXXX")
  DATA_DIR="$WORK/data"
  mkdir -p "$DATA_DIR" "$WORK/acks"
  trap cleanup EXIT
  PORT=$(pick_port)
  RANDOM=$SEED
  before_cycles
  echo "$label: server=$SERVER kind=$SERVER_KIND args=[${EXTRA_ARGS[*]}] cycles=$CYCLES writers=$WRITERS seed=$SEED"
  echo "work dir: $WORK"
  printf '%5s %7s %8s %8s %6s %7s %9s %24s %s\n' cycle kill_ms acked verified lost changed landed "loss window p50/p99/max" extra
  local started=$SECONDS total_acked=0 total_lost=0
  start_server
  for c in $(seq 1 "$CYCLES"); do
    local kill_ms=$(( MIN_KILL_MS + RANDOM % (MAX_KILL_MS - MIN_KILL_MS + 1) ))
    local run_secs=$(( MAX_KILL_MS / 1000 + 10 ))
    "$CRASHTEST" run --addr "127.0.0.1:$PORT" --writers "$WRITERS" --duration "$run_secs" \
      --log-dir "$WORK/acks/c$c" --prefix "c$c" --seed "$((SEED + c))" >>"$WORK/harness.log" 2>&1 &
    local run_pid=$!
    sleep "$(printf '%d.%03d' $((kill_ms / 1000)) $((kill_ms % 1000)))"
    kill9_server
    wait "$run_pid" || { echo "writers failed (see $WORK/harness.log)" >&2; exit 3; }
    EXTRA_COL=""
    after_kill "$c"
    start_server
    run_verify "$WORK/acks/c$c"
    note_rc "$VERIFY_RC"
    print_row "$c" "$kill_ms" "$VERIFY_LINE"
    total_acked=$(( total_acked + $(field acked "$VERIFY_LINE") ))
    total_lost=$(( total_lost + $(field lost "$VERIFY_LINE") ))
  done
  local dirs=()
  for c in $(seq 1 "$CYCLES"); do dirs+=("$WORK/acks/c$c"); done
  EXTRA_COL=""
  run_verify "${dirs[@]}"
  note_rc "$VERIFY_RC"
  print_row all - "$VERIFY_LINE"
  stop_server
  after_all
  echo "$label: cycles=$CYCLES acked=$total_acked lost=$total_lost" \
    "final: $(sed 's/^verify: //' <<<"$VERIFY_LINE") elapsed_s=$((SECONDS - started)) result=$(result_word "$WORST")"
  return "$WORST"
}

print_row() {
  local line="$3"
  printf '%5s %7s %8s %8s %6s %7s %9s %24s %s\n' "$1" "$2" "$(field acked "$line")" "$(field verified "$line")" \
    "$(field lost "$line")" "$(field changed "$line")" "$(field uncertain_landed "$line")" \
    "$(field window_p50_ms "$line")/$(field window_p99_ms "$line")/$(field window_max_ms "$line") ms" "$EXTRA_COL"
  if [ "$VERIFY_RC" != 0 ] && [ -n "$VERIFY_PROBLEMS" ] && [ "$1" != all ]; then sed 's/^  */        /' <<<"$VERIFY_PROBLEMS"; fi
}

result_word() {
  case "$1" in 0) echo PASS ;; 1) echo LOST-ACKED-WRITES ;; 2) echo STATE-CHANGED ;; *) echo ERROR ;; esac
}

cleanup() {
  kill9_server
  after_all
  if [ "$KEEP" = 0 ] && { [ "$WORST" = 0 ] || [ "${CAIRN_CRASH_KEEP_ON_FAIL:-1}" = 0 ]; }; then
    rm -rf "$WORK"
  else
    echo "kept work dir $WORK (ack logs, server.log, harness.log)"
  fi
}
