#!/usr/bin/env python3
"""A Kubernetes API mock server on loopback for the operator e2e (launcher around PyPI kmock).

kmock's KubernetesEmulator stores objects and serves discovery, list, watch and get. This
launcher (written against kmock 0.8, which e2e/steps/50-kubernetes.sh pins) adds what kubectl
and kube-rs need from a real API server:

- discovery of the built-in resources the operator uses, and of every CRD that is created;
- metadata the server owns: uid, resourceVersion, generation, creationTimestamp;
- create, replace and delete; patches: server-side apply (creating missing objects), JSON merge,
  strategic merge (approximated by a JSON merge: lists are replaced) and JSON patch;
  a `metadata.resourceVersion` in a patch is a precondition (409 on mismatch);
- status subresources: writes to the main resource keep `status`, `/status` writes touch only it;
- label selectors (`k=v,k2=v2`) and metadata field selectors on lists; no events for no-op writes (as the real server);
- the immutable fields the operator could trip over: a StatefulSet's spec other than replicas,
  ordinals, template, updateStrategy, persistentVolumeClaimRetentionPolicy and minReadySeconds
  (so its volumeClaimTemplates), a Job's spec.template, and a claim's storage request cannot
  shrink (422, as the real server);
- with --simulate: a fake StatefulSet controller (claims `<template>-<sts>-<ordinal>` created
  from the claim templates, pods become ready) and a fake Job runner (a finished pod whose
  termination message is the driver's summary, then the Job's Complete).

Not modelled (see docs/kubernetes.md): garbage collection, scheduling and real pods, admission,
defaulting and validation (no OpenAPI defaults, no CEL), per-manager field ownership of
server-side apply (an apply replaces the top-level fields it names), RBAC, watch bookmarks.

Usage: kmock_apiserver.py --port 0 --port-file FILE [--simulate]; prints nothing else.
"""

import argparse
import asyncio
import copy
import datetime
import itertools
import json
import os
import signal
import uuid

import aiohttp.web
import jsonpatch
import kmock
import yaml

