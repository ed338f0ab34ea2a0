//! The client Service: where applications connect (RESP, native protocol, admin).

use cairn_crds::KVStore;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};

use super::owned_meta;
use crate::labels::{client_service_name, selector_labels, store_labels};

pub fn build(store: &KVStore) -> Service {
    let name = store.metadata.name.clone().unwrap_or_default();
    let mut metadata = owned_meta(store, client_service_name(&name), store_labels(&name));
    if !store.spec.service.annotations.is_empty() {
        metadata.annotations = Some(store.spec.service.annotations.clone());
    }
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(store.spec.service.type_.as_str().into()),
            selector: Some(selector_labels(&name)),
            ports: Some(super::service_headless::ports(store)),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;
    use cairn_crds::ServiceType;

    #[test]
    fn carries_the_type_and_annotations() {
        let mut s = store("demo");
        s.spec.service.type_ = ServiceType::LoadBalancer;
        s.spec.service.annotations.insert("lb".into(), "internal".into());
        let svc = build(&s);
        assert_eq!(svc.metadata.name.as_deref(), Some("demo"));
        assert_eq!(svc.metadata.annotations.and_then(|a| a.get("lb").cloned()), Some("internal".into()));
        let spec = svc.spec.expect("spec");
        assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
        assert_eq!(spec.ports.expect("ports").len(), 3);
    }
}
