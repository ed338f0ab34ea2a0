//! Server configuration: command-line flags, `CAIRN_*` environment variables
//! and an optional TOML file, in that order of precedence.

use std::path::{Path, PathBuf};

use clap::{Parser, ValueEnum};
use serde::Deserialize;
use thiserror::Error;

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `--tls-auth-clients`: whether TLS clients must present a certificate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsAuthClients {
    /// A certificate signed by `--tls-ca-cert-file` is required.
    #[default]
    Yes,
    /// Certificates are not asked for.
    No,
    /// A certificate is asked for and checked when the client sends one.
    Optional,
}

/// The TLS listener's settings (`--tls-port` and its files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// Port (0: ephemeral).
    pub port: u16,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub ca_cert_file: Option<PathBuf>,
    pub auth_clients: TlsAuthClients,
    /// Seconds between checks of the files for new contents (0: never;
    /// `CONFIG SET tls-cert-file ...` reloads at any time).
    pub reload_interval_secs: u64,
}

/// Default `--tls-reload-interval`, in seconds.
pub const DEFAULT_TLS_RELOAD_INTERVAL_SECS: u64 = 10;

/// Flags and environment variables. Every field is optional so that the
/// config file can fill what the command line leaves out.
#[derive(Debug, Default, Parser, Deserialize)]
#[command(name = "cairn", version, about = "Cairn: a durable, Redis-compatible key-value store")]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Args {
    /// TOML configuration file (keys as the long flags: port, bind, data-dir, ...).
    #[arg(long, env = "CAIRN_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// How often the config file is checked for changes to its `[params]`,
    /// which are applied without a restart: seconds, or with a unit (`5s`,
    /// `500ms`). 0 turns checking off (SIGHUP still rereads the file).
    /// Default 5.
    #[arg(long, env = "CAIRN_CONFIG_RELOAD_INTERVAL", value_parser = crate::config_reload::interval::parse)]
    #[serde(default, deserialize_with = "crate::config_reload::interval::deserialize")]
    pub config_reload_interval: Option<std::time::Duration>,
    /// RESP port (0 picks a free port; `off` disables plaintext RESP, with `--tls-port` set).
    #[arg(long, env = "CAIRN_PORT", value_parser = parse_listen_port, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "deserialize_listen_port")]
    pub port: Option<ListenPort>,
    /// RESP over TLS port (0 picks a free port; default `off`). Needs
    /// `--tls-cert-file` and `--tls-key-file`; see docs/tls.md.
    #[arg(long, env = "CAIRN_TLS_PORT", value_parser = parse_listen_port, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "deserialize_listen_port")]
    pub tls_port: Option<ListenPort>,
    /// The server's certificate chain (PEM), leaf first.
    #[arg(long, env = "CAIRN_TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// The server's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "CAIRN_TLS_KEY_FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// CA certificates (PEM) that sign the client certificates accepted.
    #[arg(long, env = "CAIRN_TLS_CA_CERT_FILE")]
    pub tls_ca_cert_file: Option<PathBuf>,
    /// Whether TLS clients must present a certificate signed by the CA: yes
    /// (the default, as in Redis), no, or optional (checked when given).
    #[arg(long, env = "CAIRN_TLS_AUTH_CLIENTS", value_enum)]
    pub tls_auth_clients: Option<TlsAuthClients>,
    /// Seconds between checks of the TLS files: changed contents (a renewed
    /// certificate) are loaded for new connections. 0 turns checking off.
    /// Default 10.
    #[arg(long, env = "CAIRN_TLS_RELOAD_INTERVAL")]
    pub tls_reload_interval: Option<u64>,
    /// Native binary protocol port (0 picks a free port; `off` disables it).
    #[arg(long, env = "CAIRN_NATIVE_PORT", value_parser = parse_listen_port, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "deserialize_listen_port")]
    pub native_port: Option<ListenPort>,
    /// Address to listen on.
    #[arg(long, env = "CAIRN_BIND")]
    pub bind: Option<String>,
    /// Number of worker threads (default: one per allowed CPU).
    #[arg(long, env = "CAIRN_THREADS")]
    pub threads: Option<usize>,
    /// CPUs to pin one worker each to, e.g. `0-3,6` (default: the process's affinity mask).
    #[arg(long, env = "CAIRN_CPUS")]
    pub cpus: Option<String>,
    /// Move connections between workers as the load needs: a light load on
    /// one worker, a heavy one spread (default on; see docs/ARCHITECTURE.md).
    #[arg(long, env = "CAIRN_REBALANCE", value_parser = parse_on_off)]
    pub rebalance: Option<bool>,
    /// Data directory.
    #[arg(long, env = "CAIRN_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// A Redis (1.x to 7.4) or Valkey (up to 9.1) RDB file (`dump.rdb`) to
    /// load at start into an empty data directory (refused when it holds
    /// data); snapshotted before serving.
    #[arg(long, env = "CAIRN_IMPORT_RDB")]
    pub import_rdb: Option<PathBuf>,
    /// Number of databases (SELECT 0..N-1).
    #[arg(long, env = "CAIRN_DATABASES")]
    pub databases: Option<usize>,
    /// Password clients must give with AUTH or HELLO.
    #[arg(long, env = "CAIRN_REQUIREPASS", hide_env_values = true)]
    pub requirepass: Option<String>,
    /// Maximum number of connected clients.
    #[arg(long, env = "CAIRN_MAXCLIENTS")]
    pub maxclients: Option<usize>,
    /// Keyspace shards (rounded up to a power of two).
    #[arg(long, env = "CAIRN_SHARDS")]
    pub shards: Option<usize>,
    /// Log format.
    #[arg(long, env = "CAIRN_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Log filter (tracing `EnvFilter` syntax, e.g. `info` or `cairn_server=debug`).
    #[arg(long, env = "CAIRN_LOG_LEVEL")]
    pub log_level: Option<String>,
    /// On a fatal error (an invalid configuration, a start that fails), also
    /// write the error to this file, e.g. Kubernetes' `/dev/termination-log`,
    /// where it becomes the container's termination message. Flag or
    /// environment only (the file may be what failed).
    #[arg(long, env = "CAIRN_TERMINATION_MESSAGE_PATH")]
    #[serde(skip)]
    pub termination_message_path: Option<PathBuf>,
    /// When a write is acknowledged: none (no log), async (before fsync; fsync
    /// continuously), everysec (fsync once a second), sync (after the fdatasync
    /// that covers it).
    #[arg(long, env = "CAIRN_DURABILITY")]
    pub durability: Option<String>,
    /// WAL segment size in MiB (segments are preallocated and reused).
    #[arg(long, env = "CAIRN_WAL_SEGMENT_MB")]
    pub wal_segment_mb: Option<u64>,
    /// fdatasyncs of the WAL in flight at once (syncer threads); 0 picks the
    /// default (1).
    #[arg(long, env = "CAIRN_WAL_SYNCERS")]
    pub wal_syncers: Option<usize>,
    /// Microseconds a worker polls for new requests before it sleeps (0: never
    /// spins). Saves a sleep and a wake-up per request at low pipeline depth.
    /// Default 20, or 0 under a cgroup CPU quota.
    #[arg(long, env = "CAIRN_BUSY_POLL_US")]
    pub busy_poll_us: Option<u64>,
    /// Microseconds a worker whose clients wait for a `sync`-tier fdatasync
    /// polls for the acknowledgement before it sleeps (0: never spins). Keeps
    /// the CPU out of its idle state while the disk works, which on virtual
    /// machines shortens both the fdatasync and the wake-up after it.
    #[arg(long, env = "CAIRN_DURABLE_SPIN_US")]
    pub durable_spin_us: Option<u64>,
    /// Microseconds a script may run on the worker that received it (0:
    /// scripts always run on the script thread). A script runs there once
    /// it has run within this budget before; see docs/scripting.md.
    /// Default 1000.
    #[arg(long, env = "CAIRN_SCRIPT_INLINE_US")]
    pub script_inline_us: Option<u64>,
    /// Take a snapshot once the WAL has grown by this many MiB since the last one.
    #[arg(long, env = "CAIRN_SNAPSHOT_WAL_MB")]
    pub snapshot_wal_mb: Option<u64>,
    /// Take a snapshot at least this often (seconds) when anything changed (0: never by time).
    #[arg(long, env = "CAIRN_SNAPSHOT_INTERVAL")]
    pub snapshot_interval: Option<u64>,
    /// TESTING ONLY: never fsync (shows that the crash tests catch a server that skips fsync).
    #[arg(long, env = "CAIRN_UNSAFE_SKIP_FSYNC", hide = true, num_args = 0..=1, default_missing_value = "true")]
    pub unsafe_skip_fsync: Option<bool>,
    /// HTTP admin port: /metrics, /healthz, /readyz, /v1/... (0 picks a free port).
    #[arg(long, env = "CAIRN_ADMIN_PORT")]
    pub admin_port: Option<u16>,
    /// Address the admin port listens on (default: as --bind).
    #[arg(long, env = "CAIRN_ADMIN_BIND")]
    pub admin_bind: Option<String>,
    /// Bearer token the admin API's mutating endpoints require.
    #[arg(long, env = "CAIRN_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// File holding the admin bearer token (surrounding whitespace is ignored).
    #[arg(long, env = "CAIRN_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// A CONFIG parameter set at start, as CONFIG SET would (repeatable):
    /// `--param maxmemory=1gb --param maxmemory-policy=allkeys-lru`. It wins
    /// over the config file's `[params]`, at start and when the file changes.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = crate::startup_params::parse_flag)]
    #[serde(skip)]
    pub param: Vec<(String, String)>,
    /// The config file's `[params]` table: CONFIG parameters set at start,
    /// and again when the file changes (`config_reload`).
    #[arg(skip)]
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, toml::Value>,
}

