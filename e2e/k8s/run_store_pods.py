#!/usr/bin/env python3
"""Starts the real `cairn` binary with the command line of every StatefulSet the operator renders.

For each StatefulSet in the `cairn-operator render` output (the examples), the container's command
and arguments are run as they are, except for what only exists in a pod: the RESP and admin ports
become free loopback ports, `--data-dir` a scratch directory, `--config` a file holding the
ConfigMap's `cairn.toml`, and a Secret-backed environment variable a dummy value. Then, as the
kubelet would, the probe paths of the pod spec are requested on the admin port (startup/liveness
`/healthz`, readiness `/readyz`) until they answer 200, a RESP PING (with AUTH when the pod gets a
password) must answer PONG, and SIGTERM must stop the server with status 0. A store that serves
RESP over TLS (`--tls-port`) gets certificates made for the run (e2e/lib/certs.py) in place of its
mounted Secret (the TLS directory of its arguments is mapped to them), and its PING goes over TLS,
with a client certificate when the server asks for one. `CONFIG GET maxmemory` and
`maxmemory-policy` must answer what the KVStore asks for (`--resources`: the manifests rendered;
`spec.maxmemory`, default 75% of `spec.memory`, computed here independently of the operator, and
`spec.maxmemoryPolicy`, default noeviction). With `--cairn-bench`, the command line of
every benchmark Job against a store is run too, against that store's process (target and duration
shortened, the Secret's files mapped likewise), and must exit 0.

This proves what the unit tests cannot: the pod's command line starts a server that becomes ready
on the probe paths. Usage: run_store_pods.py --cairn BIN --rendered FILE --workdir DIR
"""

import argparse
import math
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request

import yaml
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ports  # noqa: E402  (e2e/lib/ports.py: ports below the ephemeral range)
from certs import make_pki  # noqa: E402  (e2e/lib/certs.py: a CA, server and client certificates)

DEADLINE_S = 60
# The server checks its config file every 5 s by default (--config-reload-interval).
RELOAD_DEADLINE_S = 20
DUMMY_PASSWORD = "e2e-secret"
# Where the operator mounts a store's TLS Secret (operator/src/store_contract.rs, TLS_DIR).
TLS_DIR = "/etc/cairn/tls"


def free_port() -> int:
    return ports.free_port("127.0.0.1")


def http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def connect(port: int, pki):
    """A socket to the RESP port: plaintext, or TLS trusting `pki`'s CA with its client certificate."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    if pki is None:
        return raw
    context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    context.load_cert_chain(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key"))
    return context.wrap_socket(raw, server_hostname="localhost")


def read_reply(f):
    """One RESP2 reply from the file `f`: str, int, bytes, None, list, or an Exception for -ERR."""
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise OSError(f"connection closed mid-reply: {line!r}")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body.decode()
    if kind == b"-":
        return Exception(body.decode())
    if kind == b":":
        return int(body)
    if kind == b"$":
        n = int(body)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(body)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise OSError(f"not a RESP2 reply: {line!r}")


def resp_commands(port: int, password, pki, commands):
    """The replies to `commands` (lists of str), sent after AUTH when there is a password."""
    if password:
        commands = [["AUTH", password], *commands]
    out = b""
    for command in commands:
        out += b"*%d\r\n" % len(command)
        for arg in command:
            arg = arg.encode()
            out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    with connect(port, pki) as s:
        s.sendall(out)
        with s.makefile("rb") as f:
            replies = [read_reply(f) for _ in commands]
    return replies[1:] if password else replies


# Kubernetes quantity suffixes (operator/src/maxmemory.rs takes the same subset: no exponent).
SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity_bytes(text):
    m = re.fullmatch(r"([0-9]+)(?:\.([0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", text)
    if not m:
        raise ValueError(f"not a quantity: {text!r}")
    whole, fraction, suffix = m.group(1), m.group(2) or "", m.group(3)
    scale = 10 ** len(fraction)
    # Rounded up to a whole byte, as Kubernetes does.
    return -(-int(whole + fraction) * SUFFIXES.get(suffix, 1) // scale)


def expected_memory_config(spec):
    """CONFIG GET maxmemory and maxmemory-policy of a store with this KVStore spec (CRD defaults)."""
    memory = quantity_bytes(spec.get("memory", "1Gi"))
    maxmemory = str(spec.get("maxmemory", "75%"))
    if maxmemory.endswith("%"):
        limit = memory * int(maxmemory[:-1]) // 100
    else:
        limit = quantity_bytes(maxmemory)
    return {"maxmemory": str(limit), "maxmemory-policy": spec.get("maxmemoryPolicy", "noeviction")}


def memory_config_of_file(config):
    """CONFIG GET maxmemory and maxmemory-policy as the config file's [params] set them."""
    params = tomllib.loads(config).get("params", {})
    return {"maxmemory": str(params.get("maxmemory", "0")),
            "maxmemory-policy": str(params.get("maxmemory-policy", "noeviction"))}


