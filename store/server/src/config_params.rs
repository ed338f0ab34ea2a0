//! Runtime parameters: what CONFIG GET reports and CONFIG SET changes.
//!
//! Each parameter is declared once in [`PARAMS`] with its kind, default and
//! whether it can change at runtime. Values the hot path reads are mirrored
//! into atomics in [`RuntimeConfig`] when set.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use std::sync::Arc;

use cairn_engine::durability::Tier;
use cairn_engine::events::{self, KeyEvents};
use parking_lot::RwLock;

use crate::config::Config;

/// How a parameter's value is checked and normalized.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// A byte size such as `100mb`; normalized to bytes.
    Memory {
        min: u64,
    },
    Enum(&'static [&'static str]),
    Str,
    /// Reported, but only its current value is accepted: the server does not
    /// implement other settings yet (the message says so).
    Fixed,
    /// Keyspace notification classes (`notify-keyspace-events`), normalized
    /// as Redis prints them.
    KeyspaceEvents,
    /// `latency-tracking-info-percentiles`: numbers in 0..=100, space separated.
    Percentiles,
    /// `save`: pairs of seconds and changes (`persistence::save_points`).
    SavePoints,
    /// A byte size, or a percentage of `maxmemory` such as `5%`.
    MemoryOrPercent,
}

/// One parameter.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub mutable: bool,
}

