//! Pure builders: one Kubernetes object per file, computed from the custom resource alone
//! (plus the volume plan). No I/O here: the reconcilers apply what these return.

pub mod configmap;
pub mod job;
pub mod pdb;
pub mod service_client;
pub mod service_headless;
pub mod statefulset;

use cairn_crds::TlsSecretRef;
use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, SeccompProfile, SecretVolumeSource, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::store_contract::{RUN_AS_USER, TLS_DIR};

/// Name of the volume holding a store's TLS Secret (in the store's pods and a benchmark's).
pub const TLS_VOLUME: &str = "tls";

/// The named ports the pod listens on: RESP and admin always, the native protocol unless the
/// store serves TLS (the native protocol has no TLS, so its port is off then).
pub fn served_ports(spec: &cairn_crds::KVStoreSpec) -> Vec<(&'static str, i32)> {
    let p = &spec.ports;
    let mut ports = vec![("resp", p.resp)];
    if spec.tls_secret.is_none() {
        ports.push(("native", p.native));
    }
    ports.push(("admin", p.admin));
    ports
}

/// The volume of a store's TLS Secret: readable by the owner and the pod's group (`fsGroup`),
/// which the non-root user of every pod here belongs to.
pub fn tls_volume(secret: &TlsSecretRef) -> Volume {
    Volume {
        name: TLS_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.name.clone()),
            default_mode: Some(0o440),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The TLS Secret's volume mounted read-only at [`TLS_DIR`], where the flags' files point.
pub fn tls_mount() -> VolumeMount {
    VolumeMount { name: TLS_VOLUME.into(), mount_path: TLS_DIR.into(), read_only: Some(true), ..VolumeMount::default() }
}

/// Metadata of an owned object: name, namespace, labels and the controller owner reference
/// (absent when the owner has no uid yet, as in `cairn-operator render`).
pub fn owned_meta<K: Resource<DynamicType = ()>>(
    owner: &K,
    name: String,
    labels: std::collections::BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: owner.meta().namespace.clone(),
        labels: Some(labels),
        owner_references: owner_reference(owner).map(|r| vec![r]),
        ..ObjectMeta::default()
    }
}

fn owner_reference<K: Resource<DynamicType = ()>>(owner: &K) -> Option<OwnerReference> {
    owner.controller_owner_ref(&())
}

/// Pod security: non-root, RuntimeDefault seccomp, the data volume group-owned by the user.
pub fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(RUN_AS_USER),
        run_as_group: Some(RUN_AS_USER),
        fs_group: Some(RUN_AS_USER),
        fs_group_change_policy: Some("OnRootMismatch".into()),
        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), ..SeccompProfile::default() }),
        ..PodSecurityContext::default()
    }
}

/// Container security: read-only root filesystem, no privilege escalation, no capabilities.
pub fn container_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), ..Capabilities::default() }),
        ..SecurityContext::default()
    }
}

/// FNV-1a 64: a stable hash (across Rust versions) for the config-hash annotation.
pub fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}
