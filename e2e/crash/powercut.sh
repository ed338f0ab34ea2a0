#!/usr/bin/env bash
# Power-cut crash test: as kill9.sh, but the data directory lives on cairn-crashfs (a FUSE
# filesystem that keeps unsynced data in memory) and after each SIGKILL the power is cut: every
# byte not fsynced/fdatasynced and every directory entry whose directory was not fsynced is lost.
# In `sync` tiers every acknowledged write must survive; with --allow-loss (async/everysec tiers)
# the loss window is reported. Exits 77 with "SKIPPED: reason" when FUSE is unavailable.
# Options as kill9.sh (--help), plus --torn and --fs-metadata strict|journal (default strict:
# a directory entry is durable only after its directory is fsynced; journal: any fsync commits
# all directory changes, as ext4 does — Redis 7.0 needs it, see docs/durability.md).
source "$(dirname "$0")/lib.sh"
parse_args "$@"
[ -n "${CAIRN_CRASH_CYCLES:-}" ] || [ "${CAIRN_CRASH_LONG:-0}" = 1 ] || grep -q -- '--cycles' <<<"$*" || CYCLES=5

FS_PID=""
skip() { echo "SKIPPED: power-cut test: $*"; exit 77; }

before_cycles() {
  [ -e /dev/fuse ] || skip "no /dev/fuse"
  [ -x "$CRASHFS" ] || skip "missing $CRASHFS"
  mkdir -p "$WORK/mnt"
  "$CRASHFS" mount "$WORK/mnt" --control "$WORK/crashfs.sock" --metadata "$FS_METADATA" >"$WORK/crashfs.log" 2>&1 &
  FS_PID=$!
  for _ in $(seq 1 100); do
    "$CRASHFS" ctl "$WORK/crashfs.sock" stats >/dev/null 2>&1 && break
    kill -0 "$FS_PID" 2>/dev/null || { FS_PID=""; skip "mount failed: $(tail -1 "$WORK/crashfs.log")"; }
    sleep 0.05
  done
  "$CRASHFS" ctl "$WORK/crashfs.sock" stats >/dev/null 2>&1 || skip "crashfs did not answer"
  DATA_DIR="$WORK/mnt/data"
  mkdir "$DATA_DIR"
  sync "$WORK/mnt" # the data dir's name is durable from the start
  echo "crashfs on $WORK/mnt (data dir $DATA_DIR), metadata: $FS_METADATA, cut: $([ "$TORN" = 1 ] && echo torn || echo clean)"
}

after_kill() {
  sleep 0.05 # let the kernel finish the killed process's outstanding FUSE requests
  local reply
  if [ "$TORN" = 1 ]; then
    reply=$("$CRASHFS" ctl "$WORK/crashfs.sock" cut-torn "$((SEED * 1000 + $1))")
  else
    reply=$("$CRASHFS" ctl "$WORK/crashfs.sock" cut)
  fi
  EXTRA_COL="cut: $(sed 's/^ok //' <<<"$reply")"
}

after_all() {
  [ -n "$FS_PID" ] || return 0
  echo "crashfs: $("$CRASHFS" ctl "$WORK/crashfs.sock" stats 2>/dev/null | sed 's/^ok //')"
  "$CRASHFS" ctl "$WORK/crashfs.sock" stop >/dev/null 2>&1 || kill "$FS_PID" 2>/dev/null || true
  wait "$FS_PID" 2>/dev/null || true
  if grep -qs " $WORK/mnt " /proc/mounts; then umount -l "$WORK/mnt" || true; fi
  FS_PID=""
}

crash_cycles powercut
