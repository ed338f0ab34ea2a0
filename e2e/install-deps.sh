#!/usr/bin/env bash
# Installs the system packages the test suite needs, idempotently (Debian).
set -euo pipefail
need=()
# openssl: test certificates (e2e/lib/certs.py) for the TLS store pod of the Kubernetes step.
# make: building jemalloc (the `cairn` binary's allocator, tikv-jemalloc-sys runs its configure and make).
for pkg in redis-server redis-tools openssl make; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
# Prometheus and promtool for e2e/steps/30-metrics.sh (its recommended packages are not needed).
if ! dpkg -s prometheus >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus
fi
# Debian starts a redis-server service on install; the tests start their own on ephemeral ports.
