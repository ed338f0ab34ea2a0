//! The ConfigMap holding the server's TOML config file (`spec.config` and the operator's
//! `[params]`, see [`crate::config_file`]).

use std::collections::BTreeMap;

use cairn_crds::KVStore;
use k8s_openapi::api::core::v1::ConfigMap;

use super::owned_meta;
use crate::labels::{config_map_name, store_labels};
use crate::store_contract::CONFIG_FILE_NAME;

/// The config file's text ([`crate::config_file::text`]).
pub fn config_text(store: &KVStore) -> String {
    crate::config_file::text(store)
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
        let text = data.get("cairn.toml").expect("the config file");
        assert!(text.contains("maxclients = 100\n"), "{text}");
        assert!(text.contains("[params]"), "{text}");
        let owner = &cm.metadata.owner_references.expect("owner")[0];
        assert_eq!(owner.kind, "KVStore");
        assert_eq!(owner.controller, Some(true));
    }
}