/// A listening port flag (`--port`, `--native-port`, `--tls-port`): a port, or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenPort {
    Port(u16),
    Off,
}

impl ListenPort {
    /// The port to listen on, `None` when disabled.
    pub fn port(self) -> Option<u16> {
        match self {
            ListenPort::Port(p) => Some(p),
            ListenPort::Off => None,
        }
    }
}

/// Parses an on/off flag value: `on`/`off`, `yes`/`no`, `true`/`false`, `1`/`0`.
pub fn parse_on_off(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        other => Err(format!("`{other}` is not on or off")),
    }
}

/// Parses a port flag: a port number, or `off` / `-1` / `disabled`.
pub fn parse_listen_port(text: &str) -> Result<ListenPort, String> {
    match text.trim() {
        "off" | "-1" | "disabled" | "none" => Ok(ListenPort::Off),
        other => other
            .parse::<u16>()
            .map(ListenPort::Port)
            .map_err(|_| format!("`{other}` is not a port number (0-65535) or `off`")),
    }
}

/// In the config file: `native-port = 7379` or `native-port = "off"` (any port key).
fn deserialize_listen_port<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ListenPort>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(i64),
        Text(String),
    }
    let text = match Raw::deserialize(d)? {
        Raw::Number(n) => n.to_string(),
        Raw::Text(t) => t,
    };
    parse_listen_port(&text).map(Some).map_err(serde::de::Error::custom)
}