const fn p(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Param {
    Param { name, kind, default, mutable }
}

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const TLS_AUTH_CLIENTS: &[&str] = &["yes", "no", "optional"];
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
const INT_MAX: i64 = i32::MAX as i64;

/// Every parameter the server knows.
pub const PARAMS: &[Param] = &[
    p("save", Kind::SavePoints, "", true),
    p("appendonly", Kind::Bool, "no", true),
    p("appendfsync", Kind::Enum(&["everysec", "always", "no"]), "everysec", true),
    p("appendfilename", Kind::Str, "appendonly.aof", false),
    p("durability", Kind::Enum(&["none", "async", "everysec", "sync"]), "async", true),
    p("dbfilename", Kind::Str, "dump.rdb", true),
    p("databases", Kind::Int { min: 1, max: 10_000 }, "16", false),
    p("maxclients", Kind::Int { min: 1, max: INT_MAX }, "10000", true),
    p("maxmemory", Kind::Memory { min: 0 }, "0", true),
    p("maxmemory-policy", Kind::Enum(POLICIES), "noeviction", true),
    p("maxmemory-samples", Kind::Int { min: 1, max: 64 }, "5", true),
    p("timeout", Kind::Int { min: 0, max: INT_MAX }, "0", true),
    // A primary with fewer good replicas than this refuses writes
    // (NOREPLICAS); Cairn has no replicas, so any value above 0 does.
    p("min-replicas-to-write", Kind::Int { min: 0, max: INT_MAX }, "0", true),
    p("min-replicas-max-lag", Kind::Int { min: 0, max: INT_MAX }, "10", true),
    p("requirepass", Kind::Str, "", true),
    // Setting these or `bind` moves the listeners (rebind.rs); 0 closes the port.
    p("port", Kind::Int { min: 0, max: 65535 }, "6379", true),
    p("tls-port", Kind::Int { min: 0, max: 65535 }, "0", true),
    // Setting any of these rereads the TLS files (tls::config_set), as in
    // Redis; refused when tls-port is off.
    p("tls-cert-file", Kind::Str, "", true),
    p("tls-key-file", Kind::Str, "", true),
    p("tls-ca-cert-file", Kind::Str, "", true),
    p("tls-auth-clients", Kind::Enum(TLS_AUTH_CLIENTS), "yes", true),
    p("bind", Kind::Str, "127.0.0.1", true),
    p("dir", Kind::Str, "./data", false),
    p("proto-max-bulk-len", Kind::Memory { min: 1024 * 1024 }, "536870912", true),
    p("client-query-buffer-limit", Kind::Memory { min: 1024 * 1024 }, "1073741824", true),
    p("hz", Kind::Int { min: 1, max: 500 }, "10", true),
    p("loglevel", Kind::Enum(LOGLEVELS), "notice", true),
    p("active-expire-effort", Kind::Int { min: 1, max: 10 }, "1", true),
    p("lazyfree-lazy-user-del", Kind::Bool, "no", true),
    p("lazyfree-lazy-user-flush", Kind::Bool, "no", true),
    p("lazyfree-lazy-expire", Kind::Bool, "no", true),
    p("lazyfree-lazy-eviction", Kind::Bool, "no", true),
    p("lazyfree-lazy-server-del", Kind::Bool, "no", true),
    p("lfu-log-factor", Kind::Int { min: 0, max: INT_MAX }, "10", true),
    p("lfu-decay-time", Kind::Int { min: 0, max: INT_MAX }, "1", true),
    p("latency-tracking", Kind::Bool, "yes", true),
    p("latency-tracking-info-percentiles", Kind::Percentiles, "50 99 99.9", true),
    p("latency-monitor-threshold", Kind::Int { min: 0, max: i64::MAX }, "0", true),
    p("slowlog-log-slower-than", Kind::Int { min: -1, max: i64::MAX }, "10000", true),
    p("slowlog-max-len", Kind::Int { min: 0, max: i64::MAX }, "128", true),
    p("busy-reply-threshold", Kind::Int { min: 0, max: i64::MAX }, "5000", true),
    p("notify-keyspace-events", Kind::KeyspaceEvents, "", true),
    p("tracking-table-max-keys", Kind::Int { min: 0, max: i64::MAX }, "1000000", true),
    // Accepted for the test suite and clients; Cairn has no replicas and no RDB child.
    p("repl-ping-replica-period", Kind::Int { min: 1, max: INT_MAX }, "10", true),
    p("rdb-key-save-delay", Kind::Int { min: i32::MIN as i64, max: INT_MAX }, "0", true),
    p("tcp-keepalive", Kind::Int { min: 0, max: INT_MAX }, "300", true),
    p("repl-backlog-size", Kind::Memory { min: 1 }, "1048576", true),
    p("replicaof", Kind::Fixed, "", false),
    p("daemonize", Kind::Bool, "no", false),
    // Hidden (see `HIDDEN`): a delay per key while loading, for tests.
    p("key-load-delay", Kind::Int { min: i32::MIN as i64, max: INT_MAX }, "0", true),
    // Clients are not evicted by memory (yet): stored and reported only.
    p("maxmemory-clients", Kind::MemoryOrPercent, "0", true),
    // Cairn's log holds records, never an RDB image; snapshots are separate files.
    p("aof-use-rdb-preamble", Kind::Bool, "yes", true),
    p("protected-mode", Kind::Bool, "no", true),
    p("hash-max-listpack-entries", Kind::Int { min: 0, max: i64::MAX }, "512", true),
    p("hash-max-listpack-value", Kind::Int { min: 0, max: i64::MAX }, "64", true),
    p("set-max-intset-entries", Kind::Int { min: 0, max: i64::MAX }, "512", true),
    p("zset-max-listpack-entries", Kind::Int { min: 0, max: i64::MAX }, "128", true),
    p("zset-max-listpack-value", Kind::Int { min: 0, max: i64::MAX }, "64", true),
    p("list-max-listpack-size", Kind::Int { min: i32::MIN as i64, max: INT_MAX }, "-2", true),
    p("list-compress-depth", Kind::Int { min: 0, max: INT_MAX }, "0", true),
    p("stream-node-max-bytes", Kind::Memory { min: 0 }, "4096", true),
    p("stream-node-max-entries", Kind::Int { min: 0, max: i64::MAX }, "100", true),
    p("hll-sparse-max-bytes", Kind::Memory { min: 0 }, "3000", true),
];

/// The durability parameters: CONFIG SET of any of them changes the tier
/// (`persistence::tier_switch`), not just the value.
pub const DURABILITY_PARAMS: &[&str] = &["appendonly", "appendfsync", "durability"];

/// The tier as Redis's settings name it: `appendonly` is `no` in `none`;
/// `appendfsync` names the logging tier (`fsync`, kept while the tier is
/// `none`): `always` is `sync`, `everysec` is `everysec`, and `no` is `async`
/// (Cairn's weakest logging tier, which fsyncs continuously: stronger than
/// Redis's `no`, which leaves writeback to the kernel).
pub fn durability_values(tier: Tier, fsync: Tier) -> [(&'static str, String); 3] {
    let fsync_name = match fsync {
        Tier::Sync => "always",
        Tier::Everysec => "everysec",
        Tier::Async | Tier::None => "no",
    };
    [
        ("appendonly", if tier.logs() { "yes" } else { "no" }.to_string()),
        ("appendfsync", fsync_name.to_string()),
        ("durability", tier.to_string()),
    ]
}

/// What validated changes ask of the durability tier: whether to log, and
/// at which logging tier; None when they name no durability parameter.
/// Applied in order, starting from the tier now (`tier`, `fsync`).
pub fn durability_change(updates: &[(&'static str, String)], tier: Tier, fsync: Tier) -> Option<(bool, Tier)> {
    let (mut logging, mut fsync, mut named) = (tier.logs(), fsync, false);
    for (name, value) in updates {
        match *name {
            "appendonly" => logging = value == "yes",
            "appendfsync" => {
                fsync = match value.as_str() {
                    "always" => Tier::Sync,
                    "everysec" => Tier::Everysec,
                    _ => Tier::Async,
                }
            }
            "durability" => {
                let tier: Tier = value.parse().unwrap_or(Tier::Async);
                logging = tier.logs();
                if logging {
                    fsync = tier;
                }
            }
            _ => continue,
        }
        named = true;
    }
    named.then_some((logging, fsync))
}

/// Aliases Redis accepts for some parameters, as `(alias, canonical name)`
/// (public for the operator's contract test, `operator/tests/store_contract.rs`).
pub const ALIASES: &[(&str, &str)] = &[
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

/// Parameters CONFIG GET returns only when asked for by their exact name,
/// never for a pattern (Redis's `HIDDEN_CONFIG`).
const HIDDEN: &[&str] = &["key-load-delay"];

/// Whether `pattern` selects parameter `name` in CONFIG GET.
fn selects(pattern: &[u8], name: &str) -> bool {
    if HIDDEN.contains(&name) {
        return pattern.eq_ignore_ascii_case(name.as_bytes());
    }
    cairn_engine::glob::matches(pattern, name.as_bytes(), true)
}

/// Finds a parameter by name or alias (case-insensitive).
pub fn find(name: &str) -> Option<&'static Param> {
    let lower = name.to_ascii_lowercase();
    let canonical = ALIASES.iter().find(|(a, _)| *a == lower).map(|(_, c)| *c).unwrap_or(&lower);
    PARAMS.iter().find(|p| p.name == canonical)
}

/// Why a value was refused (the text after Redis's "CONFIG SET failed ... - ").
pub fn check_value(param: &Param, value: &str, current: &str) -> Result<String, String> {
    match param.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int { min, max } => {
            let n: i64 = value.parse().map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Memory { min } => {
            let n = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if n < min {
                return Err(format!("argument must be between {min} and {} inclusive", i64::MAX));
            }
            Ok(n.to_string())
        }
        Kind::Enum(options) => {
            let lower = value.to_ascii_lowercase();
            if options.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!("argument(s) must be one of the following: {}", options.join(", ")))
            }
        }
        Kind::Str => Ok(value.to_string()),
        Kind::KeyspaceEvents => match events::parse_flags(value) {
            Some(flags) => Ok(events::format_flags(flags)),
            None => Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        },
        Kind::Percentiles => crate::latency_stats::parse_percentiles(value)
            .map(|p| crate::latency_stats::format_percentiles(&p))
            .map_err(str::to_string),
        Kind::MemoryOrPercent => match value.strip_suffix('%') {
            Some(percent) => match percent.parse::<u64>() {
                Ok(n) if n <= 100 => Ok(format!("{n}%")),
                Ok(_) => Err("percentage argument must be less or equal to 100".into()),
                Err(_) => Err("argument must be a memory or percent value".into()),
            },
            None => parse_memory(value)
                .map(|n| n.to_string())
                .ok_or_else(|| "argument must be a memory or percent value".into()),
        },
        Kind::SavePoints => crate::persistence::save_points::parse(value)
            .map(|points| crate::persistence::save_points::format(&points))
            .map_err(str::to_string),
        Kind::Fixed if value == current => Ok(value.to_string()),
        Kind::Fixed => Err(format!("Cairn does not support changing '{}' yet (it is '{current}')", param.name)),
    }
}

/// Why CONFIG SET (or `PUT /v1/config`) refused a set of changes; the
/// `Display` text is Redis's message without the `ERR ` prefix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    #[error("Unknown option or number of arguments for CONFIG SET - '{0}'")]
    Unknown(String),
    #[error("CONFIG SET failed (possibly related to argument '{name}') - {reason}")]
    Refused { name: String, reason: String },
}

/// Checks `(name, value)` changes the way CONFIG SET does (known, mutable,
/// not repeated, valid value) and returns them normalized, ready for
/// [`RuntimeConfig::set_all`]. Nothing is applied when one is refused.
pub fn validate_changes<'a>(
    runtime: &RuntimeConfig,
    changes: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<(&'static str, String)>, SetError> {
    let refused = |name: &str, reason: &str| SetError::Refused { name: name.to_string(), reason: reason.to_string() };
    let mut updates: Vec<(&'static str, String)> = Vec::new();
    for (name, value) in changes {
        let Some(param) = find(name) else {
            return Err(SetError::Unknown(name.to_string()));
        };
        if !param.mutable {
            return Err(refused(name, "can't set immutable config"));
        }
        if updates.iter().any(|(n, _)| *n == param.name) {
            return Err(refused(name, "duplicate parameter"));
        }
        let current = runtime.get(param.name).unwrap_or_default();
        let value = check_value(param, value, &current).map_err(|why| refused(name, &why))?;
        updates.push((param.name, value));
    }
    Ok(updates)
}

/// Parses `100`, `1k`, `1kb`, `5mb`, `1gb` (k = 1000, kb = 1024, as Redis).
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// Current parameter values, with hot ones mirrored into atomics.
#[derive(Debug)]
pub struct RuntimeConfig {
    values: RwLock<BTreeMap<&'static str, String>>,
    pub proto_max_bulk_len: AtomicUsize,
    pub client_query_buffer_limit: AtomicUsize,
    pub maxclients: AtomicUsize,
    pub timeout_secs: AtomicU64,
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms: after this long a
    /// running script makes other clients' commands fail with -BUSY.
    pub busy_reply_threshold_ms: AtomicU64,
    pub lfu_policy: AtomicBool,
    pub requirepass: RwLock<Option<String>>,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (see
    /// [`RuntimeConfig::lacks_good_replicas`]).
    pub min_replicas_to_write: AtomicUsize,
    pub min_replicas_max_lag: AtomicUsize,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call the commands
    /// Redis flags `noscript` (its tests use it to call CLIENT LIST, DEBUG).
    pub disable_deny_scripts: AtomicBool,
    /// `DEBUG SET-SKIP-CHECKSUM-VALIDATION 1`: RESTORE skips the payload's CRC-64.
    pub skip_checksum_validation: AtomicBool,
    /// The ACL users; `requirepass` is the default user's password.
    pub acl: crate::acl::Acl,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: AtomicU64,
    /// `maxmemory-policy` as a [`crate::maxmemory::policy::Policy`].
    policy: std::sync::atomic::AtomicU8,
    /// `maxmemory-samples`: keys sampled per eviction.
    pub maxmemory_samples: AtomicUsize,
    /// `notify-keyspace-events`, shared with the keyspace's tables.
    pub key_events: Arc<KeyEvents>,
    /// `lazyfree-lazy-user-del`: DEL frees big values in the background, as UNLINK.
    pub lazy_user_del: AtomicBool,
    /// `lazyfree-lazy-user-flush`: FLUSHDB/FLUSHALL without a mode are ASYNC.
    pub lazy_user_flush: AtomicBool,
    /// The slow log, with its `slowlog-log-slower-than` and `slowlog-max-len`.
    pub slowlog: crate::slowlog::SlowLog,
    /// The latency monitor, with its `latency-monitor-threshold`.
    pub latency: Arc<crate::latency::LatencyMonitor>,
    /// `tracking-table-max-keys`: keys the tracking table may hold (0: no limit).
    pub tracking_table_max_keys: AtomicUsize,
    /// `DEBUG REPLYBUFFER`: the reply buffers' resizing (see [`crate::client_buffers`]).
    pub reply_buffer: crate::client_buffers::ReplyBufferPolicy,
}

impl RuntimeConfig {
    pub fn new(config: &Config) -> Self {
        let mut values: BTreeMap<&'static str, String> =
            PARAMS.iter().map(|p| (p.name, p.default.to_string())).collect();
        values.insert("databases", config.databases.to_string());
        values.insert("maxclients", config.maxclients.to_string());
        // As Redis: 0 when the port is off.
        values.insert("port", config.port.unwrap_or(0).to_string());
        values.insert("bind", config.bind.clone());
        values.insert("dir", config.data_dir.display().to_string());
        values.insert("requirepass", config.requirepass.clone().unwrap_or_default());
        if let Some(tls) = &config.tls {
            values.extend(crate::tls::config_set::values(tls));
        }
        let fsync = if config.durability.logs() { config.durability } else { Tier::Async };
        for (name, value) in durability_values(config.durability, fsync) {
            values.insert(name, value);
        }
        let rc = RuntimeConfig {
            values: RwLock::new(BTreeMap::new()),
            proto_max_bulk_len: AtomicUsize::new(0),
            client_query_buffer_limit: AtomicUsize::new(0),
            maxclients: AtomicUsize::new(0),
            timeout_secs: AtomicU64::new(0),
            busy_reply_threshold_ms: AtomicU64::new(0),
            lfu_policy: AtomicBool::new(false),
            requirepass: RwLock::new(None),
            acl: crate::acl::Acl::new(None),
            disable_deny_scripts: AtomicBool::new(false),
            skip_checksum_validation: AtomicBool::new(false),
            min_replicas_to_write: AtomicUsize::new(0),
            min_replicas_max_lag: AtomicUsize::new(10),
            key_events: Arc::default(),
            slowlog: crate::slowlog::SlowLog::default(),
            latency: Arc::default(),
            lazy_user_del: AtomicBool::new(false),
            lazy_user_flush: AtomicBool::new(false),
            maxmemory: AtomicU64::new(0),
            policy: std::sync::atomic::AtomicU8::new(0),
            maxmemory_samples: AtomicUsize::new(5),
            tracking_table_max_keys: AtomicUsize::new(0),
            reply_buffer: crate::client_buffers::ReplyBufferPolicy::default(),
        };
        for (name, value) in &values {
            rc.apply(name, value);
        }
        *rc.values.write() = values;
        rc
    }

    /// `latency-tracking-info-percentiles`, for INFO latencystats.
    /// Whether writes are refused with NOREPLICAS: `min-replicas-to-write`
    /// asks for good replicas (and `min-replicas-max-lag` is set), and this
    /// server, which has none, is a primary (Redis's `checkGoodReplicasStatus`).
    #[inline]
    pub fn lacks_good_replicas(&self) -> bool {
        self.min_replicas_to_write.load(Ordering::Relaxed) > 0 && self.min_replicas_max_lag.load(Ordering::Relaxed) > 0
    }

    pub fn info_percentiles(&self) -> Vec<f64> {
        let text = self.get("latency-tracking-info-percentiles").unwrap_or_default();
        crate::latency_stats::parse_percentiles(&text).unwrap_or_default()
    }

    /// The eviction policy (`maxmemory-policy`).
    pub fn policy(&self) -> crate::maxmemory::policy::Policy {
        crate::maxmemory::policy::Policy::from_u8(self.policy.load(Ordering::Relaxed))
    }

    pub fn get(&self, name: &str) -> Option<String> {
        self.values.read().get(name).cloned()
    }

    /// All `(name, value)` pairs whose name matches the glob `pattern`.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let values = self.values.read();
        let mut out: Vec<_> =
            values.iter().filter(|(name, _)| selects(pattern, name)).map(|(n, v)| (*n, v.clone())).collect();
        for (alias, canonical) in ALIASES {
            if cairn_engine::glob::matches(pattern, alias.as_bytes(), true) {
                if let Some(v) = values.get(canonical) {
                    out.push((alias, v.clone()));
                }
            }
        }
        out
    }

    /// Sets already-validated values, all at once.
    pub fn set_all(&self, pairs: &[(&'static str, String)]) {
        let mut values = self.values.write();
        for (name, value) in pairs {
            self.apply(name, value);
            values.insert(name, value.clone());
        }
    }

    fn apply(&self, name: &str, value: &str) {
        let as_usize = || value.parse::<usize>().unwrap_or(0);
        match name {
            "proto-max-bulk-len" => self.proto_max_bulk_len.store(as_usize(), Ordering::Relaxed),
            "client-query-buffer-limit" => self.client_query_buffer_limit.store(as_usize(), Ordering::Relaxed),
            "maxclients" => self.maxclients.store(as_usize(), Ordering::Relaxed),
            "min-replicas-to-write" => self.min_replicas_to_write.store(as_usize(), Ordering::Relaxed),
            "min-replicas-max-lag" => self.min_replicas_max_lag.store(as_usize(), Ordering::Relaxed),
            "timeout" => self.timeout_secs.store(as_usize() as u64, Ordering::Relaxed),
            "busy-reply-threshold" => self.busy_reply_threshold_ms.store(as_usize() as u64, Ordering::Relaxed),
            "maxmemory-policy" => {
                let policy = crate::maxmemory::policy::Policy::from_name(value);
                self.lfu_policy.store(policy.is_lfu(), Ordering::Relaxed);
                // Lookups maintain the LFU counter only under an LFU policy.
                cairn_engine::access::ACCESS.set_lfu(policy.is_lfu());
                self.policy.store(policy.as_u8(), Ordering::Relaxed);
            }
            "maxmemory-samples" => self.maxmemory_samples.store(as_usize(), Ordering::Relaxed),
            "lfu-log-factor" => cairn_engine::access::ACCESS.set_log_factor(as_usize() as u64),
            "lfu-decay-time" => cairn_engine::access::ACCESS.set_decay_minutes(as_usize() as u64),
            "maxmemory" => self.maxmemory.store(as_usize() as u64, Ordering::Relaxed),
            "requirepass" => {
                let password = Some(value.to_string()).filter(|v| !v.is_empty());
                self.acl.set_requirepass(password.as_deref());
                *self.requirepass.write() = password;
            }
            "notify-keyspace-events" => self.key_events.set_flags(events::parse_flags(value).unwrap_or(0)),
            "slowlog-log-slower-than" => self.slowlog.set_threshold_us(value.parse().unwrap_or(-1)),
            "slowlog-max-len" => self.slowlog.set_max_len(as_usize()),
            "latency-monitor-threshold" => self.latency.set_threshold_ms(as_usize() as u64),
            "tracking-table-max-keys" => self.tracking_table_max_keys.store(as_usize(), Ordering::Relaxed),
            "lazyfree-lazy-user-del" => self.lazy_user_del.store(value == "yes", Ordering::Relaxed),
            "lazyfree-lazy-user-flush" => self.lazy_user_flush.store(value == "yes", Ordering::Relaxed),
            _ => {
                if let Some(limit) = cairn_engine::types::encoding::LIMITS.by_name(name) {
                    limit.set(value.parse().unwrap_or(0));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_values() {
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1kb"), Some(1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("2GB"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_memory("x"), None);
        assert_eq!(parse_memory("1xb"), None);
    }

    #[test]
    fn checks() {
        let maxclients = find("MAXCLIENTS").unwrap();
        assert_eq!(check_value(maxclients, "10", "1"), Ok("10".into()));
        assert!(check_value(maxclients, "0", "1").is_err());
        let save = find("save").unwrap();
        assert!(check_value(save, "", "").is_ok());
        assert_eq!(check_value(save, "900  1", ""), Ok("900 1".into()));
        assert!(check_value(save, "900", "").is_err());
        let port = find("port").unwrap();
        assert!(check_value(port, "6380", "6379").is_ok());
        assert!(check_value(port, "65536", "6379").is_err());
        let replicaof = find("replicaof").unwrap();
        assert!(check_value(replicaof, "", "").is_ok());
        assert_eq!(find("lua-time-limit").map(|p| p.name), Some("busy-reply-threshold"));
    }
}