def change_params_live(name, config_file, port, password, pki):
    """Rewrites the config file as the kubelet refreshes a ConfigMap (a new file swapped in) with
    another maxmemory and policy, as the operator writes them after a spec change, and waits for
    the running server to apply them. Failures, if it does not."""
    with open(config_file) as f:
        text = f.read()
    want = memory_config_of_file(text)
    want = {"maxmemory": str(int(want["maxmemory"]) + 2**20),
            "maxmemory-policy": "allkeys-lru" if want["maxmemory-policy"] != "allkeys-lru" else "volatile-lru"}
    for key, value in want.items():
        text, n = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', text, flags=re.M)
        if n != 1:
            return [f"{name}: the config file has no single {key} line in [params]"]
    # The user's own [params] (spec.config's) with a number: another value, as after a change of
    # spec.config that does not roll the pod (the operator hashes their names, not their values).
    for key, value in tomllib.loads(text).get("params", {}).items():
        if key in want or isinstance(value, bool) or not isinstance(value, int):
            continue
        text, n = re.subn(rf'^{re.escape(key)} = {value}$', f'{key} = {value + 1}', text, flags=re.M)
        if n != 1:
            return [f"{name}: the config file has no single {key} line in [params]"]
        want[key] = str(value + 1)
    swapped = config_file + ".new"
    with open(swapped, "w") as f:
        f.write(text)
    os.replace(swapped, config_file)
    deadline = time.monotonic() + RELOAD_DEADLINE_S
    failures = []
    while time.monotonic() < deadline:
        failures = check_memory_config(name, port, password, pki, want)
        if not failures:
            print(f"ok   {name}: a changed [params] applied without a restart: "
                  + ", ".join(f"{k} {v}" for k, v in want.items()))
            return []
        time.sleep(0.5)
    return [f"{name}: not applied within {RELOAD_DEADLINE_S} s: {failure}" for failure in failures]


def check_memory_config(name, port, password, pki, want):
    """Failures when the running server's maxmemory settings (and any other parameter in `want`)
    are not `want`."""
    replies = resp_commands(port, password, pki, [["CONFIG", "GET", key] for key in want])
    failures = []
    for key, reply in zip(want, replies):
        got = reply[1].decode() if isinstance(reply, list) and len(reply) == 2 else reply
        if got != want[key]:
            failures.append(f"{name}: CONFIG GET {key} answered {reply!r}, expected {want[key]!r}")
    return failures


def resp_ping(port: int, password, pki=None) -> bytes:
    with connect(port, pki) as s:
        out = b""
        if password:
            out += b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(password), password.encode())
        out += b"*1\r\n$4\r\nPING\r\n"
        s.sendall(out)
        want = 2 if password else 1
        data = b""
        while data.count(b"\r\n") < want:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def flag_value(args, name):
    return args[args.index(name) + 1] if name in args else None


def replace_flag(args, name, value):
    if name in args:
        args[args.index(name) + 1] = value