/// Default `--busy-poll-us`: about the cost of one sleep and wake-up on a
/// virtual machine (see `busy_poll`).
pub const DEFAULT_BUSY_POLL_US: u64 = 20;

/// Default `--durable-spin-us`: longer than the p99 fdatasync of the disks
/// measured (docs/benchmarks.md), so a waiting worker rarely sleeps.
pub const DEFAULT_DURABLE_SPIN_US: u64 = 1000;
/// Default of `--script-inline-us`.
pub const DEFAULT_SCRIPT_INLINE_US: u64 = 1000;

/// The resolved configuration the server runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Plaintext RESP port (`None`: off, only TLS; `Some(0)`: ephemeral).
    pub port: Option<u16>,
    /// RESP over TLS (`None`: off).
    pub tls: Option<TlsSettings>,
    /// Native protocol port (`None`: disabled; `Some(0)`: ephemeral).
    pub native_port: Option<u16>,
    pub bind: String,
    pub threads: Option<usize>,
    pub cpus: Option<String>,
    pub data_dir: PathBuf,
    /// `--import-rdb`: an RDB file loaded at start (see `rdb_file::import`).
    pub import_rdb: Option<PathBuf>,
    pub databases: usize,
    pub requirepass: Option<String>,
    pub maxclients: usize,
    pub shards: usize,
    pub log_format: LogFormat,
    pub log_level: String,
    /// Where the configuration file was, if any (INFO `config_file`).
    pub config_file: Option<PathBuf>,
    /// The configuration file as read at start: what its next versions are
    /// compared with ([`crate::config_reload`]).
    pub config_file_loaded: Option<crate::config_reload::version::Loaded>,
    /// How often the file is checked for changes (zero: never; SIGHUP and
    /// `RunningServer::reload_config` reread it anyway).
    pub config_reload_interval: std::time::Duration,
    pub durability: cairn_engine::durability::Tier,
    pub wal_segment_bytes: u64,
    /// Syncer threads of the WAL (0: the tier's default).
    pub wal_syncers: usize,
    /// Microseconds a worker polls before it sleeps (0: never; `None`:
    /// [`DEFAULT_BUSY_POLL_US`], or 0 under a cgroup CPU quota, see
    /// [`Config::busy_poll_budget_us`]).
    pub busy_poll_us: Option<u64>,
    /// Microseconds a worker polls while its clients wait for durability (0:
    /// never; `None`: [`DEFAULT_DURABLE_SPIN_US`], or 0 under a cgroup CPU
    /// quota, see [`Config::durable_spin_budget_us`]).
    pub durable_spin_us: Option<u64>,
    /// Microseconds a script may run on a worker thread (0: never there).
    pub script_inline_us: u64,
    pub snapshot_wal_bytes: u64,
    pub snapshot_interval_secs: u64,
    pub unsafe_skip_fsync: bool,
    /// Whether connections move between workers ([`crate::rebalance`]).
    pub rebalance: bool,
    /// HTTP admin port (0: ephemeral).
    pub admin_port: u16,
    /// Address of the admin listener.
    pub admin_bind: String,
    /// Bearer token of the admin API's mutating endpoints (`None`: they are
    /// refused).
    pub admin_token: Option<String>,
    /// CONFIG parameters set at start (`--param`, the file's `[params]`),
    /// applied by [`crate::startup_params::apply`].
    pub params: Vec<(String, String)>,
    /// Names of the parameters given with `--param` (they win over the
    /// file's `[params]`, at start and when the file is reloaded).
    pub param_flags: Vec<String>,
    /// How long MIGRATE's cached connections may stay idle (Redis: 10 s;
    /// not a flag: tests shorten it).
    pub migrate_socket_idle: std::time::Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: Some(6379),
            tls: None,
            native_port: Some(7379),
            bind: "127.0.0.1".to_string(),
            threads: None,
            cpus: None,
            data_dir: PathBuf::from("./data"),
            import_rdb: None,
            databases: 16,
            requirepass: None,
            maxclients: 10_000,
            shards: cairn_engine::keyspace::DEFAULT_SHARDS,
            log_format: LogFormat::Text,
            log_level: "info".to_string(),
            config_file: None,
            config_file_loaded: None,
            config_reload_interval: crate::config_reload::interval::DEFAULT,
            durability: cairn_engine::durability::Tier::Async,
            wal_segment_bytes: 64 << 20,
            wal_syncers: 0,
            busy_poll_us: None,
            durable_spin_us: None,
            script_inline_us: DEFAULT_SCRIPT_INLINE_US,
            snapshot_wal_bytes: 256 << 20,
            snapshot_interval_secs: 3600,
            unsafe_skip_fsync: false,
            rebalance: true,
            admin_port: 8379,
            admin_bind: "127.0.0.1".to_string(),
            admin_token: None,
            params: Vec::new(),
            param_flags: Vec::new(),
            migrate_socket_idle: crate::migrate::sockets::DEFAULT_IDLE,
        }
    }
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// Where and what, on one line, never quoting a credential
    /// (`config_reload::version::toml_error`).
    #[error("invalid config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("invalid setting {name}: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// A spin budget: the configured one, else `default` without a CPU quota and