BUILTIN = {
    # (group/version, plural): (kind, namespaced, subresources, shortnames)
    ("v1", "namespaces"): ("Namespace", False, {"status"}, {"ns"}),
    ("v1", "configmaps"): ("ConfigMap", True, set(), {"cm"}),
    ("v1", "services"): ("Service", True, {"status"}, {"svc"}),
    ("v1", "pods"): ("Pod", True, {"status"}, {"po"}),
    ("v1", "secrets"): ("Secret", True, set(), set()),
    ("v1", "persistentvolumeclaims"): ("PersistentVolumeClaim", True, {"status"}, {"pvc"}),
    ("v1", "events"): ("Event", True, set(), {"ev"}),
    ("events.k8s.io/v1", "events"): ("Event", True, set(), set()),
    ("apps/v1", "statefulsets"): ("StatefulSet", True, {"status"}, {"sts"}),
    ("apps/v1", "deployments"): ("Deployment", True, {"status"}, {"deploy"}),
    ("batch/v1", "jobs"): ("Job", True, {"status"}, set()),
    ("policy/v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True, {"status"}, {"pdb"}),
    ("coordination.k8s.io/v1", "leases"): ("Lease", True, set(), set()),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions"): ("CustomResourceDefinition", False, {"status"}, {"crd"}),
}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
# Fields of a StatefulSet's spec that an update may change (the API server's validation).
STS_MUTABLE = {"replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
               "minReadySeconds"}
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
SUMMARY = {"ops_per_sec": 123456.0, "p50_us": 95.0, "p99_us": 410.0, "errors": 0, "verified": True,
           "note": "simulated by e2e/k8s/kmock_apiserver.py"}


def now() -> str:
    return datetime.datetime.now(tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def quantity_bytes(q) -> int:
    """Bytes of a binary-suffixed quantity (`10Gi`); plain numbers as they are."""
    q = str(q)
    for unit, factor in UNITS.items():
        if q.endswith(unit):
            return int(q[:-2]) * factor
    return int(q)


def check_immutable(resource, old, new):
    """Raises the API server's 422 for an update of a field it does not let change."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if resource.plural == "statefulsets":
        changed = sorted(k for k in set(old_spec) | set(new_spec)
                         if k not in STS_MUTABLE and old_spec.get(k) != new_spec.get(k))
        if changed:
            raise Failure(422, "Invalid", f'StatefulSet.apps "{old["metadata"]["name"]}" is invalid: spec: '
                          "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                          "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                          f"'minReadySeconds' are forbidden (changed: {', '.join(changed)})")
    elif resource.plural == "jobs":
        if old_spec.get("template") != new_spec.get("template"):
            raise Failure(422, "Invalid", f'Job.batch "{old["metadata"]["name"]}" is invalid: spec.template: '
                          "Invalid value: field is immutable")
    elif resource.plural == "persistentvolumeclaims":
        size = lambda o: ((o.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
        if size(old) and size(new) and quantity_bytes(size(new)) < quantity_bytes(size(old)):
            raise Failure(422, "Invalid", f'PersistentVolumeClaim "{old["metadata"]["name"]}" is invalid: '
                          "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity")


def merge(base, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(base) if isinstance(base, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


class Failure(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def response(self) -> aiohttp.web.Response:
        return aiohttp.web.json_response(
            {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
             "code": self.code, "reason": self.reason, "message": self.message}, status=self.code)


class ApiServer(kmock.KubernetesEmulator):
    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.rv = itertools.count(1000)
        self.status_subresource: set = set()
        for (gv, plural), (kind, namespaced, subs, shorts) in BUILTIN.items():
            self.register(gv, plural, kind, namespaced, subs, shorts, set())

    # -- discovery -------------------------------------------------------------------------
    def register(self, gv, plural, kind, namespaced, subs, shorts, categories):
        self.resources[f"{gv}/{plural}"] = kmock.ResourceInfo(
            kind=kind, namespaced=namespaced, singular=kind.lower(), verbs=VERBS,
            shortnames=shorts, categories=categories, subresources=subs)
        if "status" in subs:
            self.status_subresource.add(kmock.resource(f"{gv}/{plural}"))

    def register_crd(self, crd: dict) -> None:
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        for version in spec.get("versions", []):
            if not version.get("served", True):
                continue
            subs = set((version.get("subresources") or {}).keys())
            self.register(f"{spec['group']}/{version['name']}", names["plural"], names["kind"],
                          spec.get("scope") == "Namespaced", subs, set(names.get("shortNames", [])),
                          set(names.get("categories", [])))

    async def _serve_version(self, request):
        # kmock names the core group "/v1" and lists subresources with their parent's short
        # names; the real server does neither.
        listing = await super()._serve_version(request)
        listing["groupVersion"] = listing["groupVersion"].lstrip("/")
        for entry in listing.get("resources", []):
            if "/" in entry["name"]:
                entry.update(shortNames=[], categories=[], verbs=["get", "patch", "update"])
        return listing

    # -- storage ---------------------------------------------------------------------------
    def get(self, resource, namespace, name):
        key = (resource, namespace, name)
        if key in self.objects and not self.objects[key].deleted:
            return copy.deepcopy(self.objects[key].raw)
        return None

    async def put(self, resource, namespace, name, obj, event):
        obj["metadata"]["resourceVersion"] = str(next(self.rv))
        self.objects[resource, namespace, name] = obj
        await self._buses[resource].put({"type": event, "object": copy.deepcopy(obj)})
        return obj

    async def create(self, request, resource, body):
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name") or request.name
        if resource not in self.resources:
            raise Failure(404, "NotFound", f"the server could not find the requested resource {resource}")
        if not name:
            raise Failure(422, "Invalid", "metadata.name is required")
        namespace = request.namespace if self.resources[resource].namespaced else None
        if self.get(resource, namespace, name) is not None:
            raise Failure(409, "AlreadyExists", f"{resource.plural} {name!r} already exists")
        meta.update(name=name, uid=str(uuid.uuid4()), generation=1, creationTimestamp=now())
        meta.pop("resourceVersion", None)
        if namespace:
            meta["namespace"] = namespace
        if resource in self.status_subresource:
            body.pop("status", None)
        if resource.plural == "customresourcedefinitions":
            body["status"] = {"conditions": [
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "", "lastTransitionTime": now()},
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "", "lastTransitionTime": now()}],
                "acceptedNames": body.get("spec", {}).get("names", {})}
            self.register_crd(body)
        return await self.put(resource, namespace, name, body, "ADDED")

    async def update(self, resource, namespace, name, old, new, subresource):
        """Stores `new` as the next version of `old`, with the server's rules."""
        if subresource == "status":
            result = copy.deepcopy(old)
            result["status"] = new.get("status")
            if result["status"] is None:
                result.pop("status")
        else:
            check_immutable(resource, old, new)
            result = new
            if resource in self.status_subresource:
                result.pop("status", None)
                if "status" in old:
                    result["status"] = old["status"]
        meta = result.setdefault("metadata", {})
        for field in ("uid", "creationTimestamp", "namespace", "name", "generation"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        spec_of = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
        if spec_of(result) != spec_of(old):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        if result == old:
            return old  # a no-op write changes nothing and emits no event
        if resource.plural == "customresourcedefinitions":
            self.register_crd(result)
        return await self.put(resource, namespace, name, result, "MODIFIED")

    # -- request handling ------------------------------------------------------------------
    async def _handle(self, request):
        try:
            if request.resource is not None and request.resource.plural and request.resource.version:
                if request.method == "POST" and request.name is None:
                    return aiohttp.web.json_response(
                        await self.create(request, request.resource, self.body(request)), status=201)
                if request.method in ("PATCH", "PUT", "DELETE") and request.name:
                    return await self.mutate(request)
                if request.method == "GET" and request.params.get("watch") != "true":
                    if request.name is None:
                        return aiohttp.web.json_response(self.list(request))
                    return aiohttp.web.json_response(self.fetch(request))
            return await super()._handle(request)
        except Failure as f:
            return f.response()

    @staticmethod
    def body(request):
        if request.text.strip() == "":
            return {}
        try:
            return json.loads(request.text)
        except ValueError:
            return yaml.safe_load(request.text)

    def fetch(self, request):
        resource = request.resource
        if resource not in self.resources:
            raise Failure(404, "NotFound", f"the server could not find the requested resource {resource}")
        namespace = request.namespace if self.resources[resource].namespaced else None
        obj = self.get(resource, namespace, request.name)
        if obj is None:  # kube-rs and kubectl look for the reason "NotFound"
            raise Failure(404, "NotFound", f'{resource.plural} "{request.name}" not found')
        return obj

    def list(self, request):
        resource = request.resource
        if resource not in self.resources:
            raise Failure(404, "NotFound", f"the server could not find the requested resource {resource}")
        wanted = {}
        for term in filter(None, request.params.get("labelSelector", "").split(",")):
            key, _, value = term.partition("=")
            wanted[key.strip()] = value.lstrip("=").strip()
        fields = {}
        for term in filter(None, request.params.get("fieldSelector", "").split(",")):
            key, _, value = term.partition("=")
            fields[key.strip()] = value.lstrip("=").strip()
        items = []
        for (res, namespace, _), obj in list(self.objects.items()):
            if res != resource or obj.deleted:
                continue
            if request.namespace is not None and namespace != request.namespace:
                continue
            labels = obj.raw.get("metadata", {}).get("labels") or {}
            meta = obj.raw.get("metadata", {})
            if any(meta.get(k.removeprefix("metadata.")) != v for k, v in fields.items()):
                continue
            if all(labels.get(k) == v for k, v in wanted.items()):
                items.append(obj.raw)
        info = self.resources[resource]
        api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        return {"apiVersion": api_version, "kind": f"{info.kind}List",
                "metadata": {"resourceVersion": str(next(self.rv))}, "items": items}

    async def mutate(self, request):
        resource, name = request.resource, request.name
        if resource not in self.resources:
            raise Failure(404, "NotFound", f"the server could not find the requested resource {resource}")
        namespace = request.namespace if self.resources[resource].namespaced else None
        old = self.get(resource, namespace, name)
        subresource = request.subresource
        if request.method == "DELETE":
            if old is None:
                raise Failure(404, "NotFound", f"{resource.plural} {name!r} not found")
            del self.objects[resource, namespace, name]
            await self._buses[resource].put({"type": "DELETED", "object": old})
            return aiohttp.web.json_response(old)
        content_type = request.headers.get("Content-Type", "")
        body = self.body(request)
        if old is None:
            if request.method == "PUT" or "apply-patch" in content_type:
                if subresource:
                    raise Failure(404, "NotFound", f"{resource.plural} {name!r} not found")
                body.setdefault("metadata", {})["name"] = name
                return aiohttp.web.json_response(await self.create(request, resource, body), status=201)
            raise Failure(404, "NotFound", f"{resource.plural} {name!r} not found")
        precondition = (body.get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
        if precondition and precondition != old["metadata"]["resourceVersion"]:
            raise Failure(409, "Conflict", f"the object has been modified: {name!r} is at "
                          f"{old['metadata']['resourceVersion']}, not {precondition}")
        if request.method == "PUT":
            new = body
        elif "json-patch" in content_type:
            new = jsonpatch.apply_patch(old, body)
        elif "apply-patch" in content_type:
            # One manager per object here: the applied configuration replaces the top-level
            # fields it names (and the labels, annotations and owners it gives).
            new = copy.deepcopy(old)
            for key, value in body.items():
                if key == "metadata":
                    for mkey in ("labels", "annotations", "ownerReferences", "finalizers"):
                        if mkey in value:
                            new["metadata"][mkey] = value[mkey]
                else:
                    new[key] = value
        else:
            new = merge(old, body)
        return aiohttp.web.json_response(await self.update(resource, namespace, name, old, new, subresource))

    # -- simulation ------------------------------------------------------------------------
    async def simulate(self) -> None:
        sts = kmock.resource("apps/v1/statefulsets")
        jobs = kmock.resource("batch/v1/jobs")
        pods = kmock.resource("v1/pods")
        claims = kmock.resource("v1/persistentvolumeclaims")
        while True:
            await asyncio.sleep(0.5)
            for (res, namespace, name), obj in list(self.objects.items()):
                if obj.deleted:
                    continue
                raw = copy.deepcopy(obj.raw)
                if res == sts:
                    n = raw.get("spec", {}).get("replicas", 1)
                    for template in raw.get("spec", {}).get("volumeClaimTemplates") or []:
                        for ordinal in range(n):
                            claim = f"{template['metadata']['name']}-{name}-{ordinal}"
                            if self.get(claims, namespace, claim) is None:
                                pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                       "metadata": {"name": claim, "namespace": namespace,
                                                    "labels": template["metadata"].get("labels", {}),
                                                    "uid": str(uuid.uuid4()), "creationTimestamp": now(),
                                                    "generation": 1},
                                       "spec": copy.deepcopy(template.get("spec", {})),
                                       "status": {"phase": "Bound"}}
                                await self.put(claims, namespace, claim, pvc, "ADDED")
                    status = {"replicas": n, "readyReplicas": n, "currentReplicas": n, "updatedReplicas": n,
                              "availableReplicas": n, "observedGeneration": raw["metadata"].get("generation", 1)}
                    if raw.get("status") != status:
                        await self.update(res, namespace, name, raw, {**raw, "status": status}, "status")
                elif res == jobs and not (raw.get("status") or {}).get("conditions"):
                    labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
                    pod = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"{name}-sim", "namespace": namespace, "labels": labels,
                                        "uid": str(uuid.uuid4()), "creationTimestamp": now()},
                           "spec": raw["spec"]["template"]["spec"],
                           "status": {"phase": "Succeeded", "containerStatuses": [{
                               "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False,
                               "restartCount": 0, "state": {"terminated": {
                                   "exitCode": 0, "reason": "Completed", "finishedAt": now(),
                                   "message": json.dumps(SUMMARY)}}} for c in raw["spec"]["template"]["spec"]["containers"]]}}
                    await self.put(pods, namespace, pod["metadata"]["name"], pod, "ADDED")
                    status = {"succeeded": 1, "startTime": now(), "completionTime": now(), "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now()},
                        {"type": "Complete", "status": "True", "lastTransitionTime": now()}]}
                    await self.update(res, namespace, name, raw, {**raw, "status": status}, "status")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True, help="where to write the port once listening")
    parser.add_argument("--simulate", action="store_true", help="fake StatefulSet readiness and Job runs")
    args = parser.parse_args()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with ApiServer() as api, kmock.Server(api, host="127.0.0.1", port=args.port) as server:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(server.port))
        os.replace(tmp, args.port_file)
        task = asyncio.create_task(api.simulate()) if args.simulate else None
        await stop.wait()
        if task:
            task.cancel()


if __name__ == "__main__":
    asyncio.run(main())
