#!/usr/bin/env bash
# Cairn's /metrics through `promtool check metrics`, and every Grafana dashboard query evaluated by
# a real Prometheus (Debian `prometheus`, loopback, 1 s scrape) after a few seconds of load.
# The alerting rules (dashboards/cairn-alerts.yaml): `promtool check rules`, `promtool test rules`
# (e2e/metrics/alert_tests.py), then loaded by that Prometheus: none fires on the healthy server,
# and the right ones fire once Cairn is put in trouble.
# Takes about 25 s; e2e/metrics/check.py explains each check.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 e2e/metrics/check.py
