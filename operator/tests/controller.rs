//! Reconcile tests against a mock API server (tower-test): every request the reconcilers make is
//! recorded and answered like a Kubernetes API server would, then the test asserts on what was
//! applied, the status written and the Events published.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_crds::{KVStore, KVStoreBenchmark};
use cairn_operator::builders::{configmap, fnv1a64};
use cairn_operator::config_change;
use cairn_operator::context::Context;
use cairn_operator::metrics::Metrics;
use cairn_operator::reconcile::{benchmark, decode, store};
use http::{Request, Response};
use kube::client::Body;
use kube::runtime::controller::Action;
use kube::Client;
use serde_json::{json, Value};

/// One request the reconciler made.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    path: String,
    query: String,
    body: Value,
}

/// How the fake API server answers.
#[derive(Debug, Clone, Default)]
struct World {
    /// `readyReplicas` the StatefulSet reports.
    sts_ready: i32,
    /// The claim template size of a StatefulSet that already exists (GET finds it).
    sts_claim: Option<&'static str>,
    /// The storage request of the existing claim `data-demo-0`.
    claim_size: Option<&'static str>,
    /// The KVStore a benchmark's GET finds.
    store: Option<Value>,
    /// Whether the benchmark's Job already exists (GET finds it).
    job_exists: bool,
    /// Conditions of the benchmark Job (e.g. Complete).
    job_condition: Option<&'static str>,
    /// The termination message of the driver pod.
    termination_message: Option<String>,
    /// The API server fails applies of the StatefulSet (500).
    fail_statefulset: bool,
    /// A store pod the pod list returns (with its status).
    store_pod: Option<Value>,
    /// The config file of the ConfigMap that already exists (GET finds it).
    config_file: Option<String>,
    /// The config hash on the pod template of the StatefulSet that already exists.
    sts_config_hash: Option<String>,
}

fn respond(status: u16, body: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    Response::builder().status(status).body(Body::from(bytes)).unwrap_or_else(|e| panic!("building a response: {e}"))
}

fn not_found(what: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "NotFound",
           "message": format!("{what} not found"), "code": 404})
}

fn answer(world: &World, call: &Call) -> (u16, Value) {
    let segments: Vec<&str> = call.path.trim_start_matches('/').split('/').collect();
    match call.method.as_str() {
        "PATCH" if world.fail_statefulset && segments.contains(&"statefulsets") => (
            500,
            json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "InternalError",
                   "message": "etcdserver: request timed out", "code": 500}),
        ),
        "PATCH" => {
            let mut obj = call.body.clone();
            if obj.get("metadata").is_none() {
                obj["metadata"] = json!({});
            }
            obj["metadata"]["generation"] = json!(1);
            if segments.contains(&"statefulsets") {
                obj["status"] = json!({"replicas": 1, "readyReplicas": world.sts_ready,
                    "updatedReplicas": 1, "observedGeneration": 1});
            }
            if segments.contains(&"jobs") {
                if let Some(cond) = world.job_condition {
                    obj["status"] = json!({"conditions": [{"type": cond, "status": "True",
                        "message": format!("job {cond}")}]});
                }
            }
            // A status patch answers with the whole object, spec included.
            if segments.last() == Some(&"status") {
                obj["metadata"]["name"] = json!(segments[segments.len() - 2]);
                obj["spec"] =
                    if segments.contains(&"kvstorebenchmarks") { json!({"store": "demo"}) } else { json!({}) };
            }
            if segments.contains(&"persistentvolumeclaims") {
                obj = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": segments.last()}, "spec": call.body["spec"]});
            }
            (200, obj)
        }
        "POST" => (201, call.body.clone()),
        "DELETE" => (404, not_found("object")),
        "GET" if segments.contains(&"statefulsets") => match world.sts_claim {
            Some(size) => (
                200,
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "demo", "namespace": "default", "generation": 1},
                "spec": {"selector": {}, "serviceName": "demo-headless",
                         "template": {"metadata": {"annotations": template_annotations(world)}},
                         "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                             "storageClassName": "premium-ssd",
                             "resources": {"requests": {"storage": size}}}}]}}),
            ),
            None => (404, not_found("statefulset")),
        },
        "GET" if segments.contains(&"configmaps") => match &world.config_file {
            Some(text) => (
                200,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": segments.last(), "namespace": "default"}, "data": {"cairn.toml": text}}),
            ),
            None => (404, not_found("configmap")),
        },
        "GET" if segments.contains(&"persistentvolumeclaims") => match world.claim_size {
            Some(size) => (
                200,
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": segments.last()},
                "spec": {"resources": {"requests": {"storage": size}}}}),
            ),
            None => (404, not_found("claim")),
        },
        "GET" if segments.contains(&"jobs") && world.job_exists => {
            let conditions: Vec<Value> = world
                .job_condition
                .iter()
                .map(|cond| json!({"type": cond, "status": "True", "message": format!("job {cond}")}))
                .collect();
            (
                200,
                json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "run1-bench", "namespace": "default"},
                "spec": {"template": {}}, "status": {"conditions": conditions}}),
            )
        }
        "GET" if segments.contains(&"kvstores") => match &world.store {
            Some(store) => (200, store.clone()),
            None => (404, not_found("kvstore")),
        },
        "GET" if segments.contains(&"pods") && call.query.contains("app.kubernetes.io") => {
            let items: Vec<Value> = world.store_pod.iter().cloned().collect();
            (200, json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}))
        }
        "GET" if segments.contains(&"pods") => {
            let items: Vec<Value> = world
                .termination_message
                .iter()
                .map(|message| {
                    json!({"metadata": {"name": "run1-bench-xyz"}, "status": {"containerStatuses": [{
                        "name": "cairn-bench", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                        "state": {"terminated": {"exitCode": 0, "message": message,
                                                 "finishedAt": "2026-01-01T00:00:00Z"}}}]}})
                })
                .collect();
            (200, json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}))
        }
        _ => (404, not_found(&call.path)),
    }
}