/// 0 under one.
fn spin_budget_us(configured: Option<u64>, default: u64, cpu_quota: Option<f64>) -> u64 {
    match (configured, cpu_quota) {
        (Some(us), _) => us,
        (None, Some(_)) => 0,
        (None, None) => default,
    }
}

impl Config {
    /// The durable-spin budget to run with, given the cgroup's CPU quota: as
    /// configured, else [`DEFAULT_DURABLE_SPIN_US`] without a quota and 0
    /// under one (spinning counts against a CPU limit, and a throttled
    /// cgroup stalls for the rest of its period: see `cpu_quota`).
    pub fn durable_spin_budget_us(&self, cpu_quota: Option<f64>) -> u64 {
        spin_budget_us(self.durable_spin_us, DEFAULT_DURABLE_SPIN_US, cpu_quota)
    }

    /// The busy-poll budget to run with, given the cgroup's CPU quota: as
    /// configured, else [`DEFAULT_BUSY_POLL_US`] without a quota and 0 under
    /// one. Spinning fills a worker's idle time with polls, which under a
    /// quota spends the limit and gets the cgroup throttled (measured in
    /// docs/benchmarks.md, "Busy polling under a CPU quota").
    pub fn busy_poll_budget_us(&self, cpu_quota: Option<f64>) -> u64 {
        spin_budget_us(self.busy_poll_us, DEFAULT_BUSY_POLL_US, cpu_quota)
    }

    /// Fixes both spin budgets for a process running under `cpu_quota`
    /// (logging each one the quota turned off), so that later reads need no
    /// quota.
    pub fn resolve_spin_budgets(&mut self, cpu_quota: Option<f64>) {
        if let Some(cpus) = cpu_quota {
            if self.durable_spin_us.is_none() {
                tracing::info!(
                    cpus,
                    "CPU quota: workers do not spin while syncs are in flight (--durable-spin-us overrides)"
                );
            }
            if self.busy_poll_us.is_none() {
                tracing::info!(
                    cpus,
                    "CPU quota: workers do not busy-poll before they sleep (--busy-poll-us overrides)"
                );
            }
        }
        self.durable_spin_us = Some(self.durable_spin_budget_us(cpu_quota));
        self.busy_poll_us = Some(self.busy_poll_budget_us(cpu_quota));
    }

