//! Every name the operator relies on from the store image: binaries, flags, environment
//! variables, paths and HTTP endpoints. Kept in one place so that a rename in the server or in
//! `cairn-bench` is a one-line change here.
//!
//! The server's flags are checked against its own command-line definition by
//! `operator/tests/store_contract.rs` (which parses the builders' arguments with
//! `cairn_server::config::Args` and the Job's with `cairn_bench::cli::Cli`): a flag the server
//! does not have would make `cairn` exit at start, so a feature the server lacks has its flag
//! here as `None` and the builders pass nothing for it.

/// The server binary in the image.
pub const SERVER_BINARY: &str = "cairn";
/// The benchmark driver binary in the image.
pub const BENCH_BINARY: &str = "cairn-bench";

// Server flags.
pub const FLAG_BIND: &str = "--bind";
pub const FLAG_RESP_PORT: &str = "--port";
/// The native binary protocol's port flag (docs/native-protocol.md).
pub const FLAG_NATIVE_PORT: &str = "--native-port";
pub const FLAG_ADMIN_PORT: &str = "--admin-port";
pub const FLAG_DATA_DIR: &str = "--data-dir";
pub const FLAG_DURABILITY: &str = "--durability";
/// Worker threads; the server pins them to the CPUs the pod is allowed (its affinity mask),
/// which the kubelet's static CPU manager makes exclusive for a Guaranteed pod with whole CPUs.
pub const FLAG_THREADS: &str = "--threads";
pub const FLAG_CONFIG: &str = "--config";
pub const FLAG_LOG_FORMAT: &str = "--log-format";
pub const LOG_FORMAT_JSON: &str = "json";
/// Where the server also writes the error that stops it: the pod's termination message
/// ([`TERMINATION_MESSAGE_PATH`]), which the operator quotes in the store's status.
pub const FLAG_TERMINATION_MESSAGE_PATH: &str = "--termination-message-path";
/// How often the server rereads its config file for changed `[params]`, which it applies live.
/// The operator sets it (and refuses it in `spec.config`): a change of `spec.maxmemory` reaches
/// the running server through it, without a restart.
pub const FLAG_CONFIG_RELOAD_INTERVAL: &str = "--config-reload-interval";
/// The config file key of the same setting.
pub const CONFIG_RELOAD_INTERVAL_KEY: &str = "config-reload-interval";
/// The interval the operator asks for.
pub const CONFIG_RELOAD_INTERVAL: &str = "5s";
/// The memory limit parameter, in bytes (`spec.maxmemory`).
pub const PARAM_MAXMEMORY: &str = "maxmemory";
/// The eviction policy parameter (`spec.maxmemoryPolicy`).
pub const PARAM_MAXMEMORY_POLICY: &str = "maxmemory-policy";
/// The config file's table of CONFIG parameters, set at start and again (live) when the mounted
/// file changes (the server checks it every 5 s by default, `--config-reload-interval`).
pub const CONFIG_PARAMS_TABLE: &str = "params";

/// The CONFIG parameters the server applies live from its config file's `[params]` table
/// (`store/server/src/config_reload/`): every parameter CONFIG SET may change that has no flag of
/// its own. The operator leaves their values out of the pod template's hash, so a change of one
/// in `spec.config` reaches the running server without a restart (a name added or removed still
/// rolls the pod: a removed parameter keeps its value in the running server). Canonical names;
/// `operator/tests/store_contract.rs` checks the list against the server's table, both ways.
pub const LIVE_PARAMS: &[&str] = &[
    "save",
    "dbfilename",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "timeout",
    "min-replicas-to-write",
    "min-replicas-max-lag",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "hz",
    "loglevel",
    "active-expire-effort",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-server-del",
    "lfu-log-factor",
    "lfu-decay-time",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "latency-monitor-threshold",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "busy-reply-threshold",
    "notify-keyspace-events",
    "tracking-table-max-keys",
    "repl-ping-replica-period",
    "rdb-key-save-delay",
    "tcp-keepalive",
    "repl-backlog-size",
    "key-load-delay",
    "maxmemory-clients",
    "aof-use-rdb-preamble",
    "protected-mode",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "list-max-listpack-size",
    "list-compress-depth",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "hll-sparse-max-bytes",
];

/// The server's other CONFIG parameters, which `[params]` may not set (the server refuses them
/// there and would not start), each with why: a flag of its own (which the operator sets from the
/// spec, or a top-level key of `spec.config`), or no change after start.
pub const NOT_LIVE_PARAMS: &[(&str, &str)] = &[
    ("port", "the operator sets it from spec.ports.resp (--port)"),
    ("tls-port", "the operator sets it from spec.ports.resp with spec.tlsSecret (--tls-port)"),
    ("bind", "the operator sets it (--bind)"),
    ("dir", "the operator sets it (--data-dir)"),
    ("databases", "it has a flag of its own: set it at the top level of spec.config (databases = 16)"),
    ("requirepass", "the operator sets it from spec.authSecret"),
    ("maxclients", "it has a flag of its own: set it at the top level of spec.config (maxclients = 1000)"),
    ("appendonly", "the operator sets it from spec.durability (--durability)"),
    ("appendfsync", "the operator sets it from spec.durability (--durability)"),
    ("durability", "the operator sets it from spec.durability (--durability)"),
    ("tls-cert-file", "the operator sets it from spec.tlsSecret"),
    ("tls-key-file", "the operator sets it from spec.tlsSecret"),
    ("tls-ca-cert-file", "the operator sets it from spec.tlsSecret"),
    ("tls-auth-clients", "the operator sets it from spec.tlsSecret.authClients"),
    ("appendfilename", "the server cannot change it (immutable)"),
    ("replicaof", "the server cannot change it (immutable; Cairn has no replication yet)"),
    ("daemonize", "the server cannot change it (immutable; a pod runs the server in the foreground)"),
];