/// The annotations of the existing StatefulSet's pod template.
fn template_annotations(world: &World) -> Value {
    match &world.sts_config_hash {
        Some(hash) => json!({"cairn.io/config-hash": hash}),
        None => json!({}),
    }
}

/// Runs `f` with a client wired to the fake server; returns its result and the calls made.
async fn with_api<F, Fut, T>(world: World, f: F) -> (T, Vec<Call>)
where
    F: FnOnce(Arc<Context>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let recorded = calls.clone();
    let server = tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let method = request.method().to_string();
            let path = request.uri().path().to_string();
            let query = request.uri().query().unwrap_or_default().to_string();
            let bytes = request.into_body().collect_bytes().await.unwrap_or_default();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let call = Call { method, path, query, body };
            let (status, reply) = answer(&world, &call);
            recorded.lock().unwrap_or_else(|p| p.into_inner()).push(call);
            send.send_response(respond(status, &reply));
        }
    });
    let client = Client::new(service, "default");
    let ctx = Arc::new(Context::new(client, Arc::new(Metrics::default())));
    let out = tokio::time::timeout(Duration::from_secs(10), f(ctx)).await.expect("reconcile timed out");
    // Dropping the context drops the last client, which ends the server loop.
    tokio::time::timeout(Duration::from_secs(10), server).await.expect("mock server hung").expect("mock server");
    let calls = calls.lock().unwrap_or_else(|p| p.into_inner()).clone();
    (out, calls)
}

fn kvstore(spec: Value, status: Option<Value>, generation: i64) -> KVStore {
    let mut obj = json!({
        "apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
        "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo", "generation": generation},
        "spec": spec,
    });
    if let Some(status) = status {
        obj["status"] = status;
    }
    serde_json::from_value(obj).expect("kvstore")
}

fn find<'a>(calls: &'a [Call], method: &str, path_end: &str) -> Option<&'a Call> {
    calls.iter().find(|c| c.method == method && c.path.ends_with(path_end))
}

fn events(calls: &[Call]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter(|c| c.method == "POST" && c.path.ends_with("/events"))
        .map(|c| (c.body["type"].as_str().unwrap_or("").into(), c.body["reason"].as_str().unwrap_or("").into()))
        .collect()
}

fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {status}"))
}