    /// Resolves flags/env (`args`) over an optional file over the defaults.
    pub fn resolve(args: Args) -> Result<Config, ConfigError> {
        let (file, loaded) = match &args.config {
            Some(path) => {
                let (file, loaded) = read_file(path)?;
                (file, Some(loaded))
            }
            None => (Args::default(), None),
        };
        let d = Config::default();
        let durability = match args.durability.or(file.durability) {
            Some(name) => name.parse().map_err(|e: cairn_engine::durability::UnknownTier| ConfigError::Invalid {
                name: "durability",
                reason: e.to_string(),
            })?,
            None => d.durability,
        };
        let mib = |v: Option<u64>, default: u64| v.map_or(default, |m| m.saturating_mul(1 << 20));
        // Flags/env win over the file as a pair: a token file on the command
        // line replaces a token in the file, and the other way round.
        let admin_token = match admin_token(args.admin_token, args.admin_token_file.as_deref())? {
            Some(token) => Some(token),
            None => admin_token(file.admin_token, file.admin_token_file.as_deref())?,
        };
        let bind = args.bind.or(file.bind).unwrap_or(d.bind);
        let file_params = crate::startup_params::from_table(&file.params)
            .map_err(|reason| ConfigError::Invalid { name: "params", reason })?;
        let param_flags = args.param.iter().map(|(name, _)| name.clone()).collect();
        let config = Config {
            params: crate::startup_params::merge(file_params, args.param),
            param_flags,
            config_file_loaded: loaded,
            config_reload_interval: args
                .config_reload_interval
                .or(file.config_reload_interval)
                .unwrap_or(d.config_reload_interval),
            durability,
            wal_segment_bytes: mib(args.wal_segment_mb.or(file.wal_segment_mb), d.wal_segment_bytes),
            wal_syncers: args.wal_syncers.or(file.wal_syncers).unwrap_or(d.wal_syncers),
            busy_poll_us: args.busy_poll_us.or(file.busy_poll_us).or(d.busy_poll_us),
            durable_spin_us: args.durable_spin_us.or(file.durable_spin_us).or(d.durable_spin_us),
            script_inline_us: args.script_inline_us.or(file.script_inline_us).unwrap_or(d.script_inline_us),
            snapshot_wal_bytes: mib(args.snapshot_wal_mb.or(file.snapshot_wal_mb), d.snapshot_wal_bytes),
            snapshot_interval_secs: args
                .snapshot_interval
                .or(file.snapshot_interval)
                .unwrap_or(d.snapshot_interval_secs),
            unsafe_skip_fsync: args.unsafe_skip_fsync.or(file.unsafe_skip_fsync).unwrap_or(false),
            rebalance: args.rebalance.or(file.rebalance).unwrap_or(d.rebalance),
            port: match args.port.or(file.port) {
                Some(given) => given.port(),
                None => d.port,
            },
            tls: tls_settings(
                args.tls_port.or(file.tls_port),
                args.tls_cert_file.or(file.tls_cert_file),
                args.tls_key_file.or(file.tls_key_file),
                args.tls_ca_cert_file.or(file.tls_ca_cert_file),
                args.tls_auth_clients.or(file.tls_auth_clients),
                args.tls_reload_interval.or(file.tls_reload_interval),
            )?,
            native_port: match args.native_port.or(file.native_port) {
                Some(given) => given.port(),
                None => d.native_port,
            },
            admin_port: args.admin_port.or(file.admin_port).unwrap_or(d.admin_port),
            admin_bind: args.admin_bind.or(file.admin_bind).unwrap_or_else(|| bind.clone()),
            admin_token,
            bind,
            threads: args.threads.or(file.threads),
            cpus: args.cpus.or(file.cpus),
            data_dir: args.data_dir.or(file.data_dir).unwrap_or(d.data_dir),
            import_rdb: args.import_rdb.or(file.import_rdb),
            databases: args.databases.or(file.databases).unwrap_or(d.databases),
            requirepass: args.requirepass.or(file.requirepass).filter(|p| !p.is_empty()),
            maxclients: args.maxclients.or(file.maxclients).unwrap_or(d.maxclients),
            shards: args.shards.or(file.shards).unwrap_or(d.shards),
            log_format: args.log_format.or(file.log_format).unwrap_or(d.log_format),
            log_level: args.log_level.or(file.log_level).unwrap_or(d.log_level),
            config_file: args.config,
            migrate_socket_idle: d.migrate_socket_idle,
        };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name, reason: &str| Err(ConfigError::Invalid { name, reason: reason.to_string() });
        if self.databases == 0 || self.databases > 10_000 {
            return invalid("databases", "must be between 1 and 10000");
        }
        if self.shards == 0 || self.shards > 1 << 16 {
            return invalid("shards", "must be between 1 and 65536");
        }
        if self.threads == Some(0) || self.threads.is_some_and(|t| t > 1024) {
            return invalid("threads", "must be between 1 and 1024");
        }
        if self.maxclients == 0 {
            return invalid("maxclients", "must be at least 1");
        }
        if self.wal_segment_bytes < 1 << 20 || self.wal_segment_bytes > 1 << 40 {
            return invalid("wal-segment-mb", "must be between 1 and 1048576");
        }
        if self.wal_syncers > 16 {
            return invalid("wal-syncers", "must be between 0 (the tier's default) and 16");
        }
        if self.busy_poll_us.is_some_and(|us| us > 10_000) {
            return invalid("busy-poll-us", "must be between 0 and 10000");
        }
        if self.durable_spin_us.is_some_and(|us| us > 10_000) {
            return invalid("durable-spin-us", "must be between 0 and 10000");
        }
        if self.script_inline_us > 1_000_000 {
            return invalid("script-inline-us", "must be between 0 and 1000000");
        }
        if self.snapshot_wal_bytes == 0 {
            return invalid("snapshot-wal-mb", "must be at least 1");
        }
        if self.port.is_none() && self.tls.is_none() {
            return invalid("port", "is off and so is tls-port: clients would have no RESP port");
        }
        if let Some(cpus) = &self.cpus {
            crate::cpus::parse_cpu_list(cpus)
                .map_err(|e| ConfigError::Invalid { name: "cpus", reason: e.to_string() })?;
        }
        Ok(())
    }

