//! The PodDisruptionBudget of the store's pods.

use cairn_crds::KVStore;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::owned_meta;
use crate::labels::{selector_labels, store_labels};

/// The PDB, or `None` when `spec.podDisruptionBudget.enabled` is false.
pub fn build(store: &KVStore) -> Option<PodDisruptionBudget> {
    let spec = &store.spec.pod_disruption_budget;
    if !spec.enabled {
        return None;
    }
    let name = store.metadata.name.clone().unwrap_or_default();
    Some(PodDisruptionBudget {
        metadata: owned_meta(store, name.clone(), store_labels(&name)),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(spec.max_unavailable)),
            selector: Some(LabelSelector { match_labels: Some(selector_labels(&name)), ..LabelSelector::default() }),
            unhealthy_pod_eviction_policy: Some("IfHealthyBudget".into()),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    #[test]
    fn default_blocks_voluntary_evictions() {
        let pdb = build(&store("demo")).expect("pdb");
        let spec = pdb.spec.expect("spec");
        assert_eq!(spec.max_unavailable, Some(IntOrString::Int(0)));
        assert_eq!(spec.selector.and_then(|s| s.match_labels), Some(selector_labels("demo")));
    }

    #[test]
    fn can_be_disabled() {
        let mut s = store("demo");
        s.spec.pod_disruption_budget.enabled = false;
        assert!(build(&s).is_none());
    }
}
