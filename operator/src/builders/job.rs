//! The Job running `cairn-bench` for a `KVStoreBenchmark` against its store's client Service.
//! The driver writes its summary (at most 4 KiB of JSON) to the termination message, where the
//! benchmark reconciler reads it back.
//!
//! Against a store with `spec.tlsSecret` (RESP over TLS only) the Job mounts the same Secret
//! read-only where the store's pods have it and connects with TLS: `ca.crt` verifies the
//! server's certificate for the client Service's DNS name, and when the store asks clients for
//! a certificate (`authClients: yes|optional`) the Secret's `tls.crt`/`tls.key` are the
//! driver's identity. The driver always speaks RESP (a `KVStoreBenchmark` has no protocol to
//! choose), so the native protocol, which has no TLS, never comes up.

use std::collections::BTreeMap;

use cairn_crds::{KVStore, KVStoreBenchmark, LoadShape, TlsSecretRef};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, PodSpec, PodTemplateSpec, ResourceRequirements, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{container_security_context, owned_meta, pod_security_context, tls_mount, tls_volume};
use crate::labels::{benchmark_labels, client_service_name, job_name, service_dns};
use crate::store_contract as sc;

/// Name of the driver container.
pub const CONTAINER: &str = "cairn-bench";
/// Seconds the Job may run beyond the workload's duration (connect, warm-up, final checks).
pub const DEADLINE_SLACK_SECONDS: i64 = 600;

/// The DNS name of the store's client Service, which the driver connects to.
fn store_host(store: &KVStore) -> String {
    let namespace = store.metadata.namespace.clone().unwrap_or_default();
    let service = client_service_name(store.metadata.name.as_deref().unwrap_or_default());
    service_dns(&service, &namespace)
}

/// The driver's TLS flags for a store serving TLS with `secret`, mounted at
/// [`sc::TLS_DIR`]: its CA verifies the server as `host`, and its certificate identifies the
/// driver when the store asks clients for one.
fn tls_args(secret: &TlsSecretRef, host: &str) -> Vec<String> {
    let flags = sc::BENCH_TLS_FLAGS;
    let mut args = vec![
        flags.tls.into(),
        flags.ca_cert.into(),
        sc::tls_file(sc::TLS_CA_FILE),
        flags.server_name.into(),
        host.into(),
    ];
    if secret.auth_clients.needs_ca() {
        args.extend([
            flags.cert.into(),
            sc::tls_file(sc::TLS_CERT_FILE),
            flags.key.into(),
            sc::tls_file(sc::TLS_KEY_FILE),
        ]);
    }
    args
}

/// The driver's command line.
pub fn args(bench: &KVStoreBenchmark, store: &KVStore) -> Vec<String> {
    let w = &bench.spec.workload;
    let host = store_host(store);
    let ops: Vec<&str> = w.operations.iter().map(|o| o.as_str()).collect();
    let mut args = vec![
        sc::BENCH_SUBCOMMAND_RUN.to_string(),
        sc::BENCH_FLAG_TARGET.into(),
        format!("{host}:{}", store.spec.ports.resp),
    ];
    if let Some(secret) = &store.spec.tls_secret {
        args.extend(tls_args(secret, &host));
    }
    args.extend([
        sc::BENCH_FLAG_OPS.into(),
        ops.join(","),
        sc::BENCH_FLAG_CLIENTS.into(),
        w.clients.to_string(),
        sc::BENCH_FLAG_PIPELINE.into(),
        w.pipeline.to_string(),
        sc::BENCH_FLAG_DURATION.into(),
        format!("{}s", w.duration_seconds),
        sc::BENCH_FLAG_VALUE_SIZE.into(),
        w.value_size_bytes.to_string(),
        sc::BENCH_FLAG_SHAPE.into(),
        w.shape.as_str().into(),
    ]);
    if w.shape == LoadShape::AgentShaped {
        args.push(sc::BENCH_FLAG_THINK_TIME.into());
        args.push(format!("{}ms", w.think_time_ms.unwrap_or(5)));
    }
    args.push(sc::BENCH_FLAG_SUMMARY_JSON.into());
    args.push(sc::TERMINATION_MESSAGE_PATH.into());
    args
}

