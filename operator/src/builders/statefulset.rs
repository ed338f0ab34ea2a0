//! The StatefulSet running the `cairn` server: one pod per replica, a data volume claim per
//! pod sized by the volume plan, whole CPUs with requests = limits (Guaranteed QoS, exclusive
//! cores under the static CPU manager), probes on the admin port, and a locked-down pod.

use std::collections::BTreeMap;

use cairn_crds::KVStore;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SecretKeySelector, TopologySpreadConstraint, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{container_security_context, fnv1a64, owned_meta, pod_security_context, tls_mount, tls_volume};
use crate::labels::{
    config_map_name, headless_service_name, selector_labels, store_labels, CONFIG_HASH_ANNOTATION, DATA_VOLUME,
};
use crate::sizing::VolumePlan;
use crate::store_contract as sc;

/// Name of the server container.
pub const CONTAINER: &str = "cairn";

/// The server's command line. Every flag comes from [`crate::store_contract`]; a feature the
/// server lacks (TLS) has no flag there and is left out, since an unknown flag makes `cairn` exit
/// at start. `maxmemory` and `maxmemory-policy` are in the config file's `[params]`
/// ([`crate::config_file`]), which the server applies again when the file changes.
pub fn args(store: &KVStore) -> Vec<String> {
    let spec = &store.spec;
    let mut args: Vec<String> = vec![sc::FLAG_BIND.into(), sc::BIND_ALL.into()];
    args.extend(port_args(store));
    args.extend([
        sc::FLAG_ADMIN_PORT.into(),
        spec.ports.admin.to_string(),
        sc::FLAG_DATA_DIR.into(),
        sc::DATA_DIR.into(),
        sc::FLAG_DURABILITY.into(),
        spec.durability.as_flag().into(),
        sc::FLAG_THREADS.into(),
        spec.cpus.to_string(),
        sc::FLAG_CONFIG.into(),
        format!("{}/{}", sc::CONFIG_DIR, sc::CONFIG_FILE_NAME),
        sc::FLAG_CONFIG_RELOAD_INTERVAL.into(),
        sc::CONFIG_RELOAD_INTERVAL.into(),
        sc::FLAG_LOG_FORMAT.into(),
        sc::LOG_FORMAT_JSON.into(),
        sc::FLAG_TERMINATION_MESSAGE_PATH.into(),
        sc::TERMINATION_MESSAGE_PATH.into(),
    ]);
    args
}

/// The listening ports. With a TLS Secret the RESP port serves TLS only (plaintext off) and the
/// native port, which has no TLS, is off; the files come from the Secret's volume.
fn port_args(store: &KVStore) -> Vec<String> {
    let spec = &store.spec;
    let (Some(secret), Some(tls)) = (&spec.tls_secret, sc::TLS_FLAGS) else {
        return vec![
            sc::FLAG_RESP_PORT.into(),
            spec.ports.resp.to_string(),
            sc::FLAG_NATIVE_PORT.into(),
            spec.ports.native.to_string(),
        ];
    };
    let mut args = vec![
        sc::FLAG_RESP_PORT.into(),
        sc::PORT_OFF.into(),
        sc::FLAG_NATIVE_PORT.into(),
        sc::PORT_OFF.into(),
        tls.port.into(),
        spec.ports.resp.to_string(),
        tls.cert.into(),
        sc::tls_file(sc::TLS_CERT_FILE),
        tls.key.into(),
        sc::tls_file(sc::TLS_KEY_FILE),
        tls.auth_clients.into(),
        secret.auth_clients.as_flag().into(),
    ];
    if secret.auth_clients.needs_ca() {
        args.extend([tls.ca.into(), sc::tls_file(sc::TLS_CA_FILE)]);
    }
    args
}

fn http_probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("admin".into()),
            scheme: Some("HTTP".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        timeout_seconds: Some(2),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount { name: name.into(), mount_path: path.into(), read_only: Some(read_only), ..VolumeMount::default() }
}