/// Other names the server takes for some parameters (Redis's), as `(alias, canonical name)`.
pub const PARAM_ALIASES: &[(&str, &str)] = &[
    ("lua-time-limit", "busy-reply-threshold"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slaveof", "replicaof"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
];

/// The server's TLS flags, or `None` if the server had no TLS. While it is `None`, a KVStore
/// with `spec.tlsSecret` is an invalid spec (reported in its status): serving plaintext to a
/// user who asked for TLS would be worse than not serving.
pub const TLS_FLAGS: Option<TlsFlags> = Some(TlsFlags {
    cert: "--tls-cert-file",
    key: "--tls-key-file",
    ca: "--tls-ca-cert-file",
    port: "--tls-port",
    auth_clients: "--tls-auth-clients",
});

/// The value of a port flag that turns its listener off (`--port off`, `--native-port off`).
pub const PORT_OFF: &str = "off";

/// The flags naming the TLS files of a `kubernetes.io/tls` Secret mounted at [`TLS_DIR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsFlags {
    /// Flag of the certificate file (`tls.crt`).
    pub cert: &'static str,
    /// Flag of the private key file (`tls.key`).
    pub key: &'static str,
    /// Flag of the CA file (`ca.crt`).
    pub ca: &'static str,
    /// Flag of the RESP over TLS port.
    pub port: &'static str,
    /// Flag saying whether clients must present a certificate.
    pub auth_clients: &'static str,
}

/// The flags of `cairn-bench run` that connect with TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchTlsFlags {
    /// Turns TLS on.
    pub tls: &'static str,
    /// The CA file that verifies the server's certificate (`ca.crt`).
    pub ca_cert: &'static str,
    /// The client certificate (`tls.crt`), when the store asks clients for one.
    pub cert: &'static str,
    /// The client key (`tls.key`), with the certificate.
    pub key: &'static str,
    /// The name checked against the server's certificate (the client Service's DNS name).
    pub server_name: &'static str,
}

/// Whether the server image supports TLS (see [`TLS_FLAGS`]).
pub const fn tls_supported() -> bool {
    TLS_FLAGS.is_some()
}

/// Address the server binds in a pod.
pub const BIND_ALL: &str = "0.0.0.0";

/// Environment variable holding the AUTH password (from the auth Secret).
pub const ENV_REQUIREPASS: &str = "CAIRN_REQUIREPASS";

// Paths inside the pod.
pub const DATA_DIR: &str = "/data";
pub const CONFIG_DIR: &str = "/etc/cairn";
pub const CONFIG_FILE_NAME: &str = "cairn.toml";
pub const TLS_DIR: &str = "/etc/cairn/tls";
/// The certificate chain of a `kubernetes.io/tls` Secret mounted at [`TLS_DIR`].
pub const TLS_CERT_FILE: &str = "tls.crt";
/// The private key of the mounted Secret.
pub const TLS_KEY_FILE: &str = "tls.key";
/// The CA certificate of the mounted Secret (cert-manager's `ca.crt`).
pub const TLS_CA_FILE: &str = "ca.crt";

/// The path in the pod of file `name` of the mounted TLS Secret.
pub fn tls_file(name: &str) -> String {
    format!("{TLS_DIR}/{name}")
}
pub const TMP_DIR: &str = "/tmp";

// Admin HTTP endpoints.
pub const HEALTHZ_PATH: &str = "/healthz";
pub const READYZ_PATH: &str = "/readyz";
pub const METRICS_PATH: &str = "/metrics";

/// Uid and gid the image runs as (non-root).
pub const RUN_AS_USER: i64 = 10001;

// Benchmark driver CLI (`cairn-bench run ...`).
pub const BENCH_SUBCOMMAND_RUN: &str = "run";
pub const BENCH_FLAG_TARGET: &str = "--target";
pub const BENCH_FLAG_OPS: &str = "--ops";
pub const BENCH_FLAG_CLIENTS: &str = "--clients";
pub const BENCH_FLAG_PIPELINE: &str = "--pipeline";
pub const BENCH_FLAG_DURATION: &str = "--duration";
pub const BENCH_FLAG_VALUE_SIZE: &str = "--value-size";
pub const BENCH_FLAG_SHAPE: &str = "--shape";
pub const BENCH_FLAG_THINK_TIME: &str = "--think-time";
pub const BENCH_FLAG_SUMMARY_JSON: &str = "--summary-json";
/// The driver's RESP over TLS flags (against a store with `spec.tlsSecret`).
pub const BENCH_TLS_FLAGS: BenchTlsFlags = BenchTlsFlags {
    tls: "--tls",
    ca_cert: "--tls-ca-cert",
    cert: "--tls-cert",
    key: "--tls-key",
    server_name: "--tls-server-name",
};
/// Environment variable the driver reads the AUTH password from.
pub const BENCH_ENV_PASSWORD: &str = "CAIRN_BENCH_PASSWORD";
/// The container's termination message file: where the driver writes its summary, and where
/// the server writes the error that stops it.
pub const TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// Kubernetes caps termination messages at 4096 bytes; the driver keeps its summary under it.
pub const SUMMARY_MAX_BYTES: usize = 4096;

// Keys of the driver's summary JSON (`--summary-json`).
pub const SUMMARY_OPS_PER_SEC: &str = "ops_per_sec";
pub const SUMMARY_P50_US: &str = "p50_us";
pub const SUMMARY_P99_US: &str = "p99_us";
pub const SUMMARY_ERRORS: &str = "errors";
pub const SUMMARY_VERIFIED: &str = "verified";
