//! The headless Service: stable per-pod DNS names for the StatefulSet.

use cairn_crds::KVStore;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

use super::owned_meta;
use crate::labels::{headless_service_name, selector_labels, store_labels};

/// Named ports shared by both Services.
pub fn ports(store: &KVStore) -> Vec<ServicePort> {
    super::served_ports(&store.spec)
        .into_iter()
        .map(|(name, port)| ServicePort {
            name: Some(name.into()),
            port,
            target_port: Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name.into())),
            protocol: Some("TCP".into()),
            ..ServicePort::default()
        })
        .collect()
}

pub fn build(store: &KVStore) -> Service {
    let name = store.metadata.name.clone().unwrap_or_default();
    Service {
        metadata: owned_meta(store, headless_service_name(&name), store_labels(&name)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(selector_labels(&name)),
            ports: Some(ports(store)),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;

    #[test]
    fn is_headless_and_selects_the_pods() {
        let svc = build(&store("demo"));
        assert_eq!(svc.metadata.name.as_deref(), Some("demo-headless"));
        let spec = svc.spec.expect("spec");
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.selector, Some(selector_labels("demo")));
        let ports: Vec<i32> = spec.ports.expect("ports").iter().map(|p| p.port).collect();
        assert_eq!(ports, vec![6379, 7379, 8379]);
    }
}