fn container(store: &KVStore, memory: &str) -> Container {
    let spec = &store.spec;
    let cpus = Quantity(spec.cpus.to_string());
    let limits = BTreeMap::from([("cpu".to_string(), cpus), ("memory".to_string(), Quantity(memory.to_string()))]);
    let env = spec.auth_secret.as_ref().map(|secret| {
        vec![EnvVar {
            name: sc::ENV_REQUIREPASS.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.name.clone(),
                    key: secret.key.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]
    });
    let mut mounts = vec![
        mount(DATA_VOLUME, sc::DATA_DIR, false),
        mount("config", sc::CONFIG_DIR, true),
        mount("tmp", sc::TMP_DIR, false),
    ];
    if spec.tls_secret.is_some() {
        mounts.push(tls_mount());
    }
    Container {
        name: CONTAINER.into(),
        image: Some(spec.image.clone()),
        image_pull_policy: spec.image_pull_policy.map(|p| p.as_str().into()),
        command: Some(vec![sc::SERVER_BINARY.into()]),
        args: Some(args(store)),
        env,
        ports: Some(
            super::served_ports(spec)
                .into_iter()
                .map(|(name, port)| ContainerPort {
                    name: Some(name.into()),
                    container_port: port,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                })
                .collect(),
        ),
        resources: Some(ResourceRequirements {
            requests: Some(limits.clone()),
            limits: Some(limits),
            ..ResourceRequirements::default()
        }),
        // Recovery (snapshot load + WAL replay) may take a while: the startup probe allows
        // 10 minutes before liveness takes over.
        startup_probe: Some(http_probe(sc::HEALTHZ_PATH, 5, 120)),
        liveness_probe: Some(http_probe(sc::HEALTHZ_PATH, 10, 3)),
        readiness_probe: Some(http_probe(sc::READYZ_PATH, 5, 2)),
        security_context: Some(container_security_context()),
        volume_mounts: Some(mounts),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    }
}

fn volumes(store: &KVStore) -> Vec<Volume> {
    let name = store.metadata.name.clone().unwrap_or_default();
    let mut volumes = vec![
        Volume {
            name: "config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map_name(&name),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        Volume {
            name: "tmp".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(Quantity("64Mi".into())),
                ..EmptyDirVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    if let Some(tls) = &store.spec.tls_secret {
        volumes.push(tls_volume(tls));
    }
    volumes
}

fn topology_spread(store: &KVStore, name: &str) -> Option<Vec<TopologySpreadConstraint>> {
    let constraints = &store.spec.scheduling.topology_spread_constraints;
    if constraints.is_empty() {
        return None;
    }
    Some(
        constraints
            .iter()
            .cloned()
            .map(|mut c| {
                if c.label_selector.is_none() {
                    c.label_selector =
                        Some(LabelSelector { match_labels: Some(selector_labels(name)), ..LabelSelector::default() });
                }
                c
            })
            .collect(),
    )
}

fn non_empty<K: Ord, V>(map: BTreeMap<K, V>) -> Option<BTreeMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

/// The StatefulSet. `volume` is the plan the reconciler chose (and reported in the status).
pub fn build(store: &KVStore, volume: &VolumePlan) -> StatefulSet {
    let name = store.metadata.name.clone().unwrap_or_default();
    let spec = &store.spec;

    let mut pod_labels = spec.pod_metadata.labels.clone();
    pod_labels.extend(store_labels(&name));
    let mut pod_annotations = spec.pod_metadata.annotations.clone();
    // The parameters the server applies live are left out: their change does not roll the pod.
    let config_hash = fnv1a64(crate::config_change::restart_part(store).as_bytes());
    pod_annotations.insert(CONFIG_HASH_ANNOTATION.into(), format!("{config_hash:016x}"));

    let scheduling = &spec.scheduling;
    let pod = PodSpec {
        containers: vec![container(store, &spec.memory)],
        volumes: Some(volumes(store)),
        security_context: Some(pod_security_context()),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        termination_grace_period_seconds: Some(30),
        node_selector: non_empty(scheduling.node_selector.clone()),
        tolerations: (!scheduling.tolerations.is_empty()).then(|| scheduling.tolerations.clone()),
        affinity: scheduling.affinity.clone(),
        topology_spread_constraints: topology_spread(store, &name),
        priority_class_name: scheduling.priority_class_name.clone(),
        ..PodSpec::default()
    };

    let claim = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(DATA_VOLUME.into()),
            labels: Some(store_labels(&name)),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some(volume.storage_class.clone()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_string(), Quantity(volume.size.clone()))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };

    StatefulSet {
        metadata: owned_meta(store, name.clone(), store_labels(&name)),
        spec: Some(StatefulSetSpec {
            replicas: Some(spec.replicas),
            service_name: Some(headless_service_name(&name)),
            selector: LabelSelector { match_labels: Some(selector_labels(&name)), ..LabelSelector::default() },
            pod_management_policy: Some("OrderedReady".into()),
            persistent_volume_claim_retention_policy: Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_deleted: Some("Retain".into()),
                when_scaled: Some("Retain".into()),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(pod_annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod),
            },
            volume_claim_templates: Some(vec![claim]),
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::store;
    use crate::validate::resolve;
    use cairn_crds::{AuthSecretRef, Durability, TlsSecretRef};

    fn built(s: &KVStore) -> (StatefulSet, Container, PodSpec) {
        let plan = resolve(s).expect("valid").volume;
        let sts = build(s, &plan);
        let pod = sts.spec.clone().and_then(|s| s.template.spec).expect("pod spec");
        (sts, pod.containers[0].clone(), pod)
    }

    fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
    }

    #[test]
    fn runs_cairn_with_the_tier_cpus_and_ports() {
        let mut s = store("demo");
        s.spec.durability = Durability::Sync;
        s.spec.cpus = 4;
        s.spec.ports.resp = 6400;
        let (_, c, _) = built(&s);
        assert_eq!(c.command, Some(vec!["cairn".to_string()]));
        let args = c.args.expect("args");
        assert_eq!(flag(&args, "--durability"), Some("sync"));
        assert_eq!(flag(&args, "--threads"), Some("4"));
        assert_eq!(flag(&args, "--port"), Some("6400"));
        assert_eq!(flag(&args, "--native-port"), Some("7379"));
        assert_eq!(flag(&args, "--admin-port"), Some("8379"));
        assert_eq!(flag(&args, "--bind"), Some("0.0.0.0"));
        assert_eq!(flag(&args, "--data-dir"), Some("/data"));
        assert_eq!(flag(&args, "--config"), Some("/etc/cairn/cairn.toml"));
        assert_eq!(flag(&args, "--log-format"), Some("json"));
        assert_eq!(flag(&args, "--config-reload-interval"), Some("5s"));
    }

    #[test]
    fn a_maxmemory_change_leaves_the_pod_template_alone() {
        let a = store("demo");
        let mut b = a.clone();
        b.spec.maxmemory = "50%".into();
        b.spec.maxmemory_policy = cairn_crds::MaxmemoryPolicy::AllkeysLru;
        let plan = resolve(&a).expect("valid").volume;
        let template = |s: &KVStore| serde_json::to_value(&build(s, &plan).spec.expect("spec").template).expect("json");
        assert_eq!(template(&a), template(&b), "applied live from the ConfigMap, not by a restart");
        assert!(!built(&b).1.args.expect("args").iter().any(|a| a == "--param"));
    }

    #[test]
    fn whole_cpus_with_requests_equal_to_limits() {
        let mut s = store("demo");
        s.spec.cpus = 2;
        s.spec.memory = "4Gi".into();
        let (_, c, _) = built(&s);
        let r = c.resources.expect("resources");
        assert_eq!(r.requests, r.limits);
        let limits = r.limits.expect("limits");
        assert_eq!(limits.get("cpu"), Some(&Quantity("2".into())));
        assert_eq!(limits.get("memory"), Some(&Quantity("4Gi".into())));
    }

    #[test]
    fn pod_is_locked_down_and_probed_on_the_admin_port() {
        let (_, c, pod) = built(&store("demo"));
        let psc = pod.security_context.expect("pod security");
        assert_eq!(psc.run_as_non_root, Some(true));
        assert_eq!(psc.seccomp_profile.map(|p| p.type_), Some("RuntimeDefault".to_string()));
        let csc = c.security_context.expect("container security");
        assert_eq!(csc.read_only_root_filesystem, Some(true));
        assert_eq!(csc.allow_privilege_escalation, Some(false));
        let path = |p: Option<Probe>| p.and_then(|p| p.http_get).map(|h| (h.path, h.port));
        let admin = IntOrString::String("admin".into());
        assert_eq!(path(c.readiness_probe), Some((Some("/readyz".into()), admin.clone())));
        assert_eq!(path(c.liveness_probe), Some((Some("/healthz".into()), admin)));
    }

    #[test]
    fn volume_claim_uses_the_plan() {
        let mut s = store("demo");
        s.spec.storage.size = Some("50Gi".into());
        s.spec.storage.storage_class_name = Some("fast".into());
        let (sts, _, _) = built(&s);
        let claim = &sts.spec.expect("spec").volume_claim_templates.expect("vct")[0];
        let spec = claim.spec.clone().expect("claim spec");
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        let requests = spec.resources.and_then(|r| r.requests).expect("requests");
        assert_eq!(requests.get("storage"), Some(&Quantity("50Gi".into())));
    }

    #[test]
    fn the_auth_secret_is_wired_through_the_environment() {
        let mut s = store("demo");
        s.spec.auth_secret = Some(AuthSecretRef { name: "demo-auth".into(), key: "password".into() });
        let (_, c, _) = built(&s);
        let env = c.env.expect("env");
        assert_eq!(env[0].name, "CAIRN_REQUIREPASS");
        assert!(env[0].value.is_none(), "the password must come from the Secret");
        let from = env[0].value_from.clone().and_then(|v| v.secret_key_ref).expect("secret ref");
        assert_eq!((from.name.as_str(), from.key.as_str()), ("demo-auth", "password"));
    }

    #[test]
    fn a_tls_secret_makes_the_resp_port_tls_only_and_turns_the_native_port_off() {
        let args_for = |auth_clients| {
            let mut s = store("demo");
            s.spec.tls_secret = Some(TlsSecretRef { name: "demo-tls".into(), auth_clients });
            let sts = build(&s, &resolve(&s).expect("valid").volume);
            let pod = sts.spec.and_then(|s| s.template.spec).expect("pod");
            let mounted = pod.containers[0].volume_mounts.clone().unwrap_or_default();
            assert!(mounted.iter().any(|m| m.mount_path == sc::TLS_DIR), "{mounted:?}");
            pod.containers[0].args.clone().expect("args")
        };
        let value = |args: &[String], flag: &str| {
            let at = args.iter().position(|a| a == flag).unwrap_or_else(|| panic!("{flag} missing in {args:?}"));
            args[at + 1].clone()
        };
        let args = args_for(cairn_crds::TlsClientAuth::No);
        assert_eq!(value(&args, "--port"), "off");
        assert_eq!(value(&args, "--native-port"), "off");
        assert_eq!(value(&args, "--tls-port"), store("demo").spec.ports.resp.to_string());
        assert_eq!(value(&args, "--tls-cert-file"), format!("{}/tls.crt", sc::TLS_DIR));
        assert_eq!(value(&args, "--tls-auth-clients"), "no");
        assert!(!args.iter().any(|a| a == "--tls-ca-cert-file"), "no CA needed: {args:?}");
        let args = args_for(cairn_crds::TlsClientAuth::Yes);
        assert_eq!(value(&args, "--tls-auth-clients"), "yes");
        assert_eq!(value(&args, "--tls-ca-cert-file"), format!("{}/ca.crt", sc::TLS_DIR));
    }

    #[test]
    fn a_config_change_changes_the_pod_template() {
        let a = store("demo");
        let mut b = store("demo");
        b.spec.config = Some("maxclients = 1\n".into());
        let hash = |s: &KVStore| {
            built(s)
                .0
                .spec
                .and_then(|s| s.template.metadata)
                .and_then(|m| m.annotations)
                .and_then(|a| a.get(CONFIG_HASH_ANNOTATION).cloned())
        };
        assert!(hash(&a).is_some());
        assert_ne!(hash(&a), hash(&b));
    }
}
