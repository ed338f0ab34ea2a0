//! The CRDs' CEL rules (`x-kubernetes-validations`), evaluated client-side with kube's CEL
//! validator (kube-cel: the Kubernetes CEL libraries, `quantity()` included, after schema
//! defaulting, as the API server does on admission). The examples must pass; each rule must
//! reject what it is there to reject, with its message.

use std::path::Path;

use cairn_crds::{KVStore, KVStoreBenchmark};
use kube::core::cel::Validator;
use kube::CustomResourceExt;
use serde_json::{json, Value};

/// The openAPIV3Schema of a CRD, as JSON.
fn schema<K: CustomResourceExt>() -> Value {
    let crd = K::crd();
    let schema = crd.spec.versions[0].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()).expect("schema");
    serde_json::to_value(schema).expect("schema as JSON")
}

/// The messages of the rules `object` breaks (on update from `old` when given).
fn broken<K: CustomResourceExt>(object: &Value, old: Option<&Value>) -> Vec<String> {
    match Validator::new().validate(&schema::<K>(), object, old) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.message.clone()).collect(),
    }
}

fn store(spec: Value) -> Value {
    json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore", "metadata": {"name": "demo"}, "spec": spec})
}

fn assert_breaks<K: CustomResourceExt>(object: &Value, old: Option<&Value>, message: &str) {
    let messages = broken::<K>(object, old);
    assert!(messages.iter().any(|m| m.contains(message)), "expected {message:?}, got {messages:?} for {object}");
}

#[test]
fn the_examples_and_the_e2e_variants_pass_every_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<_> = std::fs::read_dir(root.join("charts/cairn-operator/examples"))
        .expect("examples")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.push(root.join("e2e/k8s/variants.yaml"));
    let mut checked = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).expect("example");
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(doc).expect("yaml");
            let messages = match value["kind"].as_str() {
                Some("KVStore") => broken::<KVStore>(&value, None),
                Some("KVStoreBenchmark") => broken::<KVStoreBenchmark>(&value, None),
                _ => continue,
            };
            assert!(messages.is_empty(), "{}: {messages:?}", path.display());
            // Re-applying an unchanged object passes the transition rules too.
            let again = match value["kind"].as_str() {
                Some("KVStore") => broken::<KVStore>(&value, Some(&value)),
                _ => broken::<KVStoreBenchmark>(&value, Some(&value)),
            };
            assert!(again.is_empty(), "{}: {again:?}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} example resources");
}

#[test]
fn replicas_must_be_one_until_replication() {
    assert!(broken::<KVStore>(&store(json!({"replicas": 1})), None).is_empty());
    assert_breaks::<KVStore>(&store(json!({"replicas": 3})), None, "until Cairn supports replication");
    assert_breaks::<KVStore>(&store(json!({"replicas": 0})), None, "replicas must be at least 1");
}

#[test]
fn cpus_are_whole_cores_within_bounds() {
    assert!(broken::<KVStore>(&store(json!({"cpus": 256})), None).is_empty());
    assert_breaks::<KVStore>(&store(json!({"cpus": 0})), None, "whole number of cores");
    assert_breaks::<KVStore>(&store(json!({"cpus": 257})), None, "whole number of cores");
}

#[test]
fn durability_is_one_of_the_tiers() {
    for tier in ["none", "async", "everysec", "sync"] {
        assert!(broken::<KVStore>(&store(json!({"durability": tier})), None).is_empty(), "{tier}");
    }
    assert_breaks::<KVStore>(&store(json!({"durability": "always"})), None, "durability must be");
}

#[test]
fn storage_size_can_only_grow_and_not_be_removed() {
    let sized = |size: &str| store(json!({"storage": {"size": size}}));
    assert!(broken::<KVStore>(&sized("20Gi"), Some(&sized("10Gi"))).is_empty());
    assert!(broken::<KVStore>(&sized("1Ti"), Some(&sized("1000Gi"))).is_empty());
    assert_breaks::<KVStore>(&sized("10Gi"), Some(&sized("20Gi")), "storage.size can only grow");
    assert_breaks::<KVStore>(&sized("900Gi"), Some(&sized("1Ti")), "storage.size can only grow");
    assert_breaks::<KVStore>(&store(json!({})), Some(&sized("10Gi")), "storage.size cannot be removed");
}

#[test]
fn storage_class_is_immutable() {
    let class = |name: &str| store(json!({"storage": {"storageClassName": name}}));
    assert!(broken::<KVStore>(&class("fast"), Some(&class("fast"))).is_empty());
    assert_breaks::<KVStore>(&class("slow"), Some(&class("fast")), "storage.storageClassName is immutable");
    assert_breaks::<KVStore>(&store(json!({})), Some(&class("fast")), "cannot be removed once set");
    // Setting a class where none was set is allowed (the operator keeps the volume's class).
    assert!(broken::<KVStore>(&class("fast"), Some(&store(json!({})))).is_empty());
}

#[test]
fn a_benchmark_spec_is_immutable() {
    let bench = |clients: u32| {
        json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStoreBenchmark", "metadata": {"name": "b"},
               "spec": {"store": "demo", "workload": {"clients": clients}}})
    };
    assert!(broken::<KVStoreBenchmark>(&bench(8), Some(&bench(8))).is_empty());
    assert_breaks::<KVStoreBenchmark>(&bench(16), Some(&bench(8)), "a benchmark's spec is immutable");
}

#[test]
fn maxmemory_is_at_most_memory() {
    let sized = |memory: &str, maxmemory: &str| store(json!({"memory": memory, "maxmemory": maxmemory}));
    for (memory, maxmemory) in
        [("1Gi", "800Mi"), ("1Gi", "1Gi"), ("1Gi", "1G"), ("2Gi", "1.5Gi"), ("1Gi", "0"), ("1Gi", "100%")]
    {
        assert!(broken::<KVStore>(&sized(memory, maxmemory), None).is_empty(), "{memory} {maxmemory}");
    }
    // The default (75%) passes with any memory.
    assert!(broken::<KVStore>(&store(json!({"memory": "512Mi"})), None).is_empty());
    assert_breaks::<KVStore>(&sized("1Gi", "1025Mi"), None, "maxmemory must not exceed memory");
    assert_breaks::<KVStore>(&sized("1Gi", "2G"), None, "maxmemory must not exceed memory");
}