def with_pki(args, pki):
    """`args` with the files under the Secret's mount (TLS_DIR) taken from `pki` instead."""
    if pki is None:
        return args
    return [pki + a[len(TLS_DIR):] if a.startswith(TLS_DIR + "/") else a for a in args]


def run_jobs(bench, jobs, port, pki, workdir):
    """Runs each benchmark Job's cairn-bench command line against the store's RESP/TLS `port`."""
    failures = []
    for job_name, args, env in jobs:
        args = with_pki(args, pki)
        replace_flag(args, "--target", f"127.0.0.1:{port}")
        replace_flag(args, "--duration", "2s")
        summary = os.path.join(workdir, f"{job_name}.summary.json")
        replace_flag(args, "--summary-json", summary)
        run = subprocess.run([bench, *args], env=env, capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            failures.append(f"{job_name}: cairn-bench {' '.join(args)} exited {run.returncode}: "
                            f"{run.stderr.strip()[-500:]}")
        else:
            print(f"ok   {job_name}: the Job's cairn-bench command line ran against the store "
                  f"({os.path.getsize(summary)}-byte summary)")
    return failures


def container_env(container):
    """The container's environment as the kubelet would set it (a Secret's value: a dummy one that
    every pod and Job shares), and the password clients need when it sets CAIRN_REQUIREPASS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    password = None
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif var.get("valueFrom", {}).get("secretKeyRef"):
            env[var["name"]] = DUMMY_PASSWORD
            if var["name"] == "CAIRN_REQUIREPASS":
                password = DUMMY_PASSWORD
    return env, password


def run_pod(cairn, sts, config_maps, workdir, bench=None, jobs=(), store_spec=None, live_change=False):
    name = sts["metadata"]["name"]
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = list(container.get("args", []))
    config = config_maps.get(f"{name}-config", "")

    resp, admin = free_port(), free_port()
    data_dir = os.path.join(workdir, name, "data")
    os.makedirs(data_dir, exist_ok=True)
    config_file = os.path.join(workdir, name, "cairn.toml")
    with open(config_file, "w") as f:
        f.write(config)
    if flag_value(args, "--port") != "off":
        replace_flag(args, "--port", str(resp))
    replace_flag(args, "--admin-port", str(admin))
    # Several pods run on this one machine: each picks a free native port.
    if "--native-port" in args:
        if flag_value(args, "--native-port") != "off":
            replace_flag(args, "--native-port", "0")
    else:
        args += ["--native-port", "0"]
    replace_flag(args, "--bind", "127.0.0.1")
    pki, ping_port = None, resp
    if "--tls-port" in args:
        # The Secret's files: certificates made for this run, where the arguments name TLS_DIR.
        service_dns = f"{name}.{sts['metadata'].get('namespace', 'default')}.svc"
        pki = make_pki(os.path.join(workdir, name, "tls"), names=(service_dns,))
        args = with_pki(args, pki)
        ping_port = free_port()
        replace_flag(args, "--tls-port", str(ping_port))
    replace_flag(args, "--data-dir", data_dir)
    # The pod's /dev/termination-log: where the server leaves the error that stops it.
    message_file = os.path.join(workdir, name, "termination-log")
    if "--termination-message-path" in args:
        replace_flag(args, "--termination-message-path", message_file)
    replace_flag(args, "--config", config_file)

    env, password = container_env(container)

    command = container.get("command", [])
    if command[:1] != ["cairn"]:
        return [f"{name}: the container runs {command}, not cairn"]
    log_path = os.path.join(workdir, name, "cairn.log")
    failures = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen([cairn, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        try:
            probes = {kind: container[kind]["httpGet"]["path"]
                      for kind in ("startupProbe", "livenessProbe", "readinessProbe") if kind in container}
            deadline = time.monotonic() + DEADLINE_S
            pending = dict(probes)
            while pending and time.monotonic() < deadline and proc.poll() is None:
                for kind, path in list(pending.items()):
                    if http_status(admin, path) == 200:
                        del pending[kind]
                time.sleep(0.2)
            if proc.poll() is not None:
                left = open(message_file).read() if os.path.exists(message_file) else "(none)"
                failures.append(f"{name}: cairn exited with {proc.returncode} at start; termination message: {left}")
            for kind, path in pending.items():
                failures.append(f"{name}: {kind} {path} never answered 200")
            if not failures:
                reply = resp_ping(ping_port, password, pki)
                if not reply.endswith(b"+PONG\r\n"):
                    failures.append(f"{name}: PING answered {reply!r}")
                in_file = memory_config_of_file(config)
                if store_spec is not None:
                    want = expected_memory_config(store_spec)
                    if in_file != want:
                        failures.append(f"{name}: the config file's [params] {in_file} are not the KVStore's {want}")
                else:
                    want = in_file
                    print(f"note {name}: no KVStore in --resources; expecting the config file's [params]")
                if not failures:
                    failures += check_memory_config(name, ping_port, password, pki, want)
                if not failures and live_change:
                    failures += change_params_live(name, config_file, ping_port, password, pki)
                if not failures and bench:
                    failures += run_jobs(bench, jobs, ping_port, pki, os.path.join(workdir, name))
                if not failures:
                    print(f"ok   {name}: cairn {' '.join(container['args'])}: probes "
                          f"{', '.join(sorted(set(probes.values())))} answer 200, PING answers PONG, "
                          f"maxmemory {want['maxmemory']} ({want['maxmemory-policy']})")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    code = proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                if code != 0 and not failures:
                    failures.append(f"{name}: exit status {code} after SIGTERM")
    if failures:
        print(f"--- last lines of {log_path}")
        with open(log_path) as f:
            print("".join(f.readlines()[-20:]))
    return failures


def jobs_against(sts, jobs):
    """(name, args) of the benchmark Jobs whose --target is this store's client Service."""
    meta = sts["metadata"]
    prefix = f"{meta['name']}.{meta.get('namespace', 'default')}.svc:"
    out = []
    for job in jobs:
        container = job["spec"]["template"]["spec"]["containers"][0]
        args = [str(a) for a in container.get("args", [])]
        if (flag_value(args, "--target") or "").startswith(prefix):
            out.append((job["metadata"]["name"], args, container_env(container)[0]))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cairn", required=True)
    p.add_argument("--rendered", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--cairn-bench", help="also run each benchmark Job's command line with this binary")
    p.add_argument("--resources", nargs="*", default=[],
                   help="the KVStore manifests rendered: each store's maxmemory settings are checked against its spec")
    a = p.parse_args()
    specs = {}
    for path in a.resources:
        with open(path) as f:
            for d in yaml.safe_load_all(f):
                if d and d.get("kind") == "KVStore":
                    meta = d["metadata"]
                    specs[(meta.get("namespace", "default"), meta["name"])] = d.get("spec") or {}
    with open(a.rendered) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    config_maps = {d["metadata"]["name"]: d.get("data", {}).get("cairn.toml", "")
                   for d in docs if d.get("kind") == "ConfigMap"}
    statefulsets = [d for d in docs if d.get("kind") == "StatefulSet"]
    if not statefulsets:
        print("FAIL no StatefulSet in the rendered objects")
        sys.exit(1)
    failures = []
    jobs = [d for d in docs if d.get("kind") == "Job"]
    for i, sts in enumerate(statefulsets):
        meta = sts["metadata"]
        spec = specs.get((meta.get("namespace", "default"), meta["name"]))
        # The first store also has its maxmemory changed while it runs (once: it takes seconds).
        failures += run_pod(a.cairn, sts, config_maps, a.workdir, a.cairn_bench, jobs_against(sts, jobs), spec,
                            live_change=i == 0)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"store pods: {len(statefulsets) - len({f.split(':')[0] for f in failures})} of {len(statefulsets)} "
          "started and ready")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
