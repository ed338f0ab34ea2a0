//! The ConfigMap holding the server's TOML config file (`spec.config`).

use std::collections::BTreeMap;

use cairn_crds::KVStore;
use k8s_openapi::api::core::v1::ConfigMap;

use super::owned_meta;
use crate::labels::{config_map_name, store_labels};
use crate::store_contract::CONFIG_FILE_NAME;

/// The config file's text: `spec.config`, or a comment when there is none.
pub fn config_text(store: &KVStore) -> String {
    match &store.spec.config {
        Some(text) if !text.trim().is_empty() => text.clone(),
        _ => "# No extra configuration: see spec.config of the KVStore.\n".to_string(),
    }
}

pub fn build(store: &KVStore) -> ConfigMap {
    let name = store.metadata.name.clone().unwrap_or_default();
    ConfigMap {
        metadata: owned_meta(store, config_map_name(&name), store_labels(&name)),
        data: Some(BTreeMap::from([(CONFIG_FILE_NAME.to_string(), config_text(store))])),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    #[test]
    fn holds_the_extra_config() {
        let mut s = store("demo");
        s.spec.config = Some("maxclients = 100\n".into());
        let cm = build(&s);
        assert_eq!(cm.metadata.name.as_deref(), Some("demo-config"));
        let data = cm.data.expect("data");
        assert_eq!(data.get("cairn.toml").map(String::as_str), Some("maxclients = 100\n"));
        let owner = &cm.metadata.owner_references.expect("owner")[0];
        assert_eq!(owner.kind, "KVStore");
        assert_eq!(owner.controller, Some(true));
    }
}