    /// A configuration for tests: an ephemeral port on loopback, one worker,
    /// and the given data directory.
    pub fn for_tests(data_dir: &Path) -> Config {
        Config {
            port: Some(0),
            native_port: Some(0),
            threads: Some(1),
            data_dir: data_dir.to_path_buf(),
            wal_segment_bytes: 1 << 20,
            admin_port: 0,
            ..Config::default()
        }
    }
}

/// The TLS settings when `--tls-port` is on: the certificate and key are
/// required, and the CA unless clients are not asked for certificates (as
/// in Redis). Files named without a TLS port are an error, not ignored.
fn tls_settings(
    port: Option<ListenPort>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    ca_cert_file: Option<PathBuf>,
    auth_clients: Option<TlsAuthClients>,
    reload_interval_secs: Option<u64>,
) -> Result<Option<TlsSettings>, ConfigError> {
    let invalid = |name, reason: &str| ConfigError::Invalid { name, reason: reason.to_string() };
    let Some(port) = port.and_then(ListenPort::port) else {
        let tls_set = cert_file.is_some() || key_file.is_some() || ca_cert_file.is_some();
        if tls_set || auth_clients.is_some() || reload_interval_secs.is_some() {
            return Err(invalid(
                "tls-port",
                "is off, but TLS files, tls-auth-clients or tls-reload-interval are set: set tls-port",
            ));
        }
        return Ok(None);
    };
    let cert_file = cert_file.ok_or_else(|| invalid("tls-cert-file", "is required with tls-port"))?;
    let key_file = key_file.ok_or_else(|| invalid("tls-key-file", "is required with tls-port"))?;
    let auth_clients = auth_clients.unwrap_or_default();
    if auth_clients != TlsAuthClients::No && ca_cert_file.is_none() {
        return Err(invalid(
            "tls-ca-cert-file",
            "is required unless tls-auth-clients is no (client certificates are checked against it)",
        ));
    }
    let reload_interval_secs = reload_interval_secs.unwrap_or(DEFAULT_TLS_RELOAD_INTERVAL_SECS);
    Ok(Some(TlsSettings { port, cert_file, key_file, ca_cert_file, auth_clients, reload_interval_secs }))
}

/// The admin token, given inline or in a file (not both; never empty).
fn admin_token(inline: Option<String>, file: Option<&Path>) -> Result<Option<String>, ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid { name: "admin-token", reason: reason.to_string() };
    let token = match (inline, file) {
        (Some(_), Some(_)) => return Err(invalid("give --admin-token or --admin-token-file, not both")),
        (Some(token), None) => token,
        (None, Some(path)) => std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?
            .trim()
            .to_string(),
        (None, None) => return Ok(None),
    };
    if token.is_empty() {
        return Err(invalid("the token is empty"));
    }
    Ok(Some(token))
}

