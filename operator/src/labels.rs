//! Names and labels of the objects the operator owns, derived from the custom resource's name.

use std::collections::BTreeMap;

/// The field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "cairn-operator";
/// The annotation carrying a hash of the server config, so a config change rolls the pods.
pub const CONFIG_HASH_ANNOTATION: &str = "cairn.io/config-hash";

pub const APP_NAME: &str = "cairn";
pub const COMPONENT_STORE: &str = "store";
pub const COMPONENT_BENCHMARK: &str = "benchmark";

/// Name of the headless Service giving each pod a stable DNS name.
pub fn headless_service_name(store: &str) -> String {
    format!("{store}-headless")
}

/// Name of the client Service.
pub fn client_service_name(store: &str) -> String {
    store.to_string()
}

/// Name of the ConfigMap holding the server config.
pub fn config_map_name(store: &str) -> String {
    format!("{store}-config")
}

/// Name of the benchmark Job.
pub fn job_name(benchmark: &str) -> String {
    format!("{benchmark}-bench")
}

/// Name of the data volume claim template (PVCs are `data-<store>-<ordinal>`).
pub const DATA_VOLUME: &str = "data";

/// Labels selecting the pods of a store (stable: part of the StatefulSet's immutable selector).
pub fn selector_labels(store: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), APP_NAME.to_string()),
        ("app.kubernetes.io/instance".to_string(), store.to_string()),
        ("app.kubernetes.io/component".to_string(), COMPONENT_STORE.to_string()),
    ])
}

/// Labels of every object the operator creates for a store.
pub fn store_labels(store: &str) -> BTreeMap<String, String> {
    let mut labels = selector_labels(store);
    labels.insert("app.kubernetes.io/managed-by".to_string(), FIELD_MANAGER.to_string());
    labels
}

/// Labels of a benchmark's Job and pod.
pub fn benchmark_labels(benchmark: &str, store: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), APP_NAME.to_string()),
        ("app.kubernetes.io/instance".to_string(), store.to_string()),
        ("app.kubernetes.io/component".to_string(), COMPONENT_BENCHMARK.to_string()),
        ("app.kubernetes.io/managed-by".to_string(), FIELD_MANAGER.to_string()),
        ("cairn.io/benchmark".to_string(), benchmark.to_string()),
    ])
}

/// In-cluster DNS name of a Service.
pub fn service_dns(service: &str, namespace: &str) -> String {
    format!("{service}.{namespace}.svc")
}