#[tokio::test]
async fn create_applies_every_object_and_reports_progress() {
    let store_obj = kvstore(
        json!({"durability": "sync", "fsyncClass": "premium-ssd", "cpus": 2,
        "storage": {"targetAcksPerSecond": 10000}}),
        None,
        1,
    );
    let (action, calls) = with_api(World::default(), |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(store::REQUEUE_PROGRESSING));

    for path in [
        "/api/v1/namespaces/default/configmaps/demo-config",
        "/api/v1/namespaces/default/services/demo-headless",
        "/api/v1/namespaces/default/services/demo",
        "/apis/apps/v1/namespaces/default/statefulsets/demo",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/demo",
    ] {
        let call = find(&calls, "PATCH", path).unwrap_or_else(|| panic!("no apply of {path}: {calls:#?}"));
        assert!(call.query.contains("fieldManager=cairn-operator"), "{}", call.query);
        assert!(call.query.contains("force=true"), "{}", call.query);
        assert_eq!(call.body["metadata"]["ownerReferences"][0]["uid"], "uid-demo");
    }

    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("sts").body;
    let container = &sts["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"], json!(["cairn"]));
    let args: Vec<&str> = container["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
    assert!(args.windows(2).any(|w| w == ["--durability", "sync"]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--threads", "2"]), "{args:?}");
    assert_eq!(container["resources"]["limits"]["cpu"], "2");
    assert_eq!(container["resources"]["requests"]["cpu"], "2");
    let claim = &sts["spec"]["volumeClaimTemplates"][0]["spec"];
    assert_eq!(claim["resources"]["requests"]["storage"], "167Gi");
    assert_eq!(claim["storageClassName"], "premium-ssd");

    let status_call = find(&calls, "PATCH", "/kvstores/demo/status").expect("status applied");
    assert!(status_call.query.contains("fieldManager=cairn-operator"));
    let status = &status_call.body["status"];
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["readyReplicas"], 0);
    assert_eq!(status["volume"]["size"], "167Gi");
    assert!(status["volume"]["reason"].as_str().unwrap_or("").contains("IOPS"), "{status}");
    assert_eq!(status["endpoints"]["resp"], "demo.default.svc:6379");
    assert_eq!(condition(status, "Ready")["status"], "False");
    assert_eq!(condition(status, "Progressing")["status"], "True");
    assert_eq!(condition(status, "Degraded")["status"], "False");

    // The status is written after every object is applied.
    let last_apply = calls.iter().rposition(|c| c.method == "PATCH" && !c.path.ends_with("/status"));
    let status_at = calls.iter().position(|c| c.path.ends_with("/kvstores/demo/status"));
    assert!(last_apply < status_at);
    assert_eq!(events(&calls), vec![("Normal".to_string(), "Created".to_string())]);
}

#[tokio::test]
async fn a_crash_looping_server_is_reported_with_its_exit_message() {
    let message = "invalid configuration: invalid config file /etc/cairn/cairn.toml: unknown field `maxclient`";
    let pod = json!({"metadata": {"name": "demo-0"}, "status": {"containerStatuses": [{
        "name": "cairn", "ready": false, "restartCount": 4, "image": "cairn:0.1.0", "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": message}}}]}});
    let pod_json = pod.clone();
    let world = World { store_pod: Some(pod), ..World::default() };
    let store_obj = kvstore(json!({}), None, 1);
    let (action, calls) = with_api(world, |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(store::REQUEUE_PROGRESSING));

    // The server is told where to leave its error; the pods are listed by the store's labels.
    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("sts").body;
    let args = &sts["spec"]["template"]["spec"]["containers"][0]["args"];
    let args: Vec<&str> = args.as_array().expect("args").iter().filter_map(Value::as_str).collect();
    assert!(args.windows(2).any(|w| w == ["--termination-message-path", "/dev/termination-log"]), "{args:?}");
    let list = find(&calls, "GET", "/namespaces/default/pods").expect("pods listed");
    assert!(list.query.contains("app.kubernetes.io%2Finstance%3Ddemo"), "{}", list.query);

    let status = &find(&calls, "PATCH", "/kvstores/demo/status").expect("status").body["status"];
    let degraded = condition(status, "Degraded");
    assert_eq!(degraded["status"], "True");
    assert_eq!(degraded["reason"], "CrashLoopBackOff");
    assert_eq!(degraded["message"], format!("pod demo-0: the server keeps exiting; last exit code 1: {message}"));
    assert_eq!(condition(status, "Ready")["status"], "False");
    assert!(events(&calls).contains(&("Warning".to_string(), "CrashLoopBackOff".to_string())), "{:?}", events(&calls));

    // Reported once: the next reconcile, after one more restart with the same error, publishes no Event.
    let again = kvstore(json!({}), Some(status.clone()), 1);
    let mut pod_json = pod_json;
    pod_json["status"]["containerStatuses"][0]["restartCount"] = json!(5);
    let world = World { store_pod: Some(pod_json), ..World::default() };
    let (_, calls) = with_api(world, |ctx| store::reconcile(Arc::new(again), ctx)).await;
    assert!(!events(&calls).iter().any(|(_, reason)| reason == "CrashLoopBackOff"), "{:?}", events(&calls));
}

