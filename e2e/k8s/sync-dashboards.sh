#!/usr/bin/env bash
# Copies the Grafana dashboards (dashboards/*.json) into the Helm chart, which packages them as
# ConfigMaps (Helm reads files only inside the chart). The Kubernetes e2e step checks the copies.
set -euo pipefail
cd "$(dirname "$0")/../.."
find charts/cairn-operator/dashboards -name '*.json' -delete
cp dashboards/*.json charts/cairn-operator/dashboards/
echo "synced: $(ls charts/cairn-operator/dashboards/*.json | wc -l) dashboards"
