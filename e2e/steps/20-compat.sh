#!/usr/bin/env bash
# Redis 7.0.15's own test suite (external mode) against target/release/cairn, which the test
# script has already built. Fails when a unit's passed count falls below the committed ratchet
# in e2e/compat/baseline.json; docs/compatibility.md explains the table it prints.
set -euo pipefail
cd "$(dirname "$0")/../.."
e2e/compat/fetch-redis-src.sh >/dev/null
python3 e2e/compat/run.py --check
