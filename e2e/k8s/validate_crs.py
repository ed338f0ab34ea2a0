#!/usr/bin/env python3
"""Validates custom resources against the generated CRD schemas (crds/yaml/*.yaml).

The CRD's openAPIV3Schema becomes a JSON Schema, made strict as the API server's pruning and
`fieldValidation=Strict` are (an object with `properties` takes no other keys unless it sets
`x-kubernetes-preserve-unknown-fields` or `additionalProperties`). CEL rules
(`x-kubernetes-validations`) are not evaluated here; the Rust tests check they are present.

Then a set of known-bad resources must be rejected, so that the check is known to bite.

Usage: validate_crs.py CRD_DIR FILE...   (every KVStore / KVStoreBenchmark document in FILEs)
"""

import copy
import glob
import os
import sys

import jsonschema
import yaml


def strict(schema):
    schema = copy.deepcopy(schema)

    def walk(node):
        if not isinstance(node, dict):
            return
        if node.get("nullable"):
            t = node.get("type")
            if isinstance(t, str):
                node["type"] = [t, "null"]
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        for key in ("properties", "patternProperties"):
            for child in node.get(key, {}).values():
                walk(child)
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                walk(node[key])
        for key in ("allOf", "anyOf", "oneOf"):
            for child in node.get(key, []):
                walk(child)

    walk(schema)
    # metadata is validated by the API server itself, not by the CRD schema.
    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
    schema["properties"]["apiVersion"] = {"type": "string"}
    schema["properties"]["kind"] = {"type": "string"}
    return schema


def load_validators(crd_dir):
    validators = {}
    for path in sorted(glob.glob(os.path.join(crd_dir, "*.yaml"))):
        with open(path) as f:
            crd = yaml.safe_load(f)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            validators[(f"{group}/{version['name']}", kind)] = jsonschema.Draft202012Validator(schema)
    return validators


def errors_of(validators, doc):
    v = validators.get((doc.get("apiVersion"), doc.get("kind")))
    if v is None:
        return None
    return [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in v.iter_errors(doc)]


BAD = [
    ("unknown durability", {"spec": {"durability": "fast"}}),
    ("fractional cpus", {"spec": {"cpus": 1.5}}),
    ("decimal memory unit", {"spec": {"memory": "1G"}}),
    ("unknown field", {"spec": {"replica": 1}}),
    ("unknown fsync class", {"spec": {"fsyncClass": "floppy"}}),
    ("bad storage size", {"spec": {"storage": {"size": "10"}}}),
    ("port out of range", {"spec": {"ports": {"resp": 70000}}}),
    ("maxmemory not a quantity", {"spec": {"maxmemory": "1gb"}}),
    ("maxmemory above 100%", {"spec": {"maxmemory": "150%"}}),
    ("maxmemory as a number (unquoted 0)", {"spec": {"maxmemory": 0}}),
    ("unknown maxmemory policy", {"spec": {"maxmemoryPolicy": "lru"}}),
]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    validators = load_validators(sys.argv[1])
    passed = failed = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for doc in docs:
            errs = errors_of(validators, doc)
            if errs is None:
                continue
            name = f"{path}: {doc['kind']}/{doc['metadata']['name']}"
            if errs:
                failed += 1
                print(f"FAIL {name}")
                for e in errs:
                    print(f"     {e}")
            else:
                passed += 1
                print(f"ok   {name}")
    base = {"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore", "metadata": {"name": "x"}}
    for what, patch in BAD:
        doc = {**base, **patch}
        if errors_of(validators, doc):
            passed += 1
            print(f"ok   rejects {what}")
        else:
            failed += 1
            print(f"FAIL accepts {what}: {doc}")
    bench = {"apiVersion": "cairn.io/v1alpha1", "kind": "KVStoreBenchmark", "metadata": {"name": "x"},
             "spec": {"workload": {"clients": 8}}}
    if errors_of(validators, bench):
        passed += 1
        print("ok   rejects a benchmark without a store")
    else:
        failed += 1
        print("FAIL accepts a benchmark without a store")
    print(f"custom resources: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
