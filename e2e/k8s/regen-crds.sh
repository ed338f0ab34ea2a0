#!/usr/bin/env bash
# Regenerates the CRD YAML from the Rust types (crds/) into crds/yaml/ and the Helm chart.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --quiet -p cairn-crds --bin crdgen -- --out crds/yaml
cp crds/yaml/*.yaml charts/cairn-operator/crds/
echo "regenerated: $(ls crds/yaml)"
