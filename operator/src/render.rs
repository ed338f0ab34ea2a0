//! `cairn-operator render`: prints what the builders make of KVStore and KVStoreBenchmark
//! manifests, as multi-document YAML, without a cluster. The e2e step validates this output
//! against the Kubernetes schemas; users can read what the operator will create.

use cairn_crds::{KVStore, KVStoreBenchmark};
use serde::Serialize;

use crate::builders;
use crate::validate::resolve;

/// Errors of rendering.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("parsing the manifests: {0}")]
    Parse(#[from] serde_yaml_ng::Error),
    #[error("KVStore {name}: {message}")]
    Invalid { name: String, message: String },
    #[error("KVStoreBenchmark {bench} names KVStore {store}, which is not in the input")]
    MissingStore { bench: String, store: String },
}

/// Renders every object the operator would create for the custom resources in `yaml` (one or
/// more documents; documents of other kinds are skipped).
pub fn render(yaml: &str) -> Result<String, RenderError> {
    let mut stores = Vec::new();
    let mut benches = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(yaml) {
        let value = serde_yaml_ng::Value::deserialize(doc)?;
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("KVStore") => stores.push(serde_yaml_ng::from_value::<KVStore>(value)?),
            Some("KVStoreBenchmark") => benches.push(serde_yaml_ng::from_value::<KVStoreBenchmark>(value)?),
            _ => {}
        }
    }
    let mut out = String::new();
    for store in &mut stores {
        if store.metadata.namespace.is_none() {
            store.metadata.namespace = Some("default".into());
        }
        let name = store.metadata.name.clone().unwrap_or_default();
        let resolved = resolve(store).map_err(|e| RenderError::Invalid { name: name.clone(), message: e.0 })?;
        push(&mut out, &builders::configmap::build(store))?;
        push(&mut out, &builders::service_headless::build(store))?;
        push(&mut out, &builders::service_client::build(store))?;
        push(&mut out, &builders::statefulset::build(store, &resolved.volume))?;
        if let Some(pdb) = builders::pdb::build(store) {
            push(&mut out, &pdb)?;
        }
    }
    for bench in &mut benches {
        if bench.metadata.namespace.is_none() {
            bench.metadata.namespace = Some("default".into());
        }
        let store =
            stores.iter().find(|s| s.metadata.name.as_deref() == Some(bench.spec.store.as_str())).ok_or_else(|| {
                RenderError::MissingStore {
                    bench: bench.metadata.name.clone().unwrap_or_default(),
                    store: bench.spec.store.clone(),
                }
            })?;
        push(&mut out, &builders::job::build(bench, store))?;
    }
    Ok(out)
}

use serde::Deserialize;

fn push<T: Serialize>(out: &mut String, obj: &T) -> Result<(), RenderError> {
    out.push_str("---\n");
    out.push_str(&cairn_crds::yaml11::quote_booleans(&serde_yaml_ng::to_string(obj)?));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_object_of_a_store_and_a_benchmark() {
        let yaml = "apiVersion: cairn.io/v1alpha1\nkind: KVStore\nmetadata: {name: demo}\nspec: {durability: sync}\n---\napiVersion: cairn.io/v1alpha1\nkind: KVStoreBenchmark\nmetadata: {name: run1}\nspec: {store: demo}\n";
        let out = render(yaml).expect("render");
        for kind in ["ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget", "Job"] {
            assert!(out.contains(&format!("kind: {kind}\n")), "{kind} missing");
        }
        assert_eq!(out.matches("kind: Service\n").count(), 2);
        assert!(out.contains("- sync\n"));
    }

    #[test]
    fn an_invalid_store_is_an_error() {
        let yaml = "apiVersion: cairn.io/v1alpha1\nkind: KVStore\nmetadata: {name: demo}\nspec: {replicas: 3}\n";
        assert!(matches!(render(yaml), Err(RenderError::Invalid { .. })));
    }
}
