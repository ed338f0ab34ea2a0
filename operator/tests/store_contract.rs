//! The operator's builders against the real command lines of the programs they start.
//!
//! The StatefulSet's arguments are parsed with the server's own clap definition
//! (`cairn_server::config::Args`) and resolved into its `Config`, with the ConfigMap's
//! `cairn.toml` as the config file; the benchmark Job's arguments are parsed with
//! `cairn_bench::cli::Cli`. A flag the server or the driver does not have (it would make the
//! container exit at start), a value it rejects, or an extra config key it refuses fails here.

use std::path::{Path, PathBuf};

use cairn_crds::{Durability, KVStore, KVStoreBenchmark, LoadShape, TlsClientAuth, TlsSecretRef};
use cairn_operator::builders::{configmap, job, statefulset};
use cairn_operator::store_contract as sc;
use cairn_operator::validate::resolve;
use clap::{CommandFactory, Parser, ValueEnum};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/cairn-operator/examples")
}

/// Every document of `kind` in the chart's examples and in `e2e/k8s/variants.yaml`.
fn examples<T: serde::de::DeserializeOwned>(kind: &str) -> Vec<T> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(examples_dir())
        .unwrap_or_else(|e| panic!("reading the examples: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    entries.sort();
    // And the builder variants the Kubernetes e2e step renders besides the examples.
    entries.push(examples_dir().join("../../../e2e/k8s/variants.yaml"));
    for path in entries {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if value.get("kind").and_then(|k| k.as_str()) == Some(kind) {
                out.push(serde_yaml_ng::from_value(value).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
            }
        }
    }
    out
}

fn with_namespace(mut store: KVStore) -> KVStore {
    store.metadata.namespace.get_or_insert_with(|| "default".into());
    store
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairn-operator-contract-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Parses the StatefulSet's arguments as `cairn` would, with the ConfigMap's file in place of
/// `/etc/cairn/cairn.toml`, and resolves them into the server's configuration.
fn server_config(store: &KVStore, dir: &Path) -> cairn_server::Config {
    let name = store.metadata.name.clone().unwrap_or_default();
    let config_file = dir.join(format!("{name}.toml"));
    std::fs::write(&config_file, configmap::config_text(store)).unwrap_or_else(|e| panic!("writing config: {e}"));
    let in_pod = format!("{}/{}", sc::CONFIG_DIR, sc::CONFIG_FILE_NAME);
    let mut argv = vec![sc::SERVER_BINARY.to_string()];
    argv.extend(statefulset::args(store).into_iter().map(|a| {
        if a == in_pod {
            config_file.display().to_string()
        } else {
            a
        }
    }));
    let args = cairn_server::Args::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("cairn rejects the operator's arguments {argv:?}:\n{e}"));
    cairn_server::Config::resolve(args).unwrap_or_else(|e| panic!("cairn rejects the configuration {argv:?}: {e}"))
}

/// The CONFIG parameters the configuration sets at start, checked and normalized as the server
/// does before it serves (CONFIG SET's checks: known, mutable, a valid value), as `name=value`.
fn start_params(config: &cairn_server::Config) -> Vec<String> {
    let runtime = cairn_server::config_params::RuntimeConfig::new(config);
    let pairs = config.params.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    cairn_server::config_params::validate_changes(&runtime, pairs)
        .unwrap_or_else(|e| panic!("cairn refuses the parameters {:?}: {e}", config.params))
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect()
}

/// `maxmemory` and `maxmemory-policy` as the server gets them for `store` (no limit: 0).
fn expected_memory_params(store: &KVStore) -> Vec<String> {
    let bytes = cairn_operator::maxmemory::maxmemory_bytes(&store.spec.memory, &store.spec.maxmemory)
        .unwrap_or_else(|e| panic!("{e}"));
    vec![
        format!("{}={bytes}", sc::PARAM_MAXMEMORY),
        format!("{}={}", sc::PARAM_MAXMEMORY_POLICY, store.spec.maxmemory_policy.as_str()),
    ]
}

#[test]
fn the_server_accepts_the_statefulset_arguments_of_every_example() {
    let dir = scratch("examples");
    let stores: Vec<KVStore> = examples("KVStore");
    assert!(stores.len() >= 2, "expected a development and a production example");
    for store in stores.into_iter().map(with_namespace) {
        resolve(&store).unwrap_or_else(|e| panic!("example {:?} is invalid: {e}", store.metadata.name));
        let config = server_config(&store, &dir);
        let spec = &store.spec;
        assert_eq!(config.durability.to_string(), spec.durability.as_flag());
        assert_eq!(config.threads, Some(usize::try_from(spec.cpus).unwrap_or(0)));
        // A TLS store serves RESP on its port over TLS only.
        let (plaintext, tls) = match spec.tls_secret {
            None => (Some(spec.ports.resp), None),
            Some(_) => (None, Some(spec.ports.resp)),
        };
        assert_eq!(config.port.map(i32::from), plaintext);
        assert_eq!(config.tls.as_ref().map(|t| i32::from(t.port)), tls);
        assert_eq!(i32::from(config.admin_port), spec.ports.admin);
        assert_eq!(config.bind, sc::BIND_ALL);
        // The kubelet probes the admin port from outside the pod.
        assert_eq!(config.admin_bind, sc::BIND_ALL);
        assert_eq!(config.data_dir, PathBuf::from(sc::DATA_DIR));
        // The file is watched: a spec.maxmemory change reaches the server without a restart.
        assert_eq!(config.config_reload_interval, std::time::Duration::from_secs(5));
        // maxmemory and its policy reach the server as CONFIG parameters it accepts.
        let params = start_params(&config);
        for want in expected_memory_params(&store) {
            assert!(params.contains(&want), "{:?}: {want} not in {params:?}", store.metadata.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_server_accepts_every_maxmemory_and_policy() {
    let dir = scratch("maxmemory");
    let base = with_namespace(examples::<KVStore>("KVStore").remove(0));
    let policies = cairn_crds::MaxmemoryPolicy::ALL;
    let sizes = [("1Gi", "75%"), ("2Gi", "1500Mi"), ("1Gi", "1G"), ("4Gi", "0.5Gi"), ("1Gi", "0"), ("16Gi", "100%")];
    for (i, policy) in policies.into_iter().enumerate() {
        let (memory, maxmemory) = sizes[i % sizes.len()];
        let mut store = base.clone();
        store.spec.memory = memory.into();
        store.spec.maxmemory = maxmemory.into();
        store.spec.maxmemory_policy = policy;
        resolve(&store).unwrap_or_else(|e| panic!("{memory}/{maxmemory}/{policy} is valid: {e}"));
        let params = start_params(&server_config(&store, &dir));
        let memory_params: Vec<String> = params.into_iter().filter(|p| p.starts_with("maxmemory")).collect();
        assert_eq!(memory_params, expected_memory_params(&store), "{memory}/{maxmemory}/{policy}");
    }
    // The store contract's parameter names are the server's, and its [params] table is the one
    // the operator checks spec.config for.
    for name in [sc::PARAM_MAXMEMORY, sc::PARAM_MAXMEMORY_POLICY] {
        assert!(cairn_server::config_params::find(name).is_some_and(|p| p.name == name), "{name}");
    }
    let file = dir.join("params.toml");
    std::fs::write(&file, format!("[{}]\nhz = 20\n", sc::CONFIG_PARAMS_TABLE)).unwrap_or_else(|e| panic!("{e}"));
    let args = cairn_server::Args::try_parse_from(["cairn", "--config", &file.display().to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    let config = cairn_server::Config::resolve(args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(start_params(&config), ["hz=20"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_server_accepts_every_tier_cpu_count_and_port() {
    let dir = scratch("tiers");
    let base = with_namespace(examples::<KVStore>("KVStore").remove(0));
    for (durability, cpus, resp, admin) in [
        (Durability::None, 1, 6379, 8379),
        (Durability::Async, 2, 6380, 9000),
        (Durability::Everysec, 16, 1, 65535),
        (Durability::Sync, 256, 16379, 18379),
    ] {
        let mut store = base.clone();
        store.spec.durability = durability;
        store.spec.cpus = cpus;
        store.spec.ports.resp = resp;
        store.spec.ports.admin = admin;
        store.spec.config = None;
        let config = server_config(&store, &dir);
        assert_eq!(config.durability.to_string(), durability.as_flag());
        assert_eq!(config.threads, Some(usize::try_from(cpus).unwrap_or(0)));
        assert_eq!((config.port.map(i32::from), i32::from(config.admin_port)), (Some(resp), admin));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_server_accepts_the_tls_arguments_and_serves_resp_over_tls_only() {
    let dir = scratch("tls");
    let base = with_namespace(examples::<KVStore>("KVStore").remove(0));
    for auth_clients in [TlsClientAuth::No, TlsClientAuth::Optional, TlsClientAuth::Yes] {
        let mut store = base.clone();
        store.spec.tls_secret = Some(TlsSecretRef { name: "demo-tls".into(), auth_clients });
        resolve(&store).unwrap_or_else(|e| panic!("a TLS store is valid: {e}"));
        let config = server_config(&store, &dir);
        let tls = config.tls.clone().expect("TLS on");
        assert_eq!((config.port, config.native_port), (None, None), "no plaintext port with TLS");
        assert_eq!(i32::from(tls.port), store.spec.ports.resp);
        assert_eq!(tls.cert_file, PathBuf::from(format!("{}/tls.crt", sc::TLS_DIR)));
        assert_eq!(tls.key_file, PathBuf::from(format!("{}/tls.key", sc::TLS_DIR)));
        assert_eq!(
            tls.auth_clients.to_possible_value().map(|v| v.get_name().to_string()).as_deref(),
            Some(auth_clients.as_flag())
        );
        assert_eq!(tls.ca_cert_file.is_some(), auth_clients.needs_ca());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the server refuses `name` in `[params]` because it has a flag of its own.
fn has_own_flag(name: &str) -> bool {
    cairn_server::startup_params::refuse_own_flags([name]).is_err()
}

#[test]
fn the_live_params_are_the_ones_the_server_applies_live() {
    use cairn_server::config_params::{find, ALIASES, PARAMS};
    // Every listed name is a parameter (by its canonical name) the server applies from [params].
    for name in sc::LIVE_PARAMS {
        let param = find(name).unwrap_or_else(|| panic!("LIVE_PARAMS: the server has no parameter {name}"));
        assert_eq!(param.name, *name, "LIVE_PARAMS: {name} is an alias, list {}", param.name);
        assert!(param.mutable, "LIVE_PARAMS: {name} is immutable in the server");
        assert!(!has_own_flag(name), "LIVE_PARAMS: the server refuses {name} in [params] (a flag of its own)");
    }
    // Every excluded name is a parameter the server does not take from [params], with a reason.
    for (name, why) in sc::NOT_LIVE_PARAMS {
        let param = find(name).unwrap_or_else(|| panic!("NOT_LIVE_PARAMS: the server has no parameter {name}"));
        assert_eq!(param.name, *name, "NOT_LIVE_PARAMS: {name} is an alias, list {}", param.name);
        assert!(!param.mutable || has_own_flag(name), "NOT_LIVE_PARAMS: the server applies {name} live ({why})");
        assert!(!why.trim().is_empty(), "NOT_LIVE_PARAMS: {name} without a reason");
    }
    // Every parameter of the server is in exactly one of the two lists.
    for param in PARAMS {
        let live = sc::LIVE_PARAMS.contains(&param.name);
        let excluded = sc::NOT_LIVE_PARAMS.iter().any(|(n, _)| *n == param.name);
        assert!(live != excluded, "{}: listed in LIVE_PARAMS {live}, in NOT_LIVE_PARAMS {excluded}", param.name);
    }
    assert_eq!(sc::LIVE_PARAMS.len() + sc::NOT_LIVE_PARAMS.len(), PARAMS.len(), "a name listed twice");
    // The aliases are the server's, both ways.
    let sorted = |list: &[(&'static str, &'static str)]| {
        let mut list = list.to_vec();
        list.sort();
        list
    };
    assert_eq!(sorted(sc::PARAM_ALIASES), sorted(ALIASES));
}

#[test]
fn the_server_starts_with_every_live_param_the_operator_accepts() {
    let dir = scratch("live-params");
    let mut store = with_namespace(examples::<KVStore>("KVStore").remove(0));
    // Each live parameter the user may set, at the server's default, under a name of another case.
    let owned = [sc::PARAM_MAXMEMORY, sc::PARAM_MAXMEMORY_POLICY];
    let mut config = format!("[{}]\n", sc::CONFIG_PARAMS_TABLE);
    for name in sc::LIVE_PARAMS.iter().filter(|n| !owned.contains(n)) {
        let param = cairn_server::config_params::find(name).unwrap_or_else(|| panic!("{name}"));
        config.push_str(&format!("{} = {:?}\n", name.to_ascii_uppercase(), param.default));
    }
    store.spec.config = Some(config);
    resolve(&store).unwrap_or_else(|e| panic!("the operator refuses its own live parameters: {e}"));
    let params = start_params(&server_config(&store, &dir));
    assert_eq!(params.len(), sc::LIVE_PARAMS.len(), "{params:?}");
    // And the operator refuses what the server would not start with.
    for (name, _) in sc::NOT_LIVE_PARAMS {
        store.spec.config = Some(format!("[{}]\n{name} = \"1\"\n", sc::CONFIG_PARAMS_TABLE));
        let refused = resolve(&store).expect_err(name).0;
        assert!(refused.contains(&format!("{name} cannot be set in [params]")), "{refused}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_config_key_the_server_does_not_know_is_caught() {
    // The server refuses unknown keys in its config file: the check above would catch an
    // example (or a default ConfigMap text) the server cannot start with.
    let dir = scratch("badkey");
    let file = dir.join("bad.toml");
    std::fs::write(&file, "maxclientz = 1\n").unwrap_or_else(|e| panic!("{e}"));
    let args = cairn_server::Args::try_parse_from(["cairn", "--config", &file.display().to_string()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(cairn_server::Config::resolve(args).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_password_variables_are_the_ones_the_programs_read() {
    let server = cairn_server::Args::command();
    let requirepass = server.get_arguments().find(|a| a.get_id() == "requirepass").expect("--requirepass");
    assert_eq!(requirepass.get_env().and_then(|e| e.to_str()), Some(sc::ENV_REQUIREPASS));
    let bench = cairn_bench::cli::Cli::command();
    let run = bench.find_subcommand(sc::BENCH_SUBCOMMAND_RUN).expect("cairn-bench run");
    let password = run.get_arguments().find(|a| a.get_id() == "password").expect("--password");
    assert_eq!(password.get_env().and_then(|e| e.to_str()), Some(sc::BENCH_ENV_PASSWORD));
}

#[test]
fn the_binaries_are_named_as_the_builders_call_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (manifest, binary) in
        [("store/server/Cargo.toml", sc::SERVER_BINARY), ("store/bench/Cargo.toml", sc::BENCH_BINARY)]
    {
        let text = std::fs::read_to_string(root.join(manifest)).unwrap_or_else(|e| panic!("{manifest}: {e}"));
        let parsed: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{manifest}: {e}"));
        let bins = parsed.get("bin").and_then(|b| b.as_array()).cloned().unwrap_or_default();
        assert!(
            bins.iter().any(|b| b.get("name").and_then(|n| n.as_str()) == Some(binary)),
            "{manifest} has no [[bin]] named {binary}"
        );
    }
}

/// Parses the Job's arguments as `cairn-bench` would.
fn bench_run(bench: &KVStoreBenchmark, store: &KVStore) -> cairn_bench::cli::RunArgs {
    let mut argv = vec![sc::BENCH_BINARY.to_string()];
    argv.extend(job::args(bench, store));
    let cli = cairn_bench::cli::Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("cairn-bench rejects the operator's arguments {argv:?}:\n{e}"));
    match cli.command {
        cairn_bench::cli::Command::Run(run) => run,
        other => panic!("expected `run`, got {other:?}"),
    }
}

#[test]
fn the_driver_accepts_the_job_arguments_of_every_example() {
    let stores: Vec<KVStore> = examples::<KVStore>("KVStore").into_iter().map(with_namespace).collect();
    let benches: Vec<KVStoreBenchmark> = examples("KVStoreBenchmark");
    assert!(!benches.is_empty(), "expected a benchmark example");
    for mut bench in benches {
        bench.metadata.namespace.get_or_insert_with(|| "default".into());
        let store = stores
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(bench.spec.store.as_str()))
            .expect("the example benchmark names an example store");
        let run = bench_run(&bench, store);
        let config = run.config().unwrap_or_else(|e| panic!("cairn-bench rejects the workload: {e}"));
        let w = &bench.spec.workload;
        assert_eq!((config.clients, config.pipeline), (w.clients, w.pipeline));
        assert_eq!(run.value_size, u64::from(w.value_size_bytes));
        assert_eq!(run.summary_json.as_deref(), Some(Path::new(sc::TERMINATION_MESSAGE_PATH)));
        let namespace = store.metadata.namespace.clone().unwrap_or_default();
        assert_eq!(run.server.addr(), format!("{}.{namespace}.svc:{}", bench.spec.store, store.spec.ports.resp));
    }
}

#[test]
fn the_driver_accepts_agent_shaped_load_and_every_operation() {
    let store = with_namespace(examples::<KVStore>("KVStore").remove(0));
    let mut bench: KVStoreBenchmark = examples("KVStoreBenchmark").remove(0);
    bench.spec.store = store.metadata.name.clone().unwrap_or_default();
    bench.spec.workload.shape = LoadShape::AgentShaped;
    bench.spec.workload.think_time_ms = Some(20);
    bench.spec.workload.operations = serde_json::from_value(serde_json::json!(["set", "get", "incr", "lpush", "hset"]))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = bench_run(&bench, &store);
    let config = run.config().unwrap_or_else(|e| panic!("cairn-bench rejects the workload: {e}"));
    assert_eq!(config.think_time, std::time::Duration::from_millis(20));
    assert_eq!(format!("{:?}", config.shape), "AgentShaped");
}

#[test]
fn the_driver_accepts_the_tls_arguments_of_a_job_against_a_tls_store() {
    use cairn_bench::tls::{ClientIdentity, TlsError, TlsSettings};
    let store = with_namespace(examples::<KVStore>("KVStore").remove(0));
    let mut bench: KVStoreBenchmark = examples("KVStoreBenchmark").remove(0);
    bench.spec.store = store.metadata.name.clone().unwrap_or_default();
    let namespace = store.metadata.namespace.clone().unwrap_or_default();
    let host = format!("{}.{namespace}.svc", bench.spec.store);
    let in_secret = |file: &str| PathBuf::from(sc::TLS_DIR).join(file);
    for auth_clients in [TlsClientAuth::No, TlsClientAuth::Optional, TlsClientAuth::Yes] {
        let mut tls_store = store.clone();
        tls_store.spec.tls_secret = Some(TlsSecretRef { name: "demo-tls".into(), auth_clients });
        let run = bench_run(&bench, &tls_store);
        assert_eq!(run.server.addr(), format!("{host}:{}", store.spec.ports.resp));
        let identity =
            auth_clients.needs_ca().then(|| ClientIdentity { cert: in_secret("tls.crt"), key: in_secret("tls.key") });
        let expected = TlsSettings { ca_cert: in_secret("ca.crt"), identity, server_name: host.clone() };
        assert_eq!(run.server.tls_settings(), Some(expected), "{auth_clients:?}");
        // The driver's own checks pass (RESP, evented sockets); only the files, which exist in
        // the pod's Secret volume and not here, are missing.
        assert_eq!(format!("{:?}", run.config().unwrap_or_else(|e| panic!("{e}")).io), "Evented");
        match run.tls_client() {
            Err(TlsError::Read { path, .. }) => assert_eq!(path, in_secret("ca.crt")),
            other => panic!("{auth_clients:?}: expected the CA file to be read, got {other:?}"),
        }
    }
    // A plaintext store: no TLS.
    assert_eq!(bench_run(&bench, &store).server.tls_settings(), None);
}

/// A driver report as `cairn-bench run` builds it, with the given headline numbers.
fn driver_report(
    ops_per_sec: f64,
    errors: u64,
    verified: bool,
    first_errors: Vec<String>,
) -> cairn_bench::report::RunReport {
    let latency = cairn_bench::stats::Latency {
        count: 1000,
        mean_us: 100.0,
        p50_us: 95.0,
        p99_us: 410.0,
        p999_us: 900.0,
        max_us: 2000.0,
    };
    cairn_bench::report::RunReport {
        target: "demo.default.svc:6379".into(),
        ops: "set,get".into(),
        clients: 50,
        pipeline: 16,
        threads: 1,
        io: "evented".into(),
        shape: "closed-loop".into(),
        think_time_ms: 0.0,
        value_size: 32,
        keyspace: 100_000,
        key_pattern: "random".into(),
        key_prefix: "cb".into(),
        measured_seconds: 30.0,
        requests: 1000,
        ops_per_sec,
        latency,
        per_op: cairn_bench::workload::Op::ALL.iter().map(|&op| (op, latency)).collect(),
        errors,
        mismatches: errors,
        connection_errors: 0,
        final_state_keys_checked: 10,
        acked_writes: 10,
        verified,
        first_errors,
    }
}

#[test]
fn the_operator_reads_the_summary_the_driver_writes() {
    use cairn_operator::reconcile::summary::parse_summary;
    assert_eq!(cairn_bench::report::SUMMARY_MAX_BYTES, sc::SUMMARY_MAX_BYTES);

    let json = driver_report(123_456.5, 0, true, Vec::new()).summary_json();
    let summary = parse_summary(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!((summary.ops_per_sec, summary.p50_us, summary.p99_us), (123_456.5, 95.0, 410.0));
    assert_eq!((summary.errors, summary.verified), (0, true));

    // The largest summary the driver writes (long errors, huge counts) still fits and parses.
    let worst = driver_report(f64::MAX, u64::MAX, false, vec!["\u{1F4A5}\"".repeat(5000); 10]).summary_json();
    assert!(worst.len() <= sc::SUMMARY_MAX_BYTES, "{} bytes", worst.len());
    let summary = parse_summary(&worst).unwrap_or_else(|e| panic!("{e}: {worst}"));
    assert_eq!((summary.errors, summary.verified), (u64::MAX, false));
}