/// The file's settings, and the file as the reloader compares it.
fn read_file(path: &Path) -> Result<(Args, crate::config_reload::version::Loaded), ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    let args = toml::from_str(&text).map_err(|source| ConfigError::Parse {
        path: path.to_path_buf(),
        reason: crate::config_reload::version::toml_error(&text, &source),
    })?;
    let loaded = crate::config_reload::version::Loaded::from_text(&text)
        .map_err(|reason| ConfigError::Invalid { name: "params", reason })?;
    Ok((args, loaded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_file_override_defaults() {
        let dir = std::env::temp_dir().join(format!("cairn-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cairn.toml");
        std::fs::write(&file, "port = 7000\ndatabases = 4\nbind = \"0.0.0.0\"\n").unwrap();
        let args = Args::parse_from(["cairn", "--config", file.to_str().unwrap(), "--port", "7001"]);
        let config = Config::resolve(args).unwrap();
        assert_eq!(config.port, Some(7001));
        assert_eq!(config.databases, 4);
        assert_eq!(config.bind, "0.0.0.0");
        assert_eq!(config.data_dir, PathBuf::from("./data"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_values_are_rejected() {
        let args = Args::parse_from(["cairn", "--databases", "0"]);
        assert!(Config::resolve(args).is_err());
        let args = Args::parse_from(["cairn", "--cpus", "x"]);
        assert!(Config::resolve(args).is_err());
    }

    #[test]
    fn admin_flags() {
        let args = Args::parse_from(["cairn", "--bind", "0.0.0.0"]);
        let config = Config::resolve(args).unwrap();
        assert_eq!((config.admin_port, config.admin_bind.as_str(), config.admin_token), (8379, "0.0.0.0", None));
        let dir = std::env::temp_dir().join(format!("cairn-config-test3-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let args = Args::parse_from(["cairn", "--admin-port", "0", "--admin-token-file", file.to_str().unwrap()]);
        let config = Config::resolve(args).unwrap();
        assert_eq!((config.admin_port, config.admin_token.as_deref()), (0, Some("s3cret")));
        std::fs::write(&file, "\n").unwrap();
        let args = Args::parse_from(["cairn", "--admin-token-file", file.to_str().unwrap()]);
        assert!(Config::resolve(args).is_err(), "an empty token file is an error");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn native_port_flag() {
        let config = Config::resolve(Args::parse_from(["cairn"])).unwrap();
        assert_eq!(config.native_port, Some(7379));
        let config = Config::resolve(Args::parse_from(["cairn", "--native-port", "0"])).unwrap();
        assert_eq!(config.native_port, Some(0));
        for off in ["off", "-1"] {
            let config = Config::resolve(Args::parse_from(["cairn", "--native-port", off])).unwrap();
            assert_eq!(config.native_port, None);
        }
        assert!(Args::try_parse_from(["cairn", "--native-port", "x"]).is_err());
        let dir = std::env::temp_dir().join(format!("cairn-config-test4-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cairn.toml");
        std::fs::write(&file, "native-port = \"off\"\n").unwrap();
        let config = Config::resolve(Args::parse_from(["cairn", "--config", file.to_str().unwrap()])).unwrap();
        assert_eq!(config.native_port, None);
        std::fs::write(&file, "native-port = 7400\n").unwrap();
        let config = Config::resolve(Args::parse_from(["cairn", "--config", file.to_str().unwrap()])).unwrap();
        assert_eq!(config.native_port, Some(7400));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A microseconds flag: its default, 0 accepted, above 10,000 refused
    /// by name, negative refused by the parser.
    fn check_micros_flag(flag: &str, name: &str, default: u64, get: fn(&Config) -> u64) {
        assert_eq!(get(&Config::resolve(Args::parse_from(["cairn"])).unwrap()), default);
        assert_eq!(get(&Config::resolve(Args::parse_from(["cairn", flag, "0"])).unwrap()), 0);
        let too_long = Config::resolve(Args::parse_from(["cairn", flag, "20000"]));
        assert!(matches!(too_long, Err(ConfigError::Invalid { name: n, .. }) if n == name));
        assert!(Args::try_parse_from(["cairn", flag, "-1"]).is_err());
    }

    #[test]
    fn spin_flags() {
        check_micros_flag("--busy-poll-us", "busy-poll-us", DEFAULT_BUSY_POLL_US, |c| c.busy_poll_budget_us(None));
        check_micros_flag("--durable-spin-us", "durable-spin-us", DEFAULT_DURABLE_SPIN_US, |c| {
            c.durable_spin_budget_us(None)
        });
    }

    /// A spin budget flag: its default without a quota, 0 under one, and an
    /// explicit value either way.
    fn check_spin_budget_under_quota(flag: &str, default: u64, budget: fn(&Config, Option<f64>) -> u64) {
        let unset = Config::resolve(Args::parse_from(["cairn"])).unwrap();
        assert_eq!(budget(&unset, None), default, "{flag}");
        assert_eq!(budget(&unset, Some(1.0)), 0, "{flag}");
        let asked = Config::resolve(Args::parse_from(["cairn", flag, "35"])).unwrap();
        assert_eq!(budget(&asked, Some(2.0)), 35, "{flag}");
        assert_eq!(budget(&asked, None), 35, "{flag}");
        let off = Config::resolve(Args::parse_from(["cairn", flag, "0"])).unwrap();
        assert_eq!(budget(&off, None), 0, "{flag}");
    }

    #[test]
    fn spinning_is_off_by_default_under_a_cpu_quota_unless_asked_for() {
        check_spin_budget_under_quota("--busy-poll-us", DEFAULT_BUSY_POLL_US, Config::busy_poll_budget_us);
        check_spin_budget_under_quota("--durable-spin-us", DEFAULT_DURABLE_SPIN_US, Config::durable_spin_budget_us);
    }

    #[test]
    fn config_reload_interval_and_the_parameters_flags_own() {
        let dir = std::env::temp_dir().join(format!("cairn-config-test5-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cairn.toml");
        std::fs::write(&file, "config-reload-interval = \"250ms\"\n[params]\nhz = 20\nmaxmemory = \"1mb\"\n").unwrap();
        let path = file.to_str().unwrap();
        let config =
            Config::resolve(Args::parse_from(["cairn", "--config", path, "--param", "MaxMemory=2mb"])).unwrap();
        assert_eq!(config.config_reload_interval, std::time::Duration::from_millis(250));
        assert_eq!(config.param_flags, ["maxmemory"]);
        let loaded = config.config_file_loaded.expect("the file as read");
        assert_eq!(loaded.version.params.get("maxmemory").map(String::as_str), Some("1mb"), "the file's own value");
        let flag = Args::parse_from(["cairn", "--config", path, "--config-reload-interval", "0"]);
        assert_eq!(Config::resolve(flag).unwrap().config_reload_interval, std::time::Duration::ZERO);
        let config = Config::resolve(Args::parse_from(["cairn"])).unwrap();
        assert_eq!(
            (config.config_reload_interval, config.config_file_loaded),
            (crate::config_reload::interval::DEFAULT, None)
        );
        assert!(Args::try_parse_from(["cairn", "--config-reload-interval", "soon"]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        let dir = std::env::temp_dir().join(format!("cairn-config-test2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cairn.toml");
        std::fs::write(&file, "prot = 7000\n").unwrap();
        let args = Args::parse_from(["cairn", "--config", file.to_str().unwrap()]);
        let error = Config::resolve(args).expect_err("unknown key").to_string();
        assert!(error.contains("line 1, column 1: unknown field `prot`") && !error.contains('\n'), "{error}");
        // A credential's line is not quoted, even when its value is what is wrong.
        std::fs::write(&file, "requirepass = s3cret\n").unwrap();
        let args = Args::parse_from(["cairn", "--config", file.to_str().unwrap()]);
        let error = Config::resolve(args).expect_err("not TOML").to_string();
        assert!(error.contains("line 1") && !error.contains("s3cret"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_flags_need_their_files_and_a_port_and_plaintext_can_be_turned_off() {
        let resolve = |flags: &[&str]| Config::resolve(Args::parse_from([&["cairn"], flags].concat()));
        let reason = |flags: &[&str]| match resolve(flags) {
            Err(ConfigError::Invalid { name, reason }) => format!("{name}: {reason}"),
            other => panic!("{flags:?} resolved to {other:?}"),
        };
        assert!(reason(&["--tls-cert-file", "a.crt"]).starts_with("tls-port:"));
        assert!(reason(&["--tls-port", "6380"]).starts_with("tls-cert-file:"));
        assert!(reason(&["--tls-port", "6380", "--tls-cert-file", "a.crt"]).starts_with("tls-key-file:"));
        let no_ca = ["--tls-port", "6380", "--tls-cert-file", "a.crt", "--tls-key-file", "a.key"];
        assert!(reason(&no_ca).starts_with("tls-ca-cert-file:"));
        assert!(reason(&[&no_ca[..], &["--tls-auth-clients", "optional"]].concat()).starts_with("tls-ca-cert-file:"));
        let config = resolve(&[&no_ca[..], &["--tls-auth-clients", "no", "--port", "off"]].concat()).expect("valid");
        let tls = config.tls.expect("TLS settings");
        assert_eq!((config.port, tls.port, tls.auth_clients), (None, 6380, TlsAuthClients::No));
        assert_eq!(tls.reload_interval_secs, DEFAULT_TLS_RELOAD_INTERVAL_SECS);
        let never = resolve(&[&no_ca[..], &["--tls-auth-clients", "no", "--tls-reload-interval", "0"]].concat());
        assert_eq!(never.expect("valid").tls.map(|t| t.reload_interval_secs), Some(0));
        assert!(reason(&["--tls-reload-interval", "5"]).starts_with("tls-port:"), "no checking without TLS");
        assert!(reason(&["--port", "off"]).starts_with("port:"), "no RESP port at all is refused");
        assert_eq!(resolve(&[]).expect("defaults").tls, None, "TLS is off by default");
    }
}
