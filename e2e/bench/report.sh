#!/usr/bin/env bash
# The full cairn-bench report in one command (issue 5): builds the server and the driver, then runs
# the async and durable matrices (Cairn vs Redis 7.0 vs Valkey 9.1; about 13 minutes on 2 cores)
# and writes docs/bench-async.md, docs/bench-durable.md and their SVG plots in docs/img/.
# Run it on an otherwise idle machine; the reports quote ratios measured in the same session.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -p cairn-server -p cairn-bench
mkdir -p docs/img
for tier in async durable; do
  "$target/release/cairn-bench" matrix --config "e2e/bench/matrix-$tier.toml" \
    --cairn-bin "$target/release/cairn" --out "docs/bench-$tier.md" --img-dir docs/img
done