pub fn build(bench: &KVStoreBenchmark, store: &KVStore) -> Job {
    let name = bench.metadata.name.clone().unwrap_or_default();
    let store_name = store.metadata.name.clone().unwrap_or_default();
    let labels = benchmark_labels(&name, &store_name);
    let cpus = BTreeMap::from([
        ("cpu".to_string(), Quantity(bench.spec.cpus.to_string())),
        ("memory".to_string(), Quantity("512Mi".into())),
    ]);
    let env = store.spec.auth_secret.as_ref().map(|secret| {
        vec![EnvVar {
            name: sc::BENCH_ENV_PASSWORD.into(),
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
    let container = Container {
        name: CONTAINER.into(),
        image: Some(bench.spec.image.clone().unwrap_or_else(|| store.spec.image.clone())),
        image_pull_policy: store.spec.image_pull_policy.map(|p| p.as_str().into()),
        command: Some(vec![sc::BENCH_BINARY.into()]),
        args: Some(args(bench, store)),
        env,
        volume_mounts: store.spec.tls_secret.as_ref().map(|_| vec![tls_mount()]),
        resources: Some(ResourceRequirements {
            requests: Some(cpus.clone()),
            limits: Some(cpus),
            ..ResourceRequirements::default()
        }),
        security_context: Some(container_security_context()),
        termination_message_path: Some(sc::TERMINATION_MESSAGE_PATH.into()),
        // The summary file when the driver wrote one; when it failed before that, the end of its
        // log, which the benchmark's status quotes (reconcile::summary::driver_said).
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };
    Job {
        metadata: owned_meta(bench, job_name(&name), labels.clone()),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            ttl_seconds_after_finished: Some(bench.spec.ttl_seconds_after_finished),
            active_deadline_seconds: Some(i64::from(bench.spec.workload.duration_seconds) + DEADLINE_SLACK_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    volumes: store.spec.tls_secret.as_ref().map(|secret| vec![tls_volume(secret)]),
                    restart_policy: Some("Never".into()),
                    security_context: Some(pod_security_context()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{benchmark, store};

    #[test]
    fn targets_the_store_service_and_reports_through_the_termination_message() {
        let job = build(&benchmark("run1", "demo"), &store("demo"));
        assert_eq!(job.metadata.name.as_deref(), Some("run1-bench"));
        let spec = job.spec.expect("spec");
        assert_eq!(spec.backoff_limit, Some(0));
        assert_eq!(spec.ttl_seconds_after_finished, Some(3600));
        let pod = spec.template.spec.expect("pod");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let c = &pod.containers[0];
        assert_eq!(c.command, Some(vec!["cairn-bench".to_string()]));
        let args = c.args.clone().expect("args").join(" ");
        assert!(args.starts_with("run --target demo.default.svc:6379 --ops set,get"), "{args}");
        assert!(args.ends_with("--summary-json /dev/termination-log"), "{args}");
        assert_eq!(c.termination_message_policy.as_deref(), Some("FallbackToLogsOnError"));
    }

    #[test]
    fn agent_shaped_load_passes_the_think_time() {
        let mut b = benchmark("run1", "demo");
        b.spec.workload.shape = LoadShape::AgentShaped;
        b.spec.workload.think_time_ms = Some(50);
        let args = args(&b, &store("demo")).join(" ");
        assert!(args.contains("--shape agent-shaped --think-time 50ms"), "{args}");
    }

    #[test]
    fn a_plaintext_store_gets_no_tls_flags_and_no_secret() {
        let job = build(&benchmark("run1", "demo"), &store("demo"));
        let pod = job.spec.and_then(|s| s.template.spec).expect("pod");
        assert!(pod.volumes.is_none() && pod.containers[0].volume_mounts.is_none());
        assert!(!pod.containers[0].args.clone().unwrap_or_default().iter().any(|a| a.starts_with("--tls")));
    }

    #[test]
    fn a_tls_store_is_benchmarked_over_tls_with_its_secret_mounted_read_only() {
        use cairn_crds::TlsClientAuth;
        for (auth_clients, identity) in
            [(TlsClientAuth::No, false), (TlsClientAuth::Optional, true), (TlsClientAuth::Yes, true)]
        {
            let mut s = store("demo");
            s.spec.tls_secret = Some(TlsSecretRef { name: "demo-tls".into(), auth_clients });
            let job = build(&benchmark("run1", "demo"), &s);
            let pod = job.spec.and_then(|spec| spec.template.spec).expect("pod");
            let volume = pod.volumes.clone().unwrap_or_default().pop().expect("the Secret's volume");
            assert_eq!(volume.secret.and_then(|v| v.secret_name).as_deref(), Some("demo-tls"));
            let mount = pod.containers[0].volume_mounts.clone().unwrap_or_default().pop().expect("mount");
            assert_eq!(
                (mount.name, mount.mount_path.as_str(), mount.read_only),
                (volume.name, sc::TLS_DIR, Some(true))
            );
            let args = pod.containers[0].args.clone().expect("args").join(" ");
            let expected = "run --target demo.default.svc:6379 --tls --tls-ca-cert /etc/cairn/tls/ca.crt \
                            --tls-server-name demo.default.svc";
            assert!(args.starts_with(expected), "{auth_clients:?}: {args}");
            let with_identity = "--tls-cert /etc/cairn/tls/tls.crt --tls-key /etc/cairn/tls/tls.key";
            assert_eq!(args.contains(with_identity), identity, "{auth_clients:?}: {args}");
        }
    }
}
