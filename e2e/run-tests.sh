#!/usr/bin/env bash
# The whole test suite: what the README's second command and .ci/run call.
# Installs what it needs (idempotent), then: format, lints, unit and integration tests,
# and the end-to-end steps under e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "install system packages"
e2e/install-deps.sh

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (release, so e2e reuses the build)"
cargo test --release --workspace
cargo build --release --workspace --bins

for s in e2e/steps/*.sh; do
  [ -e "$s" ] || continue
  step "$s"
  bash "$s"
done
step "all tests passed"
