#!/usr/bin/env python3
"""The operator e2e against the Kubernetes API mock (kmock_apiserver.py) on loopback.

Starts the mock (with --simulate: StatefulSet pods become ready, Jobs finish with a summary),
applies the CRDs and the examples with `kubectl apply --server-side`, runs the cairn-operator
binary, and asserts what appears: the StatefulSet running `cairn` with the tier, CPU pinning and
ports of the KVStore, the Services, the PDB, the ConfigMap, the KVStore status (volume size and
reason, endpoints, Ready), a KVStoreBenchmark's Job and summary, an invalid KVStore reported as
Degraded, an update rolling the StatefulSet, and the operator's /metrics.

Usage: run_e2e.py --operator BIN --kubectl BIN --python VENV_PYTHON --repo DIR --workdir DIR
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)
import processes  # noqa: E402  (e2e/lib/processes.py: terminate, then kill)

HERE = os.path.dirname(os.path.abspath(__file__))
DEADLINE_S = 60


class E2E:
    def __init__(self, args):
        self.args = args
        self.procs = []
        self.failures = 0
        self.passed = 0
        os.makedirs(args.workdir, exist_ok=True)
        self.kubeconfig = os.path.join(args.workdir, "kubeconfig")

    # -- processes ---------------------------------------------------------------------------
    def start(self, name, argv, env=None):
        log = open(os.path.join(self.args.workdir, f"{name}.log"), "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        self.procs.append((name, proc))
        return proc

    def stop_all(self):
        for _name, proc in reversed(self.procs):
            processes.stop(proc)

    def kubectl(self, *argv, check=True):
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        out = subprocess.run([self.args.kubectl, *argv], env=env, capture_output=True, text=True, timeout=60)
        if check and out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(argv)}: {out.stderr.strip()}")
        return out

    def get(self, *argv):
        out = self.kubectl("get", *argv, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def wait_for(self, what, fn):
        deadline = time.monotonic() + DEADLINE_S
        last = None
        while time.monotonic() < deadline:
            try:
                last = fn()
            except (KeyError, IndexError, TypeError, ValueError) as e:
                last = e
            if last and not isinstance(last, Exception):
                return last
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})")

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failures += 1
            print(f"FAIL {name} {detail}")

    # -- scenario ----------------------------------------------------------------------------
    def run(self):
        a = self.args
        port_file = os.path.join(a.workdir, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        apiserver = self.start("apiserver", [a.python, os.path.join(HERE, "kmock_apiserver.py"),
                                             "--port-file", port_file, "--simulate"])
        port = self.wait_for("the mock API server", lambda: open(port_file).read().strip() if os.path.exists(port_file) else None)
        with open(self.kubeconfig, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: mock, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: mock, user: {{}}}}]
contexts: [{{name: mock, context: {{cluster: mock, user: mock, namespace: default}}}}]
current-context: mock
""")
        examples = os.path.join(a.repo, "charts", "cairn-operator", "examples")
        # No OpenAPI document on the mock: the examples are validated against the CRD schemas by
        # validate_crs.py instead of kubectl's client-side validation.
        apply = ("apply", "--server-side", "--validate=false", "-f")
        self.kubectl(*apply, os.path.join(a.repo, "crds", "yaml"))
        crds = self.get("customresourcedefinitions")
        names = sorted(i["metadata"]["name"] for i in crds["items"])
        self.check("CRDs applied", names == ["kvstorebenchmarks.cairn.io", "kvstores.cairn.io"], names)
        self.kubectl(*apply, os.path.join(examples, "kvstore-dev.yaml"))

        metrics_port = ports.free_port("127.0.0.1")
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, POD_NAME="cairn-operator-e2e")
        operator = self.start("operator", [a.operator, "--metrics-addr", f"127.0.0.1:{metrics_port}",
                                           "--log-format", "text", "--log-level", "info,cairn_operator=debug",
                                           "--leader-election", "--lease-namespace", "default",
                                           "--shutdown-timeout", "5"], env=env)

        # The StatefulSet runs cairn with the tier, CPU pinning and ports of the KVStore.
        sts = self.wait_for("StatefulSet demo", lambda: self.get("statefulset", "demo"))
        pod = sts["spec"]["template"]["spec"]
        c = pod["containers"][0]
        args = c["args"]
        flag = lambda name: args[args.index(name) + 1] if name in args else None
        self.check("runs cairn", c["command"] == ["cairn"], c.get("command"))
        self.check("durability async", flag("--durability") == "async", args)
        self.check("threads = cpus", flag("--threads") == "1", args)
        self.check("ports", (flag("--port"), flag("--native-port"), flag("--admin-port")) == ("6379", "7379", "8379"), args)
        # No maxmemory in the example: the default, 75% of its 512Mi, and noeviction, in the
        # config file's [params] (applied live when they change), not in the arguments.
        cm0 = self.wait_for("ConfigMap demo-config", lambda: self.get("configmap", "demo-config"))
        params = tomllib.loads(cm0["data"]["cairn.toml"]).get("params", {})
        self.check("maxmemory 75% of memory, noeviction, in [params]",
                   params == {"maxmemory": str(512 * 2**20 * 3 // 4), "maxmemory-policy": "noeviction",
                              "timeout": 300}
                   and "--param" not in args, (params, args))
        # This store has no tlsSecret: plaintext ports, no --tls flags.
        self.check("no TLS flags without a tlsSecret", not any(x.startswith("--tls") for x in args), args)
        self.check("whole CPUs, requests = limits", c["resources"]["requests"] == c["resources"]["limits"]
                   and c["resources"]["limits"]["cpu"] == "1", c["resources"])
        self.check("non-root, read-only root fs, RuntimeDefault seccomp",
                   pod["securityContext"]["runAsNonRoot"] is True
                   and c["securityContext"]["readOnlyRootFilesystem"] is True
                   and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault")
        self.check("probes on the admin port", c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin", "scheme": "HTTP"})
        claim = sts["spec"]["volumeClaimTemplates"][0]["spec"]
        self.check("volume claim 10Gi standard", claim["resources"]["requests"]["storage"] == "10Gi"
                   and claim["storageClassName"] == "standard", claim)
        self.check("owned by the KVStore", sts["metadata"]["ownerReferences"][0]["kind"] == "KVStore")

        svc = self.wait_for("Service demo", lambda: self.get("service", "demo"))
        self.check("client Service ports", [p["port"] for p in svc["spec"]["ports"]] == [6379, 7379, 8379])
        headless = self.wait_for("Service demo-headless", lambda: self.get("service", "demo-headless"))
        self.check("headless Service", headless["spec"]["clusterIP"] == "None")
        pdb = self.wait_for("PDB demo", lambda: self.get("poddisruptionbudget", "demo"))
        self.check("PDB selects the pods", pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == "demo")
        cm = self.wait_for("ConfigMap demo-config", lambda: self.get("configmap", "demo-config"))
        self.check("ConfigMap holds spec.config", "maxclients = 1000" in cm["data"]["cairn.toml"])

        def ready_status():
            st = (self.get("kvstore", "demo") or {}).get("status", {})
            ready = [x for x in st.get("conditions", []) if x["type"] == "Ready" and x["status"] == "True"]
            return st if ready else None
        status = self.wait_for("KVStore demo Ready", ready_status)
        self.check("status volume size and reason", status["volume"]["size"] == "10Gi"
                   and "minimum of standard" in status["volume"]["reason"], status.get("volume"))
        self.check("status endpoints", status["endpoints"]["resp"] == "demo.default.svc:6379")
        self.check("status readyReplicas", status["readyReplicas"] == 1)
        self.check("status observedGeneration", status["observedGeneration"] == 1)
        kinds = {x["type"]: x["status"] for x in status["conditions"]}
        self.check("conditions", kinds == {"Ready": "True", "Progressing": "False", "Degraded": "False"}, kinds)

        # An update: sync durability with a target on premium SSD grows the volume plan and rolls
        # the pod template; the claim template keeps its size (claims are expanded instead).
        self.kubectl("patch", "kvstore", "demo", "--type=merge", "-p", json.dumps(
            {"spec": {"durability": "sync", "cpus": 2, "storage": {"targetAcksPerSecond": 10000}}}))
        def updated():
            s = self.get("statefulset", "demo")
            a2 = s["spec"]["template"]["spec"]["containers"][0]["args"]
            return s if a2[a2.index("--durability") + 1] == "sync" else None
        sts2 = self.wait_for("the StatefulSet to follow the update", updated)
        a2 = sts2["spec"]["template"]["spec"]["containers"][0]["args"]
        self.check("update: --threads 2", a2[a2.index("--threads") + 1] == "2", a2)
        def status_gen2():
            st = self.get("kvstore", "demo")["status"]
            return st if st.get("observedGeneration") == 2 else None
        st2 = self.wait_for("status of generation 2", status_gen2)
        self.check("update: volume reason cites IOPS", "IOPS" in st2["volume"]["reason"], st2["volume"])
        # The larger plan expands the claim (created by the mock's StatefulSet controller); the
        # claim template, immutable on a real API server (and on the mock), keeps its size.
        grown = st2["volume"]["size"]
        self.check("update: a larger volume is planned", grown != "10Gi", st2["volume"])
        pvc = self.wait_for("claim data-demo-0 expanded", lambda: (lambda c: c if c and c["spec"]["resources"]
                            ["requests"]["storage"] == grown else None)(self.get("pvc", "data-demo-0")))
        self.check("update: claim expanded to the plan", pvc["spec"]["resources"]["requests"]["storage"] == grown)
        # A later reconcile (here: a label change) applies the StatefulSet again, unchanged.
        self.kubectl("label", "kvstore", "demo", "e2e/touched=yes")
        time.sleep(2)
        sts3 = self.get("statefulset", "demo")
        self.check("update: claim template unchanged",
                   sts3["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi",
                   sts3["spec"]["volumeClaimTemplates"])
        # ... which the mock enforces, as a real API server does (so the check above can fail).
        changed = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"name": "demo", "namespace": "default"}, "spec": json.loads(json.dumps(sts3["spec"]))}
        changed["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "20Gi"
        changed_path = os.path.join(a.workdir, "sts-changed.json")
        with open(changed_path, "w") as f:
            json.dump(changed, f)
        out = self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=e2e", "--validate=false",
                           "-f", changed_path, check=False)
        self.check("mock: claim templates are immutable", out.returncode != 0 and "Forbidden" in out.stderr,
                   out.stderr.strip())

        # A live parameter's value changed in spec.config: the ConfigMap follows, the pod template's
        # config hash does not (no restart), and an Event names what was applied live. A parameter
        # added rolls the pods.
        config_hash = lambda s: s["spec"]["template"]["metadata"]["annotations"]["cairn.io/config-hash"]
        hash_before = config_hash(self.get("statefulset", "demo"))
        def with_config(config, wanted):
            self.kubectl("patch", "kvstore", "demo", "--type=merge", "-p", json.dumps({"spec": {"config": config}}))
            return self.wait_for(f"the ConfigMap to hold {wanted}", lambda: (lambda c: c if c and wanted in
                                 c["data"]["cairn.toml"] else None)(self.get("configmap", "demo-config")))
        with_config("maxclients = 1000\n[params]\ntimeout = 600\n", "timeout = 600")
        def live_event():
            events = (self.get("events.v1.events.k8s.io") or {"items": []})["items"]
            notes = [e.get("note", "") for e in events if e.get("reason") == "ConfigAppliedLive"]
            return notes or None
        notes = self.wait_for("a ConfigAppliedLive Event", live_event)
        self.check("live param: Event names it", any(n.startswith("config: timeout changed without restart")
                                                     for n in notes), notes)
        self.check("live param: the pod template is unchanged (no restart)",
                   config_hash(self.get("statefulset", "demo")) == hash_before)
        with_config("maxclients = 1000\n[params]\ntimeout = 600\nhz = 20\n", "hz = 20")
        rolled = self.wait_for("the pod template to roll", lambda: (lambda h: h if h != hash_before else None)(
            config_hash(self.get("statefulset", "demo"))))
        self.check("a param added: the pod template rolls", rolled != hash_before)

        # An invalid spec is reported, and does not stall the controller.
        bad = {"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore", "metadata": {"name": "bad", "namespace": "default"},
               "spec": {"replicas": 3}}
        bad_path = os.path.join(a.workdir, "bad.json")
        with open(bad_path, "w") as f:
            json.dump(bad, f)
        self.kubectl(*apply, bad_path)
        def degraded():
            st = (self.get("kvstore", "bad") or {}).get("status", {})
            d = [x for x in st.get("conditions", []) if x["type"] == "Degraded" and x["status"] == "True"]
            return d[0] if d else None
        d = self.wait_for("KVStore bad Degraded", degraded)
        self.check("invalid spec: Degraded/InvalidSpec", d["reason"] == "InvalidSpec" and "replicas is 3" in d["message"], d)
        self.check("invalid spec: no StatefulSet", self.get("statefulset", "bad") is None)

        # An object the operator cannot decode (a field of the wrong type: the mock checks no schema;
        # on a real cluster, a CRD newer than the operator) is reported in its own status, and the
        # other objects go on: a store created after it gets its StatefulSet.
        malformed = {"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
                     "metadata": {"name": "malformed", "namespace": "default"}, "spec": {"cpus": "two"}}
        malformed_path = os.path.join(a.workdir, "malformed.json")
        with open(malformed_path, "w") as f:
            json.dump(malformed, f)
        self.kubectl(*apply, malformed_path)
        def undecodable():
            st = (self.get("kvstore", "malformed") or {}).get("status", {})
            d = [x for x in st.get("conditions", []) if x["type"] == "Degraded" and x["status"] == "True"]
            return d[0] if d else None
        d = self.wait_for("KVStore malformed Degraded", undecodable)
        self.check("undecodable object: Degraded/InvalidSpec", d["reason"] == "InvalidSpec"
                   and "cannot read the object" in d["message"], d)
        later = {"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
                 "metadata": {"name": "later", "namespace": "default"}, "spec": {}}
        later_path = os.path.join(a.workdir, "later.json")
        with open(later_path, "w") as f:
            json.dump(later, f)
        self.kubectl(*apply, later_path)
        self.wait_for("StatefulSet later (the controller is not stalled)", lambda: self.get("statefulset", "later"))
        self.check("undecodable object: the controller goes on", True)

        # A benchmark becomes a Job; the (simulated) driver's summary lands in the status.
        self.kubectl(*apply, os.path.join(examples, "benchmark.yaml"))
        job = self.wait_for("Job set-get-bench", lambda: self.get("job", "set-get-bench"))
        jargs = job["spec"]["template"]["spec"]["containers"][0]["args"]
        self.check("benchmark Job targets the store", jargs[:3] == ["run", "--target", "demo.default.svc:6379"], jargs)
        def finished():
            st = (self.get("kvstorebenchmark", "set-get") or {}).get("status", {})
            return st if st.get("phase") in ("Succeeded", "Failed") else None
        bst = self.wait_for("benchmark to finish", finished)
        self.check("benchmark Succeeded with the summary", bst["phase"] == "Succeeded"
                   and bst["summary"]["opsPerSec"] == 123456.0 and bst["summary"]["verified"] is True, bst)

        events = self.get("events.v1.events.k8s.io") or {"items": []}
        reasons = sorted({e.get("reason") for e in events["items"]})
        self.check("events published", {"Created", "Ready", "InvalidSpec", "JobCreated", "Succeeded"} <= set(reasons), reasons)
        lease = self.get("lease", "cairn-operator")
        self.check("leader election Lease held", lease and lease["spec"]["holderIdentity"] == "cairn-operator-e2e", lease)

        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        self.check("metrics count reconciles", 'cairn_operator_reconciles_total{controller="kvstore"}' in text
                   and 'cairn_operator_reconciles_total{controller="kvstorebenchmark"}' in text)
        failures = [line for line in text.splitlines() if line.startswith("cairn_operator_reconcile_failures_total")]
        self.check("no failed reconciles", failures == [], failures)

        # Graceful shutdown on SIGTERM.
        started = time.monotonic()
        operator.terminate()
        try:
            code = operator.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        self.check("graceful shutdown on SIGTERM", code == 0, f"exit code {code} after {time.monotonic() - started:.1f}s")
        lease = self.get("lease", "cairn-operator") or {}
        self.check("the Lease is released on shutdown", not lease.get("spec", {}).get("holderIdentity"), lease)

        # ... also when its first list never succeeds (the API server is gone): kube-rs's controller
        # then does not wind down by itself, and --shutdown-timeout bounds the wait.
        apiserver.kill()  # the mock waits for open watches on SIGTERM
        apiserver.wait(timeout=10)
        second = self.start("operator-2", [a.operator, "--metrics-addr", "127.0.0.1:0", "--log-format", "text",
                                           "--shutdown-timeout", "3"], env=env)
        time.sleep(3)
        started = time.monotonic()
        second.terminate()
        try:
            code = second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        self.check("shutdown bounded while the API server is unreachable", code == 0,
                   f"exit code {code} after {time.monotonic() - started:.1f}s")


def main():
    p = argparse.ArgumentParser()
    for flag in ("--operator", "--kubectl", "--python", "--repo", "--workdir"):
        p.add_argument(flag, required=True)
    e2e = E2E(p.parse_args())
    try:
        e2e.run()
    except Exception as exc:  # report, then fail
        e2e.failures += 1
        print(f"FAIL e2e aborted: {exc}")
        for name in ("apiserver", "operator"):
            path = os.path.join(e2e.args.workdir, f"{name}.log")
            if os.path.exists(path):
                print(f"--- last lines of {path}")
                print("".join(open(path).readlines()[-30:]))
    finally:
        e2e.stop_all()
    print(f"kubernetes e2e: {e2e.passed} passed, {e2e.failures} failed")
    sys.exit(1 if e2e.failures else 0)


if __name__ == "__main__":
    main()
