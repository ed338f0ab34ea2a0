#!/usr/bin/env bash
# Cairn's /metrics through `promtool check metrics`, and every Grafana dashboard query evaluated by
# a real Prometheus (Debian `prometheus`, loopback, 1 s scrape) after a few seconds of load.
# Takes about 15 s; e2e/metrics/check.py explains each check.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 e2e/metrics/check.py