#[tokio::test]
async fn update_becomes_ready_and_expands_volumes_without_touching_the_template() {
    let previous = json!({"observedGeneration": 1, "readyReplicas": 0,
        "volume": {"size": "10Gi", "storageClassName": "premium-ssd", "fsyncClass": "premium-ssd",
                   "modelIops": 300, "modelThroughputMibps": 4, "reason": "r"},
        "conditions": [{"type": "Ready", "status": "False", "reason": "ReplicasNotReady", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let store_obj = kvstore(
        json!({"durability": "sync", "fsyncClass": "premium-ssd",
        "storage": {"targetAcksPerSecond": 10000}}),
        Some(previous),
        2,
    );
    let world = World { sts_ready: 1, sts_claim: Some("10Gi"), claim_size: Some("10Gi"), ..World::default() };
    let (action, calls) = with_api(world, |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(store::REQUEUE_STEADY));

    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("sts").body;
    assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"], "10Gi");
    let pvc = find(&calls, "PATCH", "/persistentvolumeclaims/data-demo-0").expect("claim expanded");
    assert!(pvc.query.contains("fieldManager=cairn-operator"), "one field manager: {}", pvc.query);
    assert_eq!(pvc.body["spec"]["resources"]["requests"]["storage"], "167Gi");

    let status = &find(&calls, "PATCH", "/kvstores/demo/status").expect("status").body["status"];
    assert_eq!(status["observedGeneration"], 2);
    assert_eq!(status["readyReplicas"], 1);
    assert_eq!(status["volume"]["size"], "167Gi");
    assert_eq!(condition(status, "Ready")["status"], "True");
    assert_eq!(condition(status, "Ready")["reason"], "AllReplicasReady");
    assert_eq!(condition(status, "Progressing")["status"], "False");
    let reasons: Vec<String> = events(&calls).into_iter().map(|(_, r)| r).collect();
    assert!(reasons.contains(&"Ready".to_string()), "{reasons:?}");
    assert!(reasons.contains(&"VolumeExpanding".to_string()), "{reasons:?}");
    assert!(!reasons.contains(&"Created".to_string()), "{reasons:?}");
}

/// A reconcile of a running store whose `spec.config` was `before` and is now `after`.
async fn reconfigure(before: &str, after: &str) -> Vec<Call> {
    let spec = |config: &str| json!({"config": config});
    let previous = json!({"observedGeneration": 1, "readyReplicas": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let old = kvstore(spec(before), Some(previous.clone()), 1);
    let hash = fnv1a64(config_change::restart_part(&old).as_bytes());
    let world = World {
        sts_ready: 1,
        sts_claim: Some("10Gi"),
        config_file: Some(configmap::config_text(&old)),
        sts_config_hash: Some(format!("{hash:016x}")),
        ..World::default()
    };
    let store_obj = kvstore(spec(after), Some(previous), 2);
    let (action, calls) = with_api(world, |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    action.expect("reconcile");
    calls
}

fn notes(calls: &[Call], reason: &str) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.method == "POST" && c.path.ends_with("/events") && c.body["reason"] == reason)
        .map(|c| c.body["note"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_live_parameter_change_is_reported_and_does_not_roll_the_pods() {
    let calls = reconfigure("[params]\ntimeout = 300\nhz = 10\n", "[params]\ntimeout = 600\nHZ = 20\n").await;
    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("sts").body;
    let old = kvstore(json!({"config": "[params]\ntimeout = 300\nhz = 10\n"}), None, 1);
    let unchanged = format!("{:016x}", fnv1a64(config_change::restart_part(&old).as_bytes()));
    assert_eq!(sts["spec"]["template"]["metadata"]["annotations"]["cairn.io/config-hash"], unchanged.as_str());
    let cm = &find(&calls, "PATCH", "/configmaps/demo-config").expect("ConfigMap").body;
    assert!(cm["data"]["cairn.toml"].as_str().unwrap_or_default().contains("timeout = 600"), "{cm}");
    let live = notes(&calls, "ConfigAppliedLive");
    assert_eq!(live.len(), 1, "{calls:#?}");
    assert!(live[0].starts_with("config: hz, timeout changed without restart"), "{live:?}");
}

#[tokio::test]
async fn a_change_that_rolls_the_pods_is_not_reported_as_live() {
    // A top-level setting changed with a parameter: the pods restart with the new file.
    let calls =
        reconfigure("maxclients = 10\n[params]\ntimeout = 300\n", "maxclients = 20\n[params]\ntimeout = 600\n").await;
    assert!(notes(&calls, "ConfigAppliedLive").is_empty(), "{calls:#?}");
    // A parameter added (a removed one would keep its value in the running server).
    let calls = reconfigure("[params]\ntimeout = 300\n", "[params]\ntimeout = 300\nhz = 20\n").await;
    assert!(notes(&calls, "ConfigAppliedLive").is_empty(), "{calls:#?}");
    // Nothing changed.
    let calls = reconfigure("[params]\ntimeout = 300\n", "[params]\ntimeout = 300\n").await;
    assert!(notes(&calls, "ConfigAppliedLive").is_empty(), "{calls:#?}");
}

#[tokio::test]
async fn after_an_expansion_the_claim_template_is_applied_unchanged() {
    // The reconcile that follows an expansion: the status reports 167Gi, the live claim
    // template still says 10Gi (it is immutable), the claim already asks for 167Gi.
    let previous = json!({"observedGeneration": 2, "readyReplicas": 1,
        "volume": {"size": "167Gi", "storageClassName": "premium-ssd", "fsyncClass": "premium-ssd",
                   "modelIops": 5010, "modelThroughputMibps": 80, "reason": "r"}});
    let store_obj = kvstore(
        json!({"durability": "sync", "fsyncClass": "premium-ssd",
        "storage": {"targetAcksPerSecond": 10000}}),
        Some(previous),
        2,
    );
    let world = World { sts_ready: 1, sts_claim: Some("10Gi"), claim_size: Some("167Gi"), ..World::default() };
    let (action, calls) = with_api(world, |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    action.expect("reconcile");
    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("sts").body;
    assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"], "10Gi");
    assert!(find(&calls, "PATCH", "/persistentvolumeclaims/data-demo-0").is_none(), "already expanded");
    let status = &find(&calls, "PATCH", "/kvstores/demo/status").expect("status").body["status"];
    assert_eq!(status["volume"]["size"], "167Gi");
    assert!(!events(&calls).iter().any(|(_, r)| r == "VolumeExpanding"));
}

#[tokio::test]
async fn a_store_with_a_tls_secret_serves_resp_over_tls_only_from_the_secret() {
    let store_obj = kvstore(json!({"tlsSecret": {"name": "demo-tls", "authClients": "yes"}}), None, 1);
    let (action, calls) = with_api(World::default(), |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    action.expect("not a reconcile error");
    let sts = &find(&calls, "PATCH", "/statefulsets/demo").expect("statefulset").body;
    let pod = &sts["spec"]["template"]["spec"];
    let args: Vec<String> = serde_json::from_value(pod["containers"][0]["args"].clone()).expect("args");
    let joined = args.join(" ");
    for wanted in [
        "--port off",
        "--native-port off",
        "--tls-port 6379",
        "--tls-cert-file /etc/cairn/tls/tls.crt",
        "--tls-key-file /etc/cairn/tls/tls.key",
        "--tls-auth-clients yes",
        "--tls-ca-cert-file /etc/cairn/tls/ca.crt",
    ] {
        assert!(joined.contains(wanted), "{wanted:?} missing in {joined}");
    }
    let volumes = pod["volumes"].as_array().expect("volumes");
    assert!(volumes.iter().any(|v| v["secret"]["secretName"] == "demo-tls"), "{volumes:?}");
    // The native port is off: neither the container nor the Services nor the status name it.
    let names = |ports: &Value| -> Vec<String> {
        ports.as_array().expect("ports").iter().filter_map(|p| p["name"].as_str().map(String::from)).collect()
    };
    assert_eq!(names(&pod["containers"][0]["ports"]), ["resp", "admin"]);
    let service = &find(&calls, "PATCH", "/services/demo").expect("client Service").body;
    assert_eq!(names(&service["spec"]["ports"]), ["resp", "admin"]);
    let status = &find(&calls, "PATCH", "/kvstores/demo/status").expect("status").body["status"];
    assert_eq!(status["endpoints"]["resp"], "demo.default.svc:6379");
    assert!(status["endpoints"].get("native").is_none(), "{status}");
}

#[tokio::test]
async fn an_api_failure_is_counted_and_retried_with_backoff() {
    let store_obj = Arc::new(kvstore(json!({}), None, 1));
    let world = World { fail_statefulset: true, ..World::default() };
    let obj = store_obj.clone();
    let ((first, second, metrics), calls) = with_api(world, |ctx| async move {
        let err = store::reconcile(obj.clone(), ctx.clone()).await.expect_err("the apply fails");
        let first = store::error_policy(obj.clone(), &err, ctx.clone());
        let err = store::reconcile(obj.clone(), ctx.clone()).await.expect_err("the apply fails again");
        let second = store::error_policy(obj, &err, ctx.clone());
        (first, second, ctx.metrics.encode())
    })
    .await;
    assert_eq!(first, Action::requeue(Duration::from_secs(2)));
    assert_eq!(second, Action::requeue(Duration::from_secs(4)), "the delay doubles");
    assert!(
        metrics.contains(r#"cairn_operator_reconcile_failures_total{controller="kvstore",reason="api_500"} 2"#),
        "{metrics}"
    );
    assert!(find(&calls, "PATCH", "/kvstores/demo/status").is_none(), "no status from a failed apply");
}

#[tokio::test]
async fn an_object_the_operator_cannot_decode_is_reported_in_its_status() {
    // What a schema-less API server stores, or a newer CRD allows: the typed watch would fail its
    // whole list; decoded one at a time, only this object is affected.
    let obj: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
        "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo", "generation": 2},
        "spec": {"cpus": "two", "durability": "strict"}}))
    .expect("dynamic object");
    let (action, calls) = with_api(World::default(), |ctx| {
        decode::reconcile_decoded(Arc::new(obj), ctx, store::CONTROLLER, store::reconcile)
    })
    .await;
    assert_eq!(action.expect("not a reconcile error"), Action::await_change());
    assert!(find(&calls, "PATCH", "/statefulsets/demo").is_none(), "nothing applied");
    let status_call = find(&calls, "PATCH", "/kvstores/demo/status").expect("status");
    assert!(status_call.query.contains("fieldManager=cairn-operator"));
    let status = &status_call.body["status"];
    assert_eq!(status["observedGeneration"], 2);
    let degraded = condition(status, "Degraded");
    assert_eq!((degraded["status"].as_str(), degraded["reason"].as_str()), (Some("True"), Some("InvalidSpec")));
    assert!(degraded["message"].as_str().unwrap_or("").contains("cannot read the object"), "{degraded}");
    assert_eq!(events(&calls), vec![("Warning".to_string(), "InvalidSpec".to_string())]);
}

#[tokio::test]
async fn invalid_spec_is_reported_in_the_status_and_applies_nothing() {
    let store_obj = kvstore(json!({"replicas": 3, "memory": "lots"}), None, 4);
    let (action, calls) = with_api(World::default(), |ctx| store::reconcile(Arc::new(store_obj), ctx)).await;
    assert_eq!(action.expect("an invalid spec is not a reconcile error"), Action::await_change());
    let applies: Vec<&Call> = calls.iter().filter(|c| c.method == "PATCH").collect();
    assert_eq!(applies.len(), 1, "only the status: {applies:#?}");
    let status = &applies[0].body["status"];
    assert_eq!(status["observedGeneration"], 4);
    let degraded = condition(status, "Degraded");
    assert_eq!(degraded["status"], "True");
    assert_eq!(degraded["reason"], "InvalidSpec");
    let message = degraded["message"].as_str().unwrap_or("");
    assert!(message.contains("replicas is 3") && message.contains("memory"), "{message}");
    assert_eq!(condition(status, "Ready")["status"], "False");
    assert_eq!(events(&calls), vec![("Warning".to_string(), "InvalidSpec".to_string())]);
}

fn bench() -> KVStoreBenchmark {
    serde_json::from_value(json!({
        "apiVersion": "cairn.io/v1alpha1", "kind": "KVStoreBenchmark",
        "metadata": {"name": "run1", "namespace": "default", "uid": "uid-run1", "generation": 1},
        "spec": {"store": "demo", "workload": {"clients": 8, "pipeline": 16, "durationSeconds": 5}},
    }))
    .expect("benchmark")
}

fn store_json() -> Value {
    json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
           "metadata": {"name": "demo", "namespace": "default", "uid": "uid-demo"},
           "spec": {"image": "cairn:test"},
           "status": {"readyReplicas": 1, "conditions": [{"type": "Ready", "status": "True",
               "reason": "AllReplicasReady", "message": "1/1 pods ready",
               "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

#[tokio::test]
async fn benchmark_waits_for_the_store_to_be_ready() {
    let mut not_ready = store_json();
    not_ready["status"]["conditions"][0]["status"] = json!("False");
    let world = World { store: Some(not_ready), ..World::default() };
    let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(benchmark::REQUEUE_WAITING));
    assert!(find(&calls, "PATCH", "/jobs/run1-bench").is_none(), "no Job before the store is Ready");
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Pending");
    assert_eq!(condition(status, "Ready")["reason"], "StoreNotReady");
}

#[tokio::test]
async fn a_benchmark_against_a_tls_store_runs_its_job_over_tls() {
    for (auth_clients, identity) in [("no", false), ("optional", true), ("yes", true)] {
        let mut tls = store_json();
        tls["spec"]["tlsSecret"] = json!({"name": "demo-tls", "authClients": auth_clients});
        let world = World { store: Some(tls), ..World::default() };
        let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
        assert_eq!(action.expect("reconcile"), Action::requeue(benchmark::REQUEUE_WAITING));
        let job = &find(&calls, "PATCH", "/jobs/run1-bench").expect("a Job against the TLS store").body;
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], "demo-tls", "{pod}");
        let mount = &pod["containers"][0]["volumeMounts"][0];
        assert_eq!((mount["mountPath"].as_str(), mount["readOnly"].as_bool()), (Some("/etc/cairn/tls"), Some(true)));
        assert_eq!(mount["name"], pod["volumes"][0]["name"]);
        let args: Vec<&str> =
            pod["containers"][0]["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
        let args = args.join(" ");
        assert!(
            args.contains("--tls --tls-ca-cert /etc/cairn/tls/ca.crt --tls-server-name demo.default.svc"),
            "{args}"
        );
        assert_eq!(args.contains("--tls-cert /etc/cairn/tls/tls.crt --tls-key /etc/cairn/tls/tls.key"), identity);
        let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
        assert_eq!(status["phase"], "Running", "{status}");
        assert_eq!(condition(status, "Ready")["reason"], "JobStarted");
    }
}

#[tokio::test]
async fn a_benchmark_whose_job_vanished_fails_instead_of_running_again() {
    let mut running = bench();
    running.status =
        Some(serde_json::from_value(json!({"phase": "Running", "jobName": "run1-bench"})).expect("status"));
    let world = World { store: Some(store_json()), ..World::default() };
    let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(running), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::await_change());
    assert!(find(&calls, "PATCH", "/jobs/run1-bench").is_none(), "never a second run");
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Failed");
    assert_eq!(condition(status, "Failed")["reason"], "JobLost");
    assert_eq!(events(&calls), vec![("Warning".to_string(), "Failed".to_string())]);
}

#[tokio::test]
async fn benchmark_waits_for_a_missing_store() {
    let (action, calls) = with_api(World::default(), |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(benchmark::REQUEUE_WAITING));
    assert!(find(&calls, "PATCH", "/jobs/run1-bench").is_none());
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Pending");
    assert_eq!(condition(status, "Ready")["reason"], "StoreNotFound");
    assert_eq!(events(&calls), vec![("Warning".to_string(), "StoreNotFound".to_string())]);
}

#[tokio::test]
async fn benchmark_runs_a_job_against_the_store_service() {
    let world = World { store: Some(store_json()), ..World::default() };
    let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::requeue(benchmark::REQUEUE_WAITING));
    let job = &find(&calls, "PATCH", "/apis/batch/v1/namespaces/default/jobs/run1-bench").expect("job").body;
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "cairn:test");
    let args = container["args"].as_array().expect("args");
    assert_eq!(args[2], "demo.default.svc:6379");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "KVStoreBenchmark");
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Running");
    assert_eq!(status["jobName"], "run1-bench");
    assert_eq!(events(&calls), vec![("Normal".to_string(), "JobCreated".to_string())]);
}

#[tokio::test]
async fn benchmark_completion_brings_the_summary_into_the_status() {
    let world = World {
        store: Some(store_json()),
        job_exists: true,
        job_condition: Some("Complete"),
        termination_message: Some(
            r#"{"ops_per_sec": 250000.5, "p50_us": 90, "p99_us": 420, "errors": 0, "verified": true}"#.into(),
        ),
        ..World::default()
    };
    let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::await_change());
    assert!(find(&calls, "PATCH", "/jobs/run1-bench").is_none(), "an existing Job is not re-applied");
    let pods = find(&calls, "GET", "/api/v1/namespaces/default/pods").expect("pods listed");
    assert!(pods.query.contains("run1-bench"), "{}", pods.query);
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Succeeded");
    assert_eq!(status["summary"]["opsPerSec"], 250000.5);
    assert_eq!(status["summary"]["p99Us"], 420.0);
    assert_eq!(status["summary"]["verified"], true);
    assert_eq!(condition(status, "Complete")["status"], "True");
    assert_eq!(condition(status, "Failed")["status"], "False");
    let reasons: Vec<String> = events(&calls).into_iter().map(|(_, r)| r).collect();
    assert!(reasons.contains(&"Succeeded".to_string()), "{reasons:?}");
}

#[tokio::test]
async fn benchmark_with_failed_verification_fails() {
    let world = World {
        store: Some(store_json()),
        job_exists: true,
        job_condition: Some("Complete"),
        termination_message: Some(
            r#"{"ops_per_sec": 1, "p50_us": 1, "p99_us": 1, "errors": 3, "verified": false}"#.into(),
        ),
        ..World::default()
    };
    let (_, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Failed");
    assert!(status["message"].as_str().unwrap_or("").contains("3 errors"), "{status}");
    assert_eq!(condition(status, "Failed")["status"], "True");
}

#[tokio::test]
async fn a_finished_benchmark_is_left_alone() {
    let mut done = bench();
    done.status = Some(serde_json::from_value(json!({"phase": "Succeeded"})).expect("status"));
    let world = World { store: Some(store_json()), ..World::default() };
    let (action, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(done), ctx)).await;
    assert_eq!(action.expect("reconcile"), Action::await_change());
    assert!(calls.is_empty(), "{calls:#?}");
}

#[tokio::test]
async fn a_driver_that_failed_before_its_summary_is_quoted_in_the_status() {
    let world = World {
        store: Some(store_json()),
        job_exists: true,
        job_condition: Some("Failed"),
        termination_message: Some(
            "connecting\ncairn-bench: TLS: cannot read the CA certificates from /etc/cairn/tls/ca.crt: No such file\n"
                .into(),
        ),
        ..World::default()
    };
    let (_, calls) = with_api(world, |ctx| benchmark::reconcile(Arc::new(bench()), ctx)).await;
    let status = &find(&calls, "PATCH", "/kvstorebenchmarks/run1/status").expect("status").body["status"];
    assert_eq!(status["phase"], "Failed");
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.starts_with("Job failed: job Failed; the driver said: cairn-bench: TLS: cannot read"), "{message}");
}
