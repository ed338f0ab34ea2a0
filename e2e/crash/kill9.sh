#!/usr/bin/env bash
# kill -9 crash test: 64 writers against the server, SIGKILL at a seeded random moment 0.3-2 s in,
# restart on the same data dir, verify every acknowledged write; K cycles (20; 100 with
# CAIRN_CRASH_LONG=1). See lib.sh for the cycle and the exit codes, --help for the options.
# It cannot catch a missing fsync (the page cache survives a killed process): powercut.sh does.
source "$(dirname "$0")/lib.sh"
parse_args "$@"
crash_cycles kill9
