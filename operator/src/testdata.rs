//! Objects shared by the unit tests.

use cairn_crds::{KVStore, KVStoreSpec};

/// A store with every spec field at its default, as the API server would default it.
pub fn store(name: &str) -> KVStore {
    let spec: KVStoreSpec =
        serde_json::from_value(serde_json::json!({})).unwrap_or_else(|e| panic!("default spec: {e}"));
    let mut store = KVStore::new(name, spec);
    store.metadata.namespace = Some("default".into());
    store.metadata.uid = Some("11111111-2222-3333-4444-555555555555".into());
    store.metadata.generation = Some(1);
    store
}

/// A benchmark of `store` with the default workload.
pub fn benchmark(name: &str, store: &str) -> cairn_crds::KVStoreBenchmark {
    let spec: cairn_crds::KVStoreBenchmarkSpec = serde_json::from_value(serde_json::json!({ "store": store }))
        .unwrap_or_else(|e| panic!("default benchmark spec: {e}"));
    let mut bench = cairn_crds::KVStoreBenchmark::new(name, spec);
    bench.metadata.namespace = Some("default".into());
    bench.metadata.uid = Some("66666666-7777-8888-9999-000000000000".into());
    bench.metadata.generation = Some(1);
    bench
}
